package quota

// DescribeClientQuotas (key 48), v0-v1 (KIP-546).
//
// Answers the quota entities of the metadata image that pass the filter,
// with their keys and values. Each filter component names an entity type
// and a match: exact name (0, match string required), the default entity
// (1) or any entity of the type, default included (2). An entity passes
// when it satisfies every component; with strict it must also have no
// entity type the filter does not name (no components and not strict:
// every entity). A bad filter answers INVALID_REQUEST (42) with a message
// and no entries: an empty or unknown entity type, a type named twice, a
// match string with match type default or any, none with exact, an unknown
// match type, or ip combined with user or client-id. Entities are ordered
// by their path (users/<user>/clients/<client-id>, ips/<ip>), values by key.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) describeClientQuotasAPI() wire.API {
	return wire.API{Key: 48, Min: 0, Max: 1, Handle: h.handleDescribeClientQuotas}
}

func (h *handlers) handleDescribeClientQuotas(r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	comps := make([]FilterComponent, len(req.Components))
	for i, c := range req.Components {
		comps[i] = FilterComponent{EntityType: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match}
	}
	f, err := NewFilter(comps, req.Strict)
	if err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = wire.ErrMessage(err)
		return resp
	}
	for _, d := range h.b.ClientQuotas().Describe(f) {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range d.Entity.Parts() {
			rp := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			rp.Type, rp.Name = p.Type, p.Name
			re.Entity = append(re.Entity, rp)
		}
		for _, k := range SortedKeys(d.Values) {
			rv := kmsg.NewDescribeClientQuotasResponseEntryValue()
			rv.Key, rv.Value = k, d.Values[k]
			re.Values = append(re.Values, rv)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}
