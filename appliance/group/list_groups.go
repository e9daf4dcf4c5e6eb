package group

// ListGroups (key 16), v0-v5.
//
// Every group this broker coordinates (all of them: it leads every
// __consumer_offsets partition), with its protocol type; v4+ adds the state
// and filters by state (KIP-518, case-insensitive), v5+ adds the group type
// ("classic", "consumer" for KIP-848 groups, whose states are Empty,
// Assigning, Reconciling and Stable, or "share" for KIP-932 share groups,
// protocol type "share") and filters by type (KIP-848).

import (
	"sort"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var listGroupsAPI = apiDef{key: 16, min: 0, max: 5, handle: handleListGroups}

func handleListGroups(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	gc := h.coord()
	if gc == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	chans := make([]chan []groupSummary, 0, len(gc.mgrs))
	for p, mgr := range gc.mgrs {
		ch := make(chan []groupSummary, 1)
		chans = append(chans, ch)
		gc.Post(int32(p), func() { ch <- mgr.listWithShare() })
	}
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	return wire.Deferred(func() any {
		var all []groupSummary
		for _, ch := range chans {
			select {
			case gs := <-ch:
				all = append(all, gs...)
			case <-gc.Closing():
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				return resp
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
		visible := h.listGroupsFilter(r)
		for _, g := range all {
			if !visible(g.id) {
				continue
			}
			if r.Version >= 4 && !match(req.StatesFilter, g.state) {
				continue
			}
			if r.Version >= 5 && !match(req.TypesFilter, g.groupType) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, g.protocolType, g.state, g.groupType
			resp.Groups = append(resp.Groups, lg)
		}
		return resp
	})
}

// listWithShare is list plus the partition's share groups.
func (m *Manager) listWithShare() []groupSummary {
	out := m.list()
	if m.share != nil {
		m.share.EachShareGroup(func(id, state string) {
			out = append(out, groupSummary{id: id, state: state, protocolType: "share", groupType: "share"})
		})
	}
	return out
}
