package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestParseGlobal(t *testing.T) {
	t.Setenv("RINGCTL_BROKERS", "")
	e := &env{}
	rest, err := e.parseGlobal([]string{"topic", "describe", "orders", "--json", "-b", "h1:1,h2:2", "--timeout=3s"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rest, " ") != "topic describe orders" || !e.json || len(e.brokers) != 2 || e.timeout.String() != "3s" {
		t.Errorf("rest %v json %v brokers %v timeout %v", rest, e.json, e.brokers, e.timeout)
	}
	t.Setenv("RINGCTL_BROKERS", "env:9")
	e = &env{}
	if _, err := e.parseGlobal([]string{"topic", "list"}); err != nil || e.brokers[0] != "env:9" {
		t.Errorf("RINGCTL_BROKERS: %v %v", e.brokers, err)
	}
	t.Setenv("RINGCTL_BROKERS", "")
	e = &env{}
	if _, err := e.parseGlobal(nil); err != nil || e.brokers[0] != defaultBroker {
		t.Errorf("default: %v %v", e.brokers, err)
	}
	for _, bad := range [][]string{{"-b"}, {"-b", "nohostport"}, {"--timeout", "soon"}} {
		if _, err := (&env{}).parseGlobal(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestKafkaErrMessages(t *testing.T) {
	for _, c := range []struct {
		err  error
		msg  string
		subj subject
		want string
	}{
		{kerr.UnknownTopicOrPartition, "", subject{"topic", "x"}, "UNKNOWN_TOPIC_OR_PARTITION (3): cannot do it: topic \"x\" does not exist; list topics with `ringctl topic list`"},
		{kerr.InvalidConfig, "INVALID_CONFIG: Configuration is invalid.: unknown topic config \"b\"", subject{"topic", "x"}, "INVALID_CONFIG (40): cannot do it: unknown topic config \"b\"; check"},
		{kerr.GroupIDNotFound, "", subject{"group", "g"}, "GROUP_ID_NOT_FOUND (69): cannot do it: group \"g\" does not exist"},
		{kerr.BrokerNotAvailable, "", subject{}, "BROKER_NOT_AVAILABLE (8): cannot do it: "},
	} {
		err := kafkaErr(c.err, c.msg, "do it", c.subj)
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("kafkaErr(%v) = %q, want prefix %q", c.err, err, c.want)
		}
		if ee, ok := err.(*exitError); !ok || ee.code != exitFailed {
			t.Errorf("kafkaErr(%v): %T, want exit status 1", c.err, err)
		}
	}
}

func TestUsageExitCodes(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"topic"}, {"topic", "nope"}, {"topic", "create"}, {"topic", "create", "a", "--partitions", "x"},
		{"group", "reset-offsets", "g", "--topic", "t"}, {"group", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-latest"},
		{"topic", "add-partitions", "t"}, {"produce"}, {"produce", "t", "v", "--partition", "-3"},
		{"consume", "t", "-n", "-1"}, {"consume", "t", "--partition", "-3"},
		{"group", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--partition", "-2"}} {
		var o, e bytes.Buffer
		if code := run(args, strings.NewReader(""), &o, &e); code != exitUsage {
			t.Errorf("ringctl %v: exit %d, want %d (stderr %q)", args, code, exitUsage, e.String())
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"help"}, nil, &o, &e); code != 0 || !strings.Contains(o.String(), "usage:") {
		t.Errorf("help: %d %q", code, o.String())
	}
}
