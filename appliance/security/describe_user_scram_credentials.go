package security

// DescribeUserScramCredentials (key 50), v0 (KIP-554).
//
// Answers the mechanisms and iterations of users' SCRAM credentials (never
// salts or keys). With users null or empty it describes every user that
// has a credential, sorted by name; otherwise one result per requested
// user in request order, RESOURCE_NOT_FOUND (91) for a user without
// credentials and DUPLICATE_RESOURCE (92) for a user named more than once.

import (
	"fmt"
	"sort"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) describeUserScramCredentialsAPI() wire.API {
	return wire.API{Key: 50, Min: 0, Max: 0, Handle: h.handleDescribeUserScramCredentials}
}

func (h *handlers) handleDescribeUserScramCredentials(r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	creds := h.b.View().Scram
	var users []string
	if len(req.Users) == 0 {
		users = creds.Users()
	} else {
		for _, u := range req.Users {
			users = append(users, u.Name)
		}
	}
	count := map[string]int{}
	for _, u := range users {
		count[u]++
	}
	answered := map[string]bool{}
	for _, u := range users {
		if answered[u] {
			continue
		}
		answered[u] = true
		rr := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		rr.User = u
		var err error
		switch creds := creds[u]; {
		case count[u] > 1:
			err = fmt.Errorf("%w: cannot describe SCRAM credentials for the same user twice in a single request: %s", kerr.DuplicateResource, u)
		case len(creds) == 0:
			err = fmt.Errorf("%w: attempt to describe a user credential that does not exist: %s", kerr.ResourceNotFound, u)
		default:
			mechs := make([]int8, 0, len(creds))
			for m := range creds {
				mechs = append(mechs, m)
			}
			sort.Slice(mechs, func(i, j int) bool { return mechs[i] < mechs[j] })
			for _, m := range mechs {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = m, creds[m].Iterations
				rr.CredentialInfos = append(rr.CredentialInfos, ci)
			}
		}
		rr.ErrorCode = wire.ErrCode(err)
		rr.ErrorMessage = wire.ErrMessage(err)
		resp.Results = append(resp.Results, rr)
	}
	return resp
}
