package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
)

func TestRandomUUIDCommand(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		var out bytes.Buffer
		if err := dispatch([]string{"random-uuid"}, &out, &out); err != nil {
			t.Fatal(err)
		}
		s := strings.TrimSuffix(out.String(), "\n")
		if len(s) != 22 || strings.HasPrefix(s, "-") || seen[s] {
			t.Fatalf("random-uuid printed %q", out.String())
		}
		if _, err := nvme.ParseUUID(s); err != nil {
			t.Fatal(err)
		}
		seen[s] = true
	}
	if err := dispatch([]string{"random-uuid", "x"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("random-uuid with an argument: no error")
	}
}

func TestVersionAndHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if err := dispatch([]string{"--version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "ringbroker ") {
		t.Errorf("--version: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := dispatch([]string{"--help"}, &out, &errb); err != nil || !strings.Contains(errb.String(), "ringbroker format --cluster-id") ||
		!strings.Contains(errb.String(), "ringbroker random-uuid") {
		t.Errorf("--help: %q, %v", errb.String(), err)
	}
	errb.Reset()
	if err := dispatch([]string{"format", "--help"}, &out, &errb); err != nil || !strings.Contains(errb.String(), "-ignore-formatted") {
		t.Errorf("format --help: %q, %v", errb.String(), err)
	}
}

// writeProps writes a server.properties with log.dirs and extra lines.
func writeProps(t *testing.T, dirs string, extra ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	body := "node.id=3\nlisteners=PLAINTEXT://127.0.0.1:9092\nlog.dirs=" + dirs + "\n" + strings.Join(extra, "\n") + "\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFormat: format writes meta.properties into every log dir with one
// cluster.id and node.id and a directory.id each, refuses a formatted dir
// unless --ignore-formatted, and checks the cluster id and the config.
func TestFormat(t *testing.T) {
	const cid = "MkU3OEVBNTcwNTJENDM2Qg"
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	props := writeProps(t, a+","+b)
	format := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := dispatch(append([]string{"format"}, args...), &out, &errb)
		return out.String() + errb.String(), err
	}

	out, err := format("--cluster-id", cid, props)
	if err != nil {
		t.Fatalf("format: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Formatting metadata directory "+a) || !strings.Contains(out, "Formatting data directory "+b) {
		t.Errorf("format output:\n%s", out)
	}
	ma, err1 := nvme.ReadMetaProperties(a)
	mb, err2 := nvme.ReadMetaProperties(b)
	if err1 != nil || err2 != nil || ma.ClusterID != cid || mb.ClusterID != cid || ma.NodeID != 3 || mb.NodeID != 3 ||
		ma.Version != 1 || ma.DirectoryID.IsZero() || mb.DirectoryID.IsZero() || ma.DirectoryID == mb.DirectoryID {
		t.Fatalf("meta.properties %+v (%v), %+v (%v)", ma, err1, mb, err2)
	}
	data, _ := os.ReadFile(filepath.Join(a, nvme.MetaPropertiesFile))
	if !strings.HasPrefix(string(data), "#\n#") || !strings.Contains(string(data), "\nversion=1\n") {
		t.Errorf("meta.properties:\n%s", data)
	}

	// Formatted: refused, naming the directory and the flag; nothing changed.
	if out, err := format("-t", cid, "--config", props); err == nil || !strings.Contains(err.Error(), a+" is already formatted") ||
		!strings.Contains(err.Error(), "--ignore-formatted") {
		t.Errorf("second format: %v\n%s", err, out)
	}
	if again, _ := nvme.ReadMetaProperties(a); again != ma {
		t.Errorf("a refused format changed %s: %+v, was %+v", a, again, ma)
	}
	if out, err := format("--ignore-formatted", "--cluster-id", cid, props); err != nil || !strings.Contains(out, "All of the log directories are already formatted.") {
		t.Errorf("--ignore-formatted on formatted dirs: %v\n%s", err, out)
	}
	// --ignore-formatted formats a new, empty directory and keeps the others.
	c := filepath.Join(root, "c")
	if out, err := format("-g", "--cluster-id", cid, "--override", "log.dirs="+a+","+b+","+c, props); err != nil ||
		!strings.Contains(out, "Formatting data directory "+c) || strings.Contains(out, "directory "+a) {
		t.Errorf("--ignore-formatted with a new dir: %v\n%s", err, out)
	}
	if mc, err := nvme.ReadMetaProperties(c); err != nil || mc.ClusterID != cid || mc.DirectoryID == ma.DirectoryID || mc.DirectoryID == mb.DirectoryID {
		t.Errorf("new dir: %+v, %v", mc, err)
	}
	// Another cluster or node on formatted dirs: refused even with --ignore-formatted.
	if _, err := format("-g", "--cluster-id", "QUFBQUFBQUFBQUFBQUFBQQ", props); err == nil || !strings.Contains(err.Error(), "cluster.id") {
		t.Errorf("another cluster id: %v", err)
	}
	if _, err := format("-g", "--cluster-id", cid, "--override", "node.id=4", props); err == nil || !strings.Contains(err.Error(), "node.id") {
		t.Errorf("another node id: %v", err)
	}

	for _, c := range []struct {
		args []string
		bad  string
	}{
		{[]string{props}, "cluster id"},
		{[]string{"--cluster-id", "test-cluster", props}, "does not appear to be a valid UUID"},
		{[]string{"--cluster-id", cid + "AA", props}, "does not appear to be a valid UUID"},
		{[]string{"--cluster-id", cid}, "missing the server.properties"},
		{[]string{"--cluster-id", cid, props, "--config", props + ".other"}, "two properties files"},
		{[]string{"--cluster-id", cid, filepath.Join(root, "none.properties")}, "cannot open config"},
		{[]string{"--cluster-id", cid, "--override", "controller.quorum.voters=1@h:1", props}, "controller"},
		{[]string{"--initial-controllers", "1@h:1:" + cid, "--cluster-id", cid, props}, "flag provided but not defined"},
	} {
		if out, err := format(c.args...); err == nil || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("format %q: %v, want an error containing %q\n%s", c.args, err, c.bad, out)
		}
	}
}

// TestFormatQuorumFlags: Kafka's rules for --standalone and
// --no-initial-controllers, so that Kafka 4's quickstart line
// (format --standalone -t <id> -c server.properties) runs.
func TestFormatQuorumFlags(t *testing.T) {
	const cid = "MkU3OEVBNTcwNTJENDM2Qg"
	dynamic := []string{"process.roles=broker,controller", "controller.quorum.bootstrap.servers=127.0.0.1:9093",
		"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names=CONTROLLER"}
	for _, c := range []struct {
		name  string
		extra []string
		args  []string
		bad   string
	}{
		{name: "kafka 4 quickstart", extra: dynamic, args: []string{"--standalone"}},
		{name: "short flags", extra: dynamic, args: []string{"-s"}},
		{name: "joining controller", extra: dynamic, args: []string{"--no-initial-controllers"}},
		{name: "dynamic controller without a flag", extra: dynamic, bad: "give --standalone"},
		{name: "both flags", extra: dynamic, args: []string{"-s", "-N"}, bad: "exclude each other"},
		{name: "static voters", extra: []string{"controller.quorum.voters=3@127.0.0.1:9093", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
			"controller.listener.names=CONTROLLER"}, args: []string{"--standalone"}, bad: "remove controller.quorum.voters"},
		{name: "static voters without a flag", extra: []string{"controller.quorum.voters=3@127.0.0.1:9093", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
			"controller.listener.names=CONTROLLER"}},
		{name: "broker-only", extra: []string{"process.roles=broker", "controller.quorum.bootstrap.servers=127.0.0.1:9093", "controller.listener.names=CONTROLLER"},
			args: []string{"--standalone"}, bad: "controller role"},
		{name: "one-voter node without flags", extra: nil},
		{name: "one-voter node standalone", extra: nil, args: []string{"--standalone"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			props := writeProps(t, dir, c.extra...)
			var out bytes.Buffer
			err := dispatch(append([]string{"format", "-t", cid, "-c", props}, c.args...), &out, &out)
			if c.bad != "" {
				if err == nil || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("got %v, want an error containing %q\n%s", err, c.bad, out.String())
				}
				if _, err := nvme.ReadMetaProperties(dir); err == nil {
					t.Fatal("a refused format wrote meta.properties")
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if m, err := nvme.ReadMetaProperties(dir); err != nil || m.ClusterID != cid || m.NodeID != 3 {
				t.Fatalf("meta.properties %+v, %v", m, err)
			}
		})
	}
}
