package config

import (
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	in := "# comment\n! also comment\nnode.id=3\nlisteners = PLAINTEXT://0.0.0.0:9093\nlog.dirs: /var/lib/rb\nlong.value=a\\\n  b\nempty=\nalone\n"
	props, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node.id": "3", "listeners": "PLAINTEXT://0.0.0.0:9093", "log.dirs": "/var/lib/rb", "long.value": "ab", "empty": "", "alone": ""}
	if len(props) != len(want) {
		t.Errorf("got %d properties %v, want %d", len(props), props, len(want))
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
	if _, err := ParseProperties(strings.NewReader("a=1\n=2\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("an empty key: err = %v, want one naming line 2", err)
	}
}

func TestParseBool(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
		bad  bool
	}{
		{in: "true", want: true}, {in: " TRUE ", want: true}, {in: "False"},
		{in: "1", bad: true}, {in: "t", bad: true}, {in: "", bad: true}, {in: "yes", bad: true},
	} {
		got, err := ParseBool(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseBool(%q) = %v, %v", c.in, got, err)
		}
	}
}

// FuzzParseProperties checks that any input parses or fails without a
// panic, and that what parses has no empty key and gives the same
// properties when written back as key=value lines.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{"", "a=1\n", "# c\n! c\nk: v\n", "a=b\\\n c\n", "=x\n", "k\n", "a=1\\", "x = y = z\n", " \t\fk=v\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		props, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			return
		}
		var b strings.Builder
		for k, v := range props {
			if strings.ContainsAny(k, "=:\n\r\\#!") || strings.ContainsAny(v, "\n\r\\") || strings.TrimSpace(k) != k || strings.TrimSpace(v) != v || k == "" {
				return // not representable in one plain line
			}
			b.WriteString(k + "=" + v + "\n")
		}
		again, err := ParseProperties(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("written back %q: %v", b.String(), err)
		}
		if len(again) != len(props) {
			t.Fatalf("written back: %v, want %v", again, props)
		}
		for k, v := range props {
			if again[k] != v {
				t.Fatalf("%q: %q written back as %q", k, v, again[k])
			}
		}
	})
}
