package main

import (
	"bytes"
	"strings"
	"testing"

	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kgo"

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
		if code := run(args, strings.NewReader(""), &o, &e); code != exitUsage || exitUsage != 2 {
			t.Errorf("ringctl %v: exit %d, want %d (stderr %q)", args, code, exitUsage, e.String())
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"help"}, nil, &o, &e); code != 0 || !strings.Contains(o.String(), "usage:") {
		t.Errorf("help: %d %q", code, o.String())
	}
}

// everyCommand lists each command's words, for the help tests.
func everyCommand() [][]string {
	var all [][]string
	for noun, vs := range commands {
		for verb := range vs {
			all = append(all, []string{noun, verb})
		}
	}
	for v := range verbs {
		all = append(all, []string{v})
	}
	return all
}

// TestHelpNeverActs checks that --help, -h and `help` print the command's
// help on stdout with status 0 and never reach a broker: the broker address
// is one nothing listens on, so any attempt would exit 3, and connect refuses
// in help mode.
func TestHelpNeverActs(t *testing.T) {
	t.Setenv("RINGCTL_BROKERS", "127.0.0.1:1")
	for _, words := range everyCommand() {
		for _, form := range [][]string{
			append(append([]string{}, words...), "--help"),
			append(append([]string{}, words...), "help-me", "-h"),
			append([]string{"help"}, words...),
			append(append([]string{"-h"}, words...), "--partitions", "3"),
		} {
			var o, e bytes.Buffer
			code := run(form, strings.NewReader(""), &o, &e)
			if code != exitOK || !strings.Contains(o.String(), "usage: ringctl "+strings.Join(words, " ")) || e.Len() != 0 {
				t.Errorf("ringctl %v: exit %d, stdout %q, stderr %q; want 0 and the command's usage", form, code, o.String(), e.String())
			}
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"topic", "create", "--help"}, nil, &o, &e); code != 0 || !strings.Contains(o.String(), "-partitions") {
		t.Errorf("topic create --help lists no flags: %q", o.String())
	}
	o.Reset()
	if code := run([]string{"topic", "-h"}, nil, &o, &e); code != 0 || !strings.Contains(o.String(), "ringctl topic delete") {
		t.Errorf("topic -h: %d %q", code, o.String())
	}
}

// TestUnknownFlagAndMissingArgs checks usage errors exit 2 with the command's
// usage on stderr.
func TestUnknownFlagAndMissingArgs(t *testing.T) {
	for _, args := range [][]string{
		{"topic", "create", "t", "--partitionz", "3"},
		{"topic", "delete"},
		{"topic", "describe"},
		{"group", "describe"},
		{"consume"},
		{"log-dirs", "--topik", "t"},
	} {
		var o, e bytes.Buffer
		code := run(args, strings.NewReader(""), &o, &e)
		if code != 2 || !strings.Contains(e.String(), "usage: ringctl "+args[0]) {
			t.Errorf("ringctl %v: exit %d, stderr %q; want 2 and the usage", args, code, e.String())
		}
	}
}

func TestProtocolLabel(t *testing.T) {
	for _, c := range [][3]string{{"consumer", "", "consumer"}, {"consumer", "range", "consumer/range"}, {"", "x", "x"}, {"", "", ""}} {
		if got := protocolLabel(c[0], c[1]); got != c[2] {
			t.Errorf("protocolLabel(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// TestConnectionClosedMessage checks that a broker closing the connection
// mid-request is reported as such, not as a SASL hint, with status 3.
func TestConnectionClosedMessage(t *testing.T) {
	e := &env{brokers: []string{"h:1"}}
	for _, err := range []error{&kgo.ErrFirstReadEOF{}, io.EOF, fmt.Errorf("read: %w", io.ErrUnexpectedEOF)} {
		got := e.reqErr("list topics", err)
		ee, ok := got.(*exitError)
		if !ok || ee.code != exitUnreachable || !strings.Contains(ee.msg, "connection closed by broker") || strings.Contains(ee.msg, "SASL") {
			t.Errorf("reqErr(%v) = %v, want status 3 and \"connection closed by broker\"", err, got)
		}
	}
}
