package metadata

// DeleteTopics (key 20), v0-v6.
//
// v0-v5 name topics; v6 names each topic by name or by id (KIP-516). Each
// topic is removed from the metadata through the controller and its
// partitions are closed and deleted on their owner shards before the answer.
// Errors are per topic: UNKNOWN_TOPIC_OR_PARTITION (3) for an unknown name,
// UNKNOWN_TOPIC_ID (100) for an unknown id, TOPIC_DELETION_DISABLED (73)
// when delete.topic.enable is false, INVALID_TOPIC_EXCEPTION (17) for the
// internal metadata topic. As in Kafka's controller, a topic named twice
// answers one INVALID_REQUEST (42) entry ("duplicate topic name" or
// "duplicate topic id") and is not deleted, and a v6 entry that gives both
// or neither of name and id answers INVALID_REQUEST. v5+ carries error
// messages, v6 the topic id. timeout_ms is not needed: the deletion is done
// when the answer is sent.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) deleteTopicsAPI() wire.API {
	return wire.API{Key: 20, Min: 0, Max: 6, Handle: h.handleDeleteTopics}
}

// deleteTopicsEntry is one topic of a DeleteTopics request, by name or id.
type deleteTopicsEntry struct {
	name *string
	id   TopicID
}

// deleteTopicsEntries normalises both request shapes (v0-v5 names, v6
// name-or-id entries).
func deleteTopicsEntries(req *kmsg.DeleteTopicsRequest, version int16) []deleteTopicsEntry {
	var out []deleteTopicsEntry
	if version < 6 {
		for _, n := range req.TopicNames {
			n := n
			out = append(out, deleteTopicsEntry{name: &n})
		}
		return out
	}
	for _, t := range req.Topics {
		out = append(out, deleteTopicsEntry{name: t.Topic, id: TopicID(t.TopicID)})
	}
	return out
}

func (h *handlers) handleDeleteTopics(r *wire.Request) any {
	req := r.Req.(*kmsg.DeleteTopicsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		entries := deleteTopicsEntries(req, r.Version)
		names := map[string]int{}
		ids := map[TopicID]int{}
		for _, e := range entries {
			switch {
			case e.name != nil && e.id == (TopicID{}):
				names[*e.name]++
			case e.name == nil && e.id != (TopicID{}):
				ids[e.id]++
			}
		}
		dupNameAnswered := map[string]bool{}
		dupIDAnswered := map[TopicID]bool{}
		for _, e := range entries {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic = e.name
			rt.TopicID = e.id
			fail := func(err error) {
				rt.ErrorCode = wire.ErrCode(err)
				rt.ErrorMessage = wire.ErrMessage(err)
			}
			switch {
			case e.name == nil && e.id == (TopicID{}):
				fail(fmt.Errorf("%w: neither topic name nor id were specified", kerr.InvalidRequest))
			case e.name != nil && e.id != (TopicID{}):
				fail(fmt.Errorf("%w: you may not specify both topic name and topic id", kerr.InvalidRequest))
			case e.name != nil && names[*e.name] > 1:
				if dupNameAnswered[*e.name] {
					continue
				}
				dupNameAnswered[*e.name] = true
				fail(fmt.Errorf("%w: duplicate topic name %q", kerr.InvalidRequest, *e.name))
			case e.name == nil && ids[e.id] > 1:
				if dupIDAnswered[e.id] {
					continue
				}
				dupIDAnswered[e.id] = true
				fail(fmt.Errorf("%w: duplicate topic id %s", kerr.InvalidRequest, e.id))
			case h.deleteTopicAuthzErr(r, e.name, e.id) != nil:
				fail(h.deleteTopicAuthzErr(r, e.name, e.id))
			default:
				name := ""
				if e.name != nil {
					name = *e.name
				}
				t, err := h.ctl.DeleteTopic(name, e.id)
				if err != nil {
					fail(err)
					break
				}
				n := t.Name
				rt.Topic = &n
				rt.TopicID = t.ID
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}
