package controller

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testHost records the images published to it and answers forwarded
// CreateTopics with the principal and client host it was given.
type testHost struct {
	mu        sync.Mutex
	im        *metadata.Image
	published int
	served    []*Forwarded
}

func (h *testHost) Publish(_, next *metadata.Image) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.im = next
	h.published++
	return nil
}

func (h *testHost) Serve(f *Forwarded) kmsg.Response {
	h.mu.Lock()
	h.served = append(h.served, f)
	h.mu.Unlock()
	req := f.Req.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = req.Topics[0].Topic
	rt.ErrorMessage = kmsg.StringPtr(f.Principal + "@" + f.Host)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

func (h *testHost) image() *metadata.Image {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.im
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type member struct {
	opts Options
	host *testHost
	q    *Quorum
}

func (m *member) open(t *testing.T) {
	t.Helper()
	m.host = &testHost{}
	q, err := Open(m.opts, m.host)
	if err != nil {
		t.Fatal(err)
	}
	m.q = q
}

// openQuorum opens n members (node ids 0..n-1) of an n-voter quorum on
// loopback.
func openQuorum(t *testing.T, n int) []*member {
	t.Helper()
	var voters []config.Voter
	for i := range n {
		host, port, _ := net.SplitHostPort(freeAddr(t))
		p, _ := strconv.Atoi(port)
		voters = append(voters, config.Voter{ID: int32(i), Host: host, Port: p})
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ms := make([]*member, n)
	for i := range ms {
		ms[i] = &member{opts: Options{NodeID: int32(i), Voters: voters, Listen: voters[i].Addr(), Dir: t.TempDir(),
			ElectionTimeout: 300 * time.Millisecond, CommitTimeout: 10 * time.Second, Logger: logger}}
		ms[i].open(t)
	}
	t.Cleanup(func() {
		for _, m := range ms {
			if m.q != nil {
				m.q.Close()
			}
		}
	})
	return ms
}

func leaderOf(t *testing.T, ms []*member) (*member, []*member) {
	t.Helper()
	var lead *member
	if !wait.Until(20*time.Second, func() bool {
		for _, m := range ms {
			if m.q != nil && m.q.IsLeader() {
				lead = m
				return true
			}
		}
		return false
	}) {
		t.Fatal("no leader elected")
	}
	var rest []*member
	for _, m := range ms {
		if m != lead {
			rest = append(rest, m)
		}
	}
	return lead, rest
}

func topicRecords(name string, parts int32) []metadata.Record {
	return metadata.CreateTopicRecords(name, metadata.NewTopicID(), parts, 0, nil)
}

// TestQuorumCommitReplicatesAndRestores: the leader's Commit returns the
// image with the batch applied; every member publishes it; a follower's
// Commit fails with NOT_CONTROLLER; a member reopened on its directory
// publishes the same image again (snapshot and log replayed).
func TestQuorumCommitReplicatesAndRestores(t *testing.T) {
	ms := openQuorum(t, 3)
	lead, rest := leaderOf(t, ms)
	if !wait.Until(10*time.Second, func() bool { return lead.q.Image() == lead.host.image() && lead.host.image() != nil }) {
		t.Fatal("the leader did not publish its image")
	}
	im, err := lead.q.Commit(lead.q.Image(), topicRecords("a", 3))
	if err != nil {
		t.Fatal(err)
	}
	if ti := im.Topics["a"]; ti == nil || len(ti.Partitions) != 3 {
		t.Fatalf("committed image topics %v", im.Topics)
	}
	if lead.host.image() != im {
		t.Fatal("Commit returned before the image was published")
	}
	for _, m := range rest {
		if !wait.Until(10*time.Second, func() bool { im := m.host.image(); return im != nil && im.Topics["a"] != nil }) {
			t.Fatalf("node %d never published topic a", m.opts.NodeID)
		}
		if _, err := m.q.Commit(m.q.Image(), topicRecords("b", 1)); !errors.Is(err, kerr.NotController) {
			t.Fatalf("follower Commit: %v, want NOT_CONTROLLER", err)
		}
	}
	// A stale image (not the one applied) is refused, nothing proposed.
	stale := metadata.NewImage(nil)
	if _, err := lead.q.Commit(stale, topicRecords("c", 1)); !errors.Is(err, kerr.NotController) {
		t.Fatalf("Commit against a stale image: %v", err)
	}
	// A batch that does not apply to the image is refused before it is proposed.
	if _, err := lead.q.Commit(im, []metadata.Record{{RemoveTopic: &metadata.RemoveTopicRecord{ID: metadata.NewTopicID()}}}); err == nil {
		t.Fatal("Commit of a removal of an unknown topic succeeded")
	}

	f := rest[0]
	id := im.Topics["a"].ID
	if err := f.q.Close(); err != nil {
		t.Fatal(err)
	}
	f.q = nil
	f.open(t)
	if !wait.Until(10*time.Second, func() bool { im := f.host.image(); return im != nil && im.Topics["a"] != nil }) {
		t.Fatal("the reopened member did not restore topic a")
	}
	if got := f.host.image().Topics["a"]; got.ID != id || len(got.Partitions) != 3 {
		t.Fatalf("restored topic %+v, want id %v with 3 partitions", got, id)
	}
}

// TestQuorumForward: a follower forwards a request to the leader in an
// Envelope, with the client's principal and address, and relays the
// answer; with no leader Forward gives up with ErrNoController when its
// context ends.
func TestQuorumForward(t *testing.T) {
	ms := openQuorum(t, 3)
	lead, rest := leaderOf(t, ms)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "fwd", 1, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := rest[0].q.Forward(ctx, &Forwarded{Principal: "User:alice", Host: "10.1.2.3", ClientID: "cli", Key: 19, Version: 7, Req: req})
	if err != nil {
		t.Fatal(err)
	}
	cr := resp.(*kmsg.CreateTopicsResponse)
	if len(cr.Topics) != 1 || cr.Topics[0].Topic != "fwd" || cr.Topics[0].ErrorMessage == nil || *cr.Topics[0].ErrorMessage != "User:alice@10.1.2.3" {
		t.Fatalf("forwarded answer %+v", cr.Topics)
	}
	lead.host.mu.Lock()
	served := len(lead.host.served)
	clientID := lead.host.served[0].ClientID
	lead.host.mu.Unlock()
	if served != 1 || clientID != "cli" {
		t.Fatalf("leader served %d requests (client id %q)", served, clientID)
	}
	if _, err := lead.q.Forward(ctx, &Forwarded{Key: 19, Version: 7, Req: req}); !errors.Is(err, errIsLeader) {
		t.Fatalf("Forward on the leader: %v", err)
	}

	// Only one member left of three: no leader, Forward times out.
	for _, m := range []*member{lead, rest[1]} {
		m.q.Close()
		m.q = nil
	}
	short, cancel2 := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel2()
	start := time.Now()
	if _, err := rest[0].q.Forward(short, &Forwarded{Key: 19, Version: 7, Req: req}); !errors.Is(err, ErrNoController) {
		t.Fatalf("Forward without a quorum: %v, want ErrNoController", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("Forward gave up after %v", d)
	}
}

// TestControllerListenerRefusesOtherRequests: a Kafka request other than
// Envelope on the controller listener, or an Envelope whose inner request
// does not decode, gets the connection closed or INVALID_REQUEST, never a
// hang.
func TestControllerListenerRefusesOtherRequests(t *testing.T) {
	ms := openQuorum(t, 1)
	lead, _ := leaderOf(t, ms)
	send := func(frame []byte) ([]byte, error) {
		conn, err := net.Dial("tcp", lead.opts.Listen)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
		return readFrame(bufio.NewReader(conn))
	}
	api := appendRequest([]byte{0, 0, 0, 0}, 18, 3, 7, "x", kmsg.NewPtrApiVersionsRequest())
	binary.BigEndian.PutUint32(api, uint32(len(api)-4))
	if _, err := send(api); !errors.Is(err, io.EOF) {
		t.Fatalf("ApiVersions on the controller listener: %v, want the connection closed", err)
	}
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = []byte{0, 19, 0, 7, 0, 0, 0, 1, 0, 0, 0xff} // CreateTopics v7, a broken body
	frame := appendRequest([]byte{0, 0, 0, 0}, 58, 0, 9, "x", env)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	body, err := send(frame)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrEnvelopeResponse()
	rest, err := readResponseHeader(body, true)
	if err == nil {
		err = resp.ReadFrom(rest)
	}
	if err != nil || resp.ErrorCode != kerr.InvalidRequest.Code || binary.BigEndian.Uint32(body) != 9 {
		t.Fatalf("Envelope with a broken request: %+v, %v", resp, err)
	}
}
