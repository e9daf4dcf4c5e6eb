package appliance

import (
	"context"
	"fmt"
	"time"
)

// newProducerID returns an unused producer id from b.coord.pids, reserving a new
// block of txn.ProducerIDBlockSize ids in the metadata log (through the
// controller) when the current one is used up.
func (b *Broker) newProducerID() (int64, error) {
	return b.coord.pids.Next(b.reserveProducerIDs)
}

// reserveProducerIDs reserves size ids and returns the first: with a
// quorum, from the active controller (AllocateProducerIds, whose blocks
// are txn.ProducerIDBlockSize ids), else by a local commit.
func (b *Broker) reserveProducerIDs(size int64) (int64, error) {
	if q := b.ctl.quorum; q != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start, n, err := q.AllocateProducerIDs(ctx)
		if err == nil && int64(n) != size {
			err = fmt.Errorf("the controller allocated %d producer ids, want %d", n, size)
		}
		if err != nil {
			return -1, commitErr(fmt.Errorf("cannot reserve producer ids: %w", err))
		}
		return start, nil
	}
	return b.commitProducerIDs(b.cfg.NodeID, size)
}

// commitProducerIDs commits a ProducerIDsRecord that reserves size ids
// for broker id and returns the first (the active controller's allocator).
func (b *Broker) commitProducerIDs(id int32, size int64) (int64, error) {
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
	start := im.NextProducerID
	// Published like every commit (commitLocked): the delta flags the
	// producer ids, and the block is [start, start+size) whatever
	// listeners do with it.
	if _, err := b.commitLocked(im, []MetadataRecord{{ProducerIDs: &ProducerIDsRecord{BrokerID: id, NextProducerID: start + size}}}); err != nil {
		return -1, commitErr(fmt.Errorf("cannot reserve producer ids: %w", err))
	}
	return start, nil
}
