package config

import (
	"slices"
	"strings"
	"testing"
)

func TestDamerauLevenshtein(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"abc", "abc", 0},
		{"ab", "ba", 1}, // one swap, not two replacements
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
		{"log.retention.hour", "log.retention.hours", 1},
		{"log.rentention.hours", "log.retention.hours", 1},
		{"log.retnetion.hours", "log.retention.hours", 1},
	} {
		if got := damerauLevenshtein(c.a, c.b); got != c.want {
			t.Errorf("damerauLevenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := damerauLevenshtein(c.b, c.a); got != c.want {
			t.Errorf("damerauLevenshtein(%q, %q) = %d, want %d (not symmetric)", c.b, c.a, got, c.want)
		}
	}
}

// TestKeysRegistry checks the registry's own shape: no name twice, a known
// type and a doc for every key, no default on an ignored key, and extra
// keys and their DefaultOf suggestion.
func TestKeysRegistry(t *testing.T) {
	types := []string{"boolean", "short", "int", "long", "double", "string", "list", "class", "password"}
	seen := map[string]bool{}
	for _, k := range configKeys {
		if seen[k.Name] {
			t.Errorf("%s is in configKeys twice", k.Name)
		}
		seen[k.Name] = true
	}
	all := Keys()
	if !slices.IsSortedFunc(all, func(a, b Key) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Keys is not sorted by name")
	}
	byName := map[string]Key{}
	for _, k := range all {
		if _, dup := byName[k.Name]; dup {
			t.Errorf("Keys lists %s twice", k.Name)
		}
		byName[k.Name] = k
		if !slices.Contains(types, k.Type) {
			t.Errorf("%s: type %q is not one of %v", k.Name, k.Type, types)
		}
		if strings.TrimSpace(k.Doc) == "" {
			t.Errorf("%s: no doc", k.Name)
		}
		if k.Ignored && k.Default != "" {
			t.Errorf("%s: ignored, yet default %q", k.Name, k.Default)
		}
	}
	for k, v := range BrokerDefaults() {
		if r, ok := byName[k]; !ok || r.Default != v {
			t.Errorf("BrokerDefaults has %s=%q, the registry %+v", k, v, r)
		}
	}
	for _, d := range TopicDefs() {
		if r := byName[d.BrokerProp]; r.Default != d.Default {
			t.Errorf("%s: registry default %q, topic config %s default %q", d.BrokerProp, r.Default, d.Name, d.Default)
		}
	}

	extra := Key{Name: "x.widget.max.ms", Type: "int", Default: "5", Doc: "a test key", DefaultOf: "widget.max.ms"}
	if n := len(Keys(extra)); n != len(all)+1 {
		t.Errorf("Keys(extra) has %d keys, want %d", n, len(all)+1)
	}
	if u := UnknownKeys(map[string]string{"x.widget.max.ms": "1"}, extra); len(u) != 0 {
		t.Errorf("an extra key reported unknown: %v", u)
	}
	if u := UnknownKeys(map[string]string{"widget.max.ms": "1"}, extra); len(u) != 1 || u[0].Suggestion != "x.widget.max.ms" {
		t.Errorf("an extra key's DefaultOf given as a property: %v, want the suggestion x.widget.max.ms", u)
	}
	if u := UnknownKeys(map[string]string{"log.retention.hour": "1"}); len(u) != 1 || u[0].String() != `"log.retention.hour" (did you mean "log.retention.hours"?)` {
		t.Errorf("log.retention.hour: %v", u)
	}
	if u := UnknownKeys(map[string]string{"segment.bytes": "1"}); len(u) != 1 || u[0].Suggestion != "log.segment.bytes" {
		t.Errorf("segment.bytes at broker level: %v, want the suggestion log.segment.bytes", u)
	}
}

// FuzzUnknownKeys checks, for any key, that the check does not
// panic, that a known key is never reported, and that a suggestion is a
// known key other than the key itself; and that the distance is symmetric
// and bounded by the longer string.
func FuzzUnknownKeys(f *testing.F) {
	for _, s := range []string{"log.retention.hour", "listener.name.x.sasl.enabled.mechanism", "listener.name..", "retention.ms", "", ".", "ä.ö", "shards"} {
		f.Add(s, "log.retention.hours")
	}
	names := map[string]bool{}
	for _, k := range Keys() {
		names[k.Name] = true
	}
	f.Fuzz(func(t *testing.T, key, other string) {
		got := UnknownKeys(map[string]string{key: "v"})
		if names[key] || InFamily(key) {
			if len(got) != 0 {
				t.Fatalf("known key %q reported: %v", key, got)
			}
		} else if len(got) != 1 || got[0].Key != key {
			t.Fatalf("unknown key %q: got %v", key, got)
		} else if s := got[0].Suggestion; s != "" && (s == key || !names[s] && !InFamily(s)) {
			t.Fatalf("key %q: suggestion %q is not another known key", key, s)
		}
		d := damerauLevenshtein(key, other)
		if d != damerauLevenshtein(other, key) || d > max(len(key), len(other)) || (d == 0) != (key == other) {
			t.Fatalf("damerauLevenshtein(%q, %q) = %d: not a distance", key, other, d)
		}
	})
}
