package group

// DeleteGroups (key 42), v0-v2.
//
// Deletes Empty groups: tombstones for the group's offsets and metadata are
// appended to __consumer_offsets (acks=-1) and the group is forgotten.
// A group with members answers NON_EMPTY_GROUP, an unknown one
// GROUP_ID_NOT_FOUND. Share groups (KIP-932) are deleted the same way when
// they have no members, with their share-partition states
// (ShareGroups.DeleteShareGroup). A group's GROUP config resource is
// kept, as in Kafka, where group configs live in the metadata log and
// DeleteGroups does not remove them.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var deleteGroupsAPI = apiDef{key: 42, min: 0, max: 2, handle: handleDeleteGroups}

func handleDeleteGroups(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	chans := make([]wire.Reply[*kerr.Error], len(req.Groups))
	for i, g := range req.Groups {
		if h.groupDenied(r, kmsg.ACLOperationDelete, g) {
			continue // answered GROUP_AUTHORIZATION_FAILED below
		}
		chans[i] = ask(h, g, func(m *Manager, reply func(*kerr.Error)) {
			if m.share != nil && m.share.DeleteShareGroup(g, reply) {
				return
			}
			m.deleteGroup(g, reply)
		})
	}
	return wire.Deferred(func() any {
		for i, id := range req.Groups {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group = id
			err, ok := chans[i].Wait()
			switch {
			case h.groupDenied(r, kmsg.ACLOperationDelete, id):
				dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			case !ok:
				dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
			case err != nil:
				dg.ErrorCode = err.Code
			}
			resp.Groups = append(resp.Groups, dg)
		}
		return resp
	})
}
