package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type producedRow struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// produce sends the values given as arguments, or one per stdin line, and
// waits for every acknowledgement.
func produce(e *env, args []string) error {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	key := fs.String("key", "", "record key (default: none)")
	partition := fs.Int("partition", -1, "partition (default: the producer's partitioner)")
	acks := fs.String("acks", "all", "all, 1 or 0")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return usageErr("produce needs a topic")
	}
	if err := checkPartitionFlag(*partition); err != nil {
		return err
	}
	topic, values := pos[0], pos[1:]
	if len(values) == 0 {
		sc := bufio.NewScanner(e.in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			values = append(values, sc.Text())
		}
		if err := sc.Err(); err != nil {
			return failed("cannot read stdin: %v", err)
		}
	}
	if len(values) == 0 {
		return usageErr("produce: no values (give them as arguments or on stdin)")
	}
	opts := []kgo.Opt{kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(e.timeout)}
	switch *acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return usageErr("--acks must be all, 1 or 0, got %q", *acks)
	}
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if err := e.connect(opts...); err != nil {
		return err
	}
	// Check the topic first: a produce to an unknown topic would otherwise
	// retry until the timeout (or auto-create it).
	ctx, cancel := e.ctx()
	defer cancel()
	tds, err := e.adm.ListTopics(ctx, topic)
	if err != nil {
		return e.reqErr("describe topic "+topic, err)
	}
	if td, ok := tds[topic]; !ok || td.Err != nil {
		var terr error = kerr.UnknownTopicOrPartition
		if ok {
			terr = td.Err
		}
		return kafkaErr(terr, "", "produce to topic "+topic, subject{"topic", topic})
	} else if *partition >= 0 {
		if _, ok := td.Partitions[int32(*partition)]; !ok {
			return failed("UNKNOWN_TOPIC_OR_PARTITION (3): cannot produce to %s-%d: topic %s has %d partitions; see `ringctl topic describe %s`",
				topic, *partition, topic, len(td.Partitions), topic)
		}
	}
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		r := &kgo.Record{Topic: topic, Value: []byte(v), Partition: int32(*partition)}
		if *key != "" {
			r.Key = []byte(*key)
		}
		recs[i] = r
	}
	res := e.cl.ProduceSync(ctx, recs...)
	rows := make([]producedRow, 0, len(res))
	for _, r := range res {
		if r.Err != nil {
			return e.produceErr(topic, r.Err)
		}
		rows = append(rows, producedRow{Partition: r.Record.Partition, Offset: r.Record.Offset})
	}
	if e.json {
		return e.printJSON(map[string]any{"topic": topic, "records": rows})
	}
	fmt.Fprintf(e.out, "produced %d records to %s\n", len(rows), topic)
	return nil
}

func (e *env) produceErr(topic string, err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return kafkaErr(ke, "", "produce to topic "+topic, subject{"topic", topic})
	}
	return e.reqErr("produce to topic "+topic, err)
}

type consumedRecord struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp int64             `json:"timestamp_ms"`
	Key       *string           `json:"key"`
	Value     *string           `json:"value"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// consume reads from the start of the topic (or one partition) and exits
// after n records, or once it has read up to the end offsets it saw when it
// started.
func consume(e *env, args []string) error {
	fs := flag.NewFlagSet("consume", flag.ContinueOnError)
	n := fs.Int("n", 0, "stop after this many records (default: at the end offsets)")
	partition := fs.Int("partition", -1, "only this partition")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("consume takes one topic")
	}
	if *n < 0 {
		return usageErr("-n must be 0 (up to the end offsets) or more, got %d", *n)
	}
	if err := checkPartitionFlag(*partition); err != nil {
		return err
	}
	topic := pos[0]
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	tds, err := e.adm.ListTopics(ctx, topic)
	if err != nil {
		return e.reqErr("describe topic "+topic, err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		var terr error = kerr.UnknownTopicOrPartition
		if ok {
			terr = td.Err
		}
		return kafkaErr(terr, "", "consume topic "+topic, subject{"topic", topic})
	}
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return e.reqErr("list end offsets", err)
	}
	starts, err := e.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return e.reqErr("list start offsets", err)
	}
	want := map[int32]kgo.Offset{}
	remaining := map[int32]int64{} // partition -> end offset still to reach
	for _, p := range td.Partitions.Numbers() {
		if *partition >= 0 && p != int32(*partition) {
			continue
		}
		want[p] = kgo.NewOffset().AtStart()
		en, _ := ends.Lookup(topic, p)
		st, _ := starts.Lookup(topic, p)
		if en.Err == nil && st.Err == nil && en.Offset > st.Offset {
			remaining[p] = en.Offset
		}
	}
	if len(want) == 0 {
		return failed("UNKNOWN_TOPIC_OR_PARTITION (3): cannot consume %s-%d: topic %s has %d partitions; see `ringctl topic describe %s`",
			topic, *partition, topic, len(td.Partitions), topic)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.ClientID("ringctl"), kgo.DialTimeout(min(e.timeout, 5*time.Second)),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return failed("cannot create consumer: %v", err)
	}
	defer cl.Close()
	enc := json.NewEncoder(e.out)
	count := 0
	done := func() bool {
		if *n > 0 {
			return count >= *n
		}
		return len(remaining) == 0
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = kafkaErr(err, "", fmt.Sprintf("consume %s-%d", t, p), subject{"topic", t})
			}
		})
		if ferr != nil {
			return ferr
		}
		for _, r := range fs.Records() {
			if done() {
				break
			}
			count++
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if e.json {
				cr := consumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
				if r.Key != nil {
					k := string(r.Key)
					cr.Key = &k
				}
				if r.Value != nil {
					v := string(r.Value)
					cr.Value = &v
				}
				for _, h := range r.Headers {
					if cr.Headers == nil {
						cr.Headers = map[string]string{}
					}
					cr.Headers[h.Key] = string(h.Value)
				}
				if err := enc.Encode(cr); err != nil {
					return failed("cannot write: %v", err)
				}
			} else {
				fmt.Fprintln(e.out, strings.TrimRight(string(r.Value), "\n"))
			}
		}
	}
	if !done() {
		if *n > 0 {
			return failed("consumed %d of %d records from %s within --timeout %v", count, *n, topic, e.timeout)
		}
		return failed("consumed %d records from %s but did not reach the end offsets within --timeout %v", count, topic, e.timeout)
	}
	return nil
}

// checkPartitionFlag refuses a --partition below -1 (its "none given").
func checkPartitionFlag(p int) error {
	if p < -1 {
		return usageErr("--partition must be a partition number (0 or more), got %d", p)
	}
	return nil
}
