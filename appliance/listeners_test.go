package appliance

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseListeners(t *testing.T) {
	cfg, err := ConfigFromProperties(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://:9093,CLIENT://[::1]:9094",
		"advertised.listeners":           "SASL_PLAINTEXT://broker.example:19093,PLAINTEXT://localhost:9092",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CLIENT:SASL_PLAINTEXT",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="s1";`,
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="s2";`,
		"listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512, PLAIN",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{
		{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:9092", AdvertisedHost: "localhost", AdvertisedPort: 9092},
		{Name: "SASL_PLAINTEXT", Protocol: "SASL_PLAINTEXT", Addr: ":9093", AdvertisedHost: "broker.example", AdvertisedPort: 19093,
			Mechanisms: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, PlainUsers: map[string]string{"alice": "s1"}},
		{Name: "CLIENT", Protocol: "SASL_PLAINTEXT", Addr: "[::1]:9094", AdvertisedHost: "::1", AdvertisedPort: 9094,
			Mechanisms: []string{"SCRAM-SHA-512", "PLAIN"}, PlainUsers: map[string]string{"bob": "s2"}},
	}
	if !reflect.DeepEqual(cfg.Listeners, want) {
		t.Errorf("listeners\n%+v\nwant\n%+v", cfg.Listeners, want)
	}
	if cfg.ListenAddr != "127.0.0.1:9092" || cfg.AdvertisedHost != "localhost" || cfg.AdvertisedPort != 9092 {
		t.Errorf("first listener: %s advertised %s:%d", cfg.ListenAddr, cfg.AdvertisedHost, cfg.AdvertisedPort)
	}
	// A single listener without a name is PLAINTEXT, as before.
	cfg, err = ConfigFromProperties(map[string]string{"listeners": "0.0.0.0:9095"})
	if err != nil || len(cfg.Listeners) != 1 || cfg.Listeners[0].Protocol != "PLAINTEXT" || cfg.ListenAddr != "0.0.0.0:9095" ||
		cfg.AdvertisedHost != "127.0.0.1" {
		t.Errorf("bare listener: %+v %v", cfg.Listeners, err)
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"listeners": "SSL://127.0.0.1:9093"}, "needs ssl.keystore.location"},
		{map[string]string{"listeners": "SASL_SSL://127.0.0.1:9093"}, "needs ssl.keystore.location"},
		{map[string]string{"listeners": "CLIENT://127.0.0.1:9093"}, "not in listener.security.protocol.map"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9094"}, "twice"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:x"}, "port"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9093", "advertised.listeners": "OTHER://h:1"}, "which listeners does not"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "GSSAPI"}, "not supported"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": ""}, "no mechanism"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.jaas.config": "x required"}, "sasl.jaas.config"},
		{map[string]string{"listener.security.protocol.map": "A:TLS"}, "unknown security protocol"},
	} {
		_, err := ConfigFromProperties(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.props, err, tc.want)
		}
	}
}
