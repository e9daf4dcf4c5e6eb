package integration

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConnResetMidRequest: raw peers reset their connections (SO_LINGER 0)
// in the middle of requests, half a Produce frame sent or whole Produce
// frames whose answers are never read, while a franz-go producer keeps
// producing on its own connection. Every reset must close only its own
// connection: the producer loses nothing and the broker keeps serving.
func TestConnResetMidRequest(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "resets"
	createTopic(t, ctx, b, topic, 4)
	produce := rawProduceFrame(t, topic, 64<<10)

	stop := make(chan struct{})
	var resets atomic.Int64
	var wg sync.WaitGroup
	// Each peer resets at most maxResets connections, one every
	// resetPause: unbounded, on 2 loaded cores (CI runs four passes side
	// by side) the peers opened connections faster than the broker could
	// close the reset ones and it ran out of descriptors (20,000).
	const maxResets, resetPause = 1500, 500 * time.Microsecond
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < maxResets; i++ {
				select {
				case <-stop:
					return
				case <-time.After(resetPause):
				}
				c, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				tc := c.(*net.TCPConn)
				tc.SetLinger(0)
				switch (i + w) % 3 {
				case 0: // half a frame
					tc.Write(produce[:len(produce)/2])
				case 1: // whole frames, answers never read
					tc.Write(append(append([]byte(nil), produce...), produce...))
				case 2: // a frame and a half, reset once the broker has answered the whole one
					tc.Write(append(append([]byte(nil), produce...), produce[:len(produce)/3]...))
					tc.SetReadDeadline(time.Now().Add(5 * time.Second))
					if _, err := tc.Read(make([]byte, 1)); err != nil {
						t.Errorf("no answer to a whole Produce frame before the half one: %v", err)
						tc.Close()
						return
					}
				}
				tc.Close() // RST
				resets.Add(1)
			}
		}(w)
	}

	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond))
	const n = 3000
	for i := 0; i < n; i += 100 {
		recs := make([]*kgo.Record, 0, 100)
		for j := i; j < i+100; j++ {
			r := genRecord(7, topic, int32(j%4), j)
			recs = append(recs, r)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce at %d while peers reset: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	if resets.Load() < 20 {
		t.Logf("only %d resets happened during the produce", resets.Load())
	}
	// Everything the producer wrote is there, after the raw peers' records.
	cons := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for got < n && time.Now().Before(deadline) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != "raw" {
				got++
			}
		})
	}
	if got != n {
		t.Fatalf("consumed %d producer records, want %d", got, n)
	}
	if !b.Running() {
		t.Fatal("broker exited")
	}
	t.Logf("%d connections reset mid-request; %d records produced and consumed", resets.Load(), n)
}

// rawProduceFrame builds a Produce v9 (acks=1) request frame carrying one
// uncompressed batch with a single record of about valueSize bytes.
func rawProduceFrame(t *testing.T, topic string, valueSize int) []byte {
	t.Helper()
	return frame(rawProduceRequest(9, 1, topic, rawBatch([]byte("raw"), make([]byte, valueSize))))
}

// rawBatch is one uncompressed record batch v2 holding one record, with its
// length and CRC set.
func rawBatch(key, value []byte) []byte {
	rec := kmsg.Record{Key: key, Value: value}
	// AppendTo writes Length as given: encode once with 0 (a 1-byte varint)
	// to learn the body's length, then with it.
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	recBytes := rec.AppendTo(nil)
	batch := kmsg.RecordBatch{
		Magic: 2, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: recBytes,
	}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12)) // batch length
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// rawProduceRequest is a Produce request (header and body, unframed) of
// version with acks, carrying records to partition 0 of topic.
func rawProduceRequest(version, acks int16, topic string, records []byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req.AppendTo(reqHeader(nil, apiKeyProduce, version, 1, version >= 9))
}
