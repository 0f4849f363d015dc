package broker

// The transaction APIs are thin, as the group APIs are: each hands its request to the
// transaction coordinator (or, for TxnOffsetCommit, the group coordinator) on a goroutine of
// its own and answers when it does. Each has its NN_name.go file for its version notes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
	"sluice/wire"
)

// registerTxnAPI registers an API served by the transaction coordinator on its own goroutine.
func registerTxnAPI[Req kmsg.Request](key, minVersion, maxVersion int16, call func(b *Broker, c *coordinator.TxnCoordinator, ctx context.Context, req Req) (kmsg.Response, error)) {
	register(key, minVersion, maxVersion, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
		req, ok := w.Body.(Req)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		if deny := b.authorizeTxnCall(w.Conn, req); deny != nil { // authorize_txn.go
			respond(deny, nil)
			return
		}
		post := b.authorizeTxnListing(w.Conn, req)
		go func() {
			// An error means ctx ended: the connection is closing, so no answer is owed.
			resp, err := call(b, b.txnCoord, ctx, req)
			if post != nil && err == nil && resp != nil {
				post(resp)
			}
			respond(resp, err)
		}()
	})
}
