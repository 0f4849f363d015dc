package logstore

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"sluice/internal/compress"
)

// benchCleanLog writes a compacted log of about 16 MiB in 1 MiB segments on the OS file
// system: 1000 keys, 200-byte random alphanumeric values, 10 records a batch, codec as given; every key is
// written ~8 times, so cleaning drops ~7/8 of the records.
func benchCleanLog(b *testing.B, dir string, codec int) *Log {
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 4096
	clock := time.UnixMilli(1_700_000_000_000)
	l, err := Open(dir, cfg, Options{Now: func() time.Time { return clock }, Logger: quietLogger, FileCache: NewFileCache(1000)})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "abcdefghijklmnopqrstuvwxyz0123456789" // about 5 bits of entropy per byte
	for i := 0; l.Size() < 16<<20; i++ {
		var pairs []string
		for r := 0; r < 10; r++ {
			v := make([]byte, 200)
			for j := range v {
				v[j] = alphabet[rng.IntN(len(alphabet))]
			}
			pairs = append(pairs, fmt.Sprintf("key-%04d", (i*10+r)%1000), string(v))
		}
		data := keyedBatch(clock.UnixMilli(), -1, 0, pairs...)
		if codec != 0 {
			data = compressedBatch(b, data, codec)
		}
		if _, err := l.AppendAsLeader(data, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkClean measures cleaning throughput (bytes of segments cleaned per second), to
// compare with BenchmarkCleanBaselineCopy, a plain copy of the same segment files with fsync.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []int{compress.None, compress.LZ4, compress.Zstd} {
		b.Run(compress.Name(codec), func(b *testing.B) {
			var total int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				l := benchCleanLog(b, dir, codec)
				b.StartTimer()
				res, err := l.Clean(CleanOptions{MapBytes: 16 << 20, UpTo: math.MaxInt64})
				if err != nil || !res.Cleaned {
					b.Fatalf("%+v %v", res, err)
				}
				total += res.BytesRead
				b.StopTimer()
				l.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds()/(1<<20), "MB/s")
		})
	}
}

// BenchmarkCleanBaselineCopy copies every segment but the active one to a new file and fsyncs
// it: the I/O floor of a clean.
func BenchmarkCleanBaselineCopy(b *testing.B) {
	var total int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
		l := benchCleanLog(b, dir, compress.None)
		l.mu.RLock()
		segs := l.mu.segments[:len(l.mu.segments)-1]
		l.mu.RUnlock()
		b.StartTimer()
		for _, s := range segs {
			src, err := os.Open(fileName(dir, s.baseOffset, logSuffix))
			if err != nil {
				b.Fatal(err)
			}
			dst, err := os.Create(fileName(dir, s.baseOffset, logSuffix+cleanedSuffix))
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(dst, src)
			if err != nil {
				b.Fatal(err)
			}
			total += n
			dst.Sync()
			dst.Close()
			src.Close()
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds()/(1<<20), "MB/s")
}

// BenchmarkCleanerMapMemoryPerKey reports the heap the cleaner's key map holds per distinct
// key once it has 200k keys (live-B/key; its budget is large enough for them all), and what
// it allocated on the way as it grew (alloc-B/key). Kafka's SkimpyOffsetMap spends 24 bytes a
// slot at a 0.9 load factor, about 27 bytes a key, allocated whole up front.
func BenchmarkCleanerMapMemoryPerKey(b *testing.B) {
	const keys = 200_000
	var live, allocated float64
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := NewCleanerMap(64<<20, 0)
		key := make([]byte, 0, 16)
		for k := range keys {
			key = fmt.Appendf(key[:0], "key-%08d", k)
			if !m.put(key, int64(k)) {
				b.Fatalf("the map took only %d keys", k)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		live = float64(after.HeapAlloc-before.HeapAlloc) / keys
		allocated = float64(after.TotalAlloc-before.TotalAlloc) / keys
		runtime.KeepAlive(m)
	}
	b.ReportMetric(live, "live-B/key")
	b.ReportMetric(allocated, "alloc-B/key")
}
