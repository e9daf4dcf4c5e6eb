package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Environment of the transaction helper processes (TestTxnHelper).
const (
	txnHelperEnv      = "RB_TXN_HELPER" // "eos" or "producer"
	txnHelperAddrEnv  = "RB_TXN_HELPER_ADDR"
	txnHelperInEnv    = "RB_TXN_HELPER_IN"
	txnHelperOutEnv   = "RB_TXN_HELPER_OUT"
	txnHelperGroupEnv = "RB_TXN_HELPER_GROUP"
	txnHelperIDEnv    = "RB_TXN_HELPER_ID"
)

// txnBrokerOverrides make transaction tests quick: timed-out transactions
// are looked for every 200 ms, groups rebalance without delay.
var txnBrokerOverrides = []string{"group.initial.rebalance.delay.ms=0", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200"}

// txnClient is a transactional franz-go client (idempotence on).
func txnClient(t testing.TB, b *Broker, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(b.Addr), kgo.TransactionalID(id), kgo.DialTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(10 * time.Second), kgo.RetryTimeout(30 * time.Second),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// readCommitted returns a consumer of topic from the start with the given isolation.
func isolatedConsumer(t testing.TB, b *Broker, topic string, partitions int32, committed bool) *kgo.Client {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	return newClient(t, b, kgo.ConsumePartitions(startOffsets(topic, partitions)), kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(200*time.Millisecond))
}

// drain consumes until nothing new arrives for quiet.
func drain(ctx context.Context, cl *kgo.Client, quiet time.Duration) []*kgo.Record {
	var got []*kgo.Record
	for {
		c, cancel := context.WithTimeout(ctx, quiet)
		fs := cl.PollFetches(c)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r); n++ })
		if n == 0 && (c.Err() != nil || ctx.Err() != nil) {
			return got
		}
	}
}

func produceTxn(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, prefix string, n int, commit bool) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", prefix, i, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("EndTransaction(commit=%v): %v", commit, err)
	}
}

// TestTxnFranzCommitAbort: a committed transaction of 10 and an aborted
// one of 5; read_committed sees the 10, read_uncommitted all 15; an open
// transaction holds the last stable offset (ListOffsets read_committed)
// back; DescribeProducers, DescribeTransactions and ListTransactions show
// it; a produce to a partition outside the transaction is refused.
func TestTxnFranzCommitAbort(t *testing.T) {
	b := startBroker(t, "", txnBrokerOverrides...)
	ctx := t.Context()
	const topic = "txn-basic"
	createTopic(t, ctx, b, topic, 3)
	cl := txnClient(t, b, "tx-basic", kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceTxn(t, ctx, cl, topic, "commit", 10, true)
	produceTxn(t, ctx, cl, topic, "abort", 5, false)

	rc := drain(ctx, isolatedConsumer(t, b, topic, 3, true), 2*time.Second)
	ru := drain(ctx, isolatedConsumer(t, b, topic, 3, false), 2*time.Second)
	if len(rc) != 10 || len(ru) != 15 {
		t.Fatalf("read_committed %d records (want 10), read_uncommitted %d (want 15)", len(rc), len(ru))
	}
	for _, r := range rc {
		if !strings.HasPrefix(string(r.Value), "commit-") {
			t.Fatalf("read_committed returned %q", r.Value)
		}
	}

	// An open transaction: the LSO stays at its first offset.
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := newAdmin(t, b)
	committed, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	c0, _ := committed.Lookup(topic, 0)
	e0, _ := end.Lookup(topic, 0)
	if c0.Offset != e0.Offset-1 {
		t.Fatalf("partition 0: read_committed end %d, want log end %d - 1 (open transaction)", c0.Offset, e0.Offset)
	}
	// The newest record (max timestamp, KIP-734) is the open one: a
	// read_committed ListOffsets does not answer it, as Kafka filters
	// offsets past the last stable offset; read_uncommitted does.
	for _, iso := range []int8{0, 1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.IsolationLevel = 7, iso
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, -3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, newClient(t, b))
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Topics[0].Partitions[0]
		want := e0.Offset - 1
		if iso == 1 {
			want = -1
		}
		if got.ErrorCode != 0 || got.Offset != want {
			t.Fatalf("ListOffsets max timestamp, isolation %d: offset %d, error %d; want %d", iso, got.Offset, got.ErrorCode, want)
		}
	}
	txs, err := adm.DescribeTransactions(ctx, "tx-basic")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := txs["tx-basic"]
	if !ok || d.State != "Ongoing" || len(d.Topics[topic]) != 1 {
		t.Fatalf("DescribeTransactions: %+v", txs)
	}
	prods, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var open int
	prods.EachProducer(func(p kadm.DescribedProducer) {
		if p.ProducerID == d.ProducerID && p.CurrentTxnStartOffset == e0.Offset-1 {
			open++
		}
	})
	if open != 1 {
		t.Fatalf("DescribeProducers: no open transaction of producer %d at %d: %+v", d.ProducerID, e0.Offset-1, prods)
	}
	lt, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lt["tx-basic"]; !ok || len(lt) != 1 {
		t.Fatalf("ListTransactions Ongoing: %+v", lt)
	}

	// A transactional produce to a partition that is not in the transaction.
	raw := kmsg.NewPtrProduceRequest()
	raw.TransactionID = kmsg.StringPtr("tx-basic")
	raw.Acks = -1
	raw.TimeoutMillis = 5000
	rb := kmsg.RecordBatch{FirstOffset: 0, Magic: 2, Attributes: 0x10, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch,
		FirstSequence: 0, NumRecords: 1, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(), LastOffsetDelta: 0,
		Records: encodeRecord(kmsg.Record{Value: []byte("x")})}
	raw.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 2, Records: fixedBatch(rb)}}}}
	resp, err := raw.RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce outside the transaction: error %d, want INVALID_TXN_STATE", code)
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "read_committed end offsets at the log end", func() bool {
		c, err1 := adm.ListCommittedOffsets(ctx, topic)
		e, err2 := adm.ListEndOffsets(ctx, topic)
		if err1 != nil || err2 != nil {
			return false
		}
		for p := range int32(3) {
			co, _ := c.Lookup(topic, p)
			eo, _ := e.Lookup(topic, p)
			if co.Offset != eo.Offset {
				return false
			}
		}
		return true
	})
}

// encodeRecord encodes one record with its length prefix.
func encodeRecord(r kmsg.Record) []byte {
	body := r.AppendTo(nil)[1:] // encoded with length 0 (one varint byte)
	return append(appendVarint(nil, int64(len(body))), body...)
}

// fixedBatch encodes rb with its length and CRC filled in.
func fixedBatch(rb kmsg.RecordBatch) []byte {
	raw := rb.AppendTo(nil)
	fixBatch(raw)
	return raw
}

// TestTxnHelper is not a test: it is the child process of the transaction
// tests (the test binary re-executed with RB_TXN_HELPER set), killed with
// SIGKILL by its parent.
//
//	eos:      a GroupTransactSession copying RB_TXN_HELPER_IN to
//	          RB_TXN_HELPER_OUT, printing "C <n>" after each commit of n records;
//	producer: opens a transaction (timeout 2 s), produces 20 records to
//	          RB_TXN_HELPER_OUT, prints "P" once they are acknowledged and waits.
func TestTxnHelper(t *testing.T) {
	mode := os.Getenv(txnHelperEnv)
	if mode == "" {
		t.Skip("helper process for the transaction tests")
	}
	addr, in, out := os.Getenv(txnHelperAddrEnv), os.Getenv(txnHelperInEnv), os.Getenv(txnHelperOutEnv)
	w := bufio.NewWriter(os.Stdout)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	switch mode {
	case "producer":
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(os.Getenv(txnHelperIDEnv)),
			kgo.TransactionTimeout(2*time.Second), kgo.DefaultProduceTopic(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "doomed-%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintln(w, "P")
		w.Flush()
		<-ctx.Done()
	case "eos":
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(addr), kgo.TransactionalID(os.Getenv(txnHelperIDEnv)), kgo.TransactionTimeout(20*time.Second),
			kgo.ConsumerGroup(os.Getenv(txnHelperGroupEnv)), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond), kgo.RebalanceTimeout(10*time.Second),
			kgo.FetchMaxPartitionBytes(32<<10), kgo.RequireStableFetchOffsets(), kgo.DefaultProduceTopic(out),
		)
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		for ctx.Err() == nil {
			fs := sess.PollFetches(ctx)
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Fatalf("Begin: %v", err)
			}
			for _, r := range recs {
				sess.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%d:%d", r.Partition, r.Offset), Value: r.Value}, nil)
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				fmt.Fprintf(os.Stderr, "End: %v\n", err)
				continue
			}
			if committed {
				fmt.Fprintf(w, "C %d\n", len(recs))
				w.Flush()
			}
		}
	}
}

// startTxnHelper starts TestTxnHelper in mode; lines is fed its stdout.
func startTxnHelper(t *testing.T, b *Broker, mode string, env map[string]string, lines chan<- string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTxnHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), txnHelperEnv+"="+mode, txnHelperAddrEnv+"="+b.Addr)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start helper: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return cmd, exited
}

// TestTxnFranzExactlyOnce: a franz-go GroupTransactSession copies 100,000
// records between topics while its process is killed with SIGKILL three
// times and restarted; a read_committed consumer of the output sees every
// input record exactly once.
func TestTxnFranzExactlyOnce(t *testing.T) {
	const (
		partitions = 6
		total      = 100_000
		in, out    = "eos-in", "eos-out"
	)
	b := startBroker(t, "", txnBrokerOverrides...)
	ctx := t.Context()
	createTopic(t, ctx, b, in, partitions)
	createTopic(t, ctx, b, out, partitions)
	produceSpread(t, b, in, partitions, 0, total)
	env := map[string]string{txnHelperInEnv: in, txnHelperOutEnv: out, txnHelperGroupEnv: "eos-group", txnHelperIDEnv: "eos-txn"}

	var mu sync.Mutex
	committed := 0
	lines := make(chan string, 1024)
	go func() {
		for l := range lines {
			if n, ok := strings.CutPrefix(l, "C "); ok {
				k, _ := strconv.Atoi(n)
				mu.Lock()
				committed += k
				mu.Unlock()
			}
		}
	}()
	defer close(lines)
	progress := func() int { mu.Lock(); defer mu.Unlock(); return committed }
	for kill, at := range []int{15_000, 40_000, 65_000} {
		cmd, exited := startTxnHelper(t, b, "eos", env, lines)
		waitFor(t, 3*time.Minute, fmt.Sprintf("%d committed records before kill %d", at, kill+1), func() bool { return progress() >= at })
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		t.Logf("kill %d after %d records committed (counted by helpers)", kill+1, progress())
	}
	startTxnHelper(t, b, "eos", env, lines)

	cons := isolatedConsumer(t, b, out, partitions, true)
	seen := map[string]int{}
	dups := 0
	deadline := time.Now().Add(4 * time.Minute)
	for len(seen) < total && time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cons.PollFetches(c)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Key)]++
			if seen[string(r.Key)] > 1 {
				dups++
			}
		})
	}
	if len(seen) != total || dups != 0 {
		t.Fatalf("read_committed output: %d distinct input records of %d, %d duplicates", len(seen), total, dups)
	}
	// Nothing more arrives (no duplicate after the last one either).
	if extra := drain(ctx, cons, 2*time.Second); len(extra) != 0 {
		t.Fatalf("%d more records after all %d", len(extra), total)
	}
	adm := newAdmin(t, b)
	uc, err := adm.ListEndOffsets(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	uc.Each(func(o kadm.ListedOffset) { stored += o.Offset })
	t.Logf("output log holds %d offsets (records of aborted transactions and markers included) for %d records", stored, total)
}

// TestTxnKilledProducerTimesOut: a transactional producer killed with
// SIGKILL mid-transaction; the coordinator aborts it after
// transaction.timeout.ms and read_committed consumers move past it.
func TestTxnKilledProducerTimesOut(t *testing.T) {
	b := startBroker(t, "", txnBrokerOverrides...)
	ctx := t.Context()
	const topic = "txn-doomed"
	createTopic(t, ctx, b, topic, 1)
	lines := make(chan string, 16)
	cmd, exited := startTxnHelper(t, b, "producer", map[string]string{txnHelperOutEnv: topic, txnHelperIDEnv: "doomed"}, lines)
	select {
	case <-lines:
	case <-time.After(time.Minute):
		t.Fatal("helper produced nothing")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	killed := time.Now()

	// Committed records after the doomed ones, from another producer.
	cl := txnClient(t, b, "survivor", kgo.DefaultProduceTopic(topic))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "ok-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cons := isolatedConsumer(t, b, topic, 1, true)
	got := consumeN(t, ctx, cons, 5, time.Minute)
	took := time.Since(killed)
	for _, r := range got {
		if !strings.HasPrefix(string(r.Value), "ok-") {
			t.Fatalf("read_committed returned %q", r.Value)
		}
	}
	if extra := drain(ctx, cons, time.Second); len(extra) != 0 {
		t.Fatalf("read_committed returned %d more records", len(extra))
	}
	t.Logf("read_committed moved past the killed transaction %v after the kill", took.Round(time.Millisecond))
	txs, err := newAdmin(t, b).DescribeTransactions(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if s := txs["doomed"].State; s != "CompleteAbort" {
		t.Fatalf("doomed transaction state %q, want CompleteAbort", s)
	}
}

// TestTxnBrokerRestart: the broker is killed (SIGKILL) with one transaction
// open and one just committed, and stopped cleanly with another open; after
// each restart the committed one stays committed and the open ones are
// aborted after their timeout, while their producers are fenced.
func TestTxnBrokerRestart(t *testing.T) {
	b := startBroker(t, "", txnBrokerOverrides...)
	ctx := t.Context()
	const topic = "txn-restart"
	createTopic(t, ctx, b, topic, 3)
	for round, how := range []string{"kill", "stop"} {
		done := txnClient(t, b, fmt.Sprintf("done-%d", round), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		produceTxn(t, ctx, done, topic, fmt.Sprintf("committed%d", round), 6, true)
		open := txnClient(t, b, fmt.Sprintf("open-%d", round), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(3*time.Second),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := open.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			if err := open.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, "open%d-%d", round, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if how == "kill" {
			b.Kill()
			b.Start()
		} else {
			b.Restart()
		}
		adm := newAdmin(t, b)
		waitFor(t, 30*time.Second, "the open transaction aborted after the restart", func() bool {
			txs, err := adm.DescribeTransactions(ctx, fmt.Sprintf("open-%d", round))
			return err == nil && txs[fmt.Sprintf("open-%d", round)].State == "CompleteAbort"
		})
		rc := drain(ctx, isolatedConsumer(t, b, topic, 3, true), 2*time.Second)
		want := 6 * (round + 1)
		if len(rc) != want {
			t.Fatalf("round %d (%s): read_committed %d records, want %d", round, how, len(rc), want)
		}
		for _, r := range rc {
			if !strings.HasPrefix(string(r.Value), "committed") {
				t.Fatalf("read_committed returned %q", r.Value)
			}
		}
		// The old producer is fenced: its commit fails.
		err := open.EndTransaction(ctx, kgo.TryCommit)
		var ke *kerr.Error
		if err == nil || !(errors.As(err, &ke) || strings.Contains(err.Error(), "FENCED") || strings.Contains(err.Error(), "EPOCH")) {
			t.Logf("commit of the aborted transaction after restart: %v", err)
		}
		if err == nil {
			t.Fatalf("round %d: commit of the timed-out transaction succeeded", round)
		}
	}
}
