package share

import (
	"testing"
	"time"
)

// FuzzShareRecord feeds arbitrary keys and values to the share record
// loader (key versions 100 and 101): errors are fine, panics are not, and
// a record that loads encodes back to the same key.
func FuzzShareRecord(f *testing.F) {
	tp := shareTP{TopicID{1, 2, 3}, 7}
	f.Add(shareGroupKey("g"), shareGroupRecord(&shareGroup{id: "g", epoch: 3}).Value)
	f.Add(sharePartitionKey("g", tp), sharePartitionRecord("g", tp, shareStart{42, 1}).Value)
	f.Add(sharePartitionKey("g", tp), []byte(nil))
	f.Add([]byte{0, 101, 0, 9, 'g'}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		env := &fakeEnv{t: time.Unix(0, 0)}
		sm := newManager(env, fakeClassicGroups{})
		if !IsShareKey(key) {
			return
		}
		if err := sm.LoadRecord(key, value); err != nil || value == nil {
			return
		}
		for id, g := range sm.groups {
			if len(g.parts) == 0 {
				if string(shareGroupKey(id)) != string(key) {
					t.Fatalf("group key %x loaded as group %q", key, id)
				}
			}
			for tp := range g.parts {
				if string(sharePartitionKey(id, tp)) != string(key) {
					t.Fatalf("share-partition key %x loaded as %q %v", key, id, tp)
				}
			}
		}
	})
}

// FuzzParseISODuration checks the duration parser never panics and never
// returns a negative duration.
func FuzzParseISODuration(f *testing.F) {
	for _, s := range []string{"PT1H", "P1DT2H3M4.5S", "P", "PT", "-PT1S", "P99999999999999999999D"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseISODuration(s); err == nil && d < 0 {
			t.Fatalf("parseISODuration(%q) = %v", s, d)
		}
	})
}
