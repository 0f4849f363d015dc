package batch

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func sample() []byte {
	return Build(Header{BaseOffset: 10, PartitionLeaderEpoch: 3, BaseTimestamp: 1000, MaxTimestamp: 1002,
		ProducerID: 7, ProducerEpoch: 1, BaseSequence: 5},
		[]Record{{Value: []byte("a")}, {TimestampDelta: 1, Key: []byte("k"), Value: nil}, {TimestampDelta: 2, Value: []byte("ccc")}})
}

func TestCheckValid(t *testing.T) {
	b := sample()
	h, err := Check(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 10 || h.LastOffset() != 12 || h.NextOffset() != 13 || h.RecordCount != 3 ||
		h.PartitionLeaderEpoch != 3 || h.Size() != int64(len(b)) || h.LastSequence() != 7 || !h.HasProducerID() {
		t.Fatalf("%+v", h)
	}
	if err := CheckCount(&h); err != nil {
		t.Fatal(err)
	}
	// baseOffset and partitionLeaderEpoch are outside the CRC.
	SetBaseOffset(b, 99)
	SetPartitionLeaderEpoch(b, 8)
	if h, err := Check(b); err != nil || h.BaseOffset != 99 || h.PartitionLeaderEpoch != 8 {
		t.Fatalf("%+v %v", h, err)
	}
	var deltas []int32
	walked, err := ForEachRecord(b, func(r RecordInfo) bool { deltas = append(deltas, r.OffsetDelta); return true })
	if !walked || err != nil || len(deltas) != 3 || deltas[2] != 2 {
		t.Fatalf("%v %v %v", walked, err, deltas)
	}
}

func TestCheckRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func([]byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:10] }, ErrTruncated},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, ErrTruncated},
		{"crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrCorrupt},
		{"magic", func(b []byte) []byte { b[16] = 1; return b }, ErrMagic},
		{"tiny length", func(b []byte) []byte { b[11] = 5; b[10], b[9], b[8] = 0, 0, 0; return b }, ErrCorrupt},
		{"negative length", func(b []byte) []byte { b[8] = 0xff; return b }, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.mod(sample()))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestIncrementSequence(t *testing.T) {
	for _, tc := range []struct{ seq, delta, want int32 }{
		{0, 0, 0}, {5, 3, 8}, {math.MaxInt32, 1, 0}, {math.MaxInt32 - 1, 3, 1},
	} {
		if got := IncrementSequence(tc.seq, tc.delta); got != tc.want {
			t.Errorf("IncrementSequence(%d, %d) = %d, want %d", tc.seq, tc.delta, got, tc.want)
		}
	}
}

// FuzzBatch checks that header parsing, CRC checking and record walking never panic or read
// out of bounds, and that an accepted batch is self-consistent.
func FuzzBatch(f *testing.F) {
	f.Add(sample())
	f.Add(append(sample(), sample()...))
	f.Add(sample()[:40])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		if size, ok := PeekSize(b); ok && size < LogOverhead {
			t.Fatalf("PeekSize %d", size)
		}
		h, err := Check(b)
		if err == nil {
			if h.Size() > int64(len(b)) || h.Size() < HeaderSize || h.LastOffset() < h.BaseOffset {
				t.Fatalf("accepted inconsistent batch %+v of %d bytes", h, len(b))
			}
			CheckCount(&h)
			ForEachRecord(b[:h.Size()], func(RecordInfo) bool { return true })
		}
		ParseHeader(b)
		ForEachRecord(b, nil)
		if !bytes.Equal(b, orig) {
			t.Fatal("input modified")
		}
	})
}
