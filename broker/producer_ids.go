package broker

import (
	"context"
	"sync"
)

// producerIDBlockSize is how many producer IDs the broker reserves from the controller at once,
// as Kafka's ProducerIdManager does (1000 per block).
const producerIDBlockSize = 1000

// producerIDBlock hands out producer IDs from blocks reserved through the controller, so that
// IDs are unique across the cluster and across restarts.
type producerIDBlock struct {
	mu   sync.Mutex
	next int64 // next ID to hand out; Invariant: next <= end. Guarded by mu.
	end  int64 // first ID past the reserved block. Guarded by mu.
}

// nextProducerID returns a fresh producer ID.
func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	blk := &b.producerIDs
	blk.mu.Lock()
	defer blk.mu.Unlock()
	if blk.next == blk.end {
		first, err := b.ctrl.AllocateProducerIDs(ctx, b.nodeID, producerIDBlockSize)
		if err != nil {
			return 0, err
		}
		blk.next, blk.end = first, first+producerIDBlockSize
	}
	id := blk.next
	blk.next++
	return id, nil
}
