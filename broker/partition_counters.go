package broker

import (
	"sync/atomic"

	"sluice/logstore"
)

// partitionCounters count what passed through one hosted partition since it was opened here,
// for the operator's metrics (ops reads them through PartitionStats; Prometheus takes rates).
// Each is one atomic add on the path that does the work.
type partitionCounters struct {
	bytesIn, messagesIn atomic.Int64 // client batches appended as leader (Kafka's BytesInPerSec, MessagesInPerSec)
	bytesOut            atomic.Int64 // record bytes sent to consumers (BytesOutPerSec without replication)
	replicationBytesOut atomic.Int64 // record bytes sent to follower replicas (ReplicationBytesOutPerSec)
	// Committed ISR changes while this node led at one epoch, as applied from the metadata
	// (IsrShrinksPerSec, IsrExpandsPerSec): a new leader's ISR is not a change.
	isrShrinks, isrExpands atomic.Int64
}

// countAppend records a client append as leader: bytes written and records in them.
func (c *partitionCounters) countAppend(info logstore.AppendResult) {
	if info.Duplicate {
		return
	}
	c.bytesIn.Add(int64(info.Bytes))
	c.messagesIn.Add(info.LastOffset - info.FirstOffset + 1)
}

// countSent records the record bytes of one fetch answer.
func (c *partitionCounters) countSent(slices []logstore.FileSlice, toFollower bool) {
	var n int64
	for _, s := range slices {
		n += s.Length
	}
	if n == 0 {
		return
	}
	if toFollower {
		c.replicationBytesOut.Add(n)
	} else {
		c.bytesOut.Add(n)
	}
}

// countISRChange records a committed ISR change from committed members to proposed ones.
func (c *partitionCounters) countISRChange(committed, proposed int) {
	switch {
	case proposed < committed:
		c.isrShrinks.Add(1)
	case proposed > committed:
		c.isrExpands.Add(1)
	}
}
