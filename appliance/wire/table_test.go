package wire

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func answer(r *Request) any { return nil }

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		p := recover()
		if p == nil {
			t.Fatalf("no panic, want one with %q", want)
		}
		if !strings.Contains(p.(string), want) {
			t.Fatalf("panic %q, want %q", p, want)
		}
	}()
	fn()
}

func TestTableRegisterLookupSorted(t *testing.T) {
	tb := NewTable()
	tb.Register(API{Key: 18, Min: 0, Max: 4, Handle: answer, Unsupported: answer})
	tb.Register(API{Key: 0, Min: 3, Max: 11, Handle: answer, Unsupported: answer, AdvertiseFrom: 0})
	tb.Register(API{Key: 3, Min: 0, Max: 12, Handle: answer})
	tb.Register(API{Key: 68, Min: 1, Max: 1, Handle: answer})
	if tb.Len() != 4 {
		t.Fatalf("Len %d, want 4", tb.Len())
	}
	a, ok := tb.Lookup(3)
	if !ok || a.Key != 3 || a.Min != 0 || a.Max != 12 {
		t.Fatalf("Lookup(3) = %+v %v", a, ok)
	}
	for _, k := range []int16{-1, 1, 2, 67, 69, 1000} {
		if _, ok := tb.Lookup(k); ok {
			t.Errorf("Lookup(%d) found an API", k)
		}
	}
	var keys []int16
	for _, a := range tb.Sorted() {
		keys = append(keys, a.Key)
	}
	if want := []int16{0, 3, 18, 68}; len(keys) != len(want) || keys[0] != 0 || keys[1] != 3 || keys[2] != 18 || keys[3] != 68 {
		t.Fatalf("Sorted keys %v, want %v", keys, want)
	}
}

func TestTableRegisterPanics(t *testing.T) {
	tb := NewTable()
	tb.Register(API{Key: 3, Max: 12, Handle: answer})
	mustPanic(t, "registered twice", func() { tb.Register(API{Key: 3, Max: 1, Handle: answer}) })
	mustPanic(t, "no handler", func() { tb.Register(API{Key: 4}) })
	mustPanic(t, "negative", func() { tb.Register(API{Key: -1, Handle: answer}) })
	mustPanic(t, "versions 3-1", func() { tb.Register(API{Key: 5, Min: 3, Max: 1, Handle: answer}) })
	if tb.Len() != 1 {
		t.Fatalf("Len %d after refused registrations, want 1", tb.Len())
	}
}

// Two tables are independent: brokers in one process do not share one.
func TestTablesIndependent(t *testing.T) {
	a, b := NewTable(), NewTable()
	a.Register(API{Key: 1, Max: 17, Handle: answer})
	b.Register(API{Key: 1, Max: 16, Handle: answer})
	if x, _ := a.Lookup(1); x.Max != 17 {
		t.Fatalf("table a has Max %d", x.Max)
	}
	if x, _ := b.Lookup(1); x.Max != 16 {
		t.Fatalf("table b has Max %d", x.Max)
	}
}

func TestAdvertisedMin(t *testing.T) {
	for _, c := range []struct {
		a    API
		want int16
	}{
		{API{Min: 3, Max: 11, Handle: answer, Unsupported: answer, AdvertiseFrom: 0}, 0},
		{API{Min: 1, Max: 1, Handle: answer, Unsupported: answer, AdvertiseFrom: 0}, 0},
		{API{Min: 2, Max: 5, Handle: answer, Unsupported: answer, AdvertiseFrom: 2}, 2},
		{API{Min: 2, Max: 5, Handle: answer, AdvertiseFrom: 0}, 2},
	} {
		if got := c.a.AdvertisedMin(); got != c.want {
			t.Errorf("%+v: AdvertisedMin %d, want %d", c.a, got, c.want)
		}
	}
}

type fakeConn struct{ principal string }

func (f fakeConn) Principal() string       { return f.principal }
func (f fakeConn) PeerAddr() string        { return "10.0.0.1:5000" }
func (f fakeConn) PeerHost() string        { return "10.0.0.1" }
func (f fakeConn) Listener() string        { return "PLAINTEXT" }
func (f fakeConn) Closed() <-chan struct{} { return nil }

// allowAlice allows User:alice everything on topics named "a*", nothing
// else.
type allowAlice struct{ asked int }

func (a *allowAlice) Authorize(r *Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a.asked++
	return r.Conn.Principal() == "User:alice" && rt == kmsg.ACLResourceTypeTopic && strings.HasPrefix(name, "a")
}

func (a *allowAlice) AuthorizeAny(r *Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	a.asked++
	return r.Conn.Principal() == "User:alice" && rt == kmsg.ACLResourceTypeTopic
}

func TestRequestAllowed(t *testing.T) {
	r := &Request{Conn: fakeConn{"User:bob"}}
	if !r.Allowed(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "x") || !r.AllowedAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) ||
		!r.AllowedCluster(kmsg.ACLOperationAlter) {
		t.Fatal("without an authorizer a request was refused")
	}
	az := &allowAlice{}
	r.Authz = az
	if r.Allowed(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "apples") || r.AllowedAny(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic) {
		t.Fatal("bob was allowed")
	}
	r.Conn = fakeConn{"User:alice"}
	if !r.Allowed(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "apples") || r.Allowed(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "pears") {
		t.Fatal("alice's topics decided wrongly")
	}
	if r.AllowedCluster(kmsg.ACLOperationAlter) || !r.AllowedAny(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic) {
		t.Fatal("alice's cluster or any-topic decided wrongly")
	}
	if az.asked != 6 {
		t.Fatalf("authorizer asked %d times, want 6", az.asked)
	}
}

// TestTableWrap: Wrap replaces a registered handler with one that may
// call it, and refuses keys that are not registered.
func TestTableWrap(t *testing.T) {
	tb := NewTable()
	tb.Register(API{Key: 19, Min: 0, Max: 7, Handle: func(*Request) any { return "inner" }})
	if tb.Wrap(20, func(h Handler) Handler { return h }) {
		t.Fatal("Wrap of an unregistered key reported true")
	}
	if !tb.Wrap(19, func(h Handler) Handler { return func(r *Request) any { return "outer:" + h(r).(string) } }) {
		t.Fatal("Wrap of a registered key reported false")
	}
	a, _ := tb.Lookup(19)
	if got := a.Handle(&Request{}); got != "outer:inner" {
		t.Fatalf("wrapped handler answered %v", got)
	}
	if tb.Len() != 1 || a.Max != 7 {
		t.Fatalf("Wrap changed the table: len %d, api %+v", tb.Len(), a)
	}
}
