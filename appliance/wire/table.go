package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler answers one request. It returns one of the results described on
// Request's handlers: a kmsg.Response, a Deferred, AnswerLater,
// RespondAndClose, Close, or a response type of the broker's own (a raw
// response body), which wire passes through unchanged.
type Handler func(r *Request) any

// API is one API key's handler and the versions it implements.
type API struct {
	// Key is the Kafka API key (0 Produce, 1 Fetch, ...).
	Key int16
	// Min and Max are the versions Handle answers.
	Min, Max int16
	// Handle answers a request whose version is in [Min, Max].
	Handle Handler
	// Unsupported, when set, answers a request whose version is outside
	// [Min, Max] instead of closing the connection (ApiVersions answers in
	// v0 with UNSUPPORTED_VERSION; Produce v0-v2 per partition). Its
	// request's Req may be partly decoded.
	Unsupported Handler
	// AdvertiseFrom is the lowest version ApiVersions lists for an API
	// whose Unsupported answers versions below Min (Produce is listed from
	// v0, as Kafka 4 does, KAFKA-18659). Without Unsupported, Min is listed.
	AdvertiseFrom int16
}

// AdvertisedMin is the lowest version ApiVersions lists for a.
func (a API) AdvertisedMin() int16 {
	if a.Unsupported != nil {
		return a.AdvertiseFrom
	}
	return a.Min
}

// Table is one broker's dispatch table: API key to API. It is filled while
// the broker is built and only read afterwards (see the package comment).
type Table struct {
	apis []API // indexed by key; Handle nil where none is registered
	n    int
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{} }

// Register adds a. It panics when a's key is registered already, when the
// key is negative, when Handle is nil or when Min > Max: each is a wiring
// bug found at startup.
func (t *Table) Register(a API) {
	switch {
	case a.Key < 0:
		panic(fmt.Sprintf("wire: API key %d is negative", a.Key))
	case a.Handle == nil:
		panic(fmt.Sprintf("wire: API key %d (%s) has no handler", a.Key, kmsg.NameForKey(a.Key)))
	case a.Min > a.Max:
		panic(fmt.Sprintf("wire: API key %d (%s) has versions %d-%d", a.Key, kmsg.NameForKey(a.Key), a.Min, a.Max))
	}
	for int(a.Key) >= len(t.apis) {
		t.apis = append(t.apis, API{})
	}
	if t.apis[a.Key].Handle != nil {
		panic(fmt.Sprintf("wire: API key %d (%s) registered twice", a.Key, kmsg.NameForKey(a.Key)))
	}
	t.apis[a.Key] = a
	t.n++
}

// Wrap replaces the handler of key, when registered, with wrap(the
// handler) (the controller quorum forwards admin APIs this way), and
// reports whether it was registered. Only while the table is built.
func (t *Table) Wrap(key int16, wrap func(Handler) Handler) bool {
	if key < 0 || int(key) >= len(t.apis) || t.apis[key].Handle == nil {
		return false
	}
	t.apis[key].Handle = wrap(t.apis[key].Handle)
	return true
}

// Lookup returns the API registered for key.
func (t *Table) Lookup(key int16) (API, bool) {
	if key < 0 || int(key) >= len(t.apis) || t.apis[key].Handle == nil {
		return API{}, false
	}
	return t.apis[key], true
}

// Len is the number of registered APIs.
func (t *Table) Len() int { return t.n }

// Sorted lists the registered APIs by key (ApiVersions); the table is
// indexed by key, so this is its order.
func (t *Table) Sorted() []API {
	out := make([]API, 0, t.n)
	for _, a := range t.apis {
		if a.Handle != nil {
			out = append(out, a)
		}
	}
	return out
}
