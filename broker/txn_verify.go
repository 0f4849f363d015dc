package broker

import "context"

// TxnVerifier is the transaction coordinator as a partition leader asks it before accepting
// a transactional batch that would start a transaction on the partition (KIP-890 part 1,
// Kafka's AddPartitionsToTxnManager): nil means the producer has an ongoing transaction that
// includes the partition (under transaction version 2 the coordinator adds it implicitly);
// otherwise a kerr error, answered for that partition (INVALID_PRODUCER_EPOCH,
// PRODUCER_FENCED, INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, ...).
// Implementations may block on a call to the coordinator; ctx bounds it.
type TxnVerifier interface {
	VerifyTxnPartition(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) error
}

// SetTxnVerifier installs the coordinator's verification of transactional produce. Call it
// before the broker serves requests; without one, transactional batches are accepted without
// verification.
func (b *Broker) SetTxnVerifier(v TxnVerifier) { b.txnVerifier = v }

// SetOffsetsTxnMarkerHook installs the hook WriteTxnMarkers calls once a marker is committed
// (below the HW) on a partition of __consumer_offsets, so the group coordinator makes the
// producer's pending transactional offsets visible (commit) or drops them (abort). Call it
// before the broker serves requests.
func (b *Broker) SetOffsetsTxnMarkerHook(hook func(partition int32, producerID int64, commit bool)) {
	b.offsetsTxnMarker = hook
}
