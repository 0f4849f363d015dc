package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"sluice/internal/batch"
)

// crashModel is what a crash workload did: every version of a batch attempted at each base
// offset, and the offset below which acknowledged data was durable.
type crashModel struct {
	versions map[int64][][]byte
	// synced: every acknowledged batch below it was durable (Flush, Close, or flush.messages=1).
	synced int64
	// maxLogStart is the largest log start the workload asked for (retention, DeleteRecords).
	maxLogStart int64
}

func (m *crashModel) attempt(off int64, b []byte) {
	m.versions[off] = append(m.versions[off], append([]byte(nil), b...))
}

const crashDir = "/crash/topic-3"

// runCrashWorkload drives a log through appends (idempotent producer 7, growing leader
// epochs), flushes, rolls, a truncation, DeleteRecords, retention, a full truncation and
// close, stopping at the
// first error (the simulated crash). It returns the model of what was attempted.
func runCrashWorkload(fs *MemFS, flushMessages int64, clock *time.Time) (*crashModel, error) {
	m := &crashModel{versions: map[int64][][]byte{}}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	cfg.IndexIntervalBytes = 100
	cfg.FlushMessages = flushMessages
	cfg.FileDeleteDelayMs = 0
	cfg.RetentionMs = -1
	opts := Options{FS: fs, Now: func() time.Time { return *clock }, Logger: quietLogger}
	l, err := Open(crashDir, cfg, opts)
	if err != nil {
		return m, err
	}
	defer l.Close()
	seq := int32(0)
	for i := 0; i < 36; i++ {
		*clock = clock.Add(time.Second)
		n := 1 + i%4
		b := mkBatch(n, clock.UnixMilli(), 7, 0, seq)
		batch.SetBaseOffset(b, l.LogEndOffset())
		batch.SetPartitionLeaderEpoch(b, int32(1+i/10))
		m.attempt(l.LogEndOffset(), b)
		res, err := l.AppendAsLeader(b, int32(1+i/10))
		if err != nil {
			return m, err
		}
		seq += int32(n)
		if flushMessages == 1 {
			m.synced = res.LastOffset + 1
		}
		switch {
		case i%7 == 6:
			if err := l.Flush(); err != nil {
				return m, err
			}
			m.synced = l.LogEndOffset()
		case i == 20:
			// Cut the last two batches, as a follower would; the producer's sequence rewinds.
			cut := res.FirstOffset - int64(1+(i-1)%4)
			m.synced = min(m.synced, cut)
			if err := l.TruncateTo(cut); err != nil {
				return m, err
			}
			seq -= int32(n + 1 + (i-1)%4)
		case i == 26:
			target := l.LogEndOffset() / 3
			m.maxLogStart = max(m.maxLogStart, target)
			if _, err := l.DeleteRecordsBefore(target); err != nil {
				return m, err
			}
		case i == 31:
			cfg.RetentionBytes = 1500
			l.SetConfig(cfg)
			m.maxLogStart = max(m.maxLogStart, l.LogEndOffset())
			if err := l.EnforceRetention(); err != nil {
				return m, err
			}
		case i == 33:
			// A replica restarting from scratch at a later offset.
			restart := l.LogEndOffset() + 5
			m.synced = 0
			m.maxLogStart = max(m.maxLogStart, restart)
			if err := l.TruncateFullyAndStartAt(restart); err != nil {
				return m, err
			}
			m.synced = restart
		}
	}
	if err := l.Close(); err != nil {
		return m, err
	}
	m.synced = l.LogEndOffset()
	return m, nil
}

// checkRecovered opens the crashed directory and checks the recovery invariants.
func checkRecovered(t *testing.T, fs *MemFS, m *crashModel, clock *time.Time, what string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	cfg.IndexIntervalBytes = 100
	cfg.RetentionMs = -1
	opts := Options{FS: fs, Now: func() time.Time { return *clock }, Logger: quietLogger}
	l, err := Open(crashDir, cfg, opts)
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	defer l.Close()
	start, end := l.LogStartOffset(), l.LogEndOffset()
	if end < m.synced {
		t.Fatalf("%s: log end %d lost synced data below %d", what, end, m.synced)
	}
	if start > max(m.maxLogStart, 0) && start > 0 {
		// Retention may only have moved the start as far as the workload asked.
		if start > m.maxLogStart {
			t.Fatalf("%s: log start %d beyond anything requested (%d)", what, start, m.maxLogStart)
		}
	}
	// Read everything and compare with what was attempted at each offset.
	off := start
	var last batch.Header
	haveLast := false
	for off < end {
		rr, err := l.Read(off, 1<<20, end, true)
		if err != nil {
			t.Fatalf("%s: read %d: %v", what, off, err)
		}
		if rr.Bytes == 0 {
			t.Fatalf("%s: read %d in [%d,%d) returned nothing", what, off, start, end)
		}
		data := make([]byte, rr.Bytes)
		s := rr.Slices[0]
		if _, err := s.File.ReadAt(data, s.Position); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		for len(data) > 0 {
			h, err := batch.Check(data)
			if err != nil {
				t.Fatalf("%s: bad batch at %d: %v", what, off, err)
			}
			if h.LastOffset() < off || (h.BaseOffset > off && off != start) {
				t.Fatalf("%s: batch [%d,%d] does not continue at %d", what, h.BaseOffset, h.LastOffset(), off)
			}
			ok := false
			for _, v := range m.versions[h.BaseOffset] {
				if bytes.Equal(v, data[:h.Size()]) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("%s: batch at %d was never appended as such", what, h.BaseOffset)
			}
			off = h.NextOffset()
			last, haveLast = h, true
			data = data[h.Size():]
		}
	}
	if off != end {
		t.Fatalf("%s: batches end at %d, log end %d", what, off, end)
	}
	if haveLast {
		if got := l.LatestEpoch(); got != last.PartitionLeaderEpoch {
			t.Fatalf("%s: latest epoch %d, last batch epoch %d", what, got, last.PartitionLeaderEpoch)
		}
		// The producer state was rebuilt: a retry of the last batch is a duplicate.
		retry := append([]byte(nil), m.versions[last.BaseOffset][0]...)
		for _, v := range m.versions[last.BaseOffset] {
			if h, _ := batch.ParseHeader(v); h.LastOffset() == last.LastOffset() && h.BaseSequence == last.BaseSequence {
				retry = append(retry[:0], v...)
			}
		}
		res, err := l.AppendAsLeader(retry, last.PartitionLeaderEpoch)
		if err != nil || !res.Duplicate || res.FirstOffset != last.BaseOffset {
			t.Fatalf("%s: retry of last batch [%d..%d]: %+v, %v", what, last.BaseOffset, last.LastOffset(), res, err)
		}
	}
	// The recovered log takes appends and reopens to the same state.
	if _, err := l.AppendAsLeader(mkBatch(2, clock.UnixMilli(), -1, 0, 0), l.LatestEpoch()+1); err != nil {
		t.Fatalf("%s: append after recovery: %v", what, err)
	}
	end2 := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatalf("%s: close: %v", what, err)
	}
	l2, err := Open(crashDir, cfg, opts)
	if err != nil {
		t.Fatalf("%s: second reopen: %v", what, err)
	}
	if l2.LogEndOffset() != end2 || l2.LogStartOffset() != start {
		t.Fatalf("%s: second reopen [%d,%d), want [%d,%d)", what, l2.LogStartOffset(), l2.LogEndOffset(), start, end2)
	}
	l2.Close()
}

// TestCrashAtEveryOperation crashes the workload at every mutating file operation (each write,
// fsync, truncate, create, rename, remove and directory sync), for both flush policies, with
// unsynced bytes dropped entirely or torn (a random prefix kept, sometimes corrupted), and
// checks that the log reopens to a valid prefix holding everything that was synced.
func TestCrashAtEveryOperation(t *testing.T) {
	for _, flushMessages := range []int64{1 << 62, 1} {
		clock := time.UnixMilli(1_700_000_000_000)
		fs := NewMemFS()
		if _, err := runCrashWorkload(fs, flushMessages, &clock); err != nil {
			t.Fatal(err)
		}
		total := fs.Ops()
		if total < 100 {
			t.Fatalf("workload did only %d operations", total)
		}
		for k := 1; k <= total+1; k++ {
			for _, torn := range []bool{false, true} {
				what := fmt.Sprintf("flush.messages=%d crash at op %d/%d torn=%v", flushMessages, k, total, torn)
				clock := time.UnixMilli(1_700_000_000_000)
				fs := NewMemFS()
				fs.SetTornWrites(torn, uint64(k))
				fs.CrashAfter(k)
				m, err := runCrashWorkload(fs, flushMessages, &clock)
				if err != nil && !errors.Is(err, ErrCrashed) {
					t.Fatalf("%s: workload: %v", what, err)
				}
				fs.Restart()
				checkRecovered(t, fs, m, &clock, what)
			}
		}
	}
}

var quietLogger = slog.New(slog.DiscardHandler)

// snapshotGateFS holds the creation of producer snapshot files until gate is closed, then
// fails it with ErrCrashed: the simulated crash lands between a roll and its snapshot.
type snapshotGateFS struct {
	FS
	reached chan struct{} // closed when a snapshot write is held
	gate    chan struct{}
	once    bool
}

func (g *snapshotGateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if strings.HasSuffix(name, snapshotSuffix+tmpSuffix) {
		if !g.once {
			g.once = true
			close(g.reached)
		}
		<-g.gate
		return nil, ErrCrashed
	}
	return g.FS.OpenFile(name, flag, perm)
}

// TestCrashBetweenRollAndSnapshot: a roll's producer snapshot is written in the background.
// Appends go on into the new segment while the snapshot write is held; the crash comes before
// it is on disk. The log must reopen with everything flushed before the roll, the producer
// state rebuilt from the older snapshot and the segments after it (a retry of the last
// surviving batch is a duplicate), for unsynced bytes dropped and torn.
func TestCrashBetweenRollAndSnapshot(t *testing.T) {
	for seed := uint64(0); seed < 6; seed++ {
		clock := time.UnixMilli(1_700_000_000_000)
		mem := NewMemFS()
		mem.SetTornWrites(seed > 0, seed)
		gated := &snapshotGateFS{FS: mem, reached: make(chan struct{}), gate: make(chan struct{})}
		cfg := DefaultConfig()
		cfg.SegmentBytes = 700
		cfg.IndexIntervalBytes = 100
		cfg.RetentionMs = -1
		opts := Options{FS: mem, Now: func() time.Time { return clock }, Logger: quietLogger}
		m := &crashModel{versions: map[int64][][]byte{}}
		l, err := Open(crashDir, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		seq := int32(0)
		appendOne := func(l *Log) {
			t.Helper()
			clock = clock.Add(time.Second)
			b := mkBatch(2, clock.UnixMilli(), 7, 0, seq)
			batch.SetBaseOffset(b, l.LogEndOffset())
			batch.SetPartitionLeaderEpoch(b, 1)
			m.attempt(l.LogEndOffset(), b)
			if _, err := l.AppendAsLeader(b, 1); err != nil {
				t.Errorf("seed %d: append: %v", seed, err)
			}
			seq += 2
		}
		// Two rolls with their snapshots written, then everything flushed.
		for l.NumSegments() < 3 {
			appendOne(l)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		m.synced = l.LogEndOffset()
		// Reopen through the gate and append until the next roll: the append returns while
		// its snapshot write is held.
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		opts.FS = gated
		l, err = Open(crashDir, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		segs := l.NumSegments()
		rolled := make(chan struct{})
		go func() {
			defer close(rolled)
			for l.NumSegments() == segs {
				appendOne(l)
			}
		}()
		<-gated.reached
		select {
		case <-rolled:
		case <-time.After(10 * time.Second):
			t.Fatalf("seed %d: the rolling append waits for its producer snapshot", seed)
		}
		for i := 0; i < 3; i++ { // into the new segment, not durable
			appendOne(l)
		}
		mem.Crash()
		close(gated.gate)
		l.Close() // fails: the FS has crashed
		mem.Restart()
		checkRecovered(t, mem, m, &clock, fmt.Sprintf("seed %d", seed))
	}
}
