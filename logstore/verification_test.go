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
	if _, _, err := l.AppendAsLeaderWith(txnMarker(7, 3, false), 0, LeaderAppend{Coordinator: true}); err != nil {
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

// Under transaction version 2 the client sends the next transaction's first batch (epoch e+1)
// as soon as EndTxn answers, while the coordinator is still writing the ended transaction's
// markers, which carry epoch e+1 too. A marker landing between that batch's verification and
// its append must not spend its guard: the batch belongs to the next transaction, and Kafka
// keeps the guard in exactly this case. Before, the batch was refused INVALID_TXN_STATE and
// the healthy transaction aborted (4 times in 6 transactional chaos runs).
func TestTV2MarkerKeepsTheNextTransactionsGuard(t *testing.T) {
	l := openMem(t, NewMemFS(), DefaultConfig())
	defer l.Close()
	if _, _, err := l.AppendAsLeaderWith(txnDataBatch(1, 7, 3, 0), 0, LeaderAppend{}); err != nil {
		t.Fatalf("transaction at epoch 3: %v", err)
	}
	g, ongoing := l.BeginTxnVerification(7, 4)
	if ongoing {
		t.Fatal("epoch 4 has no transaction open yet")
	}
	if _, _, err := l.AppendAsLeaderWith(txnMarker(7, 4, true), 0, LeaderAppend{Coordinator: true, TransactionVersion: 2}); err != nil {
		t.Fatalf("TV2 commit marker at epoch 4: %v", err)
	}
	if _, _, err := l.AppendAsLeaderWith(txnDataBatch(1, 7, 4, 0), 0, LeaderAppend{VerificationGuard: g}); err != nil {
		t.Fatalf("the next transaction's first batch: %v", err)
	}
}

// A TV0/1 marker ends the transaction at its own epoch, which the next transaction reuses: a
// guard at that epoch may be a late batch of the ended transaction, so the marker spends it.
func TestTV1MarkerSpendsTheGuardAtItsEpoch(t *testing.T) {
	l := openMem(t, NewMemFS(), DefaultConfig())
	defer l.Close()
	if _, _, err := l.AppendAsLeaderWith(txnDataBatch(1, 7, 3, 0), 0, LeaderAppend{}); err != nil {
		t.Fatal(err)
	}
	// A late batch of the same transaction, verified before the marker.
	if _, ongoing := l.BeginTxnVerification(7, 3); !ongoing {
		t.Fatal("epoch 3's transaction is open")
	}
	if _, _, err := l.AppendAsLeaderWith(txnMarker(7, 3, true), 0, LeaderAppend{Coordinator: true, TransactionVersion: 1}); err != nil {
		t.Fatal(err)
	}
	g, _ := l.BeginTxnVerification(7, 3)
	if _, _, err := l.AppendAsLeaderWith(txnMarker(7, 3, false), 0, LeaderAppend{Coordinator: true, TransactionVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.AppendAsLeaderWith(txnDataBatch(1, 7, 3, 1), 0, LeaderAppend{VerificationGuard: g}); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("a batch verified before a TV1 marker at its epoch: %v, want ErrInvalidTxnState", err)
	}
}

// txnMarker is a commit or abort marker of producer pid at epoch.
func txnMarker(pid int64, epoch int16, commit bool) []byte {
	typ := byte(0)
	if commit {
		typ = 1
	}
	return batch.Build(batch.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1,
		Attributes: batch.AttrTransactional | batch.AttrControl},
		[]batch.Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 0}}})
}
