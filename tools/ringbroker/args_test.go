package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestParseArgs: the properties file may sit anywhere among the flags,
// and a stray word is refused instead of silently ending flag parsing
// (found by the fresh-user test: `make run ARGS="topic --override
// io.engine=uring"` started a netpoll broker).
func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		file string
		ovs  string
		bad  string // part of the error, "" for none
	}{
		{args: nil},
		{args: []string{"s.properties"}, file: "s.properties"},
		{args: []string{"s.properties", "--override", "a=1", "--print-topology"}, file: "s.properties", ovs: "a=1"},
		{args: []string{"--override", "a=1", "s.properties", "--override", "b=2"}, file: "s.properties", ovs: "a=1,b=2"},
		{args: []string{"s.properties", "--override", "a=1", "stray", "--override", "b=2"}, bad: `"stray"`},
		{args: []string{"s.properties", "stray", "--override", "io.engine=uring"}, bad: `"stray"`},
		{args: []string{"--override", "a=1", "s.properties", "t.properties"}, bad: `"t.properties"`},
		{args: []string{"s.properties", "--override", "novalue"}, bad: "not key=value"},
		{args: []string{"s.properties", "--override", "=x"}, bad: "empty key"},
		{args: []string{"s.properties", "--override", " =x"}, bad: "empty key"},
	} {
		fs := flag.NewFlagSet("ringbroker", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var ovs overrides
		fs.Var(&ovs, "override", "")
		fs.Bool("print-topology", false, "")
		file, err := parseArgs(fs, c.args)
		switch {
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%q: error %v, want one naming %s", c.args, err, c.bad)
		case c.bad == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.bad == "" && (file != c.file || ovs.String() != c.ovs):
			t.Errorf("%q: file %q overrides %q, want %q and %q", c.args, file, ovs.String(), c.file, c.ovs)
		}
	}
}
