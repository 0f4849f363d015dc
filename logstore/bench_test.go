package logstore

import (
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"sluice/internal/batch"
)

// benchBatch builds an uncompressed batch of about size bytes (records of ~1 KiB).
func benchBatch(size int) []byte {
	var recs []batch.Record
	total := batch.HeaderSize
	for total < size {
		v := make([]byte, min(1000, max(size-total-10, 1)))
		for i := range v {
			v[i] = byte('a' + i%26)
		}
		recs = append(recs, batch.Record{Value: v})
		total += len(v) + 8
	}
	ts := time.Now().UnixMilli()
	return batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
}

// BenchmarkAppend compares appending 16 KiB batches to a log (validation, CRC, offsets,
// indexes; default flush policy: no fsync per append) with writing the same bytes
// sequentially to a plain file on the same disk. Disk write-back makes throughput drift within
// a run, so each benchmark op does one 16 KiB write of each kind, alternating, and the two are
// timed separately. Goal: append-MB/s >= 0.8 × raw-MB/s.
func BenchmarkAppend(b *testing.B) {
	data := benchBatch(16 << 10)
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cfg := DefaultConfig() // Kafka's defaults: 1 GiB segments, rolled (and fsynced) as they fill
	cfg.RetentionBytes = 2 << 30
	l, err := Open(filepath.Join(dir, "t-0"), cfg, Options{Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var rawTime, logTime, chunkRaw, chunkLog time.Duration
	var chunkRatios []float64
	pos := int64(0)
	b.SetBytes(int64(2 * len(data)))
	for i := 0; i < b.N; i++ {
		// Alternate which goes first: the kernel throttles whichever write crosses the dirty
		// limit, and that must not always be the same one.
		for k := 0; k < 2; k++ {
			t0 := time.Now()
			if (i+k)%2 == 0 {
				if _, err := f.WriteAt(data, pos); err != nil {
					b.Fatal(err)
				}
				rawTime += time.Since(t0)
			} else {
				if _, err := l.AppendAsLeader(data, 0); err != nil {
					b.Fatal(err)
				}
				logTime += time.Since(t0)
			}
		}
		// Per 16 MiB chunk ratios: a stall caused by another process's I/O hits one chunk
		// of one side; the median ignores it.
		if (i+1)%1024 == 0 {
			chunkRatios = append(chunkRatios, (rawTime-chunkRaw).Seconds()/(logTime-chunkLog).Seconds())
			chunkRaw, chunkLog = rawTime, logTime
		}
		if pos += int64(len(data)); pos >= 1<<30 {
			// Keep the disk footprint bounded for both (not timed).
			f.Truncate(0)
			pos = 0
			l.EnforceRetention()
		}
	}
	mb := float64(b.N) * float64(len(data)) / 1e6
	b.ReportMetric(mb/rawTime.Seconds(), "raw-MB/s")
	b.ReportMetric(mb/logTime.Seconds(), "append-MB/s")
	b.ReportMetric(rawTime.Seconds()/logTime.Seconds(), "append/raw")
	if len(chunkRatios) > 0 {
		sort.Float64s(chunkRatios)
		b.ReportMetric(chunkRatios[len(chunkRatios)/2], "append/raw-median-16MiB")
	}
}

// BenchmarkRead reads a 64 MiB log front to back in 1 MiB fetches (Read, then one pread of the
// returned slice into a buffer; the broker sends slices with sendfile instead).
func BenchmarkRead(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "t-0"), DefaultConfig(), Options{Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := benchBatch(16 << 10)
	for l.Size() < 64<<20 {
		if _, err := l.AppendAsLeader(data, 0); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 2<<20)
	b.SetBytes(1 << 20)
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		if off >= l.LogEndOffset() {
			off = 0
		}
		rr, err := l.Read(off, 1<<20, 1<<62, true)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range rr.Slices {
			if _, err := s.File.ReadAt(buf[:s.Length], s.Position); err != nil {
				b.Fatal(err)
			}
		}
		// Next fetch starts after the last batch returned.
		last := make([]byte, batch.HeaderSize)
		s := rr.Slices[len(rr.Slices)-1]
		p := s.Position
		for p < s.Position+s.Length {
			s.File.ReadAt(last, p)
			h, _ := batch.ParseHeader(last)
			p += h.Size()
			off = h.NextOffset()
		}
	}
}

// BenchmarkGroupCommit measures appends/s of 1 KiB batches with flush.messages=1 (every append
// waits for an fsync that covers it) with 1 and with 16 concurrent appenders. fsync latency on
// shared disks drifts by several times within seconds, so each benchmark op runs one round of
// both (1 appender: 32 appends; 16 appenders: 16×32 appends) back to back on the same log, and
// the metrics compare the two. Goal: speedup (16 vs 1) >= 8.
func BenchmarkGroupCommit(b *testing.B) {
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	l, err := Open(filepath.Join(b.TempDir(), "t-0"), cfg, Options{Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const perAppender = 32
	run := func(appenders int) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for g := 0; g < appenders; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data := benchBatch(1 << 10)
				for i := 0; i < perAppender; i++ {
					if _, err := l.AppendAsLeader(data, 0); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	var one, sixteen time.Duration
	var syncs16 uint64
	for i := 0; i < b.N; i++ {
		one += run(1)
		l.flush.mu.Lock()
		before := l.flush.syncs
		l.flush.mu.Unlock()
		sixteen += run(16)
		l.flush.mu.Lock()
		syncs16 += l.flush.syncs - before
		l.flush.mu.Unlock()
	}
	rate1 := float64(b.N*perAppender) / one.Seconds()
	rate16 := float64(b.N*perAppender*16) / sixteen.Seconds()
	b.ReportMetric(rate1, "appends/s-1")
	b.ReportMetric(rate16, "appends/s-16")
	b.ReportMetric(rate16/rate1, "speedup")
	b.ReportMetric(float64(b.N*perAppender*16)/float64(max(syncs16, 1)), "appends/fsync-16")
}

// BenchmarkAppendAcrossRolls appends 1 KiB batches of 100 idempotent producers (leader
// appends, default flush policy) to a log of 4 MiB segments, so a roll happens every ~4000
// appends (64 MiB with the drop-behind window), and reports the longest appends: a roll's work done with the append waiting (index
// writes, file creation, fsyncs of checkpoints and the producer snapshot) shows up in
// p99.99-us and max-us, not in ns/op; roll-p50-us and roll-max-us are the median and longest
// append that rolled (the first roll, which also does a created log's deferred fsyncs, left out).
func BenchmarkAppendAcrossRolls(b *testing.B) {
	b.Run("window=0", func(b *testing.B) { benchAppendAcrossRolls(b, 4<<20, 0) })
	// The broker's drop-behind (a cache window, here 8 MiB) in 64 MiB segments: writeback is
	// started every 4 MiB appended.
	b.Run("window=8MiB", func(b *testing.B) { benchAppendAcrossRolls(b, 64<<20, 8<<20) })
}

func benchAppendAcrossRolls(b *testing.B, segmentBytes, window int64) {
	dir := b.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.RetentionBytes = 256 << 20
	cfg.FileDeleteDelayMs = 0
	l, err := Open(filepath.Join(dir, "t-0"), cfg, Options{Logger: quietLogger, CacheWindowBytes: window})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const producers = 100
	value := make([]byte, 1000)
	seqs := make([]int32, producers)
	lat := make([]time.Duration, 0, b.N)
	var rolls []time.Duration // appends that rolled, but the log's first (it also does a created log's deferred fsyncs)
	b.SetBytes(1024)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pid := int64(i % producers)
		ts := time.Now().UnixMilli()
		data := batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: 1000 + pid, ProducerEpoch: 0, BaseSequence: seqs[pid]},
			[]batch.Record{{Value: value}})
		seqs[pid]++
		segs := l.NumSegments()
		t0 := time.Now()
		if _, err := l.AppendAsLeader(data, 0); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		lat = append(lat, d)
		if l.NumSegments() != segs && i > 5000 {
			rolls = append(rolls, d)
		}
		if i%8192 == 8191 {
			b.StopTimer()
			if err := l.EnforceRetention(); err != nil { // bound the disk footprint
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if n := len(lat); n > 0 {
		b.ReportMetric(float64(lat[n*9999/10000].Microseconds()), "p99.99-us")
		b.ReportMetric(float64(lat[n-1].Microseconds()), "max-us")
	}
	if n := len(rolls); n > 0 {
		sort.Slice(rolls, func(i, j int) bool { return rolls[i] < rolls[j] })
		b.ReportMetric(float64(rolls[n/2].Microseconds()), "roll-p50-us")
		b.ReportMetric(float64(rolls[n-1].Microseconds()), "roll-max-us")
	}
}
