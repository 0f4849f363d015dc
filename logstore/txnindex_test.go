package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"sluice/internal/batch"
)

// runTxnCrashWorkload drives a log through interleaved transactions of three producers,
// aborted and committed, across several segment rolls, with flushes, until the first error
// (the simulated crash).
func runTxnCrashWorkload(fs *MemFS, clock *time.Time) error {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 500
	cfg.IndexIntervalBytes = 100
	cfg.FileDeleteDelayMs = 0
	l, err := Open(crashDir, cfg, Options{FS: fs, Now: func() time.Time { return *clock }, Logger: quietLogger})
	if err != nil {
		return err
	}
	defer l.Close()
	seqs := map[int64]int32{}
	for i := 0; i < 30; i++ {
		*clock = clock.Add(time.Second)
		pid := int64(1 + i%3)
		var b []byte
		o := LeaderAppend{}
		if i%4 == 3 {
			b = MarkerBatch(pid, 0, 0, i%8 == 3, clock.UnixMilli())
			o.Coordinator = true
		} else {
			b = mkBatch(1+i%2, clock.UnixMilli(), pid, 0, seqs[pid])
			setAttributes(b, batch.AttrTransactional)
			seqs[pid] += int32(1 + i%2)
		}
		if _, sync, err := l.AppendAsLeaderWith(b, 0, o); err != nil {
			return err
		} else if err := sync.Wait(); err != nil {
			return err
		}
		if i%9 == 8 {
			if err := l.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// expectedAborted scans the whole log from its start with an empty producer state and
// returns the aborted transactions its markers define, and the producers left open.
func expectedAborted(t *testing.T, l *Log) ([]AbortedTxn, map[int64]int64) {
	t.Helper()
	p := newProducerState()
	var out []AbortedTxn
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, seg := range l.mu.segments {
		data := make([]byte, seg.size)
		if _, err := seg.log.ReadAt(data, 0); err != nil && seg.size > 0 {
			t.Fatal(err)
		}
		for len(data) > 0 {
			h, err := batch.Check(data)
			if err != nil {
				t.Fatalf("bad batch in recovered log: %v", err)
			}
			var marker *endTxnMarker
			if h.IsControl() {
				m, ok, err := parseEndTxnMarker(&h, data)
				if err != nil || !ok {
					t.Fatalf("bad marker at %d: %v", h.BaseOffset, err)
				}
				marker = &m
			}
			if first := p.replay(&h, marker); first >= 0 && !marker.commit {
				lso := h.BaseOffset + 1
				if f := p.firstOngoing(); f >= 0 && f < lso {
					lso = f
				}
				out = append(out, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, LastStableOffset: lso})
			}
			data = data[h.Size():]
		}
	}
	return out, p.ongoing
}

// TestTxnIndexCrashAtEveryOperation crashes the transactional workload at every mutating
// file operation, torn or not, and checks that the reopened log's .txnindex entries and open
// transactions are exactly what its surviving markers define, as a full rebuild would make
// them, and that they survive a clean reopen.
func TestTxnIndexCrashAtEveryOperation(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	if err := runTxnCrashWorkload(fs, &clock); err != nil {
		t.Fatal(err)
	}
	total := fs.Ops()
	if total < 100 {
		t.Fatalf("workload did only %d operations", total)
	}
	l, err := Open(crashDir, DefaultConfig(), Options{FS: fs, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := expectedAborted(t, l); len(want) < 3 {
		t.Fatalf("workload aborted only %d transactions", len(want))
	}
	l.Close()
	for k := 1; k <= total+1; k++ {
		for _, torn := range []bool{false, true} {
			what := fmt.Sprintf("crash at op %d/%d torn=%v", k, total, torn)
			clock := time.UnixMilli(1_700_000_000_000)
			fs := NewMemFS()
			fs.SetTornWrites(torn, uint64(k))
			fs.CrashAfter(k)
			if err := runTxnCrashWorkload(fs, &clock); err != nil && !errors.Is(err, ErrCrashed) {
				t.Fatalf("%s: workload: %v", what, err)
			}
			fs.Restart()
			for round := range 2 {
				l, err := Open(crashDir, DefaultConfig(), Options{FS: fs, Logger: quietLogger})
				if err != nil {
					t.Fatalf("%s: reopen: %v", what, err)
				}
				want, open := expectedAborted(t, l)
				got := l.AbortedTransactions(0, 1<<62)
				if !slices.Equal(got, want) {
					t.Fatalf("%s (open %d): txnindex %+v, want %+v", what, round, got, want)
				}
				var gotOpen []int64
				for _, p := range l.Producers() {
					if p.CurrentTxnStartOffset >= 0 {
						gotOpen = append(gotOpen, p.CurrentTxnStartOffset)
						if open[p.ProducerID] != p.CurrentTxnStartOffset {
							t.Fatalf("%s: producer %d open at %d, want %d", what, p.ProducerID, p.CurrentTxnStartOffset, open[p.ProducerID])
						}
					}
				}
				if len(gotOpen) != len(open) {
					t.Fatalf("%s: open transactions at %v, want %v", what, gotOpen, open)
				}
				if err := l.Close(); err != nil {
					t.Fatalf("%s: close: %v", what, err)
				}
			}
		}
	}
}

// FuzzTxnIndex: the .txnindex decoder never panics, and what it accepts re-encodes to the
// same bytes with increasing marker offsets at or after the segment base.
func FuzzTxnIndex(f *testing.F) {
	var seed []byte
	seed = AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 5, LastStableOffset: 2}.appendTo(seed)
	seed = AbortedTxn{ProducerID: 2, FirstOffset: 2, LastOffset: 9, LastStableOffset: 10}.appendTo(seed)
	f.Add(seed, int64(0))
	f.Add(seed[:20], int64(0))
	f.Add(seed, int64(7))
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		entries, err := decodeTxnIndex(data, base)
		if err != nil {
			if !errors.Is(err, ErrCorruptTxnIndex) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var again []byte
		for i, a := range entries {
			if a.LastOffset < base || i > 0 && a.LastOffset <= entries[i-1].LastOffset || a.FirstOffset > a.LastOffset {
				t.Fatalf("accepted entry %+v", a)
			}
			again = a.appendTo(again)
		}
		if string(again) != string(data) {
			t.Fatal("accepted bytes do not round-trip")
		}
	})
}

// FuzzEndTxnMarker: the control record parser never panics on any batch bytes.
func FuzzEndTxnMarker(f *testing.F) {
	f.Add(MarkerBatch(1, 2, 3, true, 1000))
	f.Add(MarkerBatch(1, 2, 3, false, 1000)[:70])
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := batch.ParseHeader(data)
		if err != nil {
			return
		}
		parseEndTxnMarker(&h, data)
	})
}

// The marker a broker builds is Kafka's EndTransactionMarker: control and transactional
// attributes, no sequence, key (version 0, type), value (version 0, coordinator epoch).
func TestMarkerBatchLayout(t *testing.T) {
	for _, commit := range []bool{false, true} {
		b := MarkerBatch(42, 7, 9, commit, 1234)
		h, err := batch.Check(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 7 || h.BaseSequence != -1 || h.RecordCount != 1 {
			t.Fatalf("header %+v", h)
		}
		m, ok, err := parseEndTxnMarker(&h, b)
		if err != nil || !ok || m.commit != commit || m.coordinatorEpoch != 9 {
			t.Fatalf("marker %+v ok %v err %v", m, ok, err)
		}
		if c, epoch, ok, err := ParseTxnMarker(b); c != commit || epoch != 9 || !ok || err != nil {
			t.Fatalf("ParseTxnMarker: %v %d %v %v", c, epoch, ok, err)
		}
	}
}

// A coordinator's batches of one producer carry no sequence (transactional offset commits):
// each is appended, none is taken for a retry of the previous one, as Kafka deduplicates
// client appends only.
func TestCoordinatorBatchesOfAProducerAreNotDeduplicated(t *testing.T) {
	l, err := Open(ddDir, DefaultConfig(), Options{FS: NewMemFS(), Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		b := mkBatch(1, 1000, 77, 0, 0)
		binary.BigEndian.PutUint32(b[53:], ^uint32(0)) // base sequence -1
		setAttributes(b, batch.AttrTransactional)
		res, _, err := l.AppendAsLeaderWith(b, 0, LeaderAppend{Coordinator: true})
		if err != nil || res.Duplicate || res.FirstOffset != int64(i) {
			t.Fatalf("coordinator batch %d: %+v %v", i, res, err)
		}
	}
}
