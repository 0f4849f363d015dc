package broker

// AddPartitionsToTxn, key 24: v0–v5.
//
// v0–v3 come from producers: one transaction, its partitions join it (UNKNOWN_TOPIC_OR_PARTITION
// for a topic or partition that does not exist, OPERATION_NOT_ATTEMPTED for the others of the
// request). v4+ come from brokers verifying a transactional produce (KIP-890): several
// transactions, each VerifyOnly (is the partition in the ongoing transaction?) or, under
// transaction version 2, an implicit addition. PRODUCER_FENCED from v2 (INVALID_PRODUCER_EPOCH
// before); INVALID_PRODUCER_ID_MAPPING for an unknown transactional ID or another producer ID.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
)

func init() {
	registerTxnAPI(24, 0, 5, func(_ *Broker, c *coordinator.TxnCoordinator, ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
		return c.AddPartitionsToTxn(ctx, req)
	})
}
