package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// tombstone marks a null value in keyedBatch's pairs.
const tombstone = "\x00tombstone"

// keyedBatch builds an uncompressed batch of records key=value (pairs of strings; value
// tombstone is a null value, key "" a null key) with timestamps ts, ts+1, ...
func keyedBatch(ts int64, pid int64, seq int32, pairs ...string) []byte {
	recs := make([]batch.Record, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		r := batch.Record{TimestampDelta: int64(i / 2)}
		if pairs[i] != "" {
			r.Key = []byte(pairs[i])
		}
		if pairs[i+1] != tombstone {
			r.Value = []byte(pairs[i+1])
		}
		recs = append(recs, r)
	}
	epoch := int16(0)
	if pid < 0 {
		epoch, seq = -1, -1
	}
	return batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts + int64(len(recs)) - 1,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
}

// compressedBatch re-encodes b's records section with codec.
func compressedBatch(t testing.TB, b []byte, codec int) []byte {
	t.Helper()
	body, err := compress.Compress(codec, nil, b[batch.HeaderSize:], 0)
	if err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte(nil), b[:batch.HeaderSize]...), body...)
	batch.SetLength(out, int32(len(out)-batch.LogOverhead))
	batch.SetCompression(out, codec)
	putCRC(out)
	return out
}

func putCRC(b []byte) {
	c := batch.CRC(b)
	b[17], b[18], b[19], b[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
}

type logRecord struct {
	offset     int64
	key, value string
}

// readRecords reads every record from the log start to the log end, as a consumer reading
// from the beginning would, checking batches and that offsets only grow. emptyBatches counts
// batches without records.
func readRecords(t testing.TB, l *Log) (recs []logRecord, emptyBatches int) {
	t.Helper()
	off := l.LogStartOffset()
	end := l.LogEndOffset()
	last := int64(-1)
	for off < end {
		res, err := l.Read(off, 1<<30, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(res.Slices) == 0 {
			break
		}
		for _, s := range res.Slices {
			data := make([]byte, s.Length)
			if _, err := s.File.ReadAt(data, s.Position); err != nil {
				t.Fatalf("read slice: %v", err)
			}
			for len(data) > 0 {
				h, err := batch.Check(data)
				if err != nil {
					t.Fatalf("bad batch at %d: %v", off, err)
				}
				raw, err := batchRecords(&h, data)
				if err != nil {
					t.Fatal(err)
				}
				rs, err := parseCleanRecords(raw, h.RecordCount, nil)
				if err != nil {
					t.Fatalf("batch %d: %v", h.BaseOffset, err)
				}
				if len(rs) == 0 {
					emptyBatches++
				}
				for _, r := range rs {
					o := h.BaseOffset + r.offsetDelta
					if o <= last || o > h.LastOffset() {
						t.Fatalf("record offset %d after %d in batch [%d,%d]", o, last, h.BaseOffset, h.LastOffset())
					}
					last = o
					v := tombstone
					if !r.nullValue {
						v = recordValue(t, r.raw)
					}
					recs = append(recs, logRecord{offset: o, key: string(r.key), value: v})
				}
				off = h.NextOffset()
				data = data[h.Size():]
			}
		}
	}
	return recs, emptyBatches
}

// recordValue extracts the value of a record from its raw bytes (length varint + body).
func recordValue(t testing.TB, raw []byte) string {
	t.Helper()
	p := raw
	skipVarint := func() int64 {
		v, n := varint(p)
		if n <= 0 {
			t.Fatal("bad varint")
		}
		p = p[n:]
		return v
	}
	skipVarint() // length
	p = p[1:]    // attributes
	skipVarint() // timestamp delta
	skipVarint() // offset delta
	if k := skipVarint(); k > 0 {
		p = p[k:]
	}
	n := skipVarint()
	return string(p[:n])
}

func varint(b []byte) (int64, int) {
	var ux uint64
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			x := int64(ux >> 1)
			if ux&1 != 0 {
				x = ^x
			}
			return x, i + 1
		}
	}
	return 0, 0
}

func compactConfig() Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 100
	cfg.RetentionMs = -1
	cfg.FileDeleteDelayMs = 0
	cfg.Compact = true
	cfg.DeleteRetentionMs = 60_000
	cfg.MinCleanableDirtyRatio = 0.5
	return cfg
}

const cleanDir = "/clean/topic-0"

// fillKeys appends rounds × keys records (batches of perBatch records), key k%keys with value
// "k<key>-v<round>", advancing the clock a millisecond per batch. It returns the newest value
// and offset per key.
func fillKeys(t testing.TB, l *Log, clock *time.Time, keys, rounds, perBatch int) map[string]logRecord {
	t.Helper()
	newest := map[string]logRecord{}
	var pairs []string
	n := 0
	flush := func() {
		if len(pairs) == 0 {
			return
		}
		*clock = clock.Add(time.Millisecond)
		res, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), -1, 0, pairs...), 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(pairs); i += 2 {
			newest[pairs[i]] = logRecord{offset: res.FirstOffset + int64(i/2), key: pairs[i], value: pairs[i+1]}
		}
		pairs = pairs[:0]
	}
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			pairs = append(pairs, fmt.Sprintf("key-%03d", k), fmt.Sprintf("k%03d-v%d", k, r))
			if n++; n%perBatch == 0 {
				flush()
			}
		}
	}
	flush()
	return newest
}

// rollPastKeys appends records under the key "filler" until the log rolls, so that every
// record of the other keys lies in cleanable segments, then flushes (the recovery point
// reaches the log end).
func rollPastKeys(t testing.TB, l *Log, clock *time.Time) {
	t.Helper()
	n := l.NumSegments()
	for i := 0; l.NumSegments() == n; i++ {
		*clock = clock.Add(time.Millisecond)
		if _, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), -1, 0, "filler", fmt.Sprint(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
}

func cleanOpts() CleanOptions { return CleanOptions{MapBytes: 1 << 20, UpTo: math.MaxInt64} }

// checkNewestOnly asserts that the log holds exactly the newest record of every key at its
// original offset (plus, in the active segment from activeBase on, whatever was appended).
func checkNewestOnly(t testing.TB, l *Log, newest map[string]logRecord, activeBase int64) {
	t.Helper()
	recs, _ := readRecords(t, l)
	seen := map[string]bool{}
	for _, r := range recs {
		want, ok := newest[r.key]
		if r.key == "filler" {
			continue
		}
		if !ok {
			t.Fatalf("unexpected key %q at %d", r.key, r.offset)
		}
		if r.offset >= activeBase {
			continue
		}
		if r.offset != want.offset || r.value != want.value {
			t.Fatalf("key %q: record at %d (%q) survived; newest is at %d (%q)", r.key, r.offset, r.value, want.offset, want.value)
		}
		seen[r.key] = true
	}
	for k, want := range newest {
		if want.offset < activeBase && !seen[k] {
			t.Fatalf("key %q: newest record at %d is gone", k, want.offset)
		}
		if want.offset >= activeBase {
			found := false
			for _, r := range recs {
				found = found || r.offset == want.offset && r.value == want.value
			}
			if !found {
				t.Fatalf("key %q: newest record at %d in the active segment is gone", k, want.offset)
			}
		}
	}
}

func activeBytes(t testing.TB, fs *MemFS, l *Log) (int64, []byte) {
	l.mu.RLock()
	base := l.active().baseOffset
	l.mu.RUnlock()
	b, _ := fs.ReadFileForTest(fileName(cleanDir, base, logSuffix))
	return base, b
}

func TestCleanKeepsNewestValuePerKeyAtItsOffset(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	newest := fillKeys(t, l, &clock, 10, 30, 3)
	rollPastKeys(t, l, &clock)
	end, sizeBefore, segsBefore := l.LogEndOffset(), l.Size(), l.NumSegments()
	ratio, _, ok := l.CleanableState(math.MaxInt64)
	if !ok || ratio != 1 {
		t.Fatalf("dirty ratio %v ok=%v before the first clean, want 1", ratio, ok)
	}
	activeBase, before := activeBytes(t, fs, l)
	res, err := l.Clean(cleanOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cleaned || res.RecordsRemoved == 0 {
		t.Fatalf("nothing cleaned: %+v", res)
	}
	if _, after := activeBytes(t, fs, l); !bytes.Equal(before, after) {
		t.Fatal("the active segment changed")
	}
	if l.LogEndOffset() != end || l.Size() >= sizeBefore {
		t.Fatalf("log end %d (want %d), size %d (was %d)", l.LogEndOffset(), end, l.Size(), sizeBefore)
	}
	// 10 keys survive: most segments are left with nothing and deleted.
	if n := l.NumSegments(); n > 5 || n >= segsBefore {
		t.Fatalf("%d segments after the clean, %d before", n, segsBefore)
	}
	if l.LogStartOffset() != 0 {
		t.Fatalf("log start moved to %d", l.LogStartOffset())
	}
	checkNewestOnly(t, l, newest, activeBase)
	if _, _, ok := l.CleanableState(math.MaxInt64); ok {
		t.Fatal("a cleaned log still has a dirty part")
	}
	// A reopen trusts the cleaned segments and reads the same.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	checkNewestOnly(t, l, newest, activeBase)
	// Offsets lookups by every original offset still land on the right batch.
	for o := l.LogStartOffset(); o < activeBase; o++ {
		res, err := l.Read(o, 1, math.MaxInt64, true)
		if err != nil || len(res.Slices) == 0 {
			t.Fatalf("read at %d: %v %+v", o, err, res)
		}
		h, err := readHeaderAt(res.Slices[0].File, res.Slices[0].Position, res.Slices[0].Position+res.Slices[0].Length, make([]byte, batch.HeaderSize))
		if err != nil || h.LastOffset() < o {
			t.Fatalf("read at %d returned batch [%d,%d]: %v", o, h.BaseOffset, h.LastOffset(), err)
		}
	}
}

func TestCleanIgnoresLogsWithoutCompactAndRespectsUpTo(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	cfg := compactConfig()
	cfg.Compact = false
	l, err := Open(cleanDir, cfg, Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fillKeys(t, l, &clock, 5, 30, 3)
	l.Flush()
	if res, err := l.Clean(cleanOpts()); err != nil || res.Cleaned {
		t.Fatalf("cleaned a delete-policy log: %+v %v", res, err)
	}
	l.SetConfig(compactConfig())
	opts := cleanOpts()
	opts.UpTo = 0 // the high watermark: nothing is committed
	if res, err := l.Clean(opts); err != nil || res.Cleaned {
		t.Fatalf("cleaned above the high watermark: %+v %v", res, err)
	}
}

func TestCleanRemovesTombstonesOnlyAfterDeleteRetention(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fillKeys(t, l, &clock, 4, 10, 2)
	if _, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), -1, 0, "key-000", tombstone), 0); err != nil {
		t.Fatal(err)
	}
	fillKeys(t, l, &clock, 0, 0, 1)
	roll := func() {
		// Filler under other keys, so the tombstone's segment is not the active one.
		for i := 0; i < 20; i++ {
			clock = clock.Add(time.Millisecond)
			if _, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), -1, 0, "filler", fmt.Sprint(i)), 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	roll()
	if _, err := l.Clean(cleanOpts()); err != nil {
		t.Fatal(err)
	}
	hasTombstone := func() bool {
		recs, _ := readRecords(t, l)
		for _, r := range recs {
			if r.key == "key-000" {
				if r.value != tombstone {
					t.Fatalf("key-000 has value %q after its tombstone", r.value)
				}
				return true
			}
		}
		return false
	}
	if !hasTombstone() {
		t.Fatal("a fresh tombstone was removed")
	}
	clock = clock.Add(61 * time.Second) // past delete.retention.ms
	roll()
	if _, err := l.Clean(cleanOpts()); err != nil {
		t.Fatal(err)
	}
	if hasTombstone() {
		t.Fatal("a tombstone older than delete.retention.ms survived cleaning")
	}
}

func TestCleanInPassesWithASmallKeyMap(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	newest := fillKeys(t, l, &clock, 60, 6, 2)
	rollPastKeys(t, l, &clock)
	activeBase, _ := activeBytes(t, fs, l)
	opts := cleanOpts()
	opts.MapBytes = 20 * offsetMapSlotBytes // 18 keys: a pass cannot hold all 60
	passes := 0
	for ; passes < 100; passes++ {
		res, err := l.Clean(opts)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Cleaned {
			break
		}
	}
	if passes < 3 {
		t.Fatalf("cleaned in %d passes; a map of 18 keys needs several for 60 keys", passes)
	}
	checkNewestOnly(t, l, newest, activeBase)
}

func TestCleanCompressedBatchesKeepTheirCodec(t *testing.T) {
	for _, codec := range []int{compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		t.Run(compress.Name(codec), func(t *testing.T) {
			clock := time.UnixMilli(1_700_000_000_000)
			fs := NewMemFS()
			l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			newest := map[string]logRecord{}
			for i := 0; i < 40; i++ {
				clock = clock.Add(time.Millisecond)
				a, b := fmt.Sprintf("key-%d", i%3), fmt.Sprintf("key-%d", (i+1)%3)
				va, vb := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
				res, err := l.AppendAsLeader(compressedBatch(t, keyedBatch(clock.UnixMilli(), -1, 0, a, va, b, vb), codec), 0)
				if err != nil {
					t.Fatal(err)
				}
				newest[a] = logRecord{offset: res.FirstOffset, key: a, value: va}
				newest[b] = logRecord{offset: res.FirstOffset + 1, key: b, value: vb}
			}
			fillEnd := l.LogEndOffset()
			rollPastKeys(t, l, &clock)
			activeBase, _ := activeBytes(t, fs, l)
			if _, err := l.Clean(cleanOpts()); err != nil {
				t.Fatal(err)
			}
			checkNewestOnly(t, l, newest, activeBase)
			l.mu.RLock()
			segs := l.mu.segments
			l.mu.RUnlock()
			buf := make([]byte, batch.HeaderSize)
			for _, s := range segs {
				for pos := int64(0); pos < s.size; {
					h, err := readHeaderAt(s.log, pos, s.size, buf)
					if err != nil {
						t.Fatal(err)
					}
					if h.BaseOffset < fillEnd && h.RecordCount > 0 && h.Compression() != codec {
						t.Fatalf("batch %d has codec %d, want %d", h.BaseOffset, h.Compression(), codec)
					}
					pos += h.Size()
				}
			}
		})
	}
}

// TestCleanKeepsTheLastBatchOfAProducer: a producer's newest batch whose records were all
// superseded stays as an empty batch, so that after a restart the producer's next sequence is
// accepted (not OUT_OF_ORDER_SEQUENCE_NUMBER) and a retry is still a duplicate.
func TestCleanKeepsTheLastBatchOfAProducer(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	opts := Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger}
	l, err := Open(cleanDir, compactConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	idem := keyedBatch(clock.UnixMilli(), 7, 0, "key-a", "from-producer-7")
	res, err := l.AppendAsLeader(idem, 0)
	if err != nil {
		t.Fatal(err)
	}
	producerOffset := res.FirstOffset
	fillKeys(t, l, &clock, 1, 0, 1)
	newest := fillKeys(t, l, &clock, 3, 20, 1) // key-000.. and key-a below
	clock = clock.Add(time.Millisecond)
	if _, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), -1, 0, "key-a", "newer"), 0); err != nil {
		t.Fatal(err)
	}
	fillKeys(t, l, &clock, 3, 20, 1)
	l.Flush()
	if _, err := l.Clean(cleanOpts()); err != nil {
		t.Fatal(err)
	}
	_ = newest
	recs, empty := readRecords(t, l)
	if empty != 1 {
		t.Fatalf("%d empty batches, want the producer's one", empty)
	}
	for _, r := range recs {
		if r.offset == producerOffset {
			t.Fatalf("the superseded record at %d survived", producerOffset)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Lose the snapshots: the producer state must come from the log itself.
	names, _ := fs.ReadDir(cleanDir)
	for _, n := range names {
		if _, ok := parseOffsetName(n, snapshotSuffix); ok {
			fs.Remove(cleanDir + "/" + n)
		}
	}
	l, err = Open(cleanDir, compactConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	retry := append([]byte(nil), idem...)
	if res, err := l.AppendAsLeader(retry, 0); err != nil || !res.Duplicate || res.FirstOffset != producerOffset {
		t.Fatalf("retry of the producer's batch: %+v %v, want a duplicate at %d", res, err, producerOffset)
	}
	if _, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), 7, 1, "key-b", "next"), 0); err != nil {
		t.Fatalf("the producer's next sequence: %v", err)
	}
}

func TestCleanHonoursMinCompactionLag(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	cfg := compactConfig()
	cfg.MinCompactionLagMs = 10_000
	l, err := Open(cleanDir, cfg, Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fillKeys(t, l, &clock, 5, 30, 3)
	l.Flush()
	if res, err := l.Clean(cleanOpts()); err != nil || res.Cleaned {
		t.Fatalf("cleaned records younger than min.compaction.lag.ms: %+v %v", res, err)
	}
	clock = clock.Add(11 * time.Second)
	if res, err := l.Clean(cleanOpts()); err != nil || !res.Cleaned {
		t.Fatalf("did not clean once min.compaction.lag.ms passed: %+v %v", res, err)
	}
}

func TestCleanableStateOverdueByMaxCompactionLag(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	cfg := compactConfig()
	cfg.MaxCompactionLagMs = 5_000
	l, err := Open(cleanDir, cfg, Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fillKeys(t, l, &clock, 5, 30, 3)
	l.Flush()
	if _, overdue, ok := l.CleanableState(math.MaxInt64); !ok || overdue {
		t.Fatalf("overdue=%v ok=%v right after the appends", overdue, ok)
	}
	clock = clock.Add(6 * time.Second)
	if _, overdue, ok := l.CleanableState(math.MaxInt64); !ok || !overdue {
		t.Fatalf("overdue=%v ok=%v after max.compaction.lag.ms", overdue, ok)
	}
}

// TestCleanAbortsAfterATruncation: a truncation while the cleaner works makes it swap nothing
// in (its map may name offsets that are gone).
func TestCleanAbortsAfterATruncation(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fillKeys(t, l, &clock, 5, 30, 3)
	l.Flush()
	truncated := false
	opts := cleanOpts()
	opts.Throttle = func(int) error {
		if !truncated {
			truncated = true
			if err := l.TruncateTo(l.LogEndOffset() - 1); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	res, err := l.Clean(opts)
	if err != nil || res.Cleaned {
		t.Fatalf("cleaned across a truncation: %+v %v", res, err)
	}
	names, _ := fs.ReadDir(cleanDir)
	for _, n := range names {
		if bytes.HasSuffix([]byte(n), []byte(cleanedSuffix)) {
			t.Fatalf("leftover %s", n)
		}
	}
	if res, err := l.Clean(cleanOpts()); err != nil || !res.Cleaned {
		t.Fatalf("next clean: %+v %v", res, err)
	}
}

// cleanCrashWorkload fills a compacted log, flushes it and cleans it; it returns the newest
// record per key and the active segment's base.
func cleanCrashWorkload(fs *MemFS, crashAt int) (map[string]logRecord, int64, error) {
	clock := time.UnixMilli(1_700_000_000_000)
	l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		return nil, 0, err
	}
	defer l.Close()
	newest := fillKeys(fatalTB{}, l, &clock, 6, 20, 3)
	rollPastKeys(fatalTB{}, l, &clock)
	l.mu.RLock()
	activeBase := l.active().baseOffset
	l.mu.RUnlock()
	fs.CrashAfter(crashAt)
	_, err = l.Clean(cleanOpts())
	return newest, activeBase, err
}

// fatalTB lets fillKeys run outside a test's goroutine checks: it panics on failure.
type fatalTB struct{ testing.TB }

func (fatalTB) Helper()                   {}
func (fatalTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (fatalTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// cleanSegmentFiles returns the .log bytes of every segment in the directory.
func cleanSegmentFiles(fs *MemFS) map[int64][]byte {
	out := map[int64][]byte{}
	names, _ := fs.ReadDir(cleanDir)
	for _, n := range names {
		if b, ok := parseOffsetName(n, logSuffix); ok {
			out[b], _ = fs.ReadFileForTest(cleanDir + "/" + n)
		}
	}
	return out
}

// TestCleanCrashAtEveryOperation crashes the cleaner at every mutating file operation (each
// write, fsync, create, rename, remove and directory sync of the clean and its swaps) and
// checks that the log reopens with every segment either wholly old or wholly cleaned, every
// key's newest record present, nothing left over, and a second clean finishing the work.
func TestCleanCrashAtEveryOperation(t *testing.T) {
	ref := NewMemFS()
	if _, _, err := cleanCrashWorkload(ref, 0); err != nil {
		t.Fatal(err)
	}
	total := ref.Ops()
	cleaned := cleanSegmentFiles(ref)
	orig := NewMemFS()
	cleanCrashWorkload(orig, 1)
	orig.Restart()
	old := cleanSegmentFiles(orig)
	if total < 20 {
		t.Fatalf("clean did only %d operations", total)
	}
	t.Logf("clean did %d mutating operations", total)
	for k := 1; k <= 2*(total+1); k++ {
		torn := k > total+1
		what := fmt.Sprintf("crash at op %d/%d torn=%v", (k-1)%(total+1)+1, total, torn)
		fs := NewMemFS()
		fs.SetTornWrites(torn, uint64(k))
		newest, activeBase, err := cleanCrashWorkload(fs, (k-1)%(total+1)+1)
		if err != nil && !errors.Is(err, ErrCrashed) && !errors.Is(err, ErrClosed) {
			t.Fatalf("%s: %v", what, err)
		}
		fs.Restart()
		// A committed swap (a durable <base>.log.swap) must be completed by recovery.
		committed := map[int64]bool{}
		names, _ := fs.ReadDir(cleanDir)
		for _, n := range names {
			if b, ok := parseOffsetName(n, logSuffix+swapSuffix); ok {
				committed[b] = true
			}
		}
		clock := time.UnixMilli(1_700_000_000_000)
		l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
		if err != nil {
			t.Fatalf("%s: reopen: %v", what, err)
		}
		for base, data := range cleanSegmentFiles(fs) {
			if !bytes.Equal(data, old[base]) && !bytes.Equal(data, cleaned[base]) {
				t.Fatalf("%s: segment %d is neither the old nor the cleaned one", what, base)
			}
			if committed[base] && !bytes.Equal(data, cleaned[base]) {
				t.Fatalf("%s: segment %d: the committed swap was not completed", what, base)
			}
		}
		names, _ = fs.ReadDir(cleanDir)
		for _, n := range names {
			if bytes.HasSuffix([]byte(n), []byte(cleanedSuffix)) || bytes.HasSuffix([]byte(n), []byte(swapSuffix)) {
				t.Fatalf("%s: leftover %s", what, n)
			}
		}
		recs, _ := readRecords(t, l)
		have := map[logRecord]bool{}
		for _, r := range recs {
			have[r] = true
		}
		for _, want := range newest {
			if !have[want] {
				t.Fatalf("%s: newest record of %q at %d lost", what, want.key, want.offset)
			}
		}
		if _, err := l.Clean(cleanOpts()); err != nil {
			t.Fatalf("%s: clean after recovery: %v", what, err)
		}
		checkNewestOnly(t, l, newest, activeBase)
		l.Close()
	}
}

// TestCleanerCheckpointSurvivesReopen: the first dirty offset is checkpointed, so a reopened
// log does not count its cleaned part as dirty again.
func TestCleanerCheckpointSurvivesReopen(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	opts := Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger}
	l, err := Open(cleanDir, compactConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	fillKeys(t, l, &clock, 10, 30, 3)
	rollPastKeys(t, l, &clock)
	res, err := l.Clean(cleanOpts())
	if err != nil || !res.Cleaned {
		t.Fatalf("%+v %v", res, err)
	}
	l.Close()
	l, err = Open(cleanDir, compactConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, _, ok := l.CleanableState(math.MaxInt64); ok {
		t.Fatal("the cleaned part is dirty again after a reopen")
	}
	if res, err := l.Clean(cleanOpts()); err != nil || res.Cleaned {
		t.Fatalf("cleaned again after a reopen: %+v %v", res, err)
	}
}

// TestCleanedLogReplicatesToAFollower: the batches of a cleaned log (offset gaps, rebuilt and
// empty batches) are what a follower fetches; AppendAsFollower takes them and the follower
// reads the same records at the same offsets.
func TestCleanedLogReplicatesToAFollower(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	opts := Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger}
	l, err := Open(cleanDir, compactConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), 7, 0, "key-000", "idempotent"), 0); err != nil {
		t.Fatal(err)
	}
	fillKeys(t, l, &clock, 10, 30, 3)
	rollPastKeys(t, l, &clock)
	if res, err := l.Clean(cleanOpts()); err != nil || !res.Cleaned {
		t.Fatalf("%+v %v", res, err)
	}
	want, empty := readRecords(t, l)
	if empty == 0 {
		t.Fatal("no empty producer batch to replicate")
	}
	follower, err := Open("/follower/topic-0", compactConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil || len(res.Slices) == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		for _, s := range res.Slices {
			data := make([]byte, s.Length)
			if _, err := s.File.ReadAt(data, s.Position); err != nil {
				t.Fatal(err)
			}
			if _, err := follower.AppendAsFollower(data); err != nil {
				t.Fatalf("follower append at %d: %v", off, err)
			}
			for rest := data; len(rest) > 0; {
				h, _ := batch.ParseHeader(rest)
				off = h.NextOffset()
				rest = rest[h.Size():]
			}
		}
	}
	got, _ := readRecords(t, follower)
	if fmt.Sprint(got) != fmt.Sprint(want) || follower.LogEndOffset() != l.LogEndOffset() {
		t.Fatalf("follower differs: %d records to %d, log end %d, leader's %d", len(got), len(want), follower.LogEndOffset(), l.LogEndOffset())
	}
}

// TestCleanRemovesExpiredTombstonesOfAQuietLog: a log with no new dirty data is cleaned again
// once a tombstone it kept has outlived delete.retention.ms, and only the tombstone goes.
func TestCleanRemovesExpiredTombstonesOfAQuietLog(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	l, err := Open(cleanDir, compactConfig(), Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	newest := fillKeys(t, l, &clock, 4, 10, 2)
	clock = clock.Add(time.Millisecond)
	if _, err := l.AppendAsLeader(keyedBatch(clock.UnixMilli(), -1, 0, "key-000", tombstone), 0); err != nil {
		t.Fatal(err)
	}
	delete(newest, "key-000")
	rollPastKeys(t, l, &clock)
	m := NewCleanerMap(1<<16, 0)
	opts := cleanOpts()
	opts.Map = m // reused across cleans, as a broker's cleaner thread does
	if res, err := l.Clean(opts); err != nil || !res.Cleaned {
		t.Fatalf("%+v %v", res, err)
	}
	if _, due, ok := l.CleanableState(math.MaxInt64); ok || due {
		t.Fatalf("due=%v ok=%v right after the clean", due, ok)
	}
	clock = clock.Add(61 * time.Second)
	if _, due, ok := l.CleanableState(math.MaxInt64); !ok || !due {
		t.Fatalf("due=%v ok=%v once the tombstone outlived delete.retention.ms", due, ok)
	}
	if res, err := l.Clean(opts); err != nil || !res.Cleaned || res.RecordsRemoved != 1 {
		t.Fatalf("tombstone clean: %+v %v", res, err)
	}
	recs, _ := readRecords(t, l)
	for _, r := range recs {
		if r.key == "key-000" {
			t.Fatalf("key-000 still has %q at %d", r.value, r.offset)
		}
	}
	l.mu.RLock()
	activeBase := l.active().baseOffset
	l.mu.RUnlock()
	checkNewestOnly(t, l, newest, activeBase)
	if _, due, ok := l.CleanableState(math.MaxInt64); ok || due {
		t.Fatalf("due=%v ok=%v after the tombstone went", due, ok)
	}
}

// An aborted transaction's records neither supersede older values of their keys nor survive
// a clean; a committed transaction's records are compacted as any others, and markers stay.
func TestCleanDropsAbortedTransactions(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	opts := Options{FS: NewMemFS(), Now: func() time.Time { return clock }, Logger: quietLogger}
	l, err := Open(cleanDir, compactConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendTxn := func(pid int64, seq int32, pairs ...string) {
		t.Helper()
		clock = clock.Add(time.Millisecond)
		b := keyedBatch(clock.UnixMilli(), pid, seq, pairs...)
		setAttributes(b, batch.AttrTransactional)
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		if _, _, err := l.AppendAsLeaderWith(MarkerBatch(pid, 0, 0, commit, clock.UnixMilli()), 0, LeaderAppend{Coordinator: true}); err != nil {
			t.Fatal(err)
		}
	}
	fillKeys(t, l, &clock, 2, 1, 1) // key-000=k000-v0, key-001=k001-v0
	appendTxn(5, 0, "key-000", "aborted-0", "key-002", "aborted-2")
	marker(5, false)
	appendTxn(6, 0, "key-001", "committed-1")
	marker(6, true)
	appendTxn(5, 2, "key-003", "aborted-3") // the producer's last batch, aborted
	marker(5, false)
	rollPastKeys(t, l, &clock)
	if _, err := l.Clean(cleanOpts()); err != nil {
		t.Fatal(err)
	}
	recs, empty := readRecords(t, l)
	got := map[string]string{}
	for _, r := range recs {
		got[r.key] = r.value
	}
	want := map[string]string{"key-000": "k000-v0", "key-001": "committed-1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q after the clean, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"key-002", "key-003"} {
		if v, ok := got[k]; ok {
			t.Errorf("aborted record %s=%q survived the clean", k, v)
		}
	}
	if empty != 1 {
		t.Errorf("%d empty batches, want producer 5's last (aborted) batch kept empty", empty)
	}
	if n := len(l.AbortedTransactions(0, 1<<62)); n != 2 {
		t.Errorf("%d aborted transactions indexed after the clean, want 2", n)
	}
}

// TestCleanerMapGrowsWithinItsBudget: the key map starts small and grows as keys arrive, never
// past its budget, holding as many keys as a full-size map would (slots × load factor), and
// every key keeps its newest offset across the growths and a reset.
func TestCleanerMapGrowsWithinItsBudget(t *testing.T) {
	const budgetSlots = 10_000
	m := NewCleanerMap(budgetSlots*offsetMapSlotBytes, 0.9)
	if len(m.offsets) >= budgetSlots {
		t.Fatalf("a fresh map has %d slots: it should start small", len(m.offsets))
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%05d", i) }
	for round := 0; round < 2; round++ {
		for i := 0; i < m.capacity; i++ {
			if !m.put(key(i), int64(i)) || !m.put(key(i), int64(i+1_000_000)) {
				t.Fatalf("round %d: key %d of %d refused", round, i, m.capacity)
			}
		}
		if m.capacity != 9_000 {
			t.Fatalf("capacity %d, want 9000 (10000 slots at 0.9)", m.capacity)
		}
		if m.put(key(m.capacity), 1) {
			t.Fatalf("round %d: a key beyond the capacity was accepted", round)
		}
		if len(m.offsets) > budgetSlots || len(m.hashes) != len(m.offsets) {
			t.Fatalf("round %d: %d slots, budget %d", round, len(m.offsets), budgetSlots)
		}
		for i := 0; i < m.capacity; i++ {
			if got := m.get(key(i)); got != int64(i+1_000_000) {
				t.Fatalf("round %d: key %d maps to %d", round, i, got)
			}
		}
		if m.get(key(m.capacity)) != -1 {
			t.Fatalf("round %d: the refused key is in the map", round)
		}
		m.reset()
		if m.get(key(0)) != -1 {
			t.Fatalf("round %d: reset left key 0 in", round)
		}
	}
}

// TestCleanCreatesNoFilesForEmptiedSegments: a segment of which nothing stays is deleted
// without a cleaned copy ever being created for it; only the segments swapped in (the first,
// kept even when empty, and those with surviving records) get .cleaned files, and none is
// left over.
func TestCleanCreatesNoFilesForEmptiedSegments(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	fs := NewMemFS()
	l, err := Open(cleanDir, compactConfig(), Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	newest := fillKeys(t, l, &clock, 10, 30, 3)
	rollPastKeys(t, l, &clock)
	activeBase, _ := activeBytes(t, fs, l)
	segsBefore := l.NumSegments()
	var mu sync.Mutex
	opened := map[string]bool{}
	fs.InjectError(func(op, path string) error {
		if op == "open" && strings.HasSuffix(path, cleanedSuffix) {
			mu.Lock()
			opened[path] = true
			mu.Unlock()
		}
		return nil
	})
	res, err := l.Clean(cleanOpts())
	fs.InjectError(nil)
	if err != nil || !res.Cleaned {
		t.Fatalf("%+v %v", res, err)
	}
	kept := l.NumSegments() - 1 // the closed segments left, each swapped in
	if kept >= segsBefore-1 {
		t.Fatalf("no segment was emptied: %d closed segments before, %d after", segsBefore-1, kept)
	}
	if len(opened) != 3*kept {
		t.Fatalf("%d cleaned files opened for %d segments swapped in (of %d cleaned): %v", len(opened), kept, res.Segments, opened)
	}
	names, _ := fs.ReadDir(cleanDir)
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
			t.Fatalf("leftover %s", n)
		}
	}
	checkNewestOnly(t, l, newest, activeBase)
}
