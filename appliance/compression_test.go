package appliance

// Compression as Kafka does it (issue 43, item 2), checked with raw kmsg
// requests at pinned versions: zstd needs Produce v7 and Fetch v10
// (KIP-110), the other codecs are taken at every Produce version, the
// ApiVersions v99 answer lets a client retry lower, and record-level
// refusals fill Produce's RecordErrors (KIP-467).

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kconn sends kmsg requests at pinned versions over one connection.
type kconn struct {
	t    *testing.T
	c    *rawClient
	corr int32
}

func dialK(t *testing.T, b *Broker) *kconn {
	t.Helper()
	nc, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &kconn{t: t, c: &rawClient{tb: t, nc: nc}}
}

// do sends req at version v and decodes the answer.
func (k *kconn) do(req kmsg.Request, v int16) kmsg.Response {
	k.t.Helper()
	k.corr++
	frame := frameOf(req, v, k.corr)
	flexible := req.IsFlexible() && req.Key() != 18 // ApiVersions answers with a v0 header
	body := append([]byte(nil), k.c.roundTrip(frame, flexible)...)
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if err := resp.ReadFrom(body); err != nil {
		k.t.Fatalf("key %d v%d: cannot decode the response: %v", req.Key(), v, err)
	}
	return resp
}

// startCompressionBroker is a broker on the netpoll engine with the topics
// named in topics (one partition each, with their configs), open for
// produce.
func startCompressionBroker(t *testing.T, topics map[string]map[string]string) (*Broker, *kconn) {
	t.Helper()
	p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "shards": "2",
		"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1", "metrics.listener": "none", "log.cleaner.enable": "false"}
	cfg, err := ConfigFromProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	k := dialK(t, b)
	for name, cfgs := range topics {
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		for key, v := range cfgs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = key, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, c)
		}
		ct.Topics = append(ct.Topics, rt)
		resp := k.do(ct, 7).(*kmsg.CreateTopicsResponse)
		if code := resp.Topics[0].ErrorCode; code != 0 {
			t.Fatalf("create topic %s: error %d %v", name, code, resp.Topics[0].ErrorMessage)
		}
		// The partition opens on its shard shortly after the topic exists.
		batch := testBatch(t, nvme.CompressionNone, 1, 0)
		var code int16
		if !wait.Every(10*time.Millisecond, 10*time.Second, func() bool {
			code = kProduce(k, name, batch, 9).ErrorCode
			return code != kerr.UnknownTopicOrPartition.Code && code != kerr.NotLeaderForPartition.Code
		}) {
			t.Fatalf("topic %s: produce keeps failing with %d", name, code)
		}
	}
	return b, k
}

// testRecords are n records with keys and values that tell them apart.
func testRecords(n int) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i].Key = []byte{'k', byte('0' + i%10)}
		recs[i].Value = bytes.Repeat([]byte{byte('a' + i%26)}, 40+i)
		recs[i].Headers = []kmsg.Header{{Key: "h", Value: []byte{byte(i)}}}
	}
	return recs
}

// compressWith compresses raw with a Kafka codec, framed as clients do.
func compressWith(t *testing.T, codec int, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case nvme.CompressionGzip:
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case nvme.CompressionSnappy:
		return snappy.Encode(nil, raw)
	case nvme.CompressionLZ4:
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case nvme.CompressionZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	default:
		return raw
	}
	return buf.Bytes()
}

// testBatch is a record batch of n records (testRecords) compressed with
// codec, with extra attribute bits and an idempotent producer's fields
// when pid >= 0.
func testBatch(t *testing.T, codec int, n int, extraAttrs int16) []byte {
	return testBatchPID(t, codec, n, extraAttrs, -1, -1, -1)
}

func testBatchPID(t *testing.T, codec int, n int, extraAttrs int16, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	plain := nvme.AppendBatch(nil, time.Now().UnixMilli(), extraAttrs, pid, epoch, seq, testRecords(n))
	if codec == nvme.CompressionNone {
		return plain
	}
	out := append([]byte(nil), plain[:nvme.BatchHeaderSize]...)
	out = append(out, compressWith(t, codec, plain[nvme.BatchHeaderSize:])...)
	binary.BigEndian.PutUint16(out[21:], uint16(extraAttrs)|uint16(codec))
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], nvme.CRC32C(out[21:]))
	return out
}

// kProduce sends one batch to partition 0 of topic at Produce version v.
func kProduce(k *kconn, topic string, records []byte, v int16) kmsg.ProduceResponseTopicPartition {
	k.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := k.do(req, v).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

// kFetch fetches partition 0 of topic from offset at Fetch version v.
func kFetch(k *kconn, topic string, offset int64, v int16) kmsg.FetchResponseTopicPartition {
	k.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = offset, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp := k.do(req, v).(*kmsg.FetchResponse)
	return resp.Topics[0].Partitions[0]
}

var codecNames = map[int]string{nvme.CompressionNone: "none", nvme.CompressionGzip: "gzip", nvme.CompressionSnappy: "snappy", nvme.CompressionLZ4: "lz4", nvme.CompressionZstd: "zstd"}

// TestProduceCodecsByVersion: gzip, snappy and lz4 batches are taken at
// every Produce version served (v3-v11); zstd answers
// UNSUPPORTED_COMPRESSION_TYPE below v7 and is taken from v7 (KIP-110).
func TestProduceCodecsByVersion(t *testing.T) {
	_, k := startCompressionBroker(t, map[string]map[string]string{"codecs": nil})
	for v := int16(3); v <= 11; v++ {
		for _, codec := range []int{nvme.CompressionNone, nvme.CompressionGzip, nvme.CompressionSnappy, nvme.CompressionLZ4, nvme.CompressionZstd} {
			got := kProduce(k, "codecs", testBatch(t, codec, 3, 0), v)
			want := int16(0)
			if codec == nvme.CompressionZstd && v < 7 {
				want = kerr.UnsupportedCompressionType.Code
			}
			if got.ErrorCode != want {
				t.Errorf("Produce v%d %s: error %d, want %d", v, codecNames[codec], got.ErrorCode, want)
			}
		}
	}
}

// TestFetchZstdTopicNeedsV10: below Fetch v10 a partition of a topic whose
// compression.type is zstd answers UNSUPPORTED_COMPRESSION_TYPE, whatever
// its batches hold; from v10 it is read, and other topics are read at
// every version.
func TestFetchZstdTopicNeedsV10(t *testing.T) {
	_, k := startCompressionBroker(t, map[string]map[string]string{"zt": {"compression.type": "zstd"}, "plain": nil})
	for v := int16(4); v <= 16; v++ {
		if v >= 13 {
			break // v13+ names topics by id; the rule is about v < 10
		}
		got := kFetch(k, "zt", 0, v)
		want := int16(0)
		if v < 10 {
			want = kerr.UnsupportedCompressionType.Code
		}
		if got.ErrorCode != want {
			t.Errorf("Fetch v%d of a zstd topic: error %d, want %d", v, got.ErrorCode, want)
		}
		if want == 0 && len(got.RecordBatches) == 0 {
			t.Errorf("Fetch v%d of a zstd topic: no records", v)
		}
		if p := kFetch(k, "plain", 0, v); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Errorf("Fetch v%d of a producer-compression topic: error %d, %d bytes", v, p.ErrorCode, len(p.RecordBatches))
		}
	}
}

// TestApiVersionsUnsupportedThenRetry: ApiVersions at v99 answers
// UNSUPPORTED_VERSION in v0 format listing ApiVersions' range, and the
// client's retry on the same connection at v0 and at v3 succeeds (KIP-511).
func TestApiVersionsUnsupportedThenRetry(t *testing.T) {
	_, k := startCompressionBroker(t, nil)
	// v99 with a flexible header (v3+ requests are flexible), as a newer
	// client sends it.
	frame := []byte{0, 0, 0, 0, 0, 18, 0, 99, 0, 0, 0, 42, 0, 4, 't', 'e', 's', 't', 0}
	frame = append(frame, 5, 'n', 'e', 'w', 'c', 3, '9', '9', 0) // client software name, version, tags
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	body := append([]byte(nil), k.c.roundTrip(frame, false)...)
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.SetVersion(0)
	if err := v0.ReadFrom(body); err != nil {
		t.Fatalf("v99 answer is not a v0 ApiVersions body: %v (%x)", err, body)
	}
	if v0.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("v99 answer error %d, want %d", v0.ErrorCode, kerr.UnsupportedVersion.Code)
	}
	found := false
	for _, a := range v0.ApiKeys {
		if a.ApiKey == 18 {
			found = a.MinVersion == 0 && a.MaxVersion >= 3
		}
	}
	if !found {
		t.Fatalf("v99 answer does not list ApiVersions 0..3+: %+v", v0.ApiKeys)
	}
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "retry", "1.0"
		resp := k.do(req, v).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 || len(resp.ApiKeys) < 10 {
			t.Fatalf("retry at v%d: error %d, %d keys", v, resp.ErrorCode, len(resp.ApiKeys))
		}
	}
}

// TestProduceRecordErrors: a batch that a record-level rule refuses answers
// INVALID_RECORD with RecordErrors naming each refused record by its index
// in the batch, and an ErrorMessage (Produce v8+, KIP-467), compressed or
// not; nothing of it is stored.
func TestProduceRecordErrors(t *testing.T) {
	_, k := startCompressionBroker(t, map[string]map[string]string{"compacted": {"cleanup.policy": "compact"}})
	keyless := func(codec int) []byte {
		recs := testRecords(4)
		recs[0].Key, recs[2].Key = nil, nil
		plain := nvme.AppendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
		if codec == nvme.CompressionNone {
			return plain
		}
		out := append([]byte(nil), plain[:nvme.BatchHeaderSize]...)
		out = append(out, compressWith(t, codec, plain[nvme.BatchHeaderSize:])...)
		binary.BigEndian.PutUint16(out[21:], uint16(codec))
		binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
		binary.BigEndian.PutUint32(out[17:], nvme.CRC32C(out[21:]))
		return out
	}
	// The third record's offset delta is 7 instead of 2.
	misnumbered := nvme.AppendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, testRecords(4))
	pos := nvme.BatchHeaderSize
	for i := 0; i < 2; i++ {
		l, n := binary.Varint(misnumbered[pos:])
		pos += n + int(l)
	}
	_, n := binary.Varint(misnumbered[pos:])
	// length varint, attributes, timestampDelta (0: one byte), offsetDelta.
	if misnumbered[pos+n+2] != 4 { // zigzag(2)
		t.Fatalf("unexpected record layout: %x", misnumbered[pos:pos+n+3])
	}
	misnumbered[pos+n+2] = 14 // zigzag(7)
	binary.BigEndian.PutUint32(misnumbered[17:], nvme.CRC32C(misnumbered[21:]))

	for _, c := range []struct {
		name    string
		records []byte
		want    []int32
	}{
		{"keyless records, uncompressed", keyless(nvme.CompressionNone), []int32{0, 2}},
		{"keyless records, gzip", keyless(nvme.CompressionGzip), []int32{0, 2}},
		{"keyless records, zstd", keyless(nvme.CompressionZstd), []int32{0, 2}},
		{"misnumbered record", misnumbered, []int32{2}},
	} {
		for _, v := range []int16{8, 11} {
			got := kProduce(k, "compacted", c.records, v)
			if got.ErrorCode != kerr.InvalidRecord.Code {
				t.Errorf("%s, v%d: error %d, want %d", c.name, v, got.ErrorCode, kerr.InvalidRecord.Code)
				continue
			}
			if got.ErrorMessage == nil || *got.ErrorMessage == "" {
				t.Errorf("%s, v%d: no error message", c.name, v)
			}
			var idx []int32
			for _, e := range got.ErrorRecords {
				idx = append(idx, e.RelativeOffset)
				if e.ErrorMessage == nil || *e.ErrorMessage == "" {
					t.Errorf("%s, v%d: record %d has no message", c.name, v, e.RelativeOffset)
				}
			}
			if len(idx) != len(c.want) || (len(idx) > 0 && (idx[0] != c.want[0] || idx[len(idx)-1] != c.want[len(c.want)-1])) {
				t.Errorf("%s, v%d: record errors at %v, want %v (message %v)", c.name, v, idx, c.want, got.ErrorMessage)
			}
		}
	}
	// The partition holds only the batch that opened it.
	if p := kFetch(k, "compacted", 0, 12); p.ErrorCode != 0 || p.HighWatermark != 1 {
		t.Fatalf("after the refusals: error %d, high watermark %d, want 1", p.ErrorCode, p.HighWatermark)
	}
}
