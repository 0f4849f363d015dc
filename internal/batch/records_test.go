package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// walkSequential is the check validateBatches made before CheckRecordsSequential: WalkRecords
// with a callback that stops at the first offset delta that is not its index. It is the
// reference CheckRecordsSequential must agree with.
func walkSequential(rest []byte, count int32) (int32, error) {
	next := int32(0)
	err := WalkRecords(rest, count, func(r RecordInfo) bool {
		if r.OffsetDelta != next {
			return false
		}
		next++
		return true
	})
	return next, err
}

// rawRecord encodes one record body with explicit fields, so tests can write what Build won't.
func rawRecord(offsetDelta int64, key, value []byte, headers [][2][]byte) []byte {
	rec := []byte{0}
	rec = binary.AppendVarint(rec, 3)
	rec = binary.AppendVarint(rec, offsetDelta)
	rec = appendVarBytes(rec, key)
	rec = appendVarBytes(rec, value)
	rec = binary.AppendVarint(rec, int64(len(headers)))
	for _, h := range headers {
		rec = appendVarBytes(rec, h[0])
		rec = appendVarBytes(rec, h[1])
	}
	return rec
}

func frame(recs ...[]byte) []byte {
	var out []byte
	for _, r := range recs {
		out = binary.AppendVarint(out, int64(len(r)))
		out = append(out, r...)
	}
	return out
}

func TestCheckRecordsSequential(t *testing.T) {
	hdr := [][2][]byte{{[]byte("h"), []byte("v")}, {[]byte("n"), nil}}
	big := make([]byte, 300)
	for _, tc := range []struct {
		name       string
		rest       []byte
		count      int32
		wantWalked int32
		wantErr    error
	}{
		{"empty", nil, 0, 0, nil},
		{"three", frame(rawRecord(0, nil, []byte("a"), nil), rawRecord(1, []byte("k"), nil, hdr), rawRecord(2, nil, big, nil)), 3, 3, nil},
		{"gap", frame(rawRecord(0, nil, nil, nil), rawRecord(2, nil, nil, nil)), 2, 1, nil},
		// Stops at the first non-sequential record; what follows is not looked at, as before.
		{"gap then garbage", append(frame(rawRecord(1, nil, nil, nil)), 0xff), 2, 0, nil},
		{"bad delta framing wins", frame(rawRecord(0, nil, nil, nil), append(rawRecord(1, nil, nil, nil), 0)), 2, 1, ErrCorrupt},
		{"negative delta", frame(rawRecord(-1, nil, nil, nil)), 1, 0, ErrCorrupt},
		{"delta over int32", frame(rawRecord(1<<31, nil, nil, nil)), 1, 0, ErrCorrupt},
		{"fewer than count", frame(rawRecord(0, nil, nil, nil)), 2, 1, ErrCorrupt},
		{"more than count", frame(rawRecord(0, nil, nil, nil), rawRecord(1, nil, nil, nil)), 1, 1, ErrCorrupt},
		{"negative count with bytes", frame(rawRecord(0, nil, nil, nil)), -1, -1, ErrCorrupt},
		{"empty record", frame([]byte{}), 1, 0, ErrCorrupt},
		{"length past end", []byte{20, 0, 0}, 1, 0, ErrCorrupt},
		{"truncated length varint", []byte{0x80}, 1, 0, ErrCorrupt},
		{"value length past record", frame([]byte{0, 0, 0, 1, 10, 0}), 1, 0, ErrCorrupt},
		{"key length below -1", frame([]byte{0, 0, 0, 3, 1, 0}), 1, 0, ErrCorrupt},
		{"too many headers", frame([]byte{0, 0, 0, 1, 1, 8, 0, 0}), 1, 0, ErrCorrupt},
		{"overlong varint", frame([]byte{0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0, 1, 1, 0}), 1, 0, ErrCorrupt},
		{"non-minimal varint accepted", frame([]byte{0, 0x80, 0x00, 0, 1, 1, 0}), 1, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			walked, err := CheckRecordsSequential(tc.rest, tc.count)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && walked != tc.wantWalked {
				t.Fatalf("walked = %d, want %d", walked, tc.wantWalked)
			}
			refWalked, refErr := walkSequential(tc.rest, tc.count)
			if (refErr == nil) != (err == nil) || (err == nil && refWalked != walked) {
				t.Fatalf("disagrees with WalkRecords: got (%d, %v), WalkRecords (%d, %v)", walked, err, refWalked, refErr)
			}
		})
	}
}

// FuzzCheckRecordsSequential holds CheckRecordsSequential to WalkRecords' verdict on arbitrary
// records sections: both accept or both reject, and on acceptance they stop at the same record.
func FuzzCheckRecordsSequential(f *testing.F) {
	f.Add(frame(rawRecord(0, nil, []byte("a"), nil), rawRecord(1, []byte("k"), nil, [][2][]byte{{[]byte("h"), nil}})), int32(2))
	f.Add(frame(rawRecord(0, nil, nil, nil), rawRecord(2, nil, nil, nil)), int32(2))
	f.Add(frame(rawRecord(0, nil, make([]byte, 200), nil)), int32(1))
	f.Add(sample()[HeaderSize:], int32(3))
	f.Add([]byte{}, int32(0))
	f.Fuzz(func(t *testing.T, rest []byte, count int32) {
		walked, err := CheckRecordsSequential(rest, count)
		refWalked, refErr := walkSequential(rest, count)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("unexpected error %v", err)
		}
		if (err == nil) != (refErr == nil) || (err == nil && walked != refWalked) {
			t.Fatalf("got (%d, %v), WalkRecords (%d, %v)", walked, err, refWalked, refErr)
		}
	})
}

// benchBatch is an uncompressed batch of records with valueSize-byte values and null keys,
// about 16 KiB (the producer's default batch.size) or at least one record.
func benchBatch(valueSize int) []byte {
	n := max(1, 16<<10/(valueSize+10))
	recs := make([]Record, n)
	value := make([]byte, valueSize)
	for i := range recs {
		recs[i] = Record{TimestampDelta: int64(i / 8), Value: value}
	}
	return Build(Header{BaseTimestamp: 1, MaxTimestamp: 1}, recs)
}

// BenchmarkCheckRecords compares the produce path's per-record check before (WalkRecords with a
// callback) and after (CheckRecordsSequential), per ~16 KiB batch.
func BenchmarkCheckRecords(b *testing.B) {
	for _, valueSize := range []int{100, 1024} {
		data := benchBatch(valueSize)
		h, err := Check(data)
		if err != nil {
			b.Fatal(err)
		}
		rest := data[HeaderSize:]
		for _, impl := range []struct {
			name  string
			check func([]byte, int32) (int32, error)
		}{{"WalkRecords", walkSequential}, {"CheckRecordsSequential", CheckRecordsSequential}, {"ValidateClientRecords", func(rest []byte, count int32) (int32, error) {
			s, err := ValidateClientRecords(rest, count)
			return s.Walked, err
		}}} {
			b.Run(fmt.Sprintf("value=%d/records=%d/%s", valueSize, h.RecordCount, impl.name), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if walked, err := impl.check(rest, h.RecordCount); err != nil || walked != h.RecordCount {
						b.Fatal(walked, err)
					}
				}
			})
		}
	}
}

// refClientRecords is ValidateClientRecords written plainly with binary.Varint, record by
// record: the reference the fuzz target holds it to.
func refClientRecords(rest []byte, count int32) (s RecordsSummary, err error) {
	varBytes := func(b []byte, allowNull bool) ([]byte, bool) {
		l, n := binary.Varint(b)
		if n <= 0 || l < -1 || (l == -1 && !allowNull) || l > int64(len(b)-n) {
			return nil, false
		}
		return b[n+max(int(l), 0):], true
	}
	for ; s.Walked < count; s.Walked++ {
		length, n := binary.Varint(rest)
		if n <= 0 || length < 0 || length > int64(len(rest)-n) {
			return s, ErrCorrupt
		}
		rec, next := rest[n:n+int(length)], rest[n+int(length):]
		rest = next
		if len(rec) < 1 {
			return s, ErrCorrupt
		}
		rec = rec[1:]
		ts, n := binary.Varint(rec)
		if n <= 0 {
			return s, ErrCorrupt
		}
		rec = rec[n:]
		od, n := binary.Varint(rec)
		if n <= 0 || od < 0 || od > 1<<31-1 {
			return s, ErrCorrupt
		}
		rec = rec[n:]
		keyLen, _ := binary.Varint(rec)
		var ok bool
		if rec, ok = varBytes(rec, true); !ok {
			return s, ErrCorrupt
		}
		if rec, ok = varBytes(rec, true); !ok {
			return s, ErrCorrupt
		}
		headers, n := binary.Varint(rec)
		if n <= 0 || headers < 0 || headers > int64(len(rec)) {
			return s, ErrCorrupt
		}
		rec = rec[n:]
		for range headers {
			if rec, ok = varBytes(rec, false); !ok {
				return s, ErrCorrupt
			}
			if rec, ok = varBytes(rec, true); !ok {
				return s, ErrCorrupt
			}
		}
		if len(rec) != 0 {
			return s, ErrCorrupt
		}
		if od != int64(s.Walked) {
			return s, nil
		}
		if s.Walked == 0 {
			s.MinTimestampDelta, s.MaxTimestampDelta = ts, ts
		}
		s.MinTimestampDelta, s.MaxTimestampDelta = min(s.MinTimestampDelta, ts), max(s.MaxTimestampDelta, ts)
		if keyLen < 0 {
			s.NullKeys++
		}
	}
	if len(rest) != 0 {
		return s, ErrCorrupt
	}
	return s, nil
}

func TestValidateClientRecords(t *testing.T) {
	hdr := [][2][]byte{{[]byte("h"), []byte("v")}, {[]byte("n"), nil}}
	ts := func(rec []byte, delta int64) []byte { // rec with its timestamp delta (1 byte: 3) replaced
		return append(append([]byte{0}, binary.AppendVarint(nil, delta)...), rec[2:]...)
	}
	for _, tc := range []struct {
		name    string
		rest    []byte
		count   int32
		want    RecordsSummary
		wantErr error
	}{
		{"empty", nil, 0, RecordsSummary{}, nil},
		{"three", frame(ts(rawRecord(0, nil, []byte("a"), nil), 5), ts(rawRecord(1, []byte("k"), nil, hdr), -2), ts(rawRecord(2, nil, nil, nil), 900)), 3,
			RecordsSummary{Walked: 3, MinTimestampDelta: -2, MaxTimestampDelta: 900, NullKeys: 2}, nil},
		{"gap", frame(rawRecord(0, nil, nil, nil), rawRecord(2, nil, nil, nil)), 2, RecordsSummary{Walked: 1, MinTimestampDelta: 3, MaxTimestampDelta: 3, NullKeys: 1}, nil},
		{"null header key", frame(rawRecord(0, []byte("k"), nil, [][2][]byte{{nil, []byte("v")}})), 1, RecordsSummary{}, ErrCorrupt},
		{"trailing bytes", append(frame(rawRecord(0, []byte("k"), nil, nil)), 0), 1, RecordsSummary{}, ErrCorrupt},
		{"fewer than count", frame(rawRecord(0, nil, nil, nil)), 2, RecordsSummary{}, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValidateClientRecords(tc.rest, tc.count)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			ref, refErr := refClientRecords(tc.rest, tc.count)
			if (refErr == nil) != (err == nil) || (err == nil && ref != got) {
				t.Fatalf("disagrees with the reference: got (%+v, %v), reference (%+v, %v)", got, err, ref, refErr)
			}
		})
	}
}

// FuzzValidateClientRecords holds ValidateClientRecords to refClientRecords on arbitrary
// records sections: both accept with the same summary, or both reject.
func FuzzValidateClientRecords(f *testing.F) {
	f.Add(frame(rawRecord(0, nil, []byte("a"), nil), rawRecord(1, []byte("k"), nil, [][2][]byte{{[]byte("h"), nil}})), int32(2))
	f.Add(frame(rawRecord(0, []byte("k"), nil, [][2][]byte{{nil, []byte("v")}})), int32(1))
	f.Add(frame(rawRecord(0, nil, nil, nil), rawRecord(2, nil, nil, nil)), int32(2))
	f.Add(frame(rawRecord(0, nil, make([]byte, 200), nil)), int32(1))
	f.Add(sample()[HeaderSize:], int32(3))
	f.Add([]byte{}, int32(0))
	f.Fuzz(func(t *testing.T, rest []byte, count int32) {
		got, err := ValidateClientRecords(rest, count)
		ref, refErr := refClientRecords(rest, count)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("unexpected error %v", err)
		}
		if (err == nil) != (refErr == nil) || (err == nil && got != ref) {
			t.Fatalf("got (%+v, %v), reference (%+v, %v)", got, err, ref, refErr)
		}
	})
}
