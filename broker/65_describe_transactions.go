package broker

// DescribeTransactions, key 65: v0.
//
// Each transactional ID's state, producer ID and epoch, timeout, start and partitions, from the
// coordinator shard that owns it (NOT_COORDINATOR when that is another node,
// TRANSACTIONAL_ID_NOT_FOUND for an unknown ID), as kafka-transactions.sh describe shows them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
)

func init() {
	registerTxnAPI(65, 0, 0, func(_ *Broker, c *coordinator.TxnCoordinator, ctx context.Context, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
		return c.DescribeTransactions(ctx, req)
	})
}
