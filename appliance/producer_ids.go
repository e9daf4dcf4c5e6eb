package appliance

import (
	"fmt"
)

// newProducerID returns an unused producer id from b.coord.pids, reserving a new
// block of txn.ProducerIDBlockSize ids in the metadata log (through the
// controller) when the current one is used up.
func (b *Broker) newProducerID() (int64, error) {
	return b.coord.pids.Next(b.reserveProducerIDs)
}

// reserveProducerIDs commits a ProducerIDsRecord that reserves size ids and
// returns the first.
func (b *Broker) reserveProducerIDs(size int64) (int64, error) {
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
	start := im.NextProducerID
	// Published like every commit (commitLocked): the delta flags the
	// producer ids, and the block is [start, start+size) whatever
	// listeners do with it.
	if _, err := b.commitLocked(im, []MetadataRecord{{ProducerIDs: &ProducerIDsRecord{BrokerID: b.cfg.NodeID, NextProducerID: start + size}}}); err != nil {
		return -1, commitErr(fmt.Errorf("cannot reserve producer ids: %w", err))
	}
	return start, nil
}
