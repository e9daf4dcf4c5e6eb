package quorum

import (
	"sync"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Handler receives what a Transport delivers to its node. Both methods
// must not block: a Node queues the message (dropping it when its
// receive queue is full, as Raft tolerates loss).
type Handler interface {
	// Step hands a message addressed to this node to its Raft state
	// machine. The Handler owns m afterwards.
	Step(m *raftpb.Message)
	// ReportUnreachable tells the node that the last message to id
	// could not be sent, so that its leader probes id again instead of
	// streaming appends into the void.
	ReportUnreachable(id uint64)
}

// Transport carries Raft messages between the quorum's nodes. A Node
// calls Start once before any Send, Send from its loop only, and Close
// once when it stops. Delivery is best effort: messages may be lost,
// duplicated or reordered, which Raft tolerates; Send must not block on
// the network.
type Transport interface {
	// Start registers h as the receiver of the messages addressed to
	// this node.
	Start(h Handler) error
	// Send sends each message to its To node. The messages must not be
	// changed after the call; the transport must not change them.
	Send(msgs []*raftpb.Message)
	// Close stops delivery to the handler and releases the transport.
	Close() error
}

// Hub connects in-process nodes: each node's Transport (Hub.Transport)
// delivers a copy of each message straight to the addressee's Handler
// when it is registered, and drops it otherwise. For tests; safe for
// concurrent use.
type Hub struct {
	mu       sync.Mutex
	handlers map[uint64]Handler
}

// NewHub returns a Hub with no nodes.
func NewHub() *Hub { return &Hub{handlers: map[uint64]Handler{}} }

// Transport returns the Transport of node id on h.
func (h *Hub) Transport(id uint64) Transport { return &hubTransport{hub: h, id: id} }

func (h *Hub) handler(id uint64) Handler {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.handlers[id]
}

type hubTransport struct {
	hub *Hub
	id  uint64
}

func (t *hubTransport) Start(h Handler) error {
	t.hub.mu.Lock()
	defer t.hub.mu.Unlock()
	t.hub.handlers[t.id] = h
	return nil
}

func (t *hubTransport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		if h := t.hub.handler(m.GetTo()); h != nil {
			// A copy, as a message that crossed a network would be: the
			// receiver's Raft keeps references to what it steps.
			h.Step(proto.Clone(m).(*raftpb.Message))
		}
	}
}

func (t *hubTransport) Close() error {
	t.hub.mu.Lock()
	defer t.hub.mu.Unlock()
	delete(t.hub.handlers, t.id)
	return nil
}
