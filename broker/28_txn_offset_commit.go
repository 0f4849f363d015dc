package broker

// TxnOffsetCommit, key 28: v0–v6.
//
// Served by the group coordinator: the offsets are appended to the group's __consumer_offsets
// partition inside the producer's transaction and stay invisible to OffsetFetch
// (UNSTABLE_OFFSET_COMMIT with RequireStable) until the transaction's marker on that partition
// commits them or aborts them. v3+ carries the group's generation and member, checked as
// Kafka checks a transactional commit's (coordinator.validateTxnOffsetCommit). Every version
// is first verified with the transaction coordinator (KIP-890, as Kafka's group coordinator
// does before a transactional write; an error there answers every partition, nothing is
// appended): v0–v4 verify only — the producer added the group's partition with
// AddOffsetsToTxn, else INVALID_TXN_STATE — and v5, transaction version 2 (KIP-890 part 2,
// no AddOffsetsToTxn), adds the partition to the transaction through the same verification a
// transactional produce goes through. v6 (KIP-1319) names topics by ID and answers
// GROUP_ID_NOT_FOUND, STALE_MEMBER_EPOCH and UNKNOWN_TOPIC_ID where older versions answer
// ILLEGAL_GENERATION or have no ID to refuse (coordinator/txn_offsets.go).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
	"sluice/wire"
)

func init() {
	register(28, 0, 6, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
		req, ok := w.Body.(*kmsg.TxnOffsetCommitRequest)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		if deny := b.authorizeTxnCall(w.Conn, req); deny != nil { // authorize_txn.go
			respond(deny, nil)
			return
		}
		go func() { respond(b.handleTxnOffsetCommit(ctx, req)) }()
	})
}

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	if req.TransactionalID != "" && req.Group != "" && req.ProducerID >= 0 {
		v := brokerTxnVerifier{b}
		verify := v.verifyOnly // v0–v4: the producer added the partition with AddOffsetsToTxn
		if req.Version >= 5 {
			verify = v.VerifyTxnPartition
		}
		err := verify(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, offsetsTopic, b.coord.PartitionFor(req.Group))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			code := kerr.UnknownServerError.Code
			var ke *kerr.Error
			if errors.As(err, &ke) {
				code = ke.Code
			}
			// As Kafka's AddPartitionsToTxnManager answers a verification for a client:
			// producers expect INVALID_PRODUCER_EPOCH there, and clients before v4 do not
			// know TRANSACTION_ABORTABLE.
			switch {
			case code == kerr.ProducerFenced.Code:
				code = kerr.InvalidProducerEpoch.Code
			case code == kerr.TransactionAbortable.Code && req.Version < 4:
				code = kerr.InvalidTxnState.Code
			}
			return coordinator.TxnOffsetCommitAnswer(req, func(int) int16 { return code }), nil
		}
	}
	return b.coord.TxnOffsetCommit(ctx, req)
}
