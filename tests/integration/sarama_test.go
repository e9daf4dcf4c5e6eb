package integration

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestSarama creates a topic with sarama's ClusterAdmin, sends messages with a
// SyncProducer (acks=all) and reads them back with a partition consumer (no
// group) from the oldest offset.
func TestSarama(t *testing.T) {
	const (
		topic        = "sarama"
		partitions   = 3
		perPartition = 1000
	)
	b := startBroker(t, "")
	addrs := []string{b.Addr}

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "ringbroker-it"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 15 * time.Second
	cfg.Net.WriteTimeout = 15 * time.Second
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Compression = sarama.CompressionSnappy
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if err := cfg.Validate(); err != nil {
		t.Fatalf("sarama config: %v", err)
	}

	admin, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}

	prod, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer prod.Close()
	msg := func(p int32, i int) (key, value []byte) {
		return fmt.Appendf(nil, "s-%d-%d", p, i), fmt.Appendf(nil, "sarama value p=%d i=%06d %x", p, i, i*7919)
	}
	const batch = 100
	for start := 0; start < perPartition; start += batch {
		var msgs []*sarama.ProducerMessage
		for i := start; i < min(start+batch, perPartition); i++ {
			for p := range int32(partitions) {
				k, v := msg(p, i)
				msgs = append(msgs, &sarama.ProducerMessage{
					Topic:     topic,
					Partition: p,
					Key:       sarama.ByteEncoder(k),
					Value:     sarama.ByteEncoder(v),
					Headers:   []sarama.RecordHeader{{Key: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}},
					Metadata:  i,
				})
			}
		}
		if err := prod.SendMessages(msgs); err != nil {
			if perrs, ok := err.(sarama.ProducerErrors); ok && len(perrs) > 0 {
				t.Fatalf("SendMessages: %d errors, first: %v", len(perrs), perrs[0].Err)
			}
			t.Fatalf("SendMessages: %v", err)
		}
		for _, m := range msgs {
			if want := int64(m.Metadata.(int)); m.Offset != want {
				t.Fatalf("message %d to partition %d acknowledged at offset %d, want %d", want, m.Partition, m.Offset, want)
			}
		}
	}

	cons, err := sarama.NewConsumer(addrs, cfg)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer cons.Close()
	for p := range int32(partitions) {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition %d: %v", p, err)
		}
		timeout := time.After(60 * time.Second)
		for i := 0; i < perPartition; {
			select {
			case m := <-pc.Messages():
				k, v := msg(p, i)
				if m.Offset != int64(i) || !bytes.Equal(m.Key, k) || !bytes.Equal(m.Value, v) {
					t.Fatalf("partition %d message %d: offset %d key %q value %q, want offset %d key %q value %q",
						p, i, m.Offset, m.Key, m.Value, i, k, v)
				}
				if len(m.Headers) != 1 || string(m.Headers[0].Key) != "i" || string(m.Headers[0].Value) != fmt.Sprint(i) {
					t.Fatalf("partition %d offset %d: headers %v, want i=%d", p, m.Offset, m.Headers, i)
				}
				i++
			case cerr := <-pc.Errors():
				t.Fatalf("partition %d: consumer error: %v", p, cerr)
			case <-timeout:
				t.Fatalf("partition %d: consumed %d of %d messages in 60s", p, i, perPartition)
			case <-t.Context().Done():
				t.Fatal("test context done")
			}
		}
		if err := pc.Close(); err != nil {
			t.Errorf("partition %d: close: %v", p, err)
		}
	}
}
