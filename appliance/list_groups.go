package appliance

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

func handleListGroups(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	gc := b.groups
	if gc == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	chans := make([]chan []groupSummary, 0, len(gc.parts))
	shareChans := make([]chan []shareGroupView, 0, len(gc.parts))
	for _, op := range gc.parts {
		ch := make(chan []groupSummary, 1)
		sch := make(chan []shareGroupView, 1)
		chans = append(chans, ch)
		shareChans = append(shareChans, sch)
		mgr, sm := op.mgr, op.share
		gc.post(op.st, func() { ch <- mgr.list(); sch <- sm.list() })
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
		for i, ch := range chans {
			select {
			case gs := <-ch:
				all = append(all, gs...)
				for _, sg := range <-shareChans[i] {
					all = append(all, groupSummary{id: sg.id, state: sg.state, protocolType: "share", groupType: "share"})
				}
			case <-b.closing:
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				return resp
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
		visible := b.listGroupsFilter(r) // authorizer_checks.go
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
