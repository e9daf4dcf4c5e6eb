// Command saramasmoke is the sarama smoke check of `make compat`: admin
// (create, describe, delete topics), produce plain / idempotent / each codec,
// group consume with commit, and a committed plus an aborted transaction read
// back with read_committed.
//
// Usage: go run ./tests/compat/saramasmoke HOST:PORT
//
// It prints one "PASS name" or "FAIL name: why" line per check and exits 1
// when any check failed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: saramasmoke HOST:PORT")
		os.Exit(2)
	}
	s := &smoke{addrs: []string{os.Args[1]}, run: os.Getenv("RUN_ID")}
	if s.run == "" {
		s.run = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	s.check("admin-create-describe-delete", s.admin)
	s.check("produce-plain", s.produce("plain", nil))
	s.check("produce-idempotent", s.produce("idem", func(c *sarama.Config) { idempotent(c) }))
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD} {
		codec := codec
		s.check("produce-"+codec.String(), s.produce(codec.String(), func(c *sarama.Config) {
			idempotent(c)
			c.Producer.Compression = codec
		}))
	}
	s.check("group-commit", s.groupCommit)
	s.check("transactions", s.transactions)
	if s.fails > 0 {
		os.Exit(1)
	}
}

type smoke struct {
	addrs []string
	run   string
	fails int
}

func (s *smoke) check(name string, fn func() error) {
	if err := fn(); err != nil {
		s.fails++
		fmt.Printf("FAIL %s: %v\n", name, err)
		return
	}
	fmt.Printf("PASS %s\n", name)
}

func (s *smoke) config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.ClientID = "ringbroker-compat"
	c.Net.ReadTimeout = 15 * time.Second
	c.Metadata.Retry.Max = 10
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	return c
}

func idempotent(c *sarama.Config) {
	c.Producer.Idempotent = true
	c.Producer.Retry.Max = 5
	c.Net.MaxOpenRequests = 1
}

func (s *smoke) createTopic(topic string, parts int32) error {
	admin, err := sarama.NewClusterAdmin(s.addrs, s.config())
	if err != nil {
		return fmt.Errorf("cannot connect admin: %w", err)
	}
	defer admin.Close()
	return admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: parts, ReplicationFactor: 1}, false)
}

func (s *smoke) admin() error {
	topic := "sa-admin-" + s.run
	if err := s.createTopic(topic, 4); err != nil {
		return err
	}
	admin, err := sarama.NewClusterAdmin(s.addrs, s.config())
	if err != nil {
		return err
	}
	defer admin.Close()
	md, err := admin.DescribeTopics([]string{topic})
	if err != nil {
		return err
	}
	if len(md) != 1 || len(md[0].Partitions) != 4 {
		return fmt.Errorf("DescribeTopics: got %d topics, want 1 with 4 partitions", len(md))
	}
	brokers, ctrl, err := admin.DescribeCluster()
	if err != nil {
		return err
	}
	if len(brokers) != 1 || ctrl != 1 {
		return fmt.Errorf("DescribeCluster: %d brokers, controller %d; want 1 broker, controller 1", len(brokers), ctrl)
	}
	if err := admin.DeleteTopic(topic); err != nil {
		return err
	}
	for i := 0; i < 50; i++ {
		topics, err := admin.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[topic]; !ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("deleted topic still listed")
}

func value(i int) string { return fmt.Sprintf("v%06d", i) }

func (s *smoke) send(cfg *sarama.Config, topic string, from, to int) error {
	p, err := sarama.NewSyncProducer(s.addrs, cfg)
	if err != nil {
		return fmt.Errorf("cannot create producer: %w", err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, 0, to-from)
	for i := from; i < to; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(strconv.Itoa(i)), Value: sarama.StringEncoder(value(i))})
	}
	return p.SendMessages(msgs)
}

// readAll reads every partition of topic from the oldest offset to its high
// watermark (the last stable offset under read_committed).
func (s *smoke) readAll(cfg *sarama.Config, topic string) ([]string, error) {
	client, err := sarama.NewClient(s.addrs, cfg)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	parts, err := c.Partitions(topic)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range parts {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		hwm := pc.HighWaterMarkOffset()
		deadline := time.After(20 * time.Second)
	read:
		for hwm > 0 {
			select {
			case m := <-pc.Messages():
				out = append(out, string(m.Value))
				if m.Offset+1 >= pc.HighWaterMarkOffset() {
					break read
				}
			case <-time.After(2 * time.Second):
				break read // the rest are control records or aborted
			case <-deadline:
				pc.Close()
				return nil, fmt.Errorf("partition %d: timed out at %d records", p, len(out))
			}
		}
		pc.Close()
	}
	sort.Strings(out)
	return out, nil
}

func wantValues(got []string, from, to int) error {
	if len(got) != to-from {
		return fmt.Errorf("read %d records, want %d", len(got), to-from)
	}
	for i, v := range got {
		if v != value(from+i) {
			return fmt.Errorf("record %d is %q, want %q", i, v, value(from+i))
		}
	}
	return nil
}

func (s *smoke) produce(suffix string, tweak func(*sarama.Config)) func() error {
	return func() error {
		topic := "sa-" + suffix + "-" + s.run
		if err := s.createTopic(topic, 3); err != nil {
			return err
		}
		cfg := s.config()
		if tweak != nil {
			tweak(cfg)
		}
		if err := s.send(cfg, topic, 0, 1000); err != nil {
			return err
		}
		got, err := s.readAll(s.config(), topic)
		if err != nil {
			return err
		}
		return wantValues(got, 0, 1000)
	}
}

type groupHandler struct {
	want int
	got  chan string
}

func (h *groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *groupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		sess.MarkMessage(m, "")
		if len(claim.Messages()) == 0 {
			// Commit once the buffered records are handled: a synchronous
			// commit per record would queue behind sarama's long-poll fetch on
			// the same connection (MaxWaitTime each).
			sess.Commit()
		}
		h.got <- string(m.Value)
	}
	return nil
}

// consumeGroup reads n records as group and commits them.
func (s *smoke) consumeGroup(topic, group string, n int) (int, error) {
	g, err := sarama.NewConsumerGroup(s.addrs, group, s.config())
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	h := &groupHandler{got: make(chan string, n+100)}
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	got := 0
	for got < n {
		select {
		case <-h.got:
			got++
		case err := <-done:
			return got, err
		case <-ctx.Done():
			return got, fmt.Errorf("timed out after %d of %d records", got, n)
		}
	}
	// Anything beyond n within a second is a duplicate.
	extra := time.After(time.Second)
wait:
	for {
		select {
		case <-h.got:
			got++
		case <-extra:
			break wait
		}
	}
	cancel()
	<-done
	return got, g.Close()
}

func (s *smoke) groupCommit() error {
	topic, group := "sa-group-"+s.run, "sa-g-"+s.run
	if err := s.createTopic(topic, 3); err != nil {
		return err
	}
	if err := s.send(s.config(), topic, 0, 300); err != nil {
		return err
	}
	if n, err := s.consumeGroup(topic, group, 300); err != nil || n != 300 {
		return fmt.Errorf("first read: %d of 300 records: %v", n, err)
	}
	admin, err := sarama.NewClusterAdmin(s.addrs, s.config())
	if err != nil {
		return err
	}
	defer admin.Close()
	offs, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
	if err != nil {
		return err
	}
	var sum int64
	for _, b := range offs.Blocks[topic] {
		sum += b.Offset
	}
	if sum != 300 {
		return fmt.Errorf("committed offsets sum to %d, want 300", sum)
	}
	if err := s.send(s.config(), topic, 300, 310); err != nil {
		return err
	}
	if n, err := s.consumeGroup(topic, group, 10); err != nil || n != 10 {
		return fmt.Errorf("after commit the group read %d new records, want 10: %v", n, err)
	}
	return nil
}

func (s *smoke) transactions() error {
	topic := "sa-txn-" + s.run
	if err := s.createTopic(topic, 3); err != nil {
		return err
	}
	cfg := s.config()
	idempotent(cfg)
	cfg.Producer.Transaction.ID = "sa-txn-" + s.run
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	p, err := sarama.NewSyncProducer(s.addrs, cfg)
	if err != nil {
		return fmt.Errorf("cannot create transactional producer: %w", err)
	}
	defer p.Close()
	batch := func(from, to int, commit bool) error {
		if err := p.BeginTxn(); err != nil {
			return fmt.Errorf("BeginTxn: %w", err)
		}
		for i := from; i < to; i++ {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(value(i))}); err != nil {
				return fmt.Errorf("SendMessage in transaction: %w", err)
			}
		}
		if commit {
			return p.CommitTxn()
		}
		return p.AbortTxn()
	}
	if err := batch(0, 100, true); err != nil {
		return err
	}
	if err := batch(100, 150, false); err != nil {
		return err
	}
	rc := s.config()
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	got, err := s.readAll(rc, topic)
	if err != nil {
		return err
	}
	return wantValues(got, 0, 100)
}
