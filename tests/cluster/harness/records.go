package harness

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ack is one record a broker acknowledged: where it was written and what.
type Ack struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

func (a Ack) String() string {
	return fmt.Sprintf("%s/%d@%d key=%q value=%q", a.Topic, a.Partition, a.Offset, a.Key, a.Value)
}

// NewProducer returns a franz-go client for seeds that waits for every
// in-sync replica (acks=all; idempotent, franz-go's default), closed at the
// end of the test. opts come last and win.
func NewProducer(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(30 * time.Second),
		kgo.ProducerLinger(0),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("harness: producer: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Recorder produces records and keeps every acknowledged one (Acks) and
// the count of failed ones; with a History it also records each produce as
// an operation (ProduceInput, ProduceOutput). Safe for concurrent use.
type Recorder struct {
	History *History // optional
	Client  int      // the client id for History operations

	mu     sync.Mutex
	acks   []Ack
	failed []error
	wg     sync.WaitGroup
}

// Produce sends rec asynchronously; its acknowledgement (or failure) is
// recorded when it arrives. Wait waits for every outstanding one.
func (r *Recorder) Produce(ctx context.Context, cl *kgo.Client, rec *kgo.Record) {
	r.wg.Add(1)
	var call *Call
	if r.History != nil {
		call = r.History.Invoke(r.Client, ProduceInput{Topic: rec.Topic, Partition: rec.Partition, Value: string(rec.Value)})
	}
	cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
		defer r.wg.Done()
		r.record(call, rec, err)
	})
}

// ProduceSync sends recs and waits for their acknowledgements; it returns
// the first error.
func (r *Recorder) ProduceSync(ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) error {
	calls := make([]*Call, len(recs))
	if r.History != nil {
		for i, rec := range recs {
			calls[i] = r.History.Invoke(r.Client, ProduceInput{Topic: rec.Topic, Partition: rec.Partition, Value: string(rec.Value)})
		}
	}
	res := cl.ProduceSync(ctx, recs...)
	for i, pr := range res {
		r.record(calls[i], pr.Record, pr.Err)
	}
	return res.FirstErr()
}

func (r *Recorder) record(call *Call, rec *kgo.Record, err error) {
	if call != nil {
		out := ProduceOutput{Partition: rec.Partition, Offset: rec.Offset, Err: err}
		if err != nil {
			// A failed produce may still have been written (a timeout after
			// the broker appended it): its outcome is unknown.
			call.Unknown(out)
		} else {
			call.Return(out)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed = append(r.failed, err)
		return
	}
	r.acks = append(r.acks, Ack{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Key: string(rec.Key), Value: string(rec.Value)})
}

// Wait waits for the acknowledgements of every Produce so far, or ctx.
func (r *Recorder) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Acks returns a copy of the acknowledged records, in acknowledgement
// order.
func (r *Recorder) Acks() []Ack {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acks)
}

// Failed returns the errors of the records that were not acknowledged.
func (r *Recorder) Failed() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failed)
}

// Verification is what VerifyAcked found.
type Verification struct {
	Checked    int   // acknowledged records looked for
	Missing    []Ack // not found at their offset (log too short, or the offset skipped)
	Mismatched []Ack // found, with another key or value (the Ack says what was expected)
	Duplicates []Ack // two acknowledgements for one offset
	Read       int   // records read back
}

// OK reports whether every acknowledged record was found intact.
func (v Verification) OK() bool {
	return len(v.Missing) == 0 && len(v.Mismatched) == 0 && len(v.Duplicates) == 0
}

func (v Verification) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d acknowledged records checked, %d read: %d missing, %d different, %d offsets acknowledged twice",
		v.Checked, v.Read, len(v.Missing), len(v.Mismatched), len(v.Duplicates))
	for _, l := range []struct {
		what string
		acks []Ack
	}{{"missing", v.Missing}, {"different", v.Mismatched}, {"twice", v.Duplicates}} {
		for i, a := range l.acks {
			if i == 10 {
				fmt.Fprintf(&b, "\n  ... %d more %s", len(l.acks)-i, l.what)
				break
			}
			fmt.Fprintf(&b, "\n  %s: %s", l.what, a)
		}
	}
	return b.String()
}

type tp struct {
	topic     string
	partition int32
}

// VerifyAcked reads every partition that acks name, from its lowest
// acknowledged offset up to its highest (read_uncommitted), and checks
// that each acknowledged record is there with its key and value. It stops
// reading at ctx's end; what was not read by then is Missing. opts add
// client options (kgo.Dialer, SASL...).
func VerifyAcked(ctx context.Context, seeds []string, acks []Ack, opts ...kgo.Opt) (Verification, error) {
	v := Verification{Checked: len(acks)}
	want := map[tp]map[int64]Ack{}
	for _, a := range acks {
		k := tp{a.Topic, a.Partition}
		if want[k] == nil {
			want[k] = map[int64]Ack{}
		}
		if _, dup := want[k][a.Offset]; dup {
			v.Duplicates = append(v.Duplicates, a)
			continue
		}
		want[k][a.Offset] = a
	}
	if len(want) == 0 {
		return v, nil
	}
	parts := map[string]map[int32]kgo.Offset{}
	last := map[tp]int64{}
	for k, offs := range want {
		lo, hi := int64(-1), int64(-1)
		for o := range offs {
			if lo < 0 || o < lo {
				lo = o
			}
			hi = max(hi, o)
		}
		if parts[k.topic] == nil {
			parts[k.topic] = map[int32]kgo.Offset{}
		}
		parts[k.topic][k.partition] = kgo.NewOffset().At(lo)
		last[k] = hi
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(parts),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return v, err
	}
	defer cl.Close()
	got := map[tp]map[int64]*kgo.Record{}
	reached := map[tp]bool{}
	for len(reached) < len(want) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(rec *kgo.Record) {
			k := tp{rec.Topic, rec.Partition}
			if got[k] == nil {
				got[k] = map[int64]*kgo.Record{}
			}
			got[k][rec.Offset] = rec
			v.Read++
			if rec.Offset >= last[k] {
				reached[k] = true
			}
		})
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), func(a, b tp) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	}) {
		offs := slices.Sorted(maps.Keys(want[k]))
		for _, o := range offs {
			a := want[k][o]
			rec := got[k][o]
			switch {
			case rec == nil:
				v.Missing = append(v.Missing, a)
			case string(rec.Key) != a.Key || string(rec.Value) != a.Value:
				v.Mismatched = append(v.Mismatched, a)
			}
		}
	}
	return v, nil
}

// RequireAcked is VerifyAcked failing the test (within timeout) unless
// every acknowledged record is found intact.
func RequireAcked(t testing.TB, timeout time.Duration, seeds []string, acks []Ack, opts ...kgo.Opt) Verification {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	v, err := VerifyAcked(ctx, seeds, acks, opts...)
	if err != nil {
		t.Fatalf("harness: verify: %v", err)
	}
	if !v.OK() {
		t.Errorf("harness: acknowledged records lost: %s", v)
	} else {
		t.Logf("harness: %s", v)
	}
	return v
}
