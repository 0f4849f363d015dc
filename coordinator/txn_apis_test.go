package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partitions verified concurrently while the transaction's state is being
// written all join it once the write completes, instead of all but one
// answering CONCURRENT_TRANSACTIONS (a producer writing to many partitions
// under KIP-890 would retry each after a back-off).
func TestTxnConcurrentVerificationsWaitForTheWrite(t *testing.T) {
	h := newTxnHarness(t)
	id := "T"
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	r, err := h.tc.InitProducerID(ctx, req)
	if err != nil || r.ErrorCode != 0 {
		t.Fatalf("init: %+v %v", r, err)
	}
	l := h.logs[0]
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
	first := goAsync(func() error { return h.tc.VerifyTxnPartition(ctx, id, r.ProducerID, r.ProducerEpoch, "t", 0) })
	// Wait until the first verification's write is in flight.
	s := h.tc.mu.shards[0]
	for pending := false; !pending; {
		s.call(func() { pending = s.txns[id].pending })
	}
	second := goAsync(func() error { return h.tc.VerifyTxnPartition(ctx, id, r.ProducerID, r.ProducerEpoch, "t", 1) })
	third := goAsync(func() error { return h.tc.VerifyTxnPartition(ctx, id, r.ProducerID, r.ProducerEpoch, "t", 0) })
	for queued := 0; queued < 2; {
		s.call(func() { queued = len(s.txns[id].settleWaiters) })
	}
	l.mu.Lock()
	l.hold = false
	l.mu.Unlock()
	l.release()
	for i, a := range []*async[error]{first, second, third} {
		if err := a.wait(t); err != nil {
			t.Fatalf("verification %d: %v", i, err)
		}
	}
	var parts []TopicPartitions
	s.call(func() { parts = s.txns[id].sortedPartitions() })
	if len(parts) != 1 || len(parts[0].Partitions) != 2 {
		t.Fatalf("partitions in the transaction: %+v", parts)
	}
}
