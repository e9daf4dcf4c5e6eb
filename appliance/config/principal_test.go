package config

import (
	"errors"
	"strings"
	"testing"
)

func TestPrincipalRules(t *testing.T) {
	for _, tc := range []struct {
		rules, dn, want string
		noMatch         bool
	}{
		{"", "CN=client,OU=x", "CN=client,OU=x", false},
		{"DEFAULT", "CN=client,OU=x", "CN=client,OU=x", false},
		{"RULE:^CN=([a-z]+),.*$/$1/", "CN=client,OU=x", "client", false},
		{"RULE:^CN=([a-z]+),.*$/$1/", "CN=Client,OU=x", "", true},
		{"RULE:^CN=([a-z]+),.*$/$1/, DEFAULT", "CN=Client,OU=x", "CN=Client,OU=x", false},
		{"RULE:^CN=(.*?),OU=(.*?)$/$1@$2/U", "CN=alice,OU=ops", "ALICE@OPS", false},
		{"RULE:^CN=(.*?),OU=(.*?)$/$2-$1/L", "CN=Alice,OU=Ops", "ops-alice", false},
		// Not matching the whole name: the rule does not apply.
		{"RULE:CN=alice/bob/", "CN=alice,OU=x", "", true},
		{"RULE:CN=alice.*/bob/", "CN=alice,OU=x", "bob", false},
		// An escaped slash in the pattern and the replacement, an
		// escaped dollar in the replacement.
		{`RULE:^CN=(.*)\/x$/a\/$1\$/`, "CN=y/x", "a/y$", false},
		// Rules separated by newlines and commas; the first that applies wins.
		{"RULE:^CN=a$/first/,\nRULE:^CN=(.*)$/second-$1/", "CN=b", "second-b", false},
		// $12 with one group is group 1 then "2", as Java reads it.
		{"RULE:^CN=(b)$/$12/", "CN=b", "b2", false},
		{"RULE:^(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)$/$12$1/", "abcdefghijkl", "la", false},
	} {
		rs, err := ParsePrincipalRules(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		got, err := rs.Map(tc.dn)
		if tc.noMatch {
			if !errors.Is(err, ErrNoPrincipalRule) {
				t.Errorf("%q on %q: %q, %v; want ErrNoPrincipalRule", tc.rules, tc.dn, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q on %q: %q, %v; want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	for _, bad := range []string{"RULE", "RULE:abc", "RULE:abc/def", "RULE:(/x/", "DEFAULTX", "RULE:a/b/X", "foo", "RULE:a/b/L,bar", "RULE:a/$2/", "RULE:a/$/"} {
		if _, err := ParsePrincipalRules(bad); err == nil || !strings.Contains(err.Error(), "ssl.principal.mapping.rules") {
			t.Errorf("%q: %v, want a parse error", bad, err)
		}
	}
}

func FuzzPrincipalRules(f *testing.F) {
	f.Add("RULE:^CN=([a-z]+),.*$/$1/L, DEFAULT", "CN=client,OU=x")
	f.Add(`RULE:^CN=(.*)\/x$/a\/$1\$/U`, "CN=y/x")
	f.Add("RULE://", "")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		rs, err := ParsePrincipalRules(rules)
		if err != nil {
			return
		}
		got, err := rs.Map(dn)
		if err != nil && !errors.Is(err, ErrNoPrincipalRule) {
			t.Fatalf("Map: unexpected error %v", err)
		}
		if len(rs) > 0 && rs[0].Default && got != dn {
			t.Fatalf("DEFAULT first: %q, want %q", got, dn)
		}
	})
}
