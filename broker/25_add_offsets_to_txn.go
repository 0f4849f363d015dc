package broker

// AddOffsetsToTxn, key 25: v0–v4.
//
// The group's partition of __consumer_offsets joins the transaction, so the transaction's
// marker reaches the offsets the producer then commits with TxnOffsetCommit (28).
// PRODUCER_FENCED from v2 (INVALID_PRODUCER_EPOCH before).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
)

func init() {
	registerTxnAPI(25, 0, 4, func(_ *Broker, c *coordinator.TxnCoordinator, ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) (kmsg.Response, error) {
		return c.AddOffsetsToTxn(ctx, req)
	})
}
