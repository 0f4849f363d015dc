package logstore

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/internal/batch"
)

func openMem(t *testing.T, fs *MemFS, cfg Config) *Log {
	t.Helper()
	l, err := Open("/m/t-0", cfg, Options{FS: fs, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// With flush.messages=1 an append returns only once durable: after concurrent appenders
// return, a crash loses none of their batches, and they shared fsyncs.
func TestGroupCommitDurability(t *testing.T) {
	fs := NewMemFS()
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	l := openMem(t, fs, cfg)
	const appenders, each = 16, 20
	var wg sync.WaitGroup
	for g := 0; g < appenders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := l.AppendAsLeader(mkBatch(2, 1000, -1, 0, 0), 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	l.flush.mu.Lock()
	syncs := l.flush.syncs
	l.flush.mu.Unlock()
	if syncs == 0 || syncs > appenders*each {
		t.Fatalf("%d fsyncs for %d appends", syncs, appenders*each)
	}
	fs.Restart() // crash without Close
	l2 := openMem(t, fs, cfg)
	defer l2.Close()
	if got := l2.LogEndOffset(); got != 2*appenders*each {
		t.Fatalf("after crash log end %d, want %d", got, 2*appenders*each)
	}
}

// AppendAsLeaderDeferSync appends at once and leaves the fsync to SyncWait.Wait: several
// appends waited for together share fsyncs, and after Wait a crash keeps them all. Under the
// default flush policy there is nothing to wait for.
func TestAppendDeferSync(t *testing.T) {
	fs := NewMemFS()
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	l := openMem(t, fs, cfg)
	var waits []SyncWait
	for i := 0; i < 5; i++ {
		res, w, err := l.AppendAsLeaderDeferSync(mkBatch(2, 1000, -1, 0, 0), 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.FirstOffset != int64(2*i) || w == (SyncWait{}) {
			t.Fatalf("append %d: first offset %d, wait %+v", i, res.FirstOffset, w)
		}
		waits = append(waits, w)
	}
	if got := l.flushedOffset(); got != 0 {
		t.Fatalf("flushed offset %d before any Wait, want 0", got)
	}
	for _, w := range waits {
		if err := w.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	l.flush.mu.Lock()
	syncs := l.flush.syncs
	l.flush.mu.Unlock()
	if syncs != 1 {
		t.Fatalf("%d fsyncs for 5 appends waited for together, want 1", syncs)
	}
	fs.Restart() // crash without Close
	l2 := openMem(t, fs, cfg)
	if got := l2.LogEndOffset(); got != 10 {
		t.Fatalf("after crash log end %d, want 10", got)
	}
	l2.Close()

	l3 := openMem(t, NewMemFS(), DefaultConfig())
	defer l3.Close()
	if _, w, err := l3.AppendAsLeaderDeferSync(mkBatch(1, 10, -1, 0, 0), 0); err != nil || w != (SyncWait{}) {
		t.Fatalf("default flush policy: wait %+v err %v, want nothing to wait for", w, err)
	}
}

// A crash in the middle of concurrent group-commit appends keeps every append that returned.
func TestGroupCommitCrashMidway(t *testing.T) {
	for crashAt := 5; crashAt < 200; crashAt += 13 {
		fs := NewMemFS()
		cfg := DefaultConfig()
		cfg.FlushMessages = 1
		cfg.SegmentBytes = 2000
		l := openMem(t, fs, cfg)
		fs.CrashAfter(crashAt)
		var acked atomic.Int64 // highest acknowledged last offset + 1
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 30; i++ {
					res, err := l.AppendAsLeader(mkBatch(1, 1000, -1, 0, 0), 0)
					if err != nil {
						return
					}
					for {
						cur := acked.Load()
						if res.LastOffset+1 <= cur || acked.CompareAndSwap(cur, res.LastOffset+1) {
							break
						}
					}
				}
			}()
		}
		wg.Wait()
		fs.Restart()
		l2 := openMem(t, fs, cfg)
		if got := l2.LogEndOffset(); got < acked.Load() {
			t.Fatalf("crash at op %d: log end %d < acknowledged %d", crashAt, got, acked.Load())
		}
		l2.Close()
	}
}

// Readers running alongside appenders see only whole, valid batches up to the published end.
func TestConcurrentReadAppend(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 5000
	cfg.IndexIntervalBytes = 200
	l, err := Open(t.TempDir(), cfg, Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				end := l.LogEndOffset()
				off := end / 2
				rr, err := l.Read(off, 3000, math.MaxInt64, true)
				if err != nil {
					t.Error(err)
					return
				}
				for _, s := range rr.Slices {
					buf := make([]byte, s.Length)
					if _, err := s.File.ReadAt(buf, s.Position); err != nil {
						t.Error(err)
						return
					}
					for len(buf) > 0 {
						h, err := batch.Check(buf)
						if err != nil {
							t.Errorf("reader saw a bad batch: %v", err)
							return
						}
						buf = buf[h.Size():]
					}
				}
			}
		}()
	}
	for i := 0; i < 2000; i++ {
		if _, err := l.AppendAsLeader(mkBatch(1+i%5, int64(i), -1, 0, 0), 0); err != nil {
			t.Fatal(err)
		}
		if i == 1000 {
			if err := l.TruncateTo(l.LogEndOffset() - 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	readers.Wait()
}

// A failed write makes the log refuse further mutations (sticky error), but it still closes.
func TestStickyWriteError(t *testing.T) {
	fs := NewMemFS()
	l := openMem(t, fs, DefaultConfig())
	if _, err := l.AppendAsLeader(mkBatch(1, 1, -1, 0, 0), 0); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	fs.InjectError(func(op, path string) error {
		if op == "write" {
			return boom
		}
		return nil
	})
	if _, err := l.AppendAsLeader(mkBatch(1, 1, -1, 0, 0), 0); !errors.Is(err, boom) || !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v", err)
	}
	fs.InjectError(nil)
	if _, err := l.AppendAsLeader(mkBatch(1, 1, -1, 0, 0), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("log took an append after a failed write: %v", err)
	}
	if err := l.TruncateTo(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("truncate after failure: %v", err)
	}
	if _, err := l.Read(0, 100, 100, true); err != nil {
		t.Fatalf("reads of published data still work: %v", err)
	}
	l.Close()
	if _, err := l.AppendAsLeader(mkBatch(1, 1, -1, 0, 0), 0); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	l2 := openMem(t, fs, DefaultConfig())
	defer l2.Close()
	if l2.LogEndOffset() != 1 {
		t.Fatalf("log end %d", l2.LogEndOffset())
	}
}

func TestEpochCache(t *testing.T) {
	var c epochCache
	c.assign(1, 0)
	c.assign(1, 5) // not newer: ignored
	c.assign(3, 10)
	c.assign(6, 20)
	for _, tc := range []struct {
		req       int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1}, {0, 0, 0}, {1, 1, 10}, {2, 1, 10}, {3, 3, 20}, {5, 3, 20}, {6, 6, 100}, {7, -1, -1},
	} {
		if e, o := c.endOffsetFor(tc.req, 100); e != tc.wantEpoch || o != tc.wantEnd {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.req, e, o, tc.wantEpoch, tc.wantEnd)
		}
	}
	c.truncateFromStart(12)
	if len(c.entries) != 2 || c.entries[0] != (epochEntry{3, 12}) {
		t.Fatalf("%+v", c.entries)
	}
	c.truncateFromEnd(20)
	if len(c.entries) != 1 || c.latestEpoch() != 3 {
		t.Fatalf("%+v", c.entries)
	}
	// A newer epoch starting below existing entries replaces them (Kafka's assign).
	c.assign(7, 12)
	if len(c.entries) != 1 || c.entries[0] != (epochEntry{7, 12}) {
		t.Fatalf("%+v", c.entries)
	}
	if c.epochFor(11) != -1 || c.epochFor(12) != 7 || c.epochFor(1000) != 7 {
		t.Fatalf("epochFor: %d %d %d", c.epochFor(11), c.epochFor(12), c.epochFor(1000))
	}
	var empty epochCache
	if e, o := empty.endOffsetFor(0, 10); e != -1 || o != -1 {
		t.Fatalf("empty cache: %d %d", e, o)
	}
}

func TestCheckProducerBatch(t *testing.T) {
	entry := func(epoch int16, lastSeq int32) *producerEntry {
		e := &producerEntry{Epoch: epoch, CurrentTxnFirstOffset: -1}
		if lastSeq >= 0 {
			e.Batches = []batchMetadata{{FirstSeq: lastSeq, LastSeq: lastSeq}}
		}
		return e
	}
	hdr := func(epoch int16, seq int32, delta int32) *batch.Header {
		return &batch.Header{ProducerID: 1, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: delta}
	}
	for _, tc := range []struct {
		name string
		e    *producerEntry
		h    *batch.Header
		want error
	}{
		{"unknown producer, any sequence", nil, hdr(0, 77, 0), nil},
		{"next in sequence", entry(2, 9), hdr(2, 10, 3), nil},
		{"gap", entry(2, 9), hdr(2, 11, 0), ErrOutOfOrderSequence},
		{"old sequence", entry(2, 9), hdr(2, 5, 0), ErrOutOfOrderSequence},
		{"wrap at MaxInt32", entry(2, math.MaxInt32), hdr(2, 0, 0), nil},
		{"fenced epoch", entry(2, 9), hdr(1, 10, 0), ErrInvalidProducerEpoch},
		{"new epoch from 0", entry(2, 9), hdr(3, 0, 0), nil},
		{"new epoch not from 0", entry(2, 9), hdr(3, 10, 0), ErrOutOfOrderSequence},
		{"same epoch, no batches yet", entry(2, -1), hdr(2, 0, 0), nil},
	} {
		if err := checkProducerBatch(tc.e, tc.h, nil, LeaderAppend{}); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// A batch whose last sequence wraps.
	h := hdr(0, math.MaxInt32-1, 3)
	if h.LastSequence() != 1 {
		t.Fatalf("last sequence %d", h.LastSequence())
	}
}

// segment.ms rolls on append and in EnforceRetention; a full index rolls too.
func TestRollByTimeAndIndex(t *testing.T) {
	fs := NewMemFS()
	clock := time.UnixMilli(1_000_000)
	cfg := DefaultConfig()
	cfg.SegmentMs = 1000
	cfg.RetentionMs = -1
	l, err := Open("/r/t-0", cfg, Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.AppendAsLeader(mkBatch(1, 1_000_000, -1, 0, 0), 0)
	l.AppendAsLeader(mkBatch(1, 1_000_500, -1, 0, 0), 0)
	if l.NumSegments() != 1 {
		t.Fatal("rolled too early")
	}
	l.AppendAsLeader(mkBatch(1, 1_001_001, -1, 0, 0), 0) // record time moved past segment.ms
	if l.NumSegments() != 2 {
		t.Fatalf("segments %d, want a roll by message timestamp", l.NumSegments())
	}
	clock = clock.Add(5 * time.Second)
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 3 {
		t.Fatalf("segments %d, want a roll by segment.ms in EnforceRetention", l.NumSegments())
	}
	cfg.SegmentMs = math.MaxInt64
	cfg.SegmentIndexBytes = 24 // two offset index entries
	cfg.IndexIntervalBytes = 0
	l.SetConfig(cfg)
	l.TruncateFullyAndStartAt(100) // new segment picks up the index size
	for i := 0; i < 5; i++ {
		l.AppendAsLeader(mkBatch(1, 1, -1, 0, 0), 0)
	}
	if l.NumSegments() < 2 {
		t.Fatalf("segments %d, want a roll by index fullness", l.NumSegments())
	}
}

func TestAppendAsFollower(t *testing.T) {
	l := openMem(t, NewMemFS(), DefaultConfig())
	defer l.Close()
	b := mkBatch(3, 10, 5, 0, 0)
	batch.SetBaseOffset(b, 0)
	batch.SetPartitionLeaderEpoch(b, 4)
	if res, err := l.AppendAsFollower(b); err != nil || res.FirstOffset != 0 || res.LastOffset != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := l.AppendAsFollower(b); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("re-append at old offset: %v", err)
	}
	// A gap (as compaction leaves) is accepted.
	b = mkBatch(3, 10, 5, 0, 3)
	batch.SetBaseOffset(b, 10)
	batch.SetPartitionLeaderEpoch(b, 6)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 13 || l.LatestEpoch() != 6 {
		t.Fatalf("log end %d epoch %d", l.LogEndOffset(), l.LatestEpoch())
	}
	if e, o := l.EndOffsetForEpoch(4); e != 4 || o != 10 {
		t.Fatalf("end offset for epoch 4: %d %d", e, o)
	}
	if e, l := l.EarliestOffset(), l.LatestOffset(); e.Offset != 0 || e.LeaderEpoch != 4 || l.Offset != 13 || l.LeaderEpoch != 6 {
		t.Fatalf("earliest %+v latest %+v", e, l)
	}
	rr, err := l.Read(5, 1<<20, math.MaxInt64, true)
	if err != nil || rr.Bytes != int64(len(b)) {
		t.Fatalf("read in gap: %+v %v", rr, err)
	}
	// The producer state was recorded: a leader retry of that batch is a duplicate.
	if res, err := l.AppendAsLeader(b, 6); err != nil || !res.Duplicate || res.FirstOffset != 10 {
		t.Fatalf("%+v %v", res, err)
	}
}

// gatedFS blocks the first Sync of a .log file until released.
type gatedFS struct {
	*MemFS
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

type gatedFile struct {
	File
	fs *gatedFS
}

func (g *gatedFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.MemFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return gatedFile{File: f, fs: g}, nil
}

func (f gatedFile) Sync() error {
	first := false
	f.fs.once.Do(func() { first = true })
	if first {
		close(f.fs.entered)
		<-f.fs.release
	}
	return f.File.Sync()
}

// An appender waiting for a group-commit fsync is released when a truncation removes its
// batch meanwhile (it must neither hang nor spin).
func TestGroupCommitWaiterSurvivesTruncation(t *testing.T) {
	g := &gatedFS{MemFS: NewMemFS(), entered: make(chan struct{}), release: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	l, err := Open("/g/t-0", cfg, Options{FS: g, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		_, err := l.AppendAsLeader(mkBatch(2, 1, -1, 0, 0), 0)
		done <- err
	}()
	<-g.entered // the appender is inside its fsync
	truncated := make(chan error, 1)
	go func() { truncated <- l.TruncateTo(0) }()
	// The truncation's own fsync is not gated; let the appender's fsync finish after it.
	if err := <-truncated; err != nil {
		t.Fatal(err)
	}
	close(g.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("appender still waiting after the truncation settled")
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end %d", l.LogEndOffset())
	}
}

// Idle producers expire in EnforceRetention; a returning one is then treated as unknown.
func TestProducerExpiration(t *testing.T) {
	clock := time.UnixMilli(10_000_000)
	cfg := DefaultConfig()
	cfg.ProducerIDExpirationMs = 1000
	cfg.RetentionMs = -1
	l, err := Open("/p/t-0", cfg, Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.AppendAsLeader(mkBatch(1, clock.UnixMilli(), 9, 0, 0), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(mkBatch(1, clock.UnixMilli(), 9, 0, 5), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("known producer with a gap: %v", err)
	}
	clock = clock.Add(2 * time.Second)
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(mkBatch(1, clock.UnixMilli(), 9, 0, 5), 0); err != nil {
		t.Fatalf("expired producer is unknown and may start anywhere: %v", err)
	}
}

// flush.messages=N fsyncs once N messages are unflushed; flush.ms fsyncs from EnforceRetention
// once that much time has passed; the default fsyncs only on roll, Flush and Close.
func TestFlushPolicies(t *testing.T) {
	for _, tc := range []struct {
		name          string
		flushMessages int64
		flushMs       int64
		appends       int   // batches of 2 records
		advanceMs     int64 // clock advance before EnforceRetention
		wantDurable   int64 // log end after a crash
	}{
		{"default keeps nothing unsynced", math.MaxInt64, math.MaxInt64, 5, 10_000, 0},
		{"flush.messages=4 syncs every 2nd append", 4, math.MaxInt64, 5, 0, 8},
		{"flush.messages=1 syncs every append", 1, math.MaxInt64, 5, 0, 10},
		{"flush.ms not yet due", math.MaxInt64, 1000, 5, 999, 0},
		{"flush.ms due", math.MaxInt64, 1000, 5, 1000, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewMemFS()
			clock := time.UnixMilli(5_000_000)
			cfg := DefaultConfig()
			cfg.FlushMessages, cfg.FlushMs, cfg.RetentionMs = tc.flushMessages, tc.flushMs, -1
			l, err := Open("/m/t-0", cfg, Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.appends; i++ {
				if _, err := l.AppendAsLeader(mkBatch(2, clock.UnixMilli(), -1, 0, 0), 0); err != nil {
					t.Fatal(err)
				}
			}
			clock = clock.Add(time.Duration(tc.advanceMs) * time.Millisecond)
			if err := l.EnforceRetention(); err != nil {
				t.Fatal(err)
			}
			fs.Restart()
			l2 := openMem(t, fs, cfg)
			defer l2.Close()
			if got := l2.LogEndOffset(); got != tc.wantDurable {
				t.Fatalf("after crash log end %d, want %d", got, tc.wantDurable)
			}
		})
	}
}

// Timestamp lookups find the exact record inside compressed batches when a decompressor is
// configured, and fall back to the batch's first offset otherwise.
func TestTimestampLookupCompressed(t *testing.T) {
	gunzip := func(codec int, b []byte) ([]byte, error) {
		if codec != 1 {
			return nil, errors.New("codec")
		}
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	}
	for _, tc := range []struct {
		name       string
		decompress func(int, []byte) ([]byte, error)
		want       int64
	}{{"with decompressor", gunzip, 3}, {"without", nil, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open("/c/t-0", DefaultConfig(), Options{FS: NewMemFS(), Logger: quietLogger, Decompress: tc.decompress})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.AppendAsLeader(gzipBatch(t, 5, 1000), 0); err != nil { // ts 1000..1004
				t.Fatal(err)
			}
			r, ok := l.OffsetForTimestamp(1003)
			if !ok || r.Offset != tc.want {
				t.Fatalf("offset for 1003: %+v %v, want %d", r, ok, tc.want)
			}
			m, ok := l.MaxTimestamp()
			if want := map[bool]int64{true: 4, false: 0}[tc.decompress != nil]; !ok || m.Offset != want || m.Timestamp != 1004 {
				t.Fatalf("max timestamp %+v, want offset %d", m, want)
			}
		})
	}
}

// Read agrees with a brute-force model over random offsets, byte limits and high watermarks.
func TestReadMatchesModel(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3000
	cfg.IndexIntervalBytes = 150
	l := openMem(t, NewMemFS(), cfg)
	defer l.Close()
	type mb struct{ base, last, size, seg int64 }
	var model []mb
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 300; i++ {
		n := 1 + rng.IntN(6)
		res, err := l.AppendAsLeader(mkBatch(n, int64(i), -1, 0, 0), 0)
		if err != nil {
			t.Fatal(err)
		}
		model = append(model, mb{base: res.FirstOffset, last: res.LastOffset, size: int64(res.Bytes)})
	}
	// Segment of each batch.
	l.mu.RLock()
	for i := range model {
		model[i].seg = l.mu.segments[l.segmentIndexFor(model[i].base)].baseOffset
	}
	l.mu.RUnlock()
	end := l.LogEndOffset()
	nonEmpty, multi := 0, 0
	for q := 0; q < 3000; q++ {
		offset := rng.Int64N(end + 1)
		maxBytes := rng.Int64N(1500)
		maxOffset := rng.Int64N(end + 50)
		minOne := rng.IntN(2) == 0
		rr, err := l.Read(offset, maxBytes, maxOffset, minOne)
		if err != nil {
			t.Fatal(err)
		}
		// Model.
		var wantBytes int64
		var wantFirst int64 = -1
		if offset < end && offset < maxOffset {
			i := 0
			for model[i].last < offset {
				i++
			}
			if model[i].base < maxOffset && (model[i].size <= maxBytes || minOne) {
				wantFirst = model[i].base
				wantBytes = model[i].size
				for j := i + 1; j < len(model) && model[j].seg == model[i].seg && model[j].base < maxOffset && wantBytes+model[j].size <= max(maxBytes, model[i].size); j++ {
					wantBytes += model[j].size
				}
			}
		}
		if rr.Bytes != wantBytes {
			t.Fatalf("Read(%d, %d, %d, %v) = %d bytes, want %d (first batch %d)", offset, maxBytes, maxOffset, minOne, rr.Bytes, wantBytes, wantFirst)
		}
		if wantBytes > 0 {
			nonEmpty++
			if wantFirst >= 0 && wantBytes > 200 {
				multi++
			}
			h := make([]byte, batch.HeaderSize)
			rr.Slices[0].File.ReadAt(h, rr.Slices[0].Position)
			if got, _ := batch.ParseHeader(h); got.BaseOffset != wantFirst {
				t.Fatalf("Read(%d, ...) starts at %d, want %d", offset, got.BaseOffset, wantFirst)
			}
		}
	}
	if nonEmpty < 1000 || multi < 500 {
		t.Fatalf("model exercised too little: %d non-empty reads, %d multi-batch", nonEmpty, multi)
	}
}

// A slice handed to a reader stays readable for file.delete.delay.ms after retention deleted
// its segment; then the files are closed.
func TestDeletedSegmentReadableForDelay(t *testing.T) {
	clock := time.UnixMilli(1_000_000)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 300
	cfg.FileDeleteDelayMs = 1000
	cfg.RetentionMs = -1
	l, err := Open("/d/t-0", cfg, Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 6; i++ {
		if _, err := l.AppendAsLeader(mkBatch(5, 1, -1, 0, 0), 0); err != nil {
			t.Fatal(err)
		}
	}
	rr, err := l.Read(0, 1000, math.MaxInt64, true)
	if err != nil || rr.Bytes == 0 {
		t.Fatal(rr, err)
	}
	if _, err := l.DeleteRecordsBefore(20); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 1000, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if _, err := WriteSlice(io.Discard, rr.Slices[0]); err != nil {
		t.Fatalf("slice of a deleted segment within the delay: %v", err)
	}
	clock = clock.Add(500 * time.Millisecond)
	l.EnforceRetention()
	if _, err := WriteSlice(io.Discard, rr.Slices[0]); err != nil {
		t.Fatalf("slice of a deleted segment within the delay: %v", err)
	}
	clock = clock.Add(time.Second)
	l.EnforceRetention()
	if _, err := WriteSlice(io.Discard, rr.Slices[0]); err == nil {
		t.Fatal("files of a deleted segment still open after the delay")
	}
}

// Reopening a cleanly closed log writes no checkpoint files.
func TestCleanReopenWritesNothing(t *testing.T) {
	fs := NewMemFS()
	l := openMem(t, fs, DefaultConfig())
	for i := 0; i < 3; i++ {
		l.AppendAsLeader(mkBatch(2, 1, 5, 0, int32(2*i)), int32(i))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fs.CrashAfter(1 << 30) // just counts operations
	l = openMem(t, fs, DefaultConfig())
	defer l.Close()
	if n := fs.Ops(); n != 0 {
		t.Fatalf("clean reopen did %d mutating file operations", n)
	}
	if l.LogEndOffset() != 6 || l.LatestEpoch() != 2 {
		t.Fatalf("log end %d epoch %d", l.LogEndOffset(), l.LatestEpoch())
	}
	// Closing an unchanged log only fsyncs; it rewrites no checkpoint or snapshot.
	before := fs.Ops()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fs.Ops() - before; n > 3 {
		t.Fatalf("closing an unchanged log did %d mutating operations", n)
	}
}

// Older trusted segments load their indexes lazily; a damaged one is detected then and the
// segment is read without it (correct, slower).
func TestLazyIndexDamaged(t *testing.T) {
	fs := NewMemFS()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 100
	l := openMem(t, fs, cfg)
	for i := 0; i < 60; i++ {
		l.AppendAsLeader(mkBatch(3, int64(i), -1, 0, 0), 0)
	}
	l.Close()
	path := "/m/t-0/00000000000000000000.index"
	data, _ := fs.ReadFileForTest(path)
	if len(data) < 24 {
		t.Fatalf("index too small: %d", len(data))
	}
	data[9] ^= 0x7f // second entry's relative offset: no longer increasing
	fs.WriteFileForTest(path, data)
	l = openMem(t, fs, cfg)
	defer l.Close()
	l.mu.RLock()
	first := l.mu.segments[0]
	l.mu.RUnlock()
	if first.lazy == nil {
		t.Fatal("older segment was not opened lazily")
	}
	for off := int64(0); off < 30; off++ {
		rr, err := l.Read(off, 1, math.MaxInt64, true)
		if err != nil || rr.Bytes == 0 {
			t.Fatalf("read %d: %+v %v", off, rr, err)
		}
		h := make([]byte, batch.HeaderSize)
		rr.Slices[0].File.ReadAt(h, rr.Slices[0].Position)
		if got, _ := batch.ParseHeader(h); got.BaseOffset > off || got.LastOffset() < off {
			t.Fatalf("read %d returned batch [%d..%d]", off, got.BaseOffset, got.LastOffset())
		}
	}
	if !first.lazy.damaged {
		t.Fatal("damaged index not detected")
	}
}

// syncGateFS holds every Sync of the named file until released.
type syncGateFS struct {
	*MemFS
	name    string
	release chan struct{}
}

type syncGateFile struct {
	File
	g *syncGateFS
}

func (g *syncGateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.MemFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, g.name) {
		return f, err
	}
	return syncGateFile{File: f, g: g}, nil
}

func (f syncGateFile) Sync() error {
	<-f.g.release
	return f.File.Sync()
}

// A crash while a rolled segment's background fsync is pending loses that segment's unsynced
// tail; recovery must cut the log there instead of leaving a hole before the next segment.
func TestCrashBeforeRollSyncLeavesNoHole(t *testing.T) {
	g := &syncGateFS{MemFS: NewMemFS(), name: "00000000000000000000.log", release: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 400
	l, err := Open("/h/t-0", cfg, Options{FS: g, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ { // rolls segment 0 once it holds ~400 bytes
		if _, err := l.AppendAsLeader(mkBatch(3, 1, -1, 0, 0), 0); err != nil {
			t.Fatal(err)
		}
	}
	if l.NumSegments() < 2 {
		t.Fatalf("no roll: %d segments", l.NumSegments())
	}
	g.MemFS.Restart() // crash: segment 0's fsync never ran, segment 1 exists
	close(g.release)
	l.Close()
	l2, err := Open("/h/t-0", cfg, Options{FS: g.MemFS, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	for off := l2.LogStartOffset(); off < l2.LogEndOffset(); {
		rr, err := l2.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil || rr.Bytes == 0 {
			t.Fatalf("hole at %d in [%d, %d): %+v %v", off, l2.LogStartOffset(), l2.LogEndOffset(), rr, err)
		}
		buf := make([]byte, rr.Bytes)
		rr.Slices[0].File.ReadAt(buf, rr.Slices[0].Position)
		for len(buf) > 0 {
			h, _ := batch.Check(buf)
			off = h.NextOffset()
			buf = buf[h.Size():]
		}
	}
}
