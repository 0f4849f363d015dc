package logstore

import (
	"fmt"
	"math"
	"testing"
	"time"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// readRecordsLenient is readRecords for logs holding arbitrary (CRC-valid) batches: ok is false
// when some batch's records do not parse.
func readRecordsLenient(l *Log) (recs []logRecord, ok bool) {
	l.mu.RLock()
	segs := l.mu.segments
	l.mu.RUnlock()
	for _, s := range segs {
		sc := scanner{f: s.log, size: s.size}
		for pos := int64(0); pos < s.size; {
			b, h, err := sc.next(pos, true)
			if err != nil {
				return recs, false
			}
			pos += h.Size()
			raw, err := batchRecords(&h, b)
			if err != nil {
				return recs, false
			}
			rs, err := parseCleanRecords(raw, h.RecordCount, nil)
			if err != nil {
				return recs, false
			}
			for _, r := range rs {
				v := tombstone
				if !r.nullValue {
					v = string(rawValue(r.raw))
				}
				recs = append(recs, logRecord{offset: h.BaseOffset + r.offsetDelta, key: string(r.key), value: v})
			}
		}
	}
	return recs, true
}

func rawValue(raw []byte) []byte {
	p := raw
	next := func() int64 {
		v, n := varint(p)
		if n <= 0 {
			return -1
		}
		p = p[n:]
		return v
	}
	next()
	p = p[1:]
	next()
	next()
	if k := next(); k > 0 && int(k) <= len(p) {
		p = p[k:]
	}
	n := next()
	if n < 0 || int(n) > len(p) {
		return nil
	}
	return p[:n]
}

// cleanFuzzLog opens a log whose first segment holds data (cut by recovery at its first
// invalid batch) and whose active segment starts far above it.
func cleanFuzzLog(t *testing.T, data []byte) (*Log, *MemFS) {
	fs := NewMemFS()
	fs.MkdirAll(cleanDir, 0o755)
	fs.WriteFileForTest(fileName(cleanDir, 0, logSuffix), data)
	fs.WriteFileForTest(fileName(cleanDir, 1<<30, logSuffix), nil)
	cfg := compactConfig()
	cfg.SegmentBytes = math.MaxInt32
	cfg.DeleteRetentionMs = math.MaxInt64 / 2 // tombstones stay: their survival is checked too
	clock := time.UnixMilli(1_700_000_000_000)
	l, err := Open(cleanDir, cfg, Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l, fs
}

// checkCleanKeepsSurvivors cleans l and checks that every record that must survive (the
// newest record of each key) is still there at its offset with its value; when Clean fails,
// that the log is unchanged.
func checkCleanKeepsSurvivors(t *testing.T, l *Log) {
	before, ok := readRecordsLenient(l)
	res, err := l.Clean(cleanOpts())
	after, ok2 := readRecordsLenient(l)
	if !ok || err != nil {
		if len(after) != len(before) || ok2 != ok {
			t.Fatalf("a failed clean (%v) changed the log: %d records before, %d after", err, len(before), len(after))
		}
		return
	}
	if !ok2 {
		t.Fatal("the cleaned log does not parse")
	}
	newest := map[string]logRecord{}
	for _, r := range before {
		newest[r.key] = r
	}
	have := map[logRecord]bool{}
	for _, r := range after {
		have[r] = true
	}
	for k, r := range newest {
		if k == "" {
			continue // keyless records are invalid in a compacted log and dropped
		}
		if !have[r] {
			t.Fatalf("newest record of key %q at %d lost (clean %+v)", k, r.offset, res)
		}
	}
	if len(after) > len(before) {
		t.Fatalf("cleaning added records: %d → %d", len(before), len(after))
	}
}

// FuzzCleanArbitrarySegment: whatever bytes a segment holds, recovery plus cleaning never
// panics and never drops the newest record of a key.
func FuzzCleanArbitrarySegment(f *testing.F) {
	seed := append(keyedBatch(1, -1, 0, "a", "1", "b", "2"), keyedBatch(2, -1, 0, "a", "3", "", "x", "b", tombstone)...)
	batch.SetBaseOffset(seed[len(keyedBatch(1, -1, 0, "a", "1", "b", "2")):], 2)
	f.Add(seed)
	f.Add(compressedBatch(f, keyedBatch(1, 7, 0, "k", "v", "k", "w"), compress.LZ4))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		l, _ := cleanFuzzLog(t, data)
		defer l.Close()
		checkCleanKeepsSurvivors(t, l)
	})
}

// FuzzCleanKeepsNewest drives valid logs from a script: each byte pair is a record (key from
// the first byte's low bits, a tombstone or a value, a batch end, a codec), so the fuzzer
// explores key patterns, tombstones and codecs rather than CRCs.
func FuzzCleanKeepsNewest(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 0x81, 0x42})
	f.Add([]byte{0xff, 0x00, 0x13, 0x37, 0x21, 0x88, 0x05, 0x05})
	f.Fuzz(func(t *testing.T, script []byte) {
		var data []byte
		var pairs []string
		next := int64(0)
		codec := 0
		flush := func() {
			if len(pairs) == 0 {
				return
			}
			b := keyedBatch(1000+next, -1, 0, pairs...)
			if codec != 0 {
				b = compressedBatch(t, b, codec)
			}
			batch.SetBaseOffset(b, next)
			next += int64(len(pairs) / 2)
			data = append(data, b...)
			pairs = pairs[:0]
		}
		for i := 0; i+1 < len(script) && i < 400; i += 2 {
			op, arg := script[i], script[i+1]
			key := fmt.Sprintf("k%d", op&0x7)
			value := fmt.Sprintf("v%d", arg)
			if arg&0x3 == 0 {
				value = tombstone
			}
			pairs = append(pairs, key, value)
			if op&0x80 != 0 {
				flush()
				codec = int(arg>>5) % 5
			}
		}
		flush()
		l, _ := cleanFuzzLog(t, data)
		defer l.Close()
		checkCleanKeepsSurvivors(t, l)
	})
}
