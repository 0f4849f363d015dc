package broker

// TxnOffsetCommit, key 28: v0–v5.
//
// Served by the group coordinator: the offsets are appended to the group's __consumer_offsets
// partition inside the producer's transaction and stay invisible to OffsetFetch
// (UNSTABLE_OFFSET_COMMIT with RequireStable) until the transaction's marker on that partition
// commits them or aborts them. v3+ carries the group's generation and member, checked as
// OffsetCommit's are. v5 is transaction version 2 (KIP-890 part 2): the producer sends no
// AddOffsetsToTxn, so the group's partition joins the transaction here, through the same
// verification a transactional produce goes through (an error there answers every partition).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() {
	register(28, 0, 5, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
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
	if req.Version >= 5 && req.TransactionalID != "" && req.Group != "" {
		err := brokerTxnVerifier{b}.VerifyTxnPartition(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch,
			offsetsTopic, b.coord.PartitionFor(req.Group))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			code := kerr.UnknownServerError.Code
			var ke *kerr.Error
			if errors.As(err, &ke) {
				code = ke.Code
			}
			resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			for _, t := range req.Topics {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
	}
	return b.coord.TxnOffsetCommit(ctx, req)
}
