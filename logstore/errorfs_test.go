package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"sluice/internal/batch"
)

const errorFSDir = "/errfs/topic-0"

// errorWorkload is what a workload run over an ErrorFS observed.
type errorWorkload struct {
	// acked maps each acknowledged batch's base offset to its bytes from the magic byte on
	// (what the CRC covers plus the magic; base offset and leader epoch are the log's).
	acked map[int64][]byte
	// failures counts appends (or opens, flushes, closes) that returned an error.
	failures int
}

func batchContent(b []byte) []byte { return append([]byte(nil), b[16:]...) }

// runErrorWorkload drives a log on fs through appends of an idempotent producer (rolling
// segments every few batches), flushes, a close and a reopen (a second recovery) and more
// appends. Whenever an operation fails it checks the error is a storage error, calls Reopen
// (which must then succeed: every injected fault here is a single operation) and retries the
// same batch, as a producer retries. It fails the test on anything a user would see as wrong.
func runErrorWorkload(t *testing.T, fs FS, flushMessages int64, what string) *errorWorkload {
	t.Helper()
	w := &errorWorkload{acked: map[int64][]byte{}}
	clock := time.UnixMilli(1_700_000_000_000)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 100
	cfg.FlushMessages = flushMessages
	cfg.FileDeleteDelayMs = 0
	cfg.RetentionMs = -1
	opts := Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger}

	open := func() *Log {
		l, err := Open(errorFSDir, cfg, opts)
		if err == nil {
			return l
		}
		w.failures++
		// A failed open leaves the directory recoverable: the next one succeeds.
		l, err2 := Open(errorFSDir, cfg, opts)
		if err2 != nil {
			t.Fatalf("%s: open failed (%v) and again (%v)", what, err, err2)
		}
		return l
	}
	recover := func(l *Log, err error, op string) {
		t.Helper()
		w.failures++
		if !errors.Is(err, ErrStorage) || !errors.Is(err, ErrClosed) {
			t.Fatalf("%s: %s failed with %v, want a storage error", what, op, err)
		}
		if l.Failure() == nil {
			t.Fatalf("%s: %s failed (%v) but the log does not report a failure", what, op, err)
		}
		if err := l.Reopen(); err != nil {
			t.Fatalf("%s: reopen after %s failure: %v", what, op, err)
		}
		if l.Failure() != nil {
			t.Fatalf("%s: still failed after Reopen: %v", what, l.Failure())
		}
	}

	l := open()
	seq := int32(0)
	for i := 0; i < 24; i++ {
		clock = clock.Add(time.Second)
		if i == 12 {
			// A clean close and a second recovery in the middle of the workload.
			if err := l.Close(); err != nil {
				w.failures++
			}
			l = open()
		}
		n := 1 + i%3
		b := mkBatch(n, clock.UnixMilli(), 7, 0, seq)
		for attempt := 0; ; attempt++ {
			if attempt > 3 {
				t.Fatalf("%s: batch %d not appended after %d attempts", what, i, attempt)
			}
			res, err := l.AppendAsLeader(b, 1)
			if err != nil {
				recover(l, err, fmt.Sprintf("append %d", i))
				continue
			}
			if got := batchContent(b); !res.Duplicate {
				w.acked[res.FirstOffset] = got
			} else if prev, ok := w.acked[res.FirstOffset]; ok && !bytes.Equal(prev, got) {
				t.Fatalf("%s: duplicate at %d differs from the acknowledged batch", what, res.FirstOffset)
			} else {
				// A retry of a batch whose failed append did reach the log: acknowledged now.
				w.acked[res.FirstOffset] = got
			}
			break
		}
		seq += int32(n)
		if i%5 == 4 {
			if err := l.Flush(); err != nil {
				recover(l, err, "flush")
			}
		}
	}
	if err := l.Close(); err != nil {
		w.failures++
	}
	return w
}

// checkAcked opens dir on fs (without faults) and checks every acknowledged batch is there,
// at its offset, with its bytes, and that the log is a valid chain of batches.
func checkAcked(t *testing.T, fs FS, w *errorWorkload, what string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600
	cfg.RetentionMs = -1
	l, err := Open(errorFSDir, cfg, Options{FS: fs, Logger: quietLogger})
	if err != nil {
		t.Fatalf("%s: final open: %v", what, err)
	}
	defer l.Close()
	found := map[int64][]byte{}
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		rr, err := l.Read(off, 1<<20, end, true)
		if err != nil || rr.Bytes == 0 {
			t.Fatalf("%s: read at %d of [%d,%d): %v (%d bytes)", what, off, l.LogStartOffset(), end, err, rr.Bytes)
		}
		for _, s := range rr.Slices {
			data := make([]byte, s.Length)
			if _, err := s.File.ReadAt(data, s.Position); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			for len(data) > 0 {
				h, err := batch.Check(data)
				if err != nil {
					t.Fatalf("%s: bad batch at %d: %v", what, off, err)
				}
				if h.BaseOffset != off {
					t.Fatalf("%s: batch at %d, want %d (offsets not dense)", what, h.BaseOffset, off)
				}
				found[h.BaseOffset] = batchContent(data[:h.Size()])
				off = h.NextOffset()
				data = data[h.Size():]
			}
		}
	}
	for offset, want := range w.acked {
		if got, ok := found[offset]; !ok {
			t.Fatalf("%s: acknowledged batch at %d lost (log [%d,%d))", what, offset, l.LogStartOffset(), end)
		} else if !bytes.Equal(got, want) {
			t.Fatalf("%s: batch at %d differs from the acknowledged one", what, offset)
		}
	}
}

// TestErrorFSEveryOperation fails, one at a time, every file operation a produce / roll /
// recover workload does (writes failing halfway, fsyncs, creates, renames, truncates, removes),
// with ENOSPC and EIO, for both flush policies: no panic, the failed append is not
// acknowledged (its retry is, once), the log serves again after Reopen, and every
// acknowledged batch is still there, unchanged, after a final reopen.
func TestErrorFSEveryOperation(t *testing.T) {
	for _, flushMessages := range []int64{1 << 62, 1} {
		counter := NewErrorFS(NewMemFS())
		w := runErrorWorkload(t, counter, flushMessages, "counting run")
		if w.failures != 0 {
			t.Fatalf("counting run had %d failures", w.failures)
		}
		total := counter.Count(OpAny)
		if total < 100 {
			t.Fatalf("workload did only %d operations", total)
		}
		injected := 0
		for k := 0; k < total; k++ {
			for _, fault := range []error{ErrNoSpace, ErrIO} {
				what := fmt.Sprintf("flush.messages=%d, op %d/%d fails with %v", flushMessages, k, total, fault)
				mem := NewMemFS()
				efs := NewErrorFS(mem)
				efs.SetPartialWrites(true)
				efs.FailAt(OpAny, k, fault)
				w := runErrorWorkload(t, efs, flushMessages, what)
				injected += efs.Injected()
				checkAcked(t, mem, w, what)
			}
		}
		t.Logf("flush.messages=%d: %d operations, %d failed in turn", flushMessages, total, injected)
		if injected < total {
			t.Fatalf("only %d of %d operations were failed", injected, total)
		}
	}
}

// TestReopenAfterDiskFull is the full-disk story at the log level: every write fails until the
// disk is healed; appends fail with a storage error and are not acknowledged, Reopen refuses
// while the disk is still full, and once healed the log serves again with every acknowledged
// batch intact.
func TestReopenAfterDiskFull(t *testing.T) {
	mem := NewMemFS()
	efs := NewErrorFS(mem)
	efs.SetPartialWrites(true)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600
	cfg.RetentionMs = -1
	var failures []error
	var mu sync.Mutex
	l, err := Open(errorFSDir, cfg, Options{FS: efs, Logger: quietLogger, OnFailure: func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acked := map[int64][]byte{}
	seq := int32(0)
	appendOne := func() error {
		b := mkBatch(2, 1_700_000_000_000, 9, 0, seq)
		res, err := l.AppendAsLeader(b, 0)
		if err == nil {
			acked[res.FirstOffset] = batchContent(b)
			seq += 2
		}
		return err
	}
	for range 10 {
		if err := appendOne(); err != nil {
			t.Fatal(err)
		}
	}
	efs.FailNow(OpWrite, ErrNoSpace)
	if err := appendOne(); !errors.Is(err, ErrStorage) {
		t.Fatalf("append on a full disk: %v, want a storage error", err)
	}
	if err := appendOne(); !errors.Is(err, ErrStorage) {
		t.Fatalf("second append on a full disk: %v, want the sticky storage error", err)
	}
	mu.Lock()
	if len(failures) != 1 || !errors.Is(failures[0], ErrStorage) {
		t.Fatalf("OnFailure calls: %v, want one storage error", failures)
	}
	mu.Unlock()
	if err := l.Reopen(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Reopen on a full disk: %v, want a storage error", err)
	}
	efs.Heal()
	if err := l.Reopen(); err != nil {
		t.Fatalf("Reopen after the disk was healed: %v", err)
	}
	for range 10 {
		if err := appendOne(); err != nil {
			t.Fatalf("append after Reopen: %v", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkAcked(t, mem, &errorWorkload{acked: acked}, "after heal")
}

// TestReopenFailsWaitersFromBefore: an append waiting for a group-commit fsync that failed is
// answered with an error, never with success, even though the log recovers meanwhile.
func TestReopenFailsWaitersFromBefore(t *testing.T) {
	mem := NewMemFS()
	efs := NewErrorFS(mem)
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	cfg.RetentionMs = -1
	l, err := Open(errorFSDir, cfg, Options{FS: efs, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.AppendAsLeader(mkBatch(1, 1_700_000_000_000, -1, 0, 0), 0); err != nil {
		t.Fatal(err)
	}
	efs.FailNow(OpSync, ErrIO)
	_, wait, err := l.AppendAsLeaderDeferSync(mkBatch(1, 1_700_000_000_000, -1, 0, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, wait2, err := l.AppendAsLeaderDeferSync(mkBatch(1, 1_700_000_000_000, -1, 0, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.Wait(); !errors.Is(err, ErrStorage) {
		t.Fatalf("wait for a failed fsync: %v", err)
	}
	efs.Heal()
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	if err := wait2.Wait(); !errors.Is(err, ErrStorage) {
		t.Fatalf("wait for an append from before Reopen: %v, want a storage error", err)
	}
	if _, err := l.AppendAsLeader(mkBatch(1, 1_700_000_000_000, -1, 0, 0), 0); err != nil {
		t.Fatalf("append after Reopen: %v", err)
	}
}
