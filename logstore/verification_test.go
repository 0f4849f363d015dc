package logstore

import (
	"errors"
	"testing"

	"sluice/internal/batch"
)

// txnDataBatch is a transactional batch of n records of producer pid at epoch from seq.
func txnDataBatch(n int, pid int64, epoch int16, seq int32) []byte {
	b := mkBatch(n, 1000, pid, epoch, seq)
	h, _ := batch.ParseHeader(b)
	h.Attributes |= batch.AttrTransactional
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{TimestampDelta: int64(i), Value: []byte("v")}
	}
	return batch.Build(h, recs)
}

// Two requests of one producer verify the first two batches of a transaction at once (a
// client with several requests in flight): both must append, whichever verification began
// last. Before guards were shared, the second BeginTxnVerification replaced the first's
// guard and the transaction's first batch was refused INVALID_TXN_STATE, which a client that
// ignores a failed record (franz-go's End commits what was acknowledged) turns into a
// committed transaction missing records.
func TestConcurrentVerificationsOfOneProducerShareTheGuard(t *testing.T) {
	l := openMem(t, NewMemFS(), DefaultConfig())
	defer l.Close()
	g1, ongoing := l.BeginTxnVerification(7, 3)
	if ongoing {
		t.Fatal("no transaction is open yet")
	}
	g2, _ := l.BeginTxnVerification(7, 3)
	if _, _, err := l.AppendAsLeaderWith(txnDataBatch(2, 7, 3, 0), 0, LeaderAppend{VerificationGuard: g1}); err != nil {
		t.Fatalf("first batch, verified first: %v", err)
	}
	if _, _, err := l.AppendAsLeaderWith(txnDataBatch(2, 7, 3, 2), 0, LeaderAppend{VerificationGuard: g2}); err != nil {
		t.Fatalf("second batch, verified second: %v", err)
	}
}

// One of two verifications sharing a guard fails (its request gave up): the other, which
// succeeded, still appends.
func TestFailedVerificationKeepsTheGuardOfAnother(t *testing.T) {
	l := openMem(t, NewMemFS(), DefaultConfig())
	defer l.Close()
	g1, _ := l.BeginTxnVerification(7, 3)
	g2, _ := l.BeginTxnVerification(7, 3)
	l.EndTxnVerification(7, g1)
	if _, _, err := l.AppendAsLeaderWith(txnDataBatch(1, 7, 3, 0), 0, LeaderAppend{VerificationGuard: g2}); err != nil {
		t.Fatalf("the verification that succeeded: %v", err)
	}
}

// A marker of the producer between the verification's start and the append still spends the
// guard, shared or not: the batch would open a transaction nobody ends.
func TestMarkerSpendsASharedGuard(t *testing.T) {
	l := openMem(t, NewMemFS(), DefaultConfig())
	defer l.Close()
	g1, _ := l.BeginTxnVerification(7, 3)
	_, _ = l.BeginTxnVerification(7, 3)
	marker := batch.Build(batch.Header{ProducerID: 7, ProducerEpoch: 3, BaseSequence: -1,
		Attributes: batch.AttrTransactional | batch.AttrControl},
		[]batch.Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	if _, _, err := l.AppendAsLeaderWith(marker, 0, LeaderAppend{Coordinator: true}); err != nil {
		t.Fatalf("marker: %v", err)
	}
	_, _, err := l.AppendAsLeaderWith(txnDataBatch(1, 7, 3, 0), 0, LeaderAppend{VerificationGuard: g1})
	if !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append after the marker: %v, want ErrInvalidTxnState", err)
	}
	g3, _ := l.BeginTxnVerification(7, 3)
	if g3 == g1 {
		t.Fatal("a verification begun after the marker reuses the spent guard")
	}
}
