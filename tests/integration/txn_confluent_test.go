package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTxnConfluentPython runs testdata/txn_confluent.py (confluent-kafka,
// librdkafka): a committed transaction of 10 records and an aborted one of
// 5, read back read_committed (10) and read_uncommitted (15), and
// send_offsets_to_transaction moving a group's offsets only on commit.
// kcat then reads the topic: with isolation.level=read_uncommitted all 17
// records (the 15, the aborted and the committed one that carried offsets),
// with read_committed (librdkafka's default) the 11 committed ones.
func TestTxnConfluentPython(t *testing.T) {
	py := needTool(t, systemPython, "-c", "import confluent_kafka")
	kcat := needTool(t, "kcat", "-V")
	script, err := filepath.Abs(filepath.Join("testdata", "txn_confluent.py"))
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, "", txnBrokerOverrides...)
	out := runTool(t, 3*time.Minute, "", py, script, b.Addr, "pytxn")
	t.Logf("txn_confluent.py:\n%s", out)
	if !strings.Contains(out, "OK") {
		t.Fatalf("txn_confluent.py did not finish")
	}
	count := func(isolation string) (int, string) {
		o := runTool(t, time.Minute, "", kcat, "-b", b.Addr, "-C", "-t", "pytxn-out", "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+isolation)
		lines := strings.Split(strings.TrimSpace(o), "\n")
		return len(lines), o
	}
	for _, c := range []struct {
		isolation string
		want      int
	}{{"read_uncommitted", 17}, {"read_committed", 11}} {
		n, o := count(c.isolation)
		if n != c.want {
			t.Errorf("kcat %s: %d records, want %d:\n%s", c.isolation, n, c.want, o)
		}
		if c.isolation == "read_committed" && strings.Contains(o, "aborted") {
			t.Errorf("kcat read_committed shows aborted records:\n%s", o)
		}
	}
}
