package broker

// share.isolation.level for share groups (KIP-932, Kafka 4.4's group config): a read_committed
// share group reads each partition up to its last stable offset and archives the records of
// aborted transactions as it acquires them, so no member is ever handed one (Kafka's
// SharePartition.filterAbortedTransactionalAcquiredRecords). A ShareFetch response carries no
// aborted-transaction list, so the consumer could not drop them itself. Control batches are
// acquired like any offset and the consumer acknowledges them as GAP, as with Kafka.

import (
	"sluice/controller"
	"sluice/coordinator/share"
	"sluice/internal/batch"
	"sluice/logstore"
)

const groupShareIsolationLevel = "share.isolation.level"

// shareAbortedRereads bounds the log reads one ShareFetch makes of one partition when a read
// held only aborted records (each read is at most sharePartitionReadBytes).
const shareAbortedRereads = 8

// shareGroupReadCommitted reports whether group's share.isolation.level is read_committed
// (read_uncommitted is the default).
func shareGroupReadCommitted(im *controller.Image, group string) bool {
	return im.GroupConfigs[group][groupShareIsolationLevel] == "read_committed"
}

// abortedBatchRanges returns the offset ranges of the data batches in records (whole batches,
// as a log read returns them) that belong to one of the aborted transactions: transactional,
// of the transaction's producer, and starting within the transaction's span up to its ABORT
// marker (a producer has one transaction open at a time, so the span identifies it). Control
// batches are never in it. The ranges are in offset order, as the batches are.
func abortedBatchRanges(records []byte, aborted []logstore.AbortedTxn) []share.OffsetRange {
	if len(aborted) == 0 {
		return nil
	}
	var out []share.OffsetRange
	for rest := records; len(rest) >= batch.HeaderSize; {
		h, err := batch.ParseHeader(rest)
		if err != nil || h.Size() > int64(len(rest)) || h.Size() <= 0 {
			break
		}
		rest = rest[h.Size():]
		if !h.IsTransactional() || h.IsControl() {
			continue
		}
		for _, a := range aborted {
			if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset <= a.LastOffset {
				out = append(out, share.OffsetRange{FirstOffset: h.BaseOffset, LastOffset: h.LastOffset()})
				break
			}
		}
	}
	return out
}

// acquiredCount is the number of offsets in acquired.
func acquiredCount(acquired []share.AcquiredRange) int {
	n := 0
	for _, a := range acquired {
		n += int(a.LastOffset - a.FirstOffset + 1)
	}
	return n
}
