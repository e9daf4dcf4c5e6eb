package harness

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterProcessControl starts three formatted combined nodes with a
// controller.quorum.voters of all three on 127.0.0.1-3 and drives each
// process fault the harness offers, checking that the harness sees it.
func TestClusterProcessControl(t *testing.T) {
	c := New(t, Options{Nodes: 3, Hosts: LoopbackHosts(3), Props: smallProps})
	if len(c.ID) != 22 {
		t.Fatalf("cluster id %q is not a 22-character Kafka UUID", c.ID)
	}
	voters := strings.Split(c.Voters(), ",")
	if len(voters) != 3 {
		t.Fatalf("voters %q, want 3", c.Voters())
	}
	for i, n := range c.Nodes {
		host := fmt.Sprintf("127.0.0.%d", i+1)
		if want := fmt.Sprintf("%d@%s:%d", i+1, host, n.Config.ControllerPort); voters[i] != want {
			t.Errorf("voter %d is %q, want %q", i, voters[i], want)
		}
		if n.Addr() != fmt.Sprintf("%s:%d", host, n.Config.Port) {
			t.Errorf("node %d listens on %s, want host %s", n.ID(), n.Addr(), host)
		}
		meta, err := os.ReadFile(filepath.Join(n.Config.LogDirs[0], "meta.properties"))
		if err != nil {
			t.Fatalf("node %d not formatted: %v", n.ID(), err)
		}
		for _, want := range []string{"cluster.id=" + c.ID, fmt.Sprintf("node.id=%d", n.ID())} {
			if !strings.Contains(string(meta), want) {
				t.Errorf("node %d meta.properties lacks %q:\n%s", n.ID(), want, meta)
			}
		}
		if !n.Running() || n.Stopped() {
			t.Errorf("node %d: running %v, state %q", n.ID(), n.Running(), n.State())
		}
	}

	// kill -9: the harness sees the signal, the port goes dead, the others
	// keep serving, and a start brings the node back on its directory.
	n2 := c.Node(2)
	pid := n2.Pid()
	n2.Kill()
	if n2.Running() || n2.Exit().Signal != syscall.SIGKILL {
		t.Fatalf("after Kill: running %v, exit %s", n2.Running(), n2.Exit())
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("process %d still exists after Kill", pid)
	}
	if err := probe(n2, time.Second); err == nil {
		t.Fatal("a killed node answers ApiVersions")
	}
	for _, id := range []int32{1, 3} {
		if err := probe(c.Node(id), 5*time.Second); err != nil {
			t.Fatalf("node %d after node 2 died: %v", id, err)
		}
	}
	n2.Start()
	n2.MustReady()
	if n2.Pid() == pid || len(n2.LogPaths()) != 2 {
		t.Errorf("restart: pid %d (was %d), logs %v", n2.Pid(), pid, n2.LogPaths())
	}

	// SIGSTOP: the process lives and holds its port, but answers nothing;
	// SIGCONT brings the answers back.
	n3 := c.Node(3)
	n3.Stop()
	if !n3.Running() || !n3.Stopped() {
		t.Fatalf("after Stop: running %v, state %q", n3.Running(), n3.State())
	}
	if err := probe(n3, 500*time.Millisecond); err == nil {
		t.Fatal("a stopped node answers ApiVersions")
	}
	n3.Cont()
	if err := n3.WaitReady(10 * time.Second); err != nil {
		t.Fatalf("after Cont: %v", err)
	}
	if n3.Stopped() {
		t.Fatalf("after Cont: state %q", n3.State())
	}

	// SIGTERM: a clean shutdown, exit status 0; Restart starts it again.
	n1 := c.Node(1)
	info, err := n1.Terminate(30 * time.Second)
	if err != nil || info.Code != 0 || info.Signal != 0 {
		t.Fatalf("Terminate: %s, %v\n%s", info, err, n1.Tail())
	}
	if !strings.Contains(n1.Log(), "ringbroker stopped") {
		t.Errorf("node 1's log does not show a clean stop:\n%s", n1.Tail())
	}
	n1.Restart()
	if errs := c.Probe(context.Background()); len(errs) > 0 {
		t.Fatalf("after the faults: %v", errs)
	}
}

func probe(n *Node, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return n.Probe(ctx)
}

// TestVerifyAckedAfterKill produces to a standalone node with acks=all,
// kills it with SIGKILL, restarts it and checks that every acknowledged
// record is read back, as VerifyAcked and as a porcupine history; and that
// the verifier reports records that are not there.
func TestVerifyAckedAfterKill(t *testing.T) {
	props := map[string]string{"num.partitions": "3"}
	for k, v := range smallProps {
		props[k] = v
	}
	c := New(t, Options{Nodes: 1, Standalone: true, Props: props})
	n := c.Nodes[0]
	if c.ID != "" || c.Voters() != "" {
		t.Fatalf("a standalone cluster has id %q and voters %q", c.ID, c.Voters())
	}
	const topic, records = "verify", 300
	hist := NewHistory()
	rec := &Recorder{History: hist}
	cl := NewProducer(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range records {
		rec.Produce(ctx, cl, &kgo.Record{Topic: topic, Partition: int32(i % 3), Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v-%d", i))})
	}
	if err := rec.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	acks := rec.Acks()
	if len(acks) != records || len(rec.Failed()) != 0 {
		t.Fatalf("%d acknowledged, %d failed (%v), want %d acknowledged", len(acks), len(rec.Failed()), rec.Failed(), records)
	}
	n.Kill()
	n.Start()
	n.MustReady()
	adm := NewAdmin(t, c.Bootstrap())
	Eventually(t, 30*time.Second, 0, func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		if got := len(td[topic].Partitions); got != 3 {
			return fmt.Errorf("topic %s has %d partitions after the restart, want 3", topic, got)
		}
		return nil
	})
	v := RequireAcked(t, 30*time.Second, c.Bootstrap(), acks)
	if v.Checked != records || v.Read < records {
		t.Errorf("verification checked %d and read %d, want %d", v.Checked, v.Read, records)
	}

	// The reads go into the history, which porcupine checks against the
	// log model: every acknowledged offset read back with its value.
	for i, a := range acks {
		call := hist.Invoke(1+i%4, ReadInput{Topic: a.Topic, Partition: a.Partition, Offset: a.Offset})
		call.Return(ReadOutput{Found: true, Value: a.Value})
	}
	if !porcupine.CheckOperations(LogModel, hist.Operations()) {
		t.Error("porcupine: the produce and read history is not linearizable")
	}

	// The verifier must see a record that is not there and one that is
	// different.
	last := acks[len(acks)-1]
	bad := []Ack{
		{Topic: topic, Partition: last.Partition, Offset: last.Offset + 5, Value: "never written"},
		{Topic: topic, Partition: acks[0].Partition, Offset: acks[0].Offset, Key: acks[0].Key, Value: "changed"},
	}
	vctx, vcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer vcancel()
	got, err := VerifyAcked(vctx, c.Bootstrap(), bad)
	if err != nil {
		t.Fatal(err)
	}
	if got.OK() || len(got.Missing) != 1 || len(got.Mismatched) != 1 || got.Missing[0] != bad[0] || got.Mismatched[0] != bad[1] {
		t.Fatalf("verifier on a missing and a changed record: %s", got)
	}
	// And a false history: the same offset read back with another value.
	call := hist.Invoke(9, ReadInput{Topic: last.Topic, Partition: last.Partition, Offset: last.Offset})
	call.Return(ReadOutput{Found: true, Value: "changed"})
	if porcupine.CheckOperations(LogModel, hist.Operations()) {
		t.Error("porcupine accepts a read of a value that was never written")
	}
}

// TestBrokerOnlyNode starts one combined controller and one broker-only
// node (Options.Controllers): the broker is no voter and has no controller
// listener.
func TestBrokerOnlyNode(t *testing.T) {
	c := New(t, Options{Nodes: 2, Controllers: 1, Props: smallProps, Metrics: true})
	ctl, br := c.Node(1), c.Node(2)
	for _, n := range c.Nodes {
		resp, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatalf("node %d metrics: %v", n.ID(), err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("node %d /metrics: %s", n.ID(), resp.Status)
		}
	}
	if want := fmt.Sprintf("1@%s", ctl.ControllerAddr()); c.Voters() != want {
		t.Fatalf("voters %q, want %q", c.Voters(), want)
	}
	p := br.Config.PropertyMap()
	if p["process.roles"] != "broker" || strings.Contains(p["listeners"], "CONTROLLER") || p["controller.quorum.voters"] != c.Voters() {
		t.Fatalf("broker-only node's properties: %v", p)
	}
	if !strings.Contains(ctl.Config.PropertyMap()["listeners"], "CONTROLLER://"+ctl.ControllerAddr()) {
		t.Fatalf("controller's listeners: %v", ctl.Config.PropertyMap()["listeners"])
	}
	br.Kill()
	br.Restart()
}
