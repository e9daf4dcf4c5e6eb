package quota

// AlterClientQuotas (key 49), v0-v1 (KIP-546).
//
// Each entry names an entity (user, client-id and ip parts, a null name
// meaning the entity type's default) and ops that set or remove quota keys.
// Entries are checked one by one as Kafka's controller checks them, and an
// invalid entry answers INVALID_REQUEST (42) with a message while the valid
// ones are committed together as ClientQuotaRecords through the controller,
// so they survive a restart: unknown entity types, a repeated type, ip
// combined with user or client-id, an ip name that is not an IP address,
// keys the entity does not take (connection_creation_rate is for ip only,
// producer_byte_rate, consumer_byte_rate, request_percentage and
// controller_mutation_rate for user and client-id), a key twice in one
// entry, a value that is not positive, or not whole for the byte and
// connection rates. validate_only checks without committing. The answer
// echoes each entry's entity in request order. Only the byte rates are
// enforced (Manager); the other keys are stored and described.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) alterClientQuotasAPI() wire.API {
	return wire.API{Key: 49, Min: 0, Max: 1, Handle: h.handleAlterClientQuotas}
}

func (h *handlers) handleAlterClientQuotas(r *wire.Request) any {
	req := r.Req.(*kmsg.AlterClientQuotasRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		alts := make([]alteration, len(req.Entries))
		for i, e := range req.Entries {
			for _, p := range e.Entity {
				alts[i].entity = append(alts[i].entity, ClientQuotaEntityPart{Type: p.Type, Name: p.Name})
			}
			for _, op := range e.Ops {
				alts[i].ops = append(alts[i].ops, alterOp{key: op.Key, value: op.Value, remove: op.Remove})
			}
		}
		errs := h.alter(alts, req.ValidateOnly)
		for i, e := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode = wire.ErrCode(errs[i])
			re.ErrorMessage = wire.ErrMessage(errs[i])
			for _, p := range e.Entity {
				rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rp.Type, rp.Name = p.Type, p.Name
				re.Entity = append(re.Entity, rp)
			}
			resp.Entries = append(resp.Entries, re)
		}
		return resp
	})
}

// alteration is one AlterClientQuotas entry.
type alteration struct {
	entity []ClientQuotaEntityPart
	ops    []alterOp
}

// alterOp sets (remove false) or removes one key.
type alterOp struct {
	key    string
	value  float64
	remove bool
}

// alter validates each alteration and commits the valid ones as one batch
// through the controller (none with validateOnly). It returns one error per
// alteration; errors wrap kerr.InvalidRequest, or the commit's error
// (kerr.KafkaStorageError, kerr.UnknownServerError) when it fails.
func (h *handlers) alter(alts []alteration, validateOnly bool) []error {
	errs := make([]error, len(alts))
	var recs []*ClientQuotaRecord
	var owners []int // alteration index of each record
	for i, a := range alts {
		e, err := ParseEntity(a.entity)
		if err != nil {
			errs[i] = fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
			continue
		}
		seen := map[string]bool{}
		var mine []*ClientQuotaRecord
		for _, op := range a.ops {
			if seen[op.key] {
				err = fmt.Errorf("duplicate quota key %s for entity %s", op.key, e)
				break
			}
			seen[op.key] = true
			if err = ValidateOp(e, op.key, op.value, op.remove); err != nil {
				break
			}
			rec := &ClientQuotaRecord{Entity: e.Parts(), Key: op.key, Remove: op.remove}
			if !op.remove {
				rec.Value = op.value
			}
			mine = append(mine, rec)
		}
		if err != nil {
			errs[i] = fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
			continue
		}
		recs = append(recs, mine...)
		for range mine {
			owners = append(owners, i)
		}
	}
	if validateOnly || len(recs) == 0 {
		return errs
	}
	if err := h.b.CommitClientQuotas(recs); err != nil {
		for _, i := range owners {
			errs[i] = err
		}
	}
	return errs
}
