package logstore

import (
	"encoding/binary"
	"errors"
	"testing"

	"sluice/internal/batch"
)

// threeRecords is an uncompressed batch of three records with 1-byte values; patch lets a test
// alter bytes of the records section before the CRC is recomputed. Each record is 8 bytes:
// length, attributes, timestampDelta, offsetDelta, key length (-1), value length, value, header
// count; record i starts at HeaderSize+8*i.
func threeRecords(patch func(records []byte)) []byte {
	b := batch.Build(batch.Header{BaseTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}})
	if patch != nil {
		patch(b[batch.HeaderSize:])
		const crcOffset = 17 // batch header layout
		binary.BigEndian.PutUint32(b[crcOffset:], batch.CRC(b))
	}
	return b
}

func TestValidateBatchesRecords(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data       []byte
		leaderErr  error // nil: accepted
		followerOK bool
	}{
		{"sequential", threeRecords(nil), nil, true},
		{"offset delta gap", threeRecords(func(r []byte) { r[8+3] = 2 * 2 }), ErrInvalidRecord, true},
		{"value past record", threeRecords(func(r []byte) { r[8+5] = 2 * 60 }), ErrCorruptBatch, true},
		// The walk stops at the first non-sequential record, as Kafka's does, so a gap before
		// malformed framing reports the gap.
		{"gap then malformed", threeRecords(func(r []byte) { r[3] = 2 * 1; r[8+5] = 2 * 60 }), ErrInvalidRecord, true},
		{"malformed then gap", threeRecords(func(r []byte) { r[5] = 2 * 60; r[8+3] = 2 * 2 }), ErrCorruptBatch, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := validateBatches(tc.data, true, false, nil)
			if (err == nil) != (tc.leaderErr == nil) || (err != nil && !errors.Is(err, tc.leaderErr)) {
				t.Errorf("leader: err = %v, want %v", err, tc.leaderErr)
			}
			_, err = validateBatches(tc.data, false, false, nil)
			if (err == nil) != tc.followerOK {
				t.Errorf("follower: err = %v, want accepted %v", err, tc.followerOK)
			}
		})
	}
}

// BenchmarkValidateBatches measures a leader's validation of one ~16 KiB batch of records with
// 100-byte values (CRC and per-record checks).
func BenchmarkValidateBatches(b *testing.B) {
	recs := make([]batch.Record, 16<<10/110)
	value := make([]byte, 100)
	for i := range recs {
		recs[i] = batch.Record{TimestampDelta: int64(i / 8), Value: value}
	}
	data := batch.Build(batch.Header{BaseTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	headers := make([]batch.Header, 0, 1)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if headers, err = validateBatches(data, true, false, headers[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateBatchesValidated is BenchmarkValidateBatches for a batch the broker already
// validated (LeaderAppend.Validated): the header only, the produce path's case.
func BenchmarkValidateBatchesValidated(b *testing.B) {
	recs := make([]batch.Record, 16<<10/110)
	value := make([]byte, 100)
	for i := range recs {
		recs[i] = batch.Record{TimestampDelta: int64(i / 8), Value: value}
	}
	data := batch.Build(batch.Header{BaseTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	headers := make([]batch.Header, 0, 1)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if headers, err = validateBatches(data, true, true, headers[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
