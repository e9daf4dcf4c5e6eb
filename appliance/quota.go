package appliance

// Client quotas (KIP-13 byte-rate quotas, KIP-55 user quotas, KIP-546 APIs).
//
// A quota is a set of (key, value) pairs on an entity: a combination of a
// user, a client id and an IP, each named or the default (a null name).
// Settings are ClientQuotaRecords in the metadata log, applied into the
// image (clientQuotas); AlterClientQuotas commits them through the
// controller, DescribeClientQuotas reads the image. Enforcement of
// producer_byte_rate and consumer_byte_rate is in quota_enforce.go, the
// sampled rate and the throttle time in quota_rate.go.

import (
	"fmt"
	"net"
	"sort"
)

// Quota entity types (Kafka's ClientQuotaEntity).
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// Quota keys (Kafka's QuotaConfigs).
const (
	quotaProducerByteRate       = "producer_byte_rate"       // bytes/s of produce requests, per entity
	quotaConsumerByteRate       = "consumer_byte_rate"       // bytes/s of fetch responses, per entity
	quotaRequestPercentage      = "request_percentage"       // percent of one I/O+network thread (stored, not enforced)
	quotaControllerMutationRate = "controller_mutation_rate" // partition mutations/s (stored, not enforced)
	quotaConnectionCreationRate = "connection_creation_rate" // connections/s per IP (stored, not enforced)
)

// quotaKeyIsLong reports the keys Kafka types as LONG: their values must be
// whole numbers.
func quotaKeyIsLong(key string) bool {
	return key == quotaProducerByteRate || key == quotaConsumerByteRate || key == quotaConnectionCreationRate
}

// Bits of Image.quotaKinds: which enforced keys have any entity set.
const (
	quotaKindProduceBit = 1 << iota
	quotaKindFetchBit
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

// quotaPart is one component of a quota entity in the image: absent
// (!set), the default (def) or a name.
type quotaPart struct {
	set, def bool
	name     string
}

func namedPart(name string) quotaPart { return quotaPart{set: true, name: name} }

var defaultPart = quotaPart{set: true, def: true}

// quotaEntity is a quota entity as a comparable map key.
type quotaEntity struct {
	user, clientID, ip quotaPart
}

// parseQuotaEntity validates entity parts as Kafka's controller does: known
// types, each at most once, ip not combined with user or client-id, ip
// names that are IP addresses, at least one part. Errors are messages for
// INVALID_REQUEST.
func parseQuotaEntity(parts []ClientQuotaEntityPart) (quotaEntity, error) {
	var e quotaEntity
	if len(parts) == 0 {
		return e, fmt.Errorf("invalid empty client quota entity")
	}
	for _, p := range parts {
		var dst *quotaPart
		switch p.Type {
		case quotaEntityUser:
			dst = &e.user
		case quotaEntityClientID:
			dst = &e.clientID
		case quotaEntityIP:
			dst = &e.ip
		default:
			return e, fmt.Errorf("unhandled client quota entity type: %q", p.Type)
		}
		if dst.set {
			return e, fmt.Errorf("duplicate %s entity in client quota entity", p.Type)
		}
		if p.Name == nil {
			*dst = defaultPart
		} else {
			*dst = namedPart(*p.Name)
		}
	}
	if e.ip.set {
		if e.user.set || e.clientID.set {
			return e, fmt.Errorf("invalid quota entity combination: an ip entity cannot be combined with a user or client-id entity")
		}
		if !e.ip.def && net.ParseIP(e.ip.name) == nil {
			return e, fmt.Errorf("%q is not a valid IP address", e.ip.name)
		}
	}
	return e, nil
}

// parts returns e as entity parts in the order user, client-id, ip.
func (e quotaEntity) parts() []ClientQuotaEntityPart {
	var out []ClientQuotaEntityPart
	add := func(typ string, p quotaPart) {
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
	add(quotaEntityUser, e.user)
	add(quotaEntityClientID, e.clientID)
	add(quotaEntityIP, e.ip)
	return out
}

// String is Kafka's ZooKeeper-era path of the entity, for messages and
// ordering: users/<u>/clients/<c>, ips/<ip>, with <default> for defaults.
func (e quotaEntity) String() string {
	name := func(p quotaPart) string {
		if p.def {
			return "<default>"
		}
		return p.name
	}
	switch {
	case e.ip.set:
		return "ips/" + name(e.ip)
	case e.user.set && e.clientID.set:
		return "users/" + name(e.user) + "/clients/" + name(e.clientID)
	case e.user.set:
		return "users/" + name(e.user)
	default:
		return "clients/" + name(e.clientID)
	}
}

// validateQuotaOp checks a key and value for an entity as Kafka does: the
// key must be one the entity's types take (connection_creation_rate for
// ip, the others for user and client-id), the value must be positive and
// a whole number for LONG keys. Errors are messages for INVALID_REQUEST.
func validateQuotaOp(e quotaEntity, key string, value float64, remove bool) error {
	switch key {
	case quotaProducerByteRate, quotaConsumerByteRate, quotaRequestPercentage, quotaControllerMutationRate:
		if e.ip.set {
			return fmt.Errorf("invalid configuration key %s for an ip entity", key)
		}
	case quotaConnectionCreationRate:
		if !e.ip.set {
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

// applyClientQuota applies one ClientQuotaRecord to im (a new image being
// built by Apply): copy on write of the quota map.
func (im *Image) applyClientQuota(r *ClientQuotaRecord) error {
	e, err := parseQuotaEntity(r.Entity)
	if err != nil {
		return fmt.Errorf("cannot apply ClientQuotaRecord: %v", err)
	}
	next := make(map[quotaEntity]map[string]float64, len(im.clientQuotas)+1)
	for k, v := range im.clientQuotas {
		next[k] = v
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
	im.clientQuotas = next
	im.quotaKinds = 0
	for _, vals := range next {
		if _, ok := vals[quotaProducerByteRate]; ok {
			im.quotaKinds |= quotaKindProduceBit
		}
		if _, ok := vals[quotaConsumerByteRate]; ok {
			im.quotaKinds |= quotaKindFetchBit
		}
	}
	return nil
}

// quotaTags identify the rate a request is counted in: Kafka's metric tags
// (user, client-id) of the quota that applies, with the request's own
// names in place of defaults and "" for a part the quota does not name.
type quotaTags struct {
	user, clientID string
}

// resolveQuota finds the quota for key of a request from user with
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
func (im *Image) resolveQuota(key, user, clientID string) (limit float64, tags quotaTags, ok bool) {
	u, c := namedPart(user), namedPart(clientID)
	candidates := [...]struct {
		e    quotaEntity
		tags quotaTags
	}{
		{quotaEntity{user: u, clientID: c}, quotaTags{user, clientID}},
		{quotaEntity{user: u, clientID: defaultPart}, quotaTags{user, clientID}},
		{quotaEntity{user: u}, quotaTags{user, ""}},
		{quotaEntity{user: defaultPart, clientID: c}, quotaTags{user, clientID}},
		{quotaEntity{user: defaultPart, clientID: defaultPart}, quotaTags{user, clientID}},
		{quotaEntity{user: defaultPart}, quotaTags{user, ""}},
		{quotaEntity{clientID: c}, quotaTags{"", clientID}},
		{quotaEntity{clientID: defaultPart}, quotaTags{"", clientID}},
	}
	for i := range candidates {
		if v, found := im.clientQuotas[candidates[i].e][key]; found {
			return v, candidates[i].tags, true
		}
	}
	return 0, quotaTags{}, false
}

// quotaFilterComponent is one DescribeClientQuotas filter component.
type quotaFilterComponent struct {
	entityType string
	matchType  int8 // 0 exact name, 1 default, 2 any (specified)
	match      *string
}

// quotaFilter is a validated DescribeClientQuotas filter.
type quotaFilter struct {
	exact  map[string]quotaPart // type -> the name or default it must have
	anyOf  map[string]bool      // types that must be present, any name
	strict bool
}

// newQuotaFilter validates components as Kafka does (errors are messages
// for INVALID_REQUEST): known, non-repeated entity types; a match string
// only with match type exact; ip not combined with user or client-id.
func newQuotaFilter(comps []quotaFilterComponent, strict bool) (*quotaFilter, error) {
	f := &quotaFilter{exact: map[string]quotaPart{}, anyOf: map[string]bool{}, strict: strict}
	for _, c := range comps {
		switch c.entityType {
		case "":
			return nil, fmt.Errorf("invalid empty entity type")
		case quotaEntityUser, quotaEntityClientID, quotaEntityIP:
		default:
			return nil, fmt.Errorf("unknown entity type %q", c.entityType)
		}
		if _, dup := f.exact[c.entityType]; dup || f.anyOf[c.entityType] {
			return nil, fmt.Errorf("entity type %s cannot appear more than once in the filter", c.entityType)
		}
		switch c.matchType {
		case 0:
			if c.match == nil {
				return nil, fmt.Errorf("match type exact (0) needs a match string")
			}
			f.exact[c.entityType] = namedPart(*c.match)
		case 1:
			if c.match != nil {
				return nil, fmt.Errorf("match type default (1) takes no match string")
			}
			f.exact[c.entityType] = defaultPart
		case 2:
			if c.match != nil {
				return nil, fmt.Errorf("match type any (2) takes no match string")
			}
			f.anyOf[c.entityType] = true
		default:
			return nil, fmt.Errorf("unknown match type %d", c.matchType)
		}
	}
	_, ipExact := f.exact[quotaEntityIP]
	if ipExact || f.anyOf[quotaEntityIP] {
		if len(f.exact)+len(f.anyOf) > 1 {
			return nil, fmt.Errorf("invalid entity filter component combination: an ip filter component cannot be used with a user or client-id filter component")
		}
	}
	return f, nil
}

// matches reports whether e passes the filter: every exact component
// equal, every "any" component present, and with strict no other types.
func (f *quotaFilter) matches(e quotaEntity) bool {
	parts := map[string]quotaPart{quotaEntityUser: e.user, quotaEntityClientID: e.clientID, quotaEntityIP: e.ip}
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

// describedQuota is one entity and its values, for DescribeClientQuotas.
type describedQuota struct {
	entity quotaEntity
	values map[string]float64
}

// describeClientQuotas returns the entities of im that pass f, ordered by
// their path.
func (im *Image) describeClientQuotas(f *quotaFilter) []describedQuota {
	var out []describedQuota
	for e, vals := range im.clientQuotas {
		if f.matches(e) {
			out = append(out, describedQuota{e, vals})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].entity.String() < out[j].entity.String() })
	return out
}

// sortedQuotaKeys returns vals' keys in order.
func sortedQuotaKeys(vals map[string]float64) []string {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
