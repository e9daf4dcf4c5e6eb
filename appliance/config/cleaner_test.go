package config

import (
	"strings"
	"testing"
	"time"
)

func TestCleanerFromProps(t *testing.T) {
	c, err := CleanerFromProps(BrokerDefaults())
	if err != nil || !c.Enable || c.Threads != 1 || c.Backoff != 15*time.Second || c.DedupeBytes != 128<<20 || c.IOMaxBytes < 1e300 {
		t.Fatalf("defaults %+v, %v", c, err)
	}
	if c != DefaultCleaner() {
		t.Errorf("BrokerDefaults parse to %+v, DefaultCleaner is %+v", c, DefaultCleaner())
	}
	c, err = CleanerFromProps(map[string]string{"log.cleaner.enable": "false", "log.cleaner.threads": "2",
		"log.cleaner.io.max.bytes.per.second": "1048576", "log.cleaner.backoff.ms": "50"})
	if err != nil || c.Enable || c.Threads != 2 || c.IOMaxBytes != 1<<20 || c.Backoff != 50*time.Millisecond {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	for _, bad := range []map[string]string{{"log.cleaner.threads": "x"}, {"log.cleaner.io.max.bytes.per.second": "0"},
		{"log.cleaner.enable": "yes please"}, {"log.cleaner.enable": "t"}, {"log.cleaner.backoff.ms": "-1"},
		{"log.cleaner.dedupe.buffer.size": "39"}} {
		_, err := CleanerFromProps(bad)
		for k := range bad {
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%v: err = %v, want one naming %s", bad, err, k)
			}
		}
	}
}

func TestInternalSegmentBytes(t *testing.T) {
	const k = "offsets.topic.segment.bytes"
	for _, c := range []struct {
		v    string
		want int32
		bad  bool
	}{
		{v: "", want: 7}, {v: "  ", want: 7}, {v: "1048576", want: 1 << 20}, {v: " 14 ", want: 14},
		{v: "13", bad: true}, {v: "x", bad: true}, {v: "4294967296", bad: true}, {v: "-1", bad: true},
	} {
		got, err := InternalSegmentBytes(map[string]string{k: c.v}, k, 7)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%q: got %d, err %v; want an error naming %s", c.v, got, err, k)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %d, %v; want %d", c.v, got, err, c.want)
		}
	}
	if got, err := InternalSegmentBytes(nil, k, 7); err != nil || got != 7 {
		t.Errorf("unset: got %d, %v; want the default 7", got, err)
	}
}

func TestCleanerWith(t *testing.T) {
	static := DefaultCleaner()
	got := CleanerWith(static, map[string]string{"log.cleaner.backoff.ms": "250", "log.cleaner.io.max.bytes.per.second": "1e6",
		"log.cleaner.threads": "9", "log.retention.ms": "1"})
	want := static
	want.Backoff, want.IOMaxBytes = 250*time.Millisecond, 1e6
	if got != want {
		t.Fatalf("CleanerWith = %+v, want %+v (threads need a restart)", got, want)
	}
	if got := CleanerWith(static, map[string]string{"log.cleaner.backoff.ms": "-3"}); got != static {
		t.Fatalf("a bad value changed the config: %+v", got)
	}
}
