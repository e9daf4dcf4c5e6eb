package quorum

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestVoterIDs(t *testing.T) {
	vs := []Voter{{1, "127.0.0.1:9093"}, {2, "host-b:9093"}, {3, "[::1]:9094"}}
	if ids := VoterIDs(vs); !slices.Equal(ids, []uint64{1, 2, 3}) {
		t.Fatalf("VoterIDs: %v", ids)
	}
}

func TestFrameRoundTrip(t *testing.T) {
	m := &raftpb.Message{Type: raftpb.MsgApp.Enum(), To: new(uint64(2)), From: new(uint64(1)), Term: new(uint64(3)),
		Entries: []*raftpb.Entry{ent(4, 3, "data")}}
	b, err := appendFrame(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	b, err = appendFrame(b, &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), To: new(uint64(2))})
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(b)
	var buf []byte
	var got []*raftpb.Message
	for {
		f, nb, err := readFrame(r, buf, 1<<20)
		buf = nb
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeMessage(f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if len(got) != 2 || !proto.Equal(got[0], m) || got[1].GetType() != raftpb.MsgHeartbeat {
		t.Fatalf("decoded %v", got)
	}
	if _, _, err := readFrame(bytes.NewReader(b[:len(b)-1]), nil, 1<<20); err != nil {
		t.Fatal("the first frame is whole")
	}
	r = bytes.NewReader(b[:len(b)-1])
	readFrame(r, nil, 1<<20)
	if _, _, err := readFrame(r, nil, 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut frame: %v", err)
	}
	if _, _, err := readFrame(bytes.NewReader(b), nil, 8); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("large frame: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	b, _ := appendFrame(nil, &raftpb.Message{Type: raftpb.MsgApp.Enum(), To: new(uint64(2)), From: new(uint64(1)), Entries: []*raftpb.Entry{ent(4, 3, "data")}})
	f.Add(b)
	b, _ = appendFrame(nil, &raftpb.Message{Type: raftpb.MsgSnap.Enum(), To: new(uint64(3)), Snapshot: &raftpb.Snapshot{Data: []byte("img"), Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(9))}}})
	f.Add(b)
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var buf []byte
		for range 64 {
			fr, nb, err := readFrame(r, buf, 1<<16)
			buf = nb
			if err != nil {
				return
			}
			m, err := decodeMessage(fr)
			if err != nil {
				continue
			}
			// What decodes re-encodes into a frame that decodes equal.
			again, err := appendFrame(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			f2, _, err := readFrame(bytes.NewReader(again), nil, len(again))
			if err != nil {
				t.Fatal(err)
			}
			m2, err := decodeMessage(f2)
			if err != nil || !proto.Equal(m, m2) {
				t.Fatalf("re-decoded %v, %v; want %v", m2, err, m)
			}
		}
	})
}

// TestTCPQuorum runs three nodes over TCP on loopback: they elect a
// leader and commit; a node that stops and comes back on the same
// address is reconnected to and catches up.
func TestTCPQuorum(t *testing.T) {
	ids := []uint64{1, 2, 3}
	trans := map[uint64]*TCPTransport{}
	addrs := map[uint64]string{}
	for _, id := range ids {
		tr, err := NewTCPTransport(TCPConfig{ID: id, Listen: "127.0.0.1:0", MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}, discard())
		if err != nil {
			t.Fatal(err)
		}
		trans[id], addrs[id] = tr, tr.Addr().String()
	}
	for _, id := range ids {
		for _, p := range ids {
			trans[id].AddPeer(p, addrs[p])
		}
	}
	cfg := testConfig()
	cfg.Voters = ids
	nodes := map[uint64]*Node{}
	apps := map[uint64]*testApp{}
	stores := map[uint64]Storage{}
	start := func(id uint64, tr Transport) {
		c := cfg
		c.ID = id
		apps[id] = &testApp{}
		n, err := New(c, stores[id], tr, apps[id], discard())
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
	}
	for _, id := range ids {
		stores[id] = NewMemStorage()
		start(id, trans[id])
	}
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	leader := func(among []uint64) uint64 {
		var lead uint64
		if !wait.Until(20*time.Second, func() bool {
			lead = 0
			for _, id := range among {
				l, _ := nodes[id].Leader()
				if l == 0 || (lead != 0 && l != lead) {
					return false
				}
				lead = l
			}
			return slices.Contains(among, lead)
		}) {
			t.Fatalf("no agreed leader among %v", among)
		}
		return lead
	}
	propose := func(among []uint64, p string) {
		for range 20 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := nodes[leader(among)].Propose(ctx, []byte(p))
			cancel()
			if err == nil {
				return
			}
		}
		t.Fatalf("cannot commit %q", p)
	}
	var want []string
	for i := range 10 {
		p := fmt.Sprint("t", i)
		propose(ids, p)
		want = append(want, p)
	}
	lead := leader(ids)
	f := ids[0]
	if f == lead {
		f = ids[1]
	}
	nodes[f].Stop()
	rest := slices.DeleteFunc(slices.Clone(ids), func(x uint64) bool { return x == f })
	propose(rest, "while-down")
	want = append(want, "while-down")
	tr, err := NewTCPTransport(TCPConfig{ID: f, Listen: addrs[f], Peers: []Voter{{ids[0], addrs[ids[0]]}, {ids[1], addrs[ids[1]]}, {ids[2], addrs[ids[2]]}}}, discard())
	if err != nil {
		t.Fatal(err)
	}
	start(f, tr)
	if !wait.Until(20*time.Second, func() bool {
		for _, id := range ids {
			if !slices.Equal(apps[id].seq(), want) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("node %d did not catch up: %v", f, apps[f].seq())
	}
	if st := trans[lead].Stats(); st.Sent == 0 || st.Received == 0 || st.Dials < 2 {
		t.Fatalf("leader transport stats %+v", st)
	}
}

// recordingHandler counts what a transport hands it.
type recordingHandler struct {
	mu          sync.Mutex
	steps       []*raftpb.Message
	unreachable map[uint64]int
}

func (h *recordingHandler) Step(m *raftpb.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps = append(h.steps, m)
}

func (h *recordingHandler) ReportUnreachable(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unreachable[id]++
}

func (h *recordingHandler) counts() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.unreachable {
		n += c
	}
	return len(h.steps), n
}

// TestTCPQueueDropsWhenFull: messages to a peer that cannot be reached
// fill its bounded queue; the rest are dropped and the peer reported.
func TestTCPQueueDropsWhenFull(t *testing.T) {
	// An address nothing listens on: a listener closed at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	tr, err := NewTCPTransport(TCPConfig{ID: 1, Listen: "127.0.0.1:0", Peers: []Voter{{2, dead}}, QueueSize: 2, MinBackoff: time.Hour}, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	h := &recordingHandler{unreachable: map[uint64]int{}}
	if err := tr.Start(h); err != nil {
		t.Fatal(err)
	}
	var msgs []*raftpb.Message
	for range 10 {
		msgs = append(msgs, &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), To: new(uint64(2)), From: new(uint64(1))})
	}
	msgs = append(msgs, &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), To: new(uint64(9))})
	tr.Send(msgs)
	// The writer may have taken one message off the queue to send.
	if st := tr.Stats(); st.Dropped < 8 {
		t.Fatalf("stats %+v: want at least 8 dropped", st)
	}
	if !wait.Until(10*time.Second, func() bool { _, u := h.counts(); return u >= 7 }) {
		t.Fatalf("unreachable reports: %v", h.unreachable)
	}
}

// TestTCPBadFrameClosesConnection: a peer that sends a frame over the
// limit, or bytes that are no message, is cut off; good frames before
// it are delivered.
func TestTCPBadFrameClosesConnection(t *testing.T) {
	tr, err := NewTCPTransport(TCPConfig{ID: 1, Listen: "127.0.0.1:0", MaxFrame: 1 << 10}, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	h := &recordingHandler{unreachable: map[uint64]int{}}
	if err := tr.Start(h); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{{0, 0, 0x10, 0}, {0, 0, 0, 2, 0xff, 0xff}} {
		conn, err := net.Dial("tcp", tr.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		good, err := appendFrame(nil, &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), To: new(uint64(1)), From: new(uint64(2))})
		if err != nil {
			t.Fatal(err)
		}
		before, _ := h.counts()
		if _, err := conn.Write(append(good, bad...)); err != nil {
			t.Fatal(err)
		}
		if !wait.Until(10*time.Second, func() bool { s, _ := h.counts(); return s == before+1 }) {
			t.Fatal("the good frame was not delivered")
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("after bad frame %x: read %v, want EOF (closed by the transport)", bad, err)
		}
		conn.Close()
	}
}

// TestTCPHandsOverKafkaRequests: a connection whose first frame starts
// with a 0 byte (a Kafka request's API key) goes to TCPConfig.Requests
// with that frame still unread; Raft frames on other connections are
// still delivered to the handler.
func TestTCPHandsOverKafkaRequests(t *testing.T) {
	got := make(chan []byte, 1)
	tr, err := NewTCPTransport(TCPConfig{ID: 1, Listen: "127.0.0.1:0", Requests: func(conn net.Conn, r *bufio.Reader) {
		b := make([]byte, 9)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Error(err)
			return
		}
		got <- b
		conn.Write([]byte("ok"))
	}}, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	h := &recordingHandler{unreachable: map[uint64]int{}}
	if err := tr.Start(h); err != nil {
		t.Fatal(err)
	}
	req := []byte{0, 0, 0, 5, 0, 19, 0, 7, 1} // CreateTopics (19) v7, one byte of body
	conn, err := net.Dial("tcp", tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, req) {
			t.Fatalf("handed over %x, want %x", b, req)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not handed over")
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply := make([]byte, 2)
	if _, err := io.ReadFull(conn, reply); err != nil || string(reply) != "ok" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	raft, err := net.Dial("tcp", tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raft.Close()
	good, err := appendFrame(nil, &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), To: new(uint64(1)), From: new(uint64(2))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raft.Write(good); err != nil {
		t.Fatal(err)
	}
	if !wait.Until(10*time.Second, func() bool { s, _ := h.counts(); return s == 1 }) {
		t.Fatal("the Raft frame was not delivered")
	}
}
