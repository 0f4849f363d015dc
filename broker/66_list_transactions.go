package broker

// ListTransactions, key 66: v0–v2.
//
// The transactional IDs whose coordinator is this node, filtered by state and producer ID, v1's
// minimum open duration and v2's ID pattern (a Go regular expression; INVALID_REGULAR_EXPRESSION
// when it does not compile). Clients ask every broker and merge.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
)

func init() {
	registerTxnAPI(66, 0, 2, func(_ *Broker, c *coordinator.TxnCoordinator, ctx context.Context, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
		return c.ListTransactions(ctx, req)
	})
}
