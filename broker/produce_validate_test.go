package broker

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/batch"
	"sluice/internal/compress"
	"sluice/internal/config"
)

func TestCheckProduceBatches(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	nowMs := now.UnixMilli()
	build := func(baseTs, maxTs int64, value []byte) []byte {
		return batch.Build(batch.Header{BaseTimestamp: baseTs, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]batch.Record{{TimestampDelta: maxTs - baseTs, Value: value}})
	}
	createTime := func() *config.TopicSettings {
		return &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "CreateTime",
			MessageTimestampBeforeMaxMs: 1 << 62, MessageTimestampAfterMaxMs: 3_600_000}
	}
	for _, tc := range []struct {
		name     string
		records  []byte
		settings func() *config.TopicSettings
		want     int16
	}{
		{"ok", build(nowMs, nowMs, []byte("v")), createTime, 0},
		{"no timestamps", build(-1, -1, []byte("v")), createTime, 0},
		{"old timestamps pass by default", build(0, 0, []byte("v")), createTime, 0},
		{"too far in the future", build(nowMs, nowMs+3_600_001, []byte("v")), createTime, kerr.InvalidTimestamp.Code},
		{"too old for before.max.ms", build(nowMs-2000, nowMs-2000, []byte("v")), func() *config.TopicSettings {
			s := createTime()
			s.MessageTimestampBeforeMaxMs = 1000
			return s
		}, kerr.InvalidTimestamp.Code},
		{"too large", build(nowMs, nowMs, bytes.Repeat([]byte("x"), 200)), func() *config.TopicSettings {
			s := createTime()
			s.MaxMessageBytes = 150
			return s
		}, kerr.MessageTooLarge.Code},
		{"two batches", append(build(nowMs, nowMs, []byte("v")), build(nowMs, nowMs, []byte("w"))...), createTime, kerr.InvalidRecord.Code},
		{"empty", nil, createTime, kerr.CorruptMessage.Code},
		{"zstd needs v7", func() []byte {
			b := batch.Build(batch.Header{Attributes: compressionZstd, BaseTimestamp: nowMs, MaxTimestamp: nowMs, ProducerID: -1}, nil)
			return b
		}(), createTime, kerr.UnsupportedCompressionType.Code},
		{"corrupt left to the log", []byte{1, 2, 3}, createTime, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			version := int16(9)
			if tc.name == "zstd needs v7" {
				version = 6
			}
			code, appendTime := checkProduceBatches(tc.records, version, tc.settings(), now)
			if code != tc.want {
				t.Fatalf("code %d, want %d", code, tc.want)
			}
			if appendTime != -1 {
				t.Fatalf("CreateTime topic got log append time %d", appendTime)
			}
		})
	}
}

func TestCheckProduceBatchesStampsLogAppendTime(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	records := batch.Build(batch.Header{BaseTimestamp: 5, MaxTimestamp: 5, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("v")}})
	s := &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "LogAppendTime", MessageTimestampAfterMaxMs: 0}
	code, appendTime := checkProduceBatches(records, 9, s, now)
	if code != 0 || appendTime != now.UnixMilli() {
		t.Fatalf("code %d appendTime %d, want 0 and %d", code, appendTime, now.UnixMilli())
	}
	h, err := batch.Check(records)
	if err != nil {
		t.Fatalf("stamped batch no longer valid: %v", err)
	}
	if h.MaxTimestamp != now.UnixMilli() || h.Attributes&batch.AttrTimestampType == 0 {
		t.Fatalf("header %+v not stamped with LogAppendTime %d", h, now.UnixMilli())
	}
}

// A batch with a bad CRC is not stamped for a LogAppendTime topic: stamping recomputes the CRC
// and would turn a corrupt batch into a valid-looking one.
func TestCheckProduceBatchesDoesNotStampCorruptBatch(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	records := batch.Build(batch.Header{BaseTimestamp: 5, MaxTimestamp: 5, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("v")}})
	records[len(records)-1] ^= 0xff // corrupt the last record byte: the CRC no longer matches
	s := &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "LogAppendTime"}
	if code, _ := checkProduceBatches(records, 9, s, now); code != 0 {
		t.Fatalf("code %d, want 0 (left to the log)", code)
	}
	if _, err := batch.Check(records); err == nil {
		t.Fatal("corrupt batch was stamped with a fresh CRC")
	}
}

// compressedBatch builds a batch of values whose records section is compressed with codec; with
// garbage set, the payload is replaced by bytes that do not decode.
func compressedBatch(t *testing.T, codec int, garbage bool, values ...string) []byte {
	t.Helper()
	var recs []batch.Record
	for _, v := range values {
		recs = append(recs, batch.Record{Value: []byte(v)})
	}
	plain := batch.Build(batch.Header{BaseTimestamp: -1, MaxTimestamp: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	payload, err := compress.Compress(codec, nil, plain[batch.HeaderSize:], 0)
	if err != nil {
		t.Fatal(err)
	}
	if garbage {
		payload = bytes.Repeat([]byte{0x5a}, len(payload))
	}
	b := append(append([]byte(nil), plain[:batch.HeaderSize]...), payload...)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-batch.LogOverhead))
	binary.BigEndian.PutUint16(b[21:23], uint16(codec))
	binary.BigEndian.PutUint32(b[17:21], batch.CRC(b))
	if _, err := batch.Check(b); err != nil {
		t.Fatalf("test batch invalid: %v", err)
	}
	return b
}

func TestCheckProduceBatchesDecodesCompressedRecords(t *testing.T) {
	now := time.Now()
	s := &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "CreateTime", MessageTimestampBeforeMaxMs: 1 << 62, MessageTimestampAfterMaxMs: 3_600_000}
	for codec := 1; codec <= 4; codec++ {
		if code, _ := checkProduceBatches(compressedBatch(t, codec, false, "a", "b", "c"), 9, s, now); code != 0 {
			t.Errorf("codec %d: valid batch refused with %v", codec, kerr.ErrorForCode(code))
		}
		if code, _ := checkProduceBatches(compressedBatch(t, codec, true, "a", "b", "c"), 9, s, now); code != kerr.CorruptMessage.Code {
			t.Errorf("codec %d: undecodable payload answered %v, want CORRUPT_MESSAGE", codec, kerr.ErrorForCode(code))
		}
	}
}
