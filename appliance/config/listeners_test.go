package config

import (
	"reflect"
	"testing"
)

func TestParsePlainJAAS(t *testing.T) {
	users, err := ParsePlainJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret" user_alice="a \"quoted\" pass;word" user_bob=plain;`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"admin": "admin-secret", "alice": `a "quoted" pass;word`, "bob": "plain"}
	if !reflect.DeepEqual(users, want) {
		t.Errorf("users %v, want %v", users, want)
	}
	// Other modules are skipped; several entries are read.
	users, err = ParsePlainJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required user_x="no";
		org.apache.kafka.common.security.plain.PlainLoginModule optional user_y="yes";`)
	if err != nil || !reflect.DeepEqual(users, map[string]string{"y": "yes"}) {
		t.Errorf("two modules: %v %v", users, err)
	}
	for _, bad := range []string{
		"", "org.apache.kafka.common.security.plain.PlainLoginModule",
		"org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"x\"",
		"org.apache.kafka.common.security.plain.PlainLoginModule mandatory user_a=\"x\";",
		"org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"x;",
		"org.apache.kafka.common.security.plain.PlainLoginModule required user_a;",
	} {
		if _, err := ParsePlainJAAS(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
