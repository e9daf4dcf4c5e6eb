package appliance

import (
	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/share"
	"github.com/ringbroker/ringbroker/appliance/txn"
	"github.com/ringbroker/ringbroker/appliance/wire"
)

// apiDef is one API key whose handler still lives in this package and runs
// with the Broker. Each handler file declares its own (read-only) apiDef
// next to its behaviour comment; newAPITable binds them to one broker.
// Concept packages (appliance/quota, appliance/security, ...) register
// their handlers into the same wire.Table with functions of their own.
type apiDef struct {
	key      int16
	min, max int16
	handle   func(b *Broker, r *wire.Request) any
	// unsupported, when set, answers versions outside [min, max] instead of
	// closing the connection (ApiVersions, Produce v0-v2).
	unsupported func(b *Broker, r *wire.Request) any
	// advertiseFrom is wire.API.AdvertiseFrom: the lowest version
	// ApiVersions lists for an API with unsupported (Produce from v0).
	advertiseFrom int16
}

// bind returns d as a wire.API whose handlers run with b.
func (d apiDef) bind(b *Broker) wire.API {
	a := wire.API{Key: d.key, Min: d.min, Max: d.max, AdvertiseFrom: d.advertiseFrom}
	handle := d.handle
	a.Handle = func(r *wire.Request) any { return handle(b, r) }
	if un := d.unsupported; un != nil {
		a.Unsupported = func(r *wire.Request) any { return un(b, r) }
	}
	return a
}

// newAPITable builds b's dispatch table: every API this node answers. Its
// authorizer (b.authz) must be set already; tests that only parse frames
// pass a zero Broker.
func newAPITable(b *Broker) *wire.Table {
	t := wire.NewTable()
	for _, d := range []apiDef{
		// Produce and fetch.
		produceAPI, fetchAPI, listOffsetsAPI, offsetForLeaderEpochAPI, deleteRecordsAPI,
		// Metadata, topics, configs, the cluster.
		apiVersionsAPI, metadataAPI, describeLogDirsAPI, describeProducersAPI,
		// Coordinators of groups and transactions.
		findCoordinatorAPI,
	} {
		t.Register(d.bind(b))
	}
	var authz wire.Authorizer // no typed nil: txn checks authz == nil
	if b.authz != nil {
		authz = b.authz
	}
	txn.Register(t, txnBroker{b}, txnGroups{b}, authz)
	quota.Register(t, quotaBroker{b})
	security.Register(t, securityBroker{b}, b.authz, b.log)
	// Classic and KIP-848 groups.
	group.Register(t, groupBroker{b})
	// Topics, configs, the cluster: the controller's admin APIs.
	metadata.Register(t, ctlHost{b: b})
	// Share groups (KIP-932).
	share.Register(t, shareHost{b})
	return t
}
