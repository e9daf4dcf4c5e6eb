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
	next, err := b.ctl.meta.Commit(im, []MetadataRecord{{ProducerIDs: &ProducerIDsRecord{BrokerID: b.cfg.NodeID, NextProducerID: start + size}}})
	if err != nil {
		return -1, commitErr(fmt.Errorf("cannot reserve producer ids: %w", err))
	}
	b.ctl.image.Store(next)
	return start, nil
}
