package quota

// Client quotas (KIP-13 byte-rate quotas, KIP-55 user quotas, KIP-546 APIs).
//
// A quota is a set of (key, value) pairs on an entity: a combination of a
// user, a client id and an IP, each named or the default (a null name).
// Settings are ClientQuotaRecords in the metadata log, applied into the
// image's Values; AlterClientQuotas commits them through the controller,
// DescribeClientQuotas reads the image. The Manager counts bytes against
// producer_byte_rate and consumer_byte_rate; sampledRate and throttleTime
// sample the rate and compute the throttle.

import (
	"fmt"
	"net"
	"sort"
)

// Quota entity types (Kafka's ClientQuotaEntity).
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// Quota keys (Kafka's QuotaConfigs).
const (
	ProducerByteRate       = "producer_byte_rate"       // bytes/s of produce requests, per entity
	ConsumerByteRate       = "consumer_byte_rate"       // bytes/s of fetch responses, per entity
	RequestPercentage      = "request_percentage"       // percent of one I/O+network thread (stored, not enforced)
	ControllerMutationRate = "controller_mutation_rate" // partition mutations/s (stored, not enforced)
	ConnectionCreationRate = "connection_creation_rate" // connections/s per IP (stored, not enforced)
)

// quotaKeyIsLong reports the keys Kafka types as LONG: their values must be
// whole numbers.
func quotaKeyIsLong(key string) bool {
	return key == ProducerByteRate || key == ConsumerByteRate || key == ConnectionCreationRate
}

// Kinds are bits telling which enforced keys any entity sets, so that the
// request path tests one byte instead of resolving a quota.
const (
	KindProduce uint8 = 1 << iota // some entity sets producer_byte_rate
	KindFetch                     // some entity sets consumer_byte_rate
)

// ClientQuotaRecord sets (Remove false) or removes one quota key of an
// entity; KRaft's ClientQuotaRecord. Entity parts have a type (user,
// client-id, ip) and a name, nil for the default entity of that type.
type ClientQuotaRecord struct {
	Entity []ClientQuotaEntityPart `json:"entity"`
	Key    string                  `json:"key"`
	Value  float64                 `json:"value"`
	Remove bool                    `json:"remove,omitempty"`
}

// ClientQuotaEntityPart is one component of a quota entity.
type ClientQuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// Part is one component of a quota entity: absent (the zero Part), the
// default of its type (Default) or a name (Named). Comparable.
type Part struct {
	set, def bool
	name     string
}

// Named is the Part naming name.
func Named(name string) Part { return Part{set: true, name: name} }

// Default is the Part of the default entity of its type (a null name).
func Default() Part { return Part{set: true, def: true} }

// Set reports whether the Part is present in its entity.
func (p Part) Set() bool { return p.set }

// Entity is a quota entity as a comparable map key.
type Entity struct {
	User, ClientID, IP Part
}

// ParseEntity validates entity parts as Kafka's controller does: known
// types, each at most once, ip not combined with user or client-id, ip
// names that are IP addresses, at least one part. Errors are messages for
// INVALID_REQUEST.
func ParseEntity(parts []ClientQuotaEntityPart) (Entity, error) {
	var e Entity
	if len(parts) == 0 {
		return e, fmt.Errorf("invalid empty client quota entity")
	}
	for _, p := range parts {
		var dst *Part
		switch p.Type {
		case EntityUser:
			dst = &e.User
		case EntityClientID:
			dst = &e.ClientID
		case EntityIP:
			dst = &e.IP
		default:
			return e, fmt.Errorf("unhandled client quota entity type: %q", p.Type)
		}
		if dst.set {
			return e, fmt.Errorf("duplicate %s entity in client quota entity", p.Type)
		}
		if p.Name == nil {
			*dst = Default()
		} else {
			*dst = Named(*p.Name)
		}
	}
	if e.IP.set {
		if e.User.set || e.ClientID.set {
			return e, fmt.Errorf("invalid quota entity combination: an ip entity cannot be combined with a user or client-id entity")
		}
		if !e.IP.def && net.ParseIP(e.IP.name) == nil {
			return e, fmt.Errorf("%q is not a valid IP address", e.IP.name)
		}
	}
	return e, nil
}

// Parts returns e as entity parts in the order user, client-id, ip.
func (e Entity) Parts() []ClientQuotaEntityPart {
	var out []ClientQuotaEntityPart
	add := func(typ string, p Part) {
		if !p.set {
			return
		}
		cp := ClientQuotaEntityPart{Type: typ}
		if !p.def {
			n := p.name
			cp.Name = &n
		}
		out = append(out, cp)
	}
	add(EntityUser, e.User)
	add(EntityClientID, e.ClientID)
	add(EntityIP, e.IP)
	return out
}

// String is Kafka's ZooKeeper-era path of the entity, for messages and
// ordering: users/<u>/clients/<c>, ips/<ip>, with <default> for defaults.
func (e Entity) String() string {
	name := func(p Part) string {
		if p.def {
			return "<default>"
		}
		return p.name
	}
	switch {
	case e.IP.set:
		return "ips/" + name(e.IP)
	case e.User.set && e.ClientID.set:
		return "users/" + name(e.User) + "/clients/" + name(e.ClientID)
	case e.User.set:
		return "users/" + name(e.User)
	default:
		return "clients/" + name(e.ClientID)
	}
}

// ValidateOp checks a key and value for an entity as Kafka does: the
// key must be one the entity's types take (connection_creation_rate for
// ip, the others for user and client-id), the value must be positive and
// a whole number for LONG keys. Errors are messages for INVALID_REQUEST.
func ValidateOp(e Entity, key string, value float64, remove bool) error {
	switch key {
	case ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate:
		if e.IP.set {
			return fmt.Errorf("invalid configuration key %s for an ip entity", key)
		}
	case ConnectionCreationRate:
		if !e.IP.set {
			return fmt.Errorf("invalid configuration key %s for a user or client-id entity", key)
		}
	default:
		return fmt.Errorf("invalid configuration key %s", key)
	}
	if remove {
		return nil
	}
	if quotaKeyIsLong(key) {
		if value != float64(int64(value)) || value >= 1<<63 {
			return fmt.Errorf("configuration %s must be a Long value, got %v", key, value)
		}
	}
	if !(value > 0) {
		return fmt.Errorf("quota %s must be greater than 0, got %v", key, value)
	}
	return nil
}

// Values are the quota values of one metadata image by entity and key. A
// Values is immutable once built: Apply returns a new one.
type Values map[Entity]map[string]float64

// Apply returns v with one ClientQuotaRecord applied (copy on write: v is
// unchanged) and the Kind bits of the result.
func (v Values) Apply(r *ClientQuotaRecord) (Values, uint8, error) {
	e, err := ParseEntity(r.Entity)
	if err != nil {
		return v, v.Kinds(), fmt.Errorf("cannot apply ClientQuotaRecord: %v", err)
	}
	next := make(Values, len(v)+1)
	for k, vals := range v {
		next[k] = vals
	}
	vals := make(map[string]float64, len(next[e])+1)
	for k, v := range next[e] {
		vals[k] = v
	}
	if r.Remove {
		delete(vals, r.Key)
	} else {
		vals[r.Key] = r.Value
	}
	if len(vals) == 0 {
		delete(next, e)
	} else {
		next[e] = vals
	}
	return next, next.Kinds(), nil
}

// Kinds returns the Kind bits of v: which enforced keys any entity sets.
func (v Values) Kinds() uint8 {
	var kinds uint8
	for _, vals := range v {
		if _, ok := vals[ProducerByteRate]; ok {
			kinds |= KindProduce
		}
		if _, ok := vals[ConsumerByteRate]; ok {
			kinds |= KindFetch
		}
	}
	return kinds
}

// Tags identify the rate a request is counted in: Kafka's metric tags
// (user, client-id) of the quota that applies, with the request's own
// names in place of defaults and "" for a part the quota does not name.
type Tags struct {
	User, ClientID string
}

// Resolve finds the quota for key of a request from user with
// clientID, in Kafka's order of precedence (most specific first):
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>
//
// ok is false when no entity sets key. It does not allocate.
func (v Values) Resolve(key, user, clientID string) (limit float64, tags Tags, ok bool) {
	u, c := Named(user), Named(clientID)
	candidates := [...]struct {
		e    Entity
		tags Tags
	}{
		{Entity{User: u, ClientID: c}, Tags{user, clientID}},
		{Entity{User: u, ClientID: Default()}, Tags{user, clientID}},
		{Entity{User: u}, Tags{user, ""}},
		{Entity{User: Default(), ClientID: c}, Tags{user, clientID}},
		{Entity{User: Default(), ClientID: Default()}, Tags{user, clientID}},
		{Entity{User: Default()}, Tags{user, ""}},
		{Entity{ClientID: c}, Tags{"", clientID}},
		{Entity{ClientID: Default()}, Tags{"", clientID}},
	}
	for i := range candidates {
		if limit, found := v[candidates[i].e][key]; found {
			return limit, candidates[i].tags, true
		}
	}
	return 0, Tags{}, false
}

// FilterComponent is one DescribeClientQuotas filter component.
type FilterComponent struct {
	EntityType string
	MatchType  int8 // 0 exact name, 1 default, 2 any (specified)
	Match      *string
}

// Filter is a validated DescribeClientQuotas filter.
type Filter struct {
	exact  map[string]Part // type -> the name or default it must have
	anyOf  map[string]bool // types that must be present, any name
	strict bool
}

// NewFilter validates components as Kafka does (errors are messages
// for INVALID_REQUEST): known, non-repeated entity types; a match string
// only with match type exact; ip not combined with user or client-id.
func NewFilter(comps []FilterComponent, strict bool) (*Filter, error) {
	f := &Filter{exact: map[string]Part{}, anyOf: map[string]bool{}, strict: strict}
	for _, c := range comps {
		switch c.EntityType {
		case "":
			return nil, fmt.Errorf("invalid empty entity type")
		case EntityUser, EntityClientID, EntityIP:
		default:
			return nil, fmt.Errorf("unknown entity type %q", c.EntityType)
		}
		if _, dup := f.exact[c.EntityType]; dup || f.anyOf[c.EntityType] {
			return nil, fmt.Errorf("entity type %s cannot appear more than once in the filter", c.EntityType)
		}
		switch c.MatchType {
		case 0:
			if c.Match == nil {
				return nil, fmt.Errorf("match type exact (0) needs a match string")
			}
			f.exact[c.EntityType] = Named(*c.Match)
		case 1:
			if c.Match != nil {
				return nil, fmt.Errorf("match type default (1) takes no match string")
			}
			f.exact[c.EntityType] = Default()
		case 2:
			if c.Match != nil {
				return nil, fmt.Errorf("match type any (2) takes no match string")
			}
			f.anyOf[c.EntityType] = true
		default:
			return nil, fmt.Errorf("unknown match type %d", c.MatchType)
		}
	}
	_, ipExact := f.exact[EntityIP]
	if ipExact || f.anyOf[EntityIP] {
		if len(f.exact)+len(f.anyOf) > 1 {
			return nil, fmt.Errorf("invalid entity filter component combination: an ip filter component cannot be used with a user or client-id filter component")
		}
	}
	return f, nil
}

// Matches reports whether e passes the filter: every exact component
// equal, every "any" component present, and with strict no other types.
func (f *Filter) Matches(e Entity) bool {
	parts := map[string]Part{EntityUser: e.User, EntityClientID: e.ClientID, EntityIP: e.IP}
	for typ, want := range f.exact {
		if parts[typ] != want {
			return false
		}
	}
	for typ := range f.anyOf {
		if !parts[typ].set {
			return false
		}
	}
	if f.strict {
		for typ, p := range parts {
			if _, ok := f.exact[typ]; p.set && !ok && !f.anyOf[typ] {
				return false
			}
		}
	}
	return true
}

// Described is one entity and its values, for DescribeClientQuotas.
type Described struct {
	Entity Entity
	Values map[string]float64
}

// Describe returns the entities of v that pass f, ordered by
// their path.
func (v Values) Describe(f *Filter) []Described {
	var out []Described
	for e, vals := range v {
		if f.Matches(e) {
			out = append(out, Described{e, vals})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity.String() < out[j].Entity.String() })
	return out
}

// SortedKeys returns vals' keys in order.
func SortedKeys(vals map[string]float64) []string {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
