package broker

import (
	"bytes"
	"testing"
	"time"

	"sluice/internal/batch"
	"sluice/internal/compress"
	"sluice/internal/config"
)

// FuzzValidateProduceRecords: the produce validation never panics on any bytes, and what it
// accepts is one whole, CRC-valid batch (a prefix of the request's bytes, stamped in place)
// whose records are well-formed and sequential, as the log's trusted append path assumes
// (logstore.LeaderAppend.Validated).
func FuzzValidateProduceRecords(f *testing.F) {
	now := time.UnixMilli(1_700_000_000_000)
	ms := now.UnixMilli()
	fields := func(n int32) rawFields {
		return rawFields{lastOffsetDelta: n - 1, baseTimestamp: ms, maxTimestamp: ms, producerID: -1, producerEpoch: -1, baseSequence: -1, count: n}
	}
	good := rawBatch(fields(2), framed(rawRecord(0, 0, []byte("k"), []byte("v")), rawRecord(1, 1, nil, []byte("w"))))
	plain := batch.Build(batch.Header{BaseTimestamp: ms, MaxTimestamp: ms, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Key: []byte("a"), Value: []byte("b")}, {Value: []byte("c")}})
	for _, seed := range [][]byte{
		good,
		append(append([]byte(nil), good...), good...),
		append(append([]byte(nil), good...), good[:20]...),
		compressBody(f, plain, compress.Gzip),
		compressBody(f, plain, compress.LZ4),
		compressBody(f, plain, compress.Zstd),
		rawBatch(fields(1), framed(rawRecord(0, 0, []byte("k"), nil, [2][]byte{nil, []byte("v")}))),
		rawBatch(fields(2), framed(rawRecord(0, 0, nil, nil), rawRecord(0, 2, nil, nil))),
		rawBatch(fields(1), framed(rawRecord(7_200_000, 0, nil, nil))),
		func() []byte {
			f := fields(1)
			f.attributes = batch.AttrControl
			return rawBatch(f, framed(rawRecord(0, 0, nil, nil)))
		}(),
		func() []byte { f := fields(1); f.producerID = 3; return rawBatch(f, framed(rawRecord(0, 0, nil, nil))) }(),
		func() []byte { f := fields(1); f.baseOffset = 9; return rawBatch(f, framed(rawRecord(0, 0, nil, nil))) }(),
		{},
	} {
		f.Add(seed, int16(9), false, false)
	}
	f.Add(compressBody(f, plain, compress.Zstd), int16(6), false, false)
	f.Add(good, int16(9), true, false)
	f.Add(good, int16(9), false, true)
	f.Fuzz(func(t *testing.T, records []byte, version int16, compact, logAppendTime bool) {
		s := &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "CreateTime",
			MessageTimestampBeforeMaxMs: 1 << 62, MessageTimestampAfterMaxMs: 3_600_000, CleanupCompact: compact}
		if logAppendTime {
			s.MessageTimestampType = "LogAppendTime"
		}
		input := append([]byte(nil), records...)
		v := validateProduceRecords(records, version, s, topicPartition{"t", 0}, now)
		if v.code != 0 {
			if len(v.recordErrors) > maxRecordErrors {
				t.Fatalf("%d record errors", len(v.recordErrors))
			}
			if !bytes.Equal(records, input) {
				t.Fatal("a refused batch was changed")
			}
			return
		}
		if len(v.records) == 0 || &v.records[0] != &records[0] {
			t.Fatal("accepted records are not the request's bytes")
		}
		h, err := batch.Check(v.records)
		if err != nil || h.Size() != int64(len(v.records)) {
			t.Fatalf("accepted a bad batch: %v", err)
		}
		if err := batch.CheckCount(&h); err != nil || h.IsControl() || h.BaseOffset != 0 {
			t.Fatalf("accepted header %+v", h)
		}
		recs := v.records[batch.HeaderSize:]
		if h.Compression() != 0 {
			if recs, err = compress.Decompress(h.Compression(), recs, 64<<20); err != nil {
				t.Fatalf("accepted an undecodable batch: %v", err)
			}
		}
		if walked, err := batch.CheckRecordsSequential(recs, h.RecordCount); err != nil || walked != h.RecordCount {
			t.Fatalf("accepted records: walked %d of %d, %v", walked, h.RecordCount, err)
		}
	})
}
