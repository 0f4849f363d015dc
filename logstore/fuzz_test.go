package logstore

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"sluice/internal/batch"
)

func fuzzSeedLog() []byte {
	var b []byte
	off := int64(0)
	for i := 0; i < 4; i++ {
		x := mkBatch(1+i, 1000+int64(i), 7, 0, int32(off))
		batch.SetBaseOffset(x, off)
		batch.SetPartitionLeaderEpoch(x, int32(i/2))
		off += int64(1 + i)
		b = append(b, x...)
	}
	return b
}

// FuzzValidateBatches: append validation never panics, and what it accepts is exactly a
// sequence of whole, CRC-valid batches.
func FuzzValidateBatches(f *testing.F) {
	f.Add(fuzzSeedLog(), true)
	f.Add(mkBatch(3, 5, -1, 0, 0), false)
	f.Add(fuzzSeedLog()[:100], true)
	f.Fuzz(func(t *testing.T, data []byte, leader bool) {
		// A batch the broker validated is read by its header only: never a panic, and what is
		// accepted is still whole batches that tile the append.
		if headers, err := validateBatches(data, leader, true, nil); err == nil {
			var total int64
			for _, h := range headers {
				if _, err := batch.CheckWithoutCRC(data[total:]); err != nil {
					t.Fatalf("validated path accepted a bad batch: %v", err)
				}
				total += h.Size()
			}
			if total != int64(len(data)) {
				t.Fatalf("validated path accepted %d of %d bytes", total, len(data))
			}
		}
		headers, err := validateBatches(data, leader, false, nil)
		if err != nil {
			for _, e := range []error{ErrCorruptBatch, ErrInvalidRecord, ErrUnsupportedMagic, ErrInvalidTimestamp} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("untyped error %v", err)
		}
		var total int64
		for _, h := range headers {
			if _, err := batch.Check(data[total:]); err != nil {
				t.Fatalf("accepted a bad batch: %v", err)
			}
			total += h.Size()
		}
		if total != int64(len(data)) {
			t.Fatalf("accepted %d of %d bytes", total, len(data))
		}
	})
}

// FuzzRecovery opens a partition directory whose segment, indexes and checkpoints hold
// arbitrary bytes. Open must not panic; when it succeeds, the log must be readable from start
// to end as valid, increasing batches, and must take an append.
func FuzzRecovery(f *testing.F) {
	seed := fuzzSeedLog()
	f.Add(seed, []byte{}, []byte{}, "0\n1\n0 0\n", uint8(0), false)
	f.Add(seed, []byte{0, 0, 0, 3, 0, 0, 0, 76}, []byte{0, 0, 0, 0, 0, 0, 3, 233, 0, 0, 0, 0}, "0\n2\n0 0\n1 3\n", uint8(10), false)
	f.Add(append(seed, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 200, 1), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{}, "garbage", uint8(3), false)
	f.Add(seed[:150], []byte{}, []byte{}, "", uint8(255), false)
	f.Add(seed, []byte{0, 0, 0, 3, 0, 0, 0, 76}, []byte{0, 0, 0, 0, 0, 0, 3, 233, 0, 0, 0, 0}, "0\n1\n0 0\n", uint8(200), true)
	f.Fuzz(func(t *testing.T, logBytes, indexBytes, timeIndexBytes []byte, epochs string, recoveryPoint uint8, twoSegments bool) {
		fs := NewMemFS()
		dir := "/f/t-0"
		fs.MkdirAll(dir, 0o755)
		fs.WriteFileForTest(dir+"/00000000000000000000.log", logBytes)
		fs.WriteFileForTest(dir+"/00000000000000000000.index", indexBytes)
		fs.WriteFileForTest(dir+"/00000000000000000000.timeindex", timeIndexBytes)
		fs.WriteFileForTest(dir+"/"+leaderEpochFile, []byte(epochs))
		fs.WriteFileForTest(dir+"/"+recoveryPointFile, encodeOffsetCheckpoint(dir, int64(recoveryPoint)))
		if twoSegments {
			// The fuzzed segment is then an older one: trusted (and lazily indexed) when the
			// recovery point is past 100, and its bytes are not checked batch by batch — as in
			// Kafka. Reads must still never panic or return untyped errors.
			b := mkBatch(2, 5000, -1, 0, 0)
			batch.SetBaseOffset(b, 100)
			fs.WriteFileForTest(dir+"/00000000000000000100.log", b)
			fs.WriteFileForTest(dir+"/00000000000000000100.index", nil)
			fs.WriteFileForTest(dir+"/00000000000000000100.timeindex", nil)
		}
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 50
		clock := time.UnixMilli(1_000_000)
		l, err := Open(dir, cfg, Options{FS: fs, Now: func() time.Time { return clock }, Logger: quietLogger})
		if err != nil {
			return
		}
		defer l.Close()
		if twoSegments {
			start, end := l.LogStartOffset(), l.LogEndOffset()
			step := max((end-start)/64, 1)
			for off := start; off <= end; off += step {
				rr, err := l.Read(off, 1<<20, 1<<62, off%2 == 0)
				if err != nil && !errors.Is(err, ErrCorruptBatch) {
					t.Fatalf("read %d: untyped error %v", off, err)
				}
				for _, s := range rr.Slices {
					WriteSlice(io.Discard, s)
				}
			}
			l.OffsetForTimestamp(1001)
			l.MaxTimestamp()
			l.TruncateTo(l.LogEndOffset() / 2)
			return
		}
		prevNext := int64(-1)
		for off := l.LogStartOffset(); off < l.LogEndOffset(); {
			rr, err := l.Read(off, 1<<20, 1<<62, true)
			if err != nil || rr.Bytes == 0 {
				t.Fatalf("read %d of [%d,%d): %+v %v", off, l.LogStartOffset(), l.LogEndOffset(), rr, err)
			}
			buf := make([]byte, rr.Bytes)
			if _, err := rr.Slices[0].File.ReadAt(buf, rr.Slices[0].Position); err != nil && err != io.EOF {
				t.Fatal(err)
			}
			for len(buf) > 0 {
				h, err := batch.Check(buf)
				if err != nil || h.BaseOffset < prevNext {
					t.Fatalf("recovered log holds a bad batch at %d: %v", off, err)
				}
				prevNext = h.NextOffset()
				off = prevNext
				buf = buf[h.Size():]
			}
		}
		l.OffsetForTimestamp(1001)
		l.MaxTimestamp()
		l.EndOffsetForEpoch(1)
		if _, err := l.AppendAsLeader(mkBatch(2, 2000, -1, 0, 0), l.LatestEpoch()+1); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}

// FuzzSnapshot: the producer snapshot decoder never panics and round-trips what it accepts.
func FuzzSnapshot(f *testing.F) {
	p := newProducerState()
	for _, h := range []batch.Header{
		{ProducerID: 1, ProducerEpoch: 0, BaseSequence: 0, LastOffsetDelta: 2, BaseOffset: 0, MaxTimestamp: 5},
		{ProducerID: 2, ProducerEpoch: 3, BaseSequence: 9, LastOffsetDelta: 0, BaseOffset: 3, MaxTimestamp: 6},
	} {
		p.replay(&h, nil)
	}
	f.Add(p.encodeSnapshot(4))
	f.Add(newProducerState().encodeSnapshot(0))
	f.Add([]byte("SLPS"))
	f.Fuzz(func(t *testing.T, data []byte) {
		off, p, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		if len(p.producers) == 1 || len(p.producers) == 0 {
			// Map order is random: only small states re-encode to the same bytes.
			if again := p.encodeSnapshot(off); !bytes.Equal(again, data) {
				t.Fatalf("snapshot does not round-trip")
			}
		}
	})
}

// FuzzCheckpoints: the text checkpoint parsers never panic.
func FuzzCheckpoints(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n3 100\n"))
	f.Add([]byte("0\n1\ntopic 0 42\n"))
	f.Add([]byte("1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := decodeEpochCache(data); err == nil {
			again, err := decodeEpochCache(c.encode())
			if err != nil || len(again.entries) != len(c.entries) {
				t.Fatalf("epoch cache does not round-trip: %v", err)
			}
			c.endOffsetFor(2, 1000)
			c.truncateFromStart(50)
			c.truncateFromEnd(60)
		}
		decodeOffsetCheckpoint(data)
	})
}
