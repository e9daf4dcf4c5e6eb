package share

// The share APIs over a fake Host: one shard (a goroutine running what is
// posted to it), one topic "t" with one partition whose log is a list of
// record batch headers, and no authorizer. It shows what the package needs
// of a broker is Host and nothing else.

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var testTopic = TopicID{9}

// fakeHost is a Host with one shard.
type fakeHost struct {
	inbox   chan func()
	closing chan struct{}
	store   *Store
	part    *fakePart
	im      fakeImage
}

func newFakeHost(t *testing.T, part *fakePart) *fakeHost {
	h := &fakeHost{inbox: make(chan func(), 64), closing: make(chan struct{}), part: part,
		im: fakeImage{{ID: testTopic, Name: "t", Partitions: 1}}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case fn := <-h.inbox:
				fn()
			case <-h.closing:
				return
			}
		}
	}()
	t.Cleanup(func() { close(h.closing); <-done })
	h.store = NewStore(h, mustConfig(t))
	// The Manager's env is used only on the shard goroutine; its timers
	// never fire (the test does not advance its clock).
	h.store.AddManager(&fakeEnv{t: time.Unix(1000, 0)}, fakeClassicGroups{}, 0)
	return h
}

func mustConfig(t *testing.T) Config {
	c, err := ConfigFromProps(map[string]string{"group.share.auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *fakeHost) Store() *Store { return h.store }
func (h *fakeHost) Image() Image  { return h.im }
func (h *fakeHost) Authorize(*wire.Request, kmsg.ACLOperation, kmsg.ACLResourceType, string) bool {
	return true
}
func (h *fakeHost) Shards() int                        { return 1 }
func (h *fakeHost) ShardOf(TopicID, int32) int         { return 0 }
func (h *fakeHost) Post(_ int, fn func())              { h.inbox <- fn }
func (h *fakeHost) Closing() <-chan struct{}           { return h.closing }
func (h *fakeHost) GroupPartition(string, int32) int32 { return 0 }

func (h *fakeHost) PostUnlessClosing(shard int, fn func()) {
	select {
	case <-h.closing:
	case h.inbox <- fn:
	}
}

func (h *fakeHost) Call(shard int, fn func()) {
	done := make(chan struct{})
	h.Post(shard, func() { fn(); close(done) })
	<-done
}

func (h *fakeHost) Partition(_ int, id TopicID, p int32) Partition {
	if id != testTopic || p != 0 {
		return nil
	}
	return h.part
}

func (h *fakeHost) Every(d time.Duration, fn func()) {
	tk := time.NewTicker(d)
	defer tk.Stop()
	for {
		select {
		case <-h.closing:
			return
		case <-tk.C:
			fn()
		}
	}
}

// fakePart is a partition whose log is whole batches of headers only.
type fakePart struct {
	batches [][]byte
	aborted []nvme.AbortedTxn
	lso     int64
}

// batchHeader is a record batch v2 header (no records) of offsets
// [base, base+n), transactional for a producer id >= 0.
func batchHeader(base int64, n int32, pid int64) []byte {
	b := make([]byte, nvme.BatchHeaderSize)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(nvme.BatchHeaderSize-12))
	b[16] = 2
	if pid >= 0 {
		binary.BigEndian.PutUint16(b[21:], 0x10)
	}
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	return b
}

func (p *fakePart) Offline() bool           { return false }
func (p *fakePart) LogStartOffset() int64   { return 0 }
func (p *fakePart) LastStableOffset() int64 { return p.lso }
func (p *fakePart) AbortedTxns(from, upTo int64) []nvme.AbortedTxn {
	return p.aborted
}
func (p *fakePart) OffsetForTimestamp(int64) (int64, bool) { return 0, false }
func (p *fakePart) Park(*Waiter)                           {}

func (p *fakePart) HighWatermark() int64 {
	if len(p.batches) == 0 {
		return 0
	}
	h, _ := nvme.ParseBatchHeader(p.batches[len(p.batches)-1])
	return h.LastOffset() + 1
}

func (p *fakePart) ReadBatches(dst []byte, from int64, maxBytes int32, end int64, first bool) ([]byte, error) {
	n := int32(0)
	for _, b := range p.batches {
		h, _ := nvme.ParseBatchHeader(b)
		if h.LastOffset() < from || h.BaseOffset >= end {
			continue
		}
		if n+int32(len(b)) > maxBytes && !(first && n == 0) {
			break
		}
		dst = append(dst, b...)
		n += int32(len(b))
	}
	return dst, nil
}

func TestShareFetchOverHost(t *testing.T) {
	part := &fakePart{batches: [][]byte{batchHeader(0, 3, -1), batchHeader(3, 2, 7), batchHeader(5, 2, -1)}, lso: 7,
		aborted: []nvme.AbortedTxn{{ProducerID: 7, FirstOffset: 3, LastOffset: 5}}}
	h := newFakeHost(t, part)
	hs := &handlers{host: h}
	const group, member = "g", "AAAAAAAAAAAAAAAAAAAAAQ"
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		d, ok := hs.handle(req).(wire.Deferred)
		if !ok {
			t.Fatalf("%T answered at once", req)
		}
		return d().(kmsg.Response)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, member, []string{"t"}
	if r := call(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 {
		t.Fatalf("join: %+v", r)
	}
	fetchAll := func(epoch int32) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch, req.MaxBytes, req.MaxRecords = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch, 1<<20, 100
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = testTopic
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := call(req).(*kmsg.ShareFetchResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("fetch: %+v", r)
		}
		return r
	}
	fetch := func(epoch int32) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		r := fetchAll(epoch)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch: %+v", r)
		}
		return r.Topics[0].Partitions[0]
	}
	// Read uncommitted (the default): every offset is acquired.
	p := fetch(0)
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 6 || len(p.Records) != 3*nvme.BatchHeaderSize {
		t.Fatalf("acquired %+v with %d bytes", p.AcquiredRecords, len(p.Records))
	}
	// Nothing is left to acquire for the same member.
	if r := fetchAll(1); len(r.Topics) != 0 {
		t.Fatalf("acquired twice: %+v", r.Topics)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), 2
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = testTopic
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ap.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{1}}, {FirstOffset: 2, LastOffset: 6, AcknowledgeTypes: []int8{2}}}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	if r := call(ack).(*kmsg.ShareAcknowledgeResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %+v", r)
	}
	// The released offsets come back with delivery count 2.
	p = fetch(3)
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 2 || p.AcquiredRecords[0].LastOffset != 6 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("redelivered %+v", p.AcquiredRecords)
	}

	// A second group under read_committed archives the aborted batch (3-4).
	h2 := newFakeHost(t, part)
	hs = &handlers{host: &configHost{fakeHost: h2, configs: map[string]string{"share.isolation.level": "read_committed"}}}
	if r := call(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	// Over a few fetches the member gets 0-2 and 5-6, never 3-4. (Today
	// the first fetch stops at the aborted batch and the next one
	// delivers 5-6: archiveAborted archives offsets past the SPEO only
	// from the SPEO on.)
	var got [][2]int64
	for epoch := int32(0); epoch < 3; epoch++ {
		for _, tp := range fetchAll(epoch).Topics {
			for _, a := range tp.Partitions[0].AcquiredRecords {
				got = append(got, [2]int64{a.FirstOffset, a.LastOffset})
			}
		}
	}
	if len(got) != 2 || got[0] != [2]int64{0, 2} || got[1] != [2]int64{5, 6} {
		t.Fatalf("read_committed acquired %v", got)
	}
}

// configHost is a fakeHost whose image carries GROUP configs.
type configHost struct {
	*fakeHost
	configs map[string]string
}

func (c *configHost) Image() Image { return configImage{c.im, c.configs} }

type configImage struct {
	fakeImage
	configs map[string]string
}

func (c configImage) GroupConfigs(string) map[string]string { return c.configs }

// handle answers req with the API registered for its key.
func (h *handlers) handle(req kmsg.Request) any {
	t := wire.NewTable()
	Register(t, h.host)
	api, _ := t.Lookup(req.Key())
	return api.Handle(&wire.Request{Key: req.Key(), Version: req.MaxVersion(), Req: req})
}
