package wire

// Asking a shard. A coordinator's state (a group, a transactional id, a
// share group) is owned by one shard; a handler reaches it by posting a
// closure to that shard and waiting, off the shard, for the closure's
// typed reply.

// Reply is the answer to an Ask in flight. The zero Reply is an ask that
// reached no owner: Wait reports false at once.
type Reply[T any] struct {
	ch   chan T
	done <-chan struct{}
}

// Ask posts fn to the owner through post (the owner shard's Post) and
// returns the reply in flight. fn runs on the owner's shard and answers
// through reply once; later calls are dropped, and reply never blocks the
// shard. done is closed when the broker closes: Wait gives up then, and Ask
// returns the zero Reply without posting when done is closed already. A
// caller whose owner is unavailable (a coordinator not started) returns the
// zero Reply itself.
func Ask[T any](done <-chan struct{}, post func(run func()), fn func(reply func(T))) Reply[T] {
	select {
	case <-done:
		return Reply[T]{}
	default:
	}
	ch := make(chan T, 1)
	reply := func(v T) {
		select {
		case ch <- v:
		default:
		}
	}
	post(func() { fn(reply) })
	return Reply[T]{ch: ch, done: done}
}

// Wait returns the reply; ok is false when the ask reached no owner or the
// broker closed first.
func (r Reply[T]) Wait() (v T, ok bool) {
	if r.ch == nil {
		return v, false
	}
	select {
	case v = <-r.ch:
		return v, true
	case <-r.done:
		return v, false
	}
}

// Posted reports whether the ask reached its owner (Wait may still give up
// when the broker closes).
func (r Reply[T]) Posted() bool { return r.ch != nil }
