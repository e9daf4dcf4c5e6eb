package txn

import "sync"

// ProducerIDBlockSize is how many producer ids one metadata record reserves.
const ProducerIDBlockSize = 1000

// ProducerIDs hands out producer ids from the current block of
// ProducerIDBlockSize ids reserved in the metadata log, so that no id is
// handed out twice across restarts. The zero value has no block. It is
// safe for concurrent use.
type ProducerIDs struct {
	mu        sync.Mutex
	next, end int64
}

// Next returns an unused producer id, calling reserve (under the
// allocator's lock) to reserve a new block of ProducerIDBlockSize ids,
// returning its first, when the current one is used up.
func (p *ProducerIDs) Next(reserve func(size int64) (int64, error)) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next < p.end {
		id := p.next
		p.next++
		return id, nil
	}
	start, err := reserve(ProducerIDBlockSize)
	if err != nil {
		return -1, err
	}
	p.next, p.end = start+1, start+ProducerIDBlockSize
	return start, nil
}
