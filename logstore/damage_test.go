package logstore

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"sluice/internal/batch"
)

// recordingHandler keeps every log record so a test can assert what an operator would read.
type recordingHandler struct {
	mu    sync.Mutex
	lines []string
}

func (h *recordingHandler) Enabled(_ context.Context, _ slog.Level) bool { return true }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, sb.String())
	h.mu.Unlock()
	return nil
}

func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) find(level slog.Level, substrs ...string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
next:
	for _, l := range h.lines {
		if !strings.HasPrefix(l, level.String()+" ") {
			continue
		}
		for _, s := range substrs {
			if !strings.Contains(l, s) {
				continue next
			}
		}
		return l
	}
	return ""
}

// segmentedLog writes n batches of 3 records into a log whose segments roll every few batches
// and closes it cleanly; it returns the first offset of every batch.
func segmentedLog(t *testing.T, fs *MemFS, dir string, n int) []int64 {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 100
	l, err := Open(dir, cfg, Options{FS: fs, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for i := 0; i < n; i++ {
		info, err := l.AppendAsLeader(mkBatch(3, int64(1000+i), -1, 0, 0), 0)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, info.FirstOffset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return offsets
}

// segmentFiles lists the .log files of dir, sorted.
func segmentFiles(t *testing.T, fs *MemFS, dir string) []string {
	t.Helper()
	names, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n, logSuffix) {
			logs = append(logs, n)
		}
	}
	sort.Strings(logs)
	return logs
}

// consumeBatchBases reads the log from its start to its end the way a consumer does (each fetch
// continues at the next offset after the last batch returned) and returns each batch's base
// offset.
func consumeBatchBases(t *testing.T, l *Log) []int64 {
	t.Helper()
	var bases []int64
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		rr, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil || rr.Bytes == 0 {
			t.Fatalf("read %d of [%d, %d): %+v %v", off, l.LogStartOffset(), l.LogEndOffset(), rr, err)
		}
		buf := make([]byte, rr.Bytes)
		if _, err := rr.Slices[0].File.ReadAt(buf, rr.Slices[0].Position); err != nil {
			t.Fatal(err)
		}
		for len(buf) > 0 {
			h, err := batch.Check(buf)
			if err != nil {
				t.Fatalf("bad batch read at %d: %v", off, err)
			}
			bases = append(bases, h.BaseOffset)
			off = h.NextOffset()
			buf = buf[h.Size():]
		}
	}
	return bases
}

// A flushed segment in the middle of the log that lost its tail (truncated while the broker
// was stopped) costs only its own missing bytes: every later segment stays, every batch
// outside the damage is read back, the damage is logged at ERROR with the file and byte
// range, and a read in the resulting gap returns the next batch after it (offsets jump
// forward, as in Kafka).
func TestDamagedMiddleSegmentKeepsLaterSegments(t *testing.T) {
	fs := NewMemFS()
	dir := "/d/t-0"
	written := segmentedLog(t, fs, dir, 80)
	before := segmentFiles(t, fs, dir)
	if len(before) < 8 {
		t.Fatalf("want >= 8 segments, got %d", len(before))
	}
	victim := filepath.Join(dir, before[3])
	data, _ := fs.ReadFileForTest(victim)
	cut := int64(len(data) / 2)
	fs.WriteFileForTest(victim, data[:cut])
	victimBase, _ := parseOffsetName(before[3], logSuffix)
	nextBase, _ := parseOffsetName(before[4], logSuffix)

	rec := &recordingHandler{}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1000
	l, err := Open(dir, cfg, Options{FS: fs, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if after := segmentFiles(t, fs, dir); !equalStrings(after, before) {
		t.Fatalf("segments changed by recovery:\n before %v\n after  %v", before, after)
	}
	got := map[int64]bool{}
	for _, b := range consumeBatchBases(t, l) {
		got[b] = true
	}
	lost := 0
	for _, off := range written {
		inDamage := off >= victimBase && off < nextBase
		if !got[off] {
			if !inDamage {
				t.Errorf("batch at %d (outside the damaged segment) lost", off)
			}
			lost++
		}
	}
	if lost == 0 {
		t.Fatalf("the damage cost nothing: test did not damage a batch")
	}
	if line := rec.find(slog.LevelError, victim, fmt.Sprintf("%d)", cut)); line == "" {
		t.Fatalf("no ERROR naming %s and the damaged byte range ending at %d; logged:\n%s", victim, cut, strings.Join(rec.lines, "\n"))
	}
	// A fetch inside the gap gets the first batch after it.
	var gapOffset int64 = -1
	for off := victimBase; off < nextBase; off++ {
		if !got[off] && containsOffset(written, off) {
			gapOffset = off
			break
		}
	}
	rr, err := l.Read(gapOffset, 1<<20, math.MaxInt64, true)
	if err != nil || rr.Bytes == 0 {
		t.Fatalf("read in gap at %d: %+v %v", gapOffset, rr, err)
	}
	hdr := make([]byte, batch.HeaderSize)
	rr.Slices[0].File.ReadAt(hdr, rr.Slices[0].Position)
	h, _ := batch.ParseHeader(hdr)
	if h.BaseOffset != nextBase {
		t.Fatalf("read in gap at %d returned batch %d, want the next segment's first batch %d", gapOffset, h.BaseOffset, nextBase)
	}
	// The log still takes appends at its old end.
	end := l.LogEndOffset()
	info, err := l.AppendAsLeader(mkBatch(1, 5000, -1, 0, 0), 0)
	if err != nil || info.FirstOffset != end {
		t.Fatalf("append after recovery: %+v %v (log end was %d)", info, err, end)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

func containsOffset(offs []int64, o int64) bool {
	for _, x := range offs {
		if x == o {
			return true
		}
	}
	return false
}

// A log-start-offset-checkpoint beyond the log end of a cleanly closed log can only be a
// damaged file; it used to be clamped to the log end, which deleted every segment but the
// last. Now it is ignored (and logged): every segment stays.
func TestLogStartCheckpointBeyondEndKeepsSegments(t *testing.T) {
	fs := NewMemFS()
	dir := "/d/t-0"
	segmentedLog(t, fs, dir, 40)
	before := segmentFiles(t, fs, dir)
	fs.WriteFileForTest(filepath.Join(dir, logStartOffsetFile), encodeOffsetCheckpoint(dir, 1<<40))
	rec := &recordingHandler{}
	l, err := Open(dir, DefaultConfig(), Options{FS: fs, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if after := segmentFiles(t, fs, dir); !equalStrings(after, before) {
		t.Fatalf("segments removed:\n before %v\n after  %v", before, after)
	}
	if l.LogStartOffset() != 0 {
		t.Fatalf("log start %d, want 0", l.LogStartOffset())
	}
	if rec.find(slog.LevelError, logStartOffsetFile) == "" {
		t.Fatalf("the damaged checkpoint was not logged at ERROR: %v", rec.lines)
	}
}

// A power loss (unsynced writes dropped) after a flushed segment in the middle was damaged:
// the flushed batches outside the damage all survive — the unflushed tail follows Kafka's rule
// (cut at the first bad batch, later unflushed segments deleted) without reaching below the
// recovery point.
func TestCrashAfterDamagedFlushedSegment(t *testing.T) {
	fs := NewMemFS()
	dir := "/c/t-0"
	flushed := segmentedLog(t, fs, dir, 60) // closed cleanly: everything below the recovery point
	segs := segmentFiles(t, fs, dir)
	victim := filepath.Join(dir, segs[1])
	data, _ := fs.ReadFileForTest(victim)
	fs.WriteFileForTest(victim, data[:len(data)/3])
	fs.Restart() // the damage is on disk
	victimBase, _ := parseOffsetName(segs[1], logSuffix)
	nextBase, _ := parseOffsetName(segs[2], logSuffix)

	cfg := DefaultConfig()
	cfg.SegmentBytes = 1000
	l, err := Open(dir, cfg, Options{FS: fs, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ { // more segments, never flushed
		if _, err := l.AppendAsLeader(mkBatch(3, int64(5000+i), -1, 0, 0), 0); err != nil {
			t.Fatal(err)
		}
	}
	fs.Restart() // power loss: unsynced writes are gone
	l.Close()

	l2, err := Open(dir, cfg, Options{FS: fs, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	got := map[int64]bool{}
	for _, b := range consumeBatchBases(t, l2) {
		got[b] = true
	}
	for _, off := range flushed {
		if !got[off] && (off < victimBase || off >= nextBase) {
			t.Fatalf("flushed batch %d outside the damaged segment [%d, %d) lost", off, victimBase, nextBase)
		}
	}
	if l2.LogEndOffset() < flushed[len(flushed)-1]+3 {
		t.Fatalf("log end %d below the flushed end %d", l2.LogEndOffset(), flushed[len(flushed)-1]+3)
	}
}
