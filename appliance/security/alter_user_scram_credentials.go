package security

// AlterUserScramCredentials (key 51), v0 (KIP-554).
//
// Deletions and upsertions of SCRAM credentials, committed through the
// controller as UserScramCredentialRecords and
// RemoveUserScramCredentialRecords so they survive a restart. An upsertion
// carries the mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), the iterations,
// the client's salt and salted password; the broker stores the salt,
// StoredKey and ServerKey (NewScramCredential), never the salted password. The answer
// has one result per user, in the order users first appear (deletions,
// then upsertions); a user with any invalid alteration is not changed:
// UNACCEPTABLE_CREDENTIAL (93) for an empty user name, iterations outside
// [4096, 16384] or an empty salt or salted password,
// UNSUPPORTED_SASL_MECHANISM (33) for an unknown mechanism,
// DUPLICATE_RESOURCE (92) when a user and mechanism appear twice in the
// request, RESOURCE_NOT_FOUND (91) for deleting an absent credential.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) alterUserScramCredentialsAPI() wire.API {
	return wire.API{Key: 51, Min: 0, Max: 0, Handle: h.handleAlterUserScramCredentials}
}

func (h *handlers) handleAlterUserScramCredentials(r *wire.Request) any {
	req := r.Req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		dels := make([]ScramDeletion, len(req.Deletions))
		for i, d := range req.Deletions {
			dels[i] = ScramDeletion{User: d.Name, Mechanism: d.Mechanism}
		}
		ups := make([]ScramUpsertion, len(req.Upsertions))
		for i, u := range req.Upsertions {
			ups[i] = ScramUpsertion{User: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword}
		}
		users, errs := h.alterScramCredentials(dels, ups)
		for i, u := range users {
			rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			rr.User = u
			rr.ErrorCode = wire.ErrCode(errs[i])
			rr.ErrorMessage = wire.ErrMessage(errs[i])
			resp.Results = append(resp.Results, rr)
		}
		return resp
	})
}
