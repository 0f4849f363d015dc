package broker

// The rules Kafka applies to a client's produce of magic-v2 records (AppendOrigin.CLIENT, the
// leader), in the order it applies them, with the code a client sees. References are Apache
// Kafka's classes (clients, core and storage modules); TestProduceValidationRules has a case
// per rule, with hand-built batches.
//
// ProduceRequest.validateRecords (KafkaApis.handleProduceRequest, Produce v3+), iterating with
// ByteBufferLogInputStream.nextBatch:
//   - no whole batch (empty, shorter than 17 bytes, or shorter than its length): INVALID_RECORD
//   - batch length below 14 (LegacyRecord.RECORD_OVERHEAD_V0): CORRUPT_MESSAGE
//   - magic below 0 or above 2: CORRUPT_MESSAGE
//   - magic 0 or 1: INVALID_RECORD
//   - zstd before Produce v7: UNSUPPORTED_COMPRESSION_TYPE
//   - a second whole batch: INVALID_RECORD; trailing bytes shorter than a batch are trimmed
//     (UnifiedLog.trimInvalidBytes) and the batch is stored
//
// KafkaApis.handleProduceRequest: a transactional batch in a request without a transactional
// ID: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (every partition).
//
// ReplicaManager.appendToLocalLog: an internal topic: INVALID_TOPIC_EXCEPTION.
//
// UnifiedLog.analyzeAndValidateRecords:
//   - baseOffset not 0: INVALID_RECORD ("The baseOffset of the record batch ... should be 0")
//   - larger than max.message.bytes: MESSAGE_TOO_LARGE
//   - smaller than a batch header, or a CRC mismatch (DefaultRecordBatch.isValid): CORRUPT_MESSAGE
//   - an unknown compression codec (CompressionType.forId's IllegalArgumentException):
//     UNKNOWN_SERVER_ERROR
//
// LogValidator.validateBatch (AppendOrigin.CLIENT):
//   - lastOffsetDelta < 0 ("invalid offset range"): INVALID_RECORD
//   - records count <= 0 ("Invalid reported count"): INVALID_RECORD
//   - count != lastOffsetDelta+1 ("Inconsistent batch offset range"): INVALID_RECORD
//   - a control batch ("Clients are not allowed to write control records"): INVALID_RECORD
//   - a producer ID with a negative base sequence: INVALID_RECORD
//
// The records (DefaultRecordBatch's iterators, DefaultRecord.readFrom):
//   - a compressed payload that does not decompress (KafkaException): UNKNOWN_SERVER_ERROR
//   - a record's length, key, value or header lengths out of its bytes, a null header key,
//     fewer records than the count, bytes after the last: INVALID_RECORD
//   - (sluice only) offset deltas not 0, 1, 2, ...: INVALID_RECORD; Kafka recompresses such a
//     compressed batch and stores an uncompressed one as it came
//
// LogValidator.validateRecord, per record, as record_errors (batch index, message) with the
// error_message of LogValidator.processRecordErrors:
//   - a null key on a compacted topic (validateKey): INVALID_RECORD
//   - CreateTime timestamp out of [now-before.max.ms, now+after.max.ms] (validateTimestamp):
//     INVALID_TIMESTAMP
//   - the producer marked the batch LogAppendTime (on a LogAppendTime topic, or with no
//     timestamp): INVALID_TIMESTAMP
//   - any timestamp error makes the partition's code INVALID_TIMESTAMP
//
// LogValidator.assignOffsetsNonCompressed / validateMessagesAndAssignOffsetsCompressed, on
// success: the batch's max timestamp becomes its records' max (CreateTime) or now
// (LogAppendTime topic), the CRC recomputed.
//
// ProducerAppendInfo (the log's producer state): a sequence gap OUT_OF_ORDER_SEQUENCE_NUMBER,
// an older epoch INVALID_PRODUCER_EPOCH, a retry of the last batch answered with its offsets.
//
// Not applicable to magic v2 or not done: validateRecordCompression (a v2 record has no
// compression attribute, DefaultRecord.isCompressed is false), recompression to the topic's
// compression.type (sluice refuses compression.type other than producer), UnifiedLog's
// RECORD_LIST_TOO_LARGE past segment.bytes (the log's, logstore tests).

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
	"sluice/internal/compress"
	"sluice/internal/config"
)

// rawFields are a hand-built batch's header fields (magic 2; length and CRC are computed).
type rawFields struct {
	baseOffset      int64
	attributes      int16
	lastOffsetDelta int32
	baseTimestamp   int64
	maxTimestamp    int64
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
	count           int32
}

// rawBatch encodes a magic-v2 batch with f's header fields and records as its body.
func rawBatch(f rawFields, records []byte) []byte {
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(records))
	b = append(b, records...)
	binary.BigEndian.PutUint64(b[0:], uint64(f.baseOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-batch.LogOverhead))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // partitionLeaderEpoch -1
	b[16] = batch.MagicV2
	binary.BigEndian.PutUint16(b[21:], uint16(f.attributes))
	binary.BigEndian.PutUint32(b[23:], uint32(f.lastOffsetDelta))
	binary.BigEndian.PutUint64(b[27:], uint64(f.baseTimestamp))
	binary.BigEndian.PutUint64(b[35:], uint64(f.maxTimestamp))
	binary.BigEndian.PutUint64(b[43:], uint64(f.producerID))
	binary.BigEndian.PutUint16(b[51:], uint16(f.producerEpoch))
	binary.BigEndian.PutUint32(b[53:], uint32(f.baseSequence))
	binary.BigEndian.PutUint32(b[57:], uint32(f.count))
	fixCRC(b)
	return b
}

func fixCRC(b []byte) { binary.BigEndian.PutUint32(b[17:], batch.CRC(b)) }

// rawRecord encodes one record (without its length prefix); a nil key or value is null, a
// header with a nil key has a null key.
func rawRecord(timestampDelta, offsetDelta int64, key, value []byte, headers ...[2][]byte) []byte {
	varBytes := func(b, v []byte) []byte {
		if v == nil {
			return binary.AppendVarint(b, -1)
		}
		return append(binary.AppendVarint(b, int64(len(v))), v...)
	}
	r := []byte{0}
	r = binary.AppendVarint(r, timestampDelta)
	r = binary.AppendVarint(r, offsetDelta)
	r = varBytes(r, key)
	r = varBytes(r, value)
	r = binary.AppendVarint(r, int64(len(headers)))
	for _, h := range headers {
		r = varBytes(r, h[0])
		r = varBytes(r, h[1])
	}
	return r
}

// framed prefixes each record with its length.
func framed(recs ...[]byte) []byte {
	var out []byte
	for _, r := range recs {
		out = append(binary.AppendVarint(out, int64(len(r))), r...)
	}
	return out
}

// compressBody replaces b's body by its compression with codec (b: an uncompressed batch).
func compressBody(t testing.TB, b []byte, codec int) []byte {
	t.Helper()
	body, err := compress.Compress(codec, nil, b[batch.HeaderSize:], 0)
	if err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte(nil), b[:batch.HeaderSize]...), body...)
	batch.SetLength(out, int32(len(out)-batch.LogOverhead))
	batch.SetCompression(out, codec)
	fixCRC(out)
	return out
}

func TestProduceValidationRules(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"offsets.topic.num.partitions": "1"})
	if err := tb.Broker.ensureOffsetsTopic(testContext(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "__consumer_offsets to be led here", func() bool {
		p := tb.Broker.partition(offsetsTopic, 0)
		return p != nil && p.replica.Snapshot().Leader
	})
	str := func(s string) *string { return &s }
	topics := map[string]map[string]*string{
		"plain":   nil,
		"small":   {"max.message.bytes": str("300")},
		"old":     {"message.timestamp.before.max.ms": str("60000")},
		"compact": {"cleanup.policy": str("compact")},
		"lat":     {"message.timestamp.type": str("LogAppendTime")},
	}
	now := time.Now().UnixMilli()
	// good is a well-formed batch of n keyed records stamped now, with f's fields.
	fields := func(n int32) rawFields {
		return rawFields{lastOffsetDelta: n - 1, baseTimestamp: now, maxTimestamp: now, producerID: -1, producerEpoch: -1, baseSequence: -1, count: n}
	}
	records := func(n int) []byte {
		var recs [][]byte
		for i := range n {
			recs = append(recs, rawRecord(0, int64(i), []byte("k"), []byte("v")))
		}
		return framed(recs...)
	}
	good := func(n int32) []byte { return rawBatch(fields(n), records(int(n))) }
	with := func(n int32, edit func(*rawFields)) []byte {
		f := fields(n)
		edit(&f)
		return rawBatch(f, records(int(n)))
	}
	produce := func(version int16, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(version)
		req.Acks = 1
		req.TimeoutMillis = 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return tb.direct(t, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	for name, configs := range topics {
		tb.createTopic(t, name, 1, configs)
		waitFor(t, "partition "+name+"-0 to take a produce", func() bool { return produce(9, name, good(1)).ErrorCode == 0 })
	}

	// storedBatch is the last batch appended to topic's partition 0.
	storedBatch := func(t *testing.T, topic string, from int64) batch.Header {
		p := tb.Broker.partition(topic, 0)
		read, err := p.log.Read(from, 1<<20, p.log.LogEndOffset(), true)
		if err != nil || len(read.Slices) == 0 {
			t.Fatalf("read %s from %d: %v", topic, from, err)
		}
		var buf bytes.Buffer
		for _, s := range read.Slices {
			if _, err := io.Copy(&buf, io.NewSectionReader(s.File, s.Position, s.Length)); err != nil {
				t.Fatal(err)
			}
		}
		h, err := batch.Check(buf.Bytes())
		if err != nil {
			t.Fatalf("stored batch: %v", err)
		}
		return h
	}

	gzipGarbage := compressBody(t, good(3), compress.Gzip)
	copy(gzipGarbage[batch.HeaderSize:], bytes.Repeat([]byte{0x5a}, len(gzipGarbage)-batch.HeaderSize))
	fixCRC(gzipGarbage)
	badCRC := good(1)
	badCRC[len(badCRC)-1] ^= 0xff
	twoBatches := append(good(1), good(1)...)
	secondCorrupt := append(good(1), good(1)...)
	binary.BigEndian.PutUint32(secondCorrupt[len(good(1))+8:], 13)
	legacy := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0} // magic 1 message
	short := rawBatch(fields(1), nil)[:40]
	binary.BigEndian.PutUint32(short[8:], 40-12)
	unknownCodec := with(1, func(f *rawFields) { f.attributes = 5 })
	zstd := compressBody(t, good(2), compress.Zstd)
	idempotent := func(epoch int16, seq int32) []byte {
		return with(1, func(f *rawFields) { f.producerID, f.producerEpoch, f.baseSequence = 4242, epoch, seq })
	}
	timestamps := func(deltas ...int64) []byte { // one record per timestamp delta from now
		var recs [][]byte
		for i, d := range deltas {
			recs = append(recs, rawRecord(d, int64(i), []byte("k"), []byte("v")))
		}
		f := fields(int32(len(deltas)))
		return rawBatch(f, framed(recs...))
	}

	const (
		invalidRecord    = 87 // INVALID_RECORD
		corruptMessage   = 2  // CORRUPT_MESSAGE
		unknownServerErr = -1
	)
	for _, tc := range []struct {
		name     string
		topic    string
		version  int16
		records  []byte
		want     int16
		stored   int64  // records appended when accepted (0: nothing stored)
		message  string // the exact error_message, when Kafka sends one
		errIndex []int32
		check    func(t *testing.T, h batch.Header)
	}{
		// ProduceRequest.validateRecords.
		{name: "no records", records: nil, want: invalidRecord},
		{name: "fewer bytes than a batch", records: good(1)[:11], want: invalidRecord},
		{name: "length below 14", records: func() []byte { b := good(1); binary.BigEndian.PutUint32(b[8:], 13); return b }(), want: corruptMessage},
		{name: "magic above 2", records: func() []byte { b := good(1); b[16] = 3; return b }(), want: corruptMessage},
		{name: "truncated batch", records: good(2)[:70], want: invalidRecord},
		{name: "magic 1 at v3+", records: legacy, want: invalidRecord},
		{name: "zstd before v7", version: 6, records: zstd, want: int16(kerr.UnsupportedCompressionType.Code)},
		{name: "zstd at v7", version: 7, records: zstd, stored: 2},
		{name: "two batches", records: twoBatches, want: invalidRecord},
		{name: "second batch length below 14", records: secondCorrupt, want: corruptMessage},
		{name: "trailing partial batch trimmed", records: append(good(1), good(1)[:30]...), stored: 1},
		// KafkaApis: transactional records need the request's transactional ID.
		{name: "transactional without a transactional id", records: with(1, func(f *rawFields) {
			f.attributes, f.producerID, f.producerEpoch, f.baseSequence = batch.AttrTransactional, 11, 0, 0
		}), want: int16(kerr.TransactionalIDAuthorizationFailed.Code)},
		// ReplicaManager.appendToLocalLog.
		{name: "internal topic", topic: offsetsTopic, records: good(1), want: int16(kerr.InvalidTopicException.Code)},
		// UnifiedLog.analyzeAndValidateRecords.
		{name: "base offset not 0", records: with(1, func(f *rawFields) { f.baseOffset = 5 }), want: invalidRecord},
		{name: "larger than max.message.bytes", topic: "small", records: rawBatch(fields(1), framed(rawRecord(0, 0, nil, make([]byte, 300)))), want: int16(kerr.MessageTooLarge.Code)},
		{name: "crc mismatch", records: badCRC, want: corruptMessage},
		{name: "shorter than a batch header", records: short, want: corruptMessage},
		{name: "unknown codec", records: unknownCodec, want: unknownServerErr},
		// LogValidator.validateBatch.
		{name: "negative lastOffsetDelta", records: with(1, func(f *rawFields) { f.lastOffsetDelta = -1 }), want: invalidRecord},
		{name: "zero records", records: rawBatch(rawFields{baseTimestamp: now, maxTimestamp: now, producerID: -1, producerEpoch: -1, baseSequence: -1}, nil), want: invalidRecord},
		{name: "count disagrees with lastOffsetDelta", records: with(2, func(f *rawFields) { f.lastOffsetDelta = 2 }), want: invalidRecord},
		{name: "control batch", records: with(1, func(f *rawFields) { f.attributes = batch.AttrControl }), want: invalidRecord},
		{name: "producer id without sequence", records: with(1, func(f *rawFields) { f.producerID, f.producerEpoch = 7, 0 }), want: invalidRecord},
		// The records.
		{name: "record length past the batch", records: rawBatch(fields(1), append([]byte{40}, rawRecord(0, 0, nil, nil)...)), want: invalidRecord},
		{name: "key length below -1", records: rawBatch(fields(1), framed([]byte{0, 0, 0, 3, 0, 0})), want: invalidRecord},
		{name: "value past its record", records: rawBatch(fields(1), framed([]byte{0, 0, 0, 1, 20, 0})), want: invalidRecord},
		{name: "header count past its record", records: rawBatch(fields(1), framed([]byte{0, 0, 0, 1, 1, 8})), want: invalidRecord},
		{name: "null header key", records: rawBatch(fields(1), framed(rawRecord(0, 0, []byte("k"), nil, [2][]byte{nil, []byte("v")}))), want: invalidRecord},
		{name: "fewer records than count", records: rawBatch(fields(2), records(1)), want: invalidRecord},
		{name: "bytes after the last record", records: rawBatch(fields(1), append(records(1), 0)), want: invalidRecord},
		{name: "compressed payload does not decode", records: gzipGarbage, want: unknownServerErr},
		{name: "compressed records malformed", records: compressBody(t, rawBatch(fields(1), framed([]byte{0, 0, 0, 1, 20, 0})), compress.LZ4), want: invalidRecord},
		{name: "offset deltas not sequential", records: rawBatch(fields(2), framed(rawRecord(0, 0, nil, nil), rawRecord(0, 2, nil, nil))), want: invalidRecord},
		{name: "compressed offset deltas not sequential", records: compressBody(t, rawBatch(fields(2), framed(rawRecord(0, 0, nil, nil), rawRecord(0, 5, nil, nil))), compress.Snappy), want: invalidRecord},
		{name: "compressed ok", records: compressBody(t, good(3), compress.Gzip), stored: 3},
		// LogValidator.validateRecord.
		{name: "null key on a compacted topic", topic: "compact", records: rawBatch(fields(3), framed(rawRecord(0, 0, []byte("k"), nil), rawRecord(0, 1, nil, []byte("v")), rawRecord(0, 2, nil, nil))),
			want: invalidRecord, errIndex: []int32{1, 2},
			message: "One or more records have been rejected due to 2 record errors in total, and only showing the first three errors at most: [" +
				"RecordError(batchIndex=1, message='Compacted topic cannot accept message without key in topic partition compact-0'), " +
				"RecordError(batchIndex=2, message='Compacted topic cannot accept message without key in topic partition compact-0')]"},
		{name: "null key in a compressed batch on a compacted topic", topic: "compact", records: compressBody(t, rawBatch(fields(1), framed(rawRecord(0, 0, nil, nil))), compress.Zstd), want: invalidRecord, errIndex: []int32{0},
			message: "One or more records have been rejected due to 1 record errors in total, and only showing the first three errors at most: [" +
				"RecordError(batchIndex=0, message='Compacted topic cannot accept message without key in topic partition compact-0')]"},
		{name: "timestamp past after.max.ms", records: timestamps(0, 3_600_000+60_000, 0), want: int16(kerr.InvalidTimestamp.Code), errIndex: []int32{1},
			message: "One or more records have been rejected due to invalid timestamp"},
		{name: "timestamp before before.max.ms", topic: "old", records: timestamps(-120_000, 0), want: int16(kerr.InvalidTimestamp.Code), errIndex: []int32{0},
			message: "One or more records have been rejected due to invalid timestamp"},
		{name: "old timestamp beside a record without one", topic: "old", records: rawBatch(rawFields{lastOffsetDelta: 1, baseTimestamp: -1, maxTimestamp: 5, producerID: -1, producerEpoch: -1, baseSequence: -1, count: 2},
			framed(rawRecord(0, 0, []byte("k"), nil), rawRecord(6, 1, []byte("k"), nil))), want: int16(kerr.InvalidTimestamp.Code), errIndex: []int32{1},
			message: "One or more records have been rejected due to invalid timestamp"},
		{name: "timestamp error wins over a key error", topic: "compact", records: rawBatch(fields(2), framed(rawRecord(0, 0, nil, nil), rawRecord(7_200_000, 1, []byte("k"), nil))),
			want: int16(kerr.InvalidTimestamp.Code), errIndex: []int32{0, 1}, message: "One or more records have been rejected due to invalid timestamp"},
		{name: "producer marked LogAppendTime on a LogAppendTime topic", topic: "lat", records: with(1, func(f *rawFields) { f.attributes = batch.AttrTimestampType }),
			want: int16(kerr.InvalidTimestamp.Code), errIndex: []int32{0}, message: "One or more records have been rejected due to invalid timestamp"},
		{name: "producer marked LogAppendTime without a timestamp", records: with(1, func(f *rawFields) { f.attributes, f.baseTimestamp, f.maxTimestamp = batch.AttrTimestampType, -1, -1 }),
			want: int16(kerr.InvalidTimestamp.Code), errIndex: []int32{0}, message: "One or more records have been rejected due to invalid timestamp"},
		{name: "no timestamps pass", records: with(1, func(f *rawFields) { f.baseTimestamp, f.maxTimestamp = -1, -1 }), stored: 1,
			check: func(t *testing.T, h batch.Header) {
				if h.MaxTimestamp != -1 {
					t.Errorf("maxTimestamp %d, want -1", h.MaxTimestamp)
				}
			}},
		// The max timestamp LogValidator sets.
		{name: "max timestamp set to the records'", records: with(3, func(f *rawFields) { f.maxTimestamp = now - 5000 }), stored: 3,
			check: func(t *testing.T, h batch.Header) {
				if h.MaxTimestamp != now || h.Attributes&batch.AttrTimestampType != 0 {
					t.Errorf("stored maxTimestamp %d attributes %#x, want %d CreateTime", h.MaxTimestamp, h.Attributes, now)
				}
			}},
		{name: "LogAppendTime topic stamps now", topic: "lat", records: with(1, func(f *rawFields) { f.baseTimestamp, f.maxTimestamp = 5, 5 }), stored: 1,
			check: func(t *testing.T, h batch.Header) {
				if h.MaxTimestamp < now || h.Attributes&batch.AttrTimestampType == 0 {
					t.Errorf("stored maxTimestamp %d attributes %#x, want LogAppendTime >= %d", h.MaxTimestamp, h.Attributes, now)
				}
			}},
		// ProducerAppendInfo, in the log (the cases run in order).
		{name: "idempotent first batch", records: idempotent(3, 0), stored: 1},
		{name: "idempotent retry is answered, not stored", records: idempotent(3, 0), stored: 0},
		{name: "sequence gap", records: idempotent(3, 5), want: int16(kerr.OutOfOrderSequenceNumber.Code)},
		{name: "older producer epoch", records: idempotent(2, 1), want: int16(kerr.InvalidProducerEpoch.Code)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, version := tc.topic, tc.version
			if topic == "" {
				topic = "plain"
			}
			if version == 0 {
				version = 9
			}
			p := tb.Broker.partition(topic, 0)
			before := p.log.LogEndOffset()
			got := produce(version, topic, append([]byte(nil), tc.records...))
			if got.ErrorCode != tc.want {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(tc.want))
			}
			if after := p.log.LogEndOffset(); after != before+tc.stored {
				t.Fatalf("log end %d -> %d, want %d records stored", before, after, tc.stored)
			}
			if tc.message != "" && (got.ErrorMessage == nil || *got.ErrorMessage != tc.message) {
				t.Errorf("error_message %q, want %q", deref(got.ErrorMessage), tc.message)
			}
			if tc.message == "" && got.ErrorMessage != nil {
				t.Errorf("error_message %q, Kafka sends none for this error", *got.ErrorMessage)
			}
			var indexes []int32
			for _, e := range got.ErrorRecords {
				indexes = append(indexes, e.RelativeOffset)
			}
			if len(indexes) != len(tc.errIndex) || (len(indexes) > 0 && !bytes.Equal(int32Bytes(indexes), int32Bytes(tc.errIndex))) {
				t.Errorf("record_errors at %v, want %v", indexes, tc.errIndex)
			}
			if tc.check != nil {
				tc.check(t, storedBatch(t, topic, before))
			}
		})
	}
}

func int32Bytes(v []int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.BigEndian.AppendUint32(b, uint32(x))
	}
	return b
}

// The per-record message of a timestamp out of range is Kafka's, bounds included.
func TestProduceValidationTimestampMessage(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	s := &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "CreateTime", MessageTimestampBeforeMaxMs: 1000, MessageTimestampAfterMaxMs: 2000}
	b := rawBatch(rawFields{lastOffsetDelta: 1, baseTimestamp: now.UnixMilli(), maxTimestamp: now.UnixMilli(), producerID: -1, producerEpoch: -1, baseSequence: -1, count: 2},
		framed(rawRecord(0, 0, nil, nil), rawRecord(5000, 1, nil, nil)))
	v := validateProduceRecords(b, 9, s, topicPartition{"t", 0}, now)
	if v.code != kerr.InvalidTimestamp.Code || len(v.recordErrors) != 1 {
		t.Fatalf("code %d record errors %d", v.code, len(v.recordErrors))
	}
	want := "Timestamp 1700000005000 of message with offset 1 is out of range. The timestamp should be within [1699999999000, 1700000002000]"
	if e := v.recordErrors[0]; e.RelativeOffset != 1 || *e.ErrorMessage != want {
		t.Fatalf("record error %d %q, want 1 %q", e.RelativeOffset, *e.ErrorMessage, want)
	}
}

// A batch with a bad CRC is not stamped for a LogAppendTime topic: stamping recomputes the CRC
// and would turn a corrupt batch into a valid-looking one.
func TestProduceValidationDoesNotStampCorruptBatch(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	records := batch.Build(batch.Header{BaseTimestamp: 5, MaxTimestamp: 5, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("v")}})
	records[len(records)-1] ^= 0xff
	s := &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "LogAppendTime"}
	if v := validateProduceRecords(records, 9, s, topicPartition{"t", 0}, now); v.code != kerr.CorruptMessage.Code {
		t.Fatalf("code %d, want CORRUPT_MESSAGE", v.code)
	}
	if _, err := batch.Check(records); err == nil {
		t.Fatal("corrupt batch was stamped with a fresh CRC")
	}
}

// Every codec's valid batch passes and its undecodable payload is refused.
func TestProduceValidationDecodesCompressedRecords(t *testing.T) {
	now := time.Now()
	s := &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "CreateTime", MessageTimestampBeforeMaxMs: 1 << 62, MessageTimestampAfterMaxMs: 3_600_000}
	plain := batch.Build(batch.Header{BaseTimestamp: -1, MaxTimestamp: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}})
	for codec := 1; codec <= 4; codec++ {
		b := compressBody(t, plain, codec)
		if v := validateProduceRecords(b, 9, s, topicPartition{"t", 0}, now); v.code != 0 {
			t.Errorf("codec %d: valid batch refused with %v", codec, kerr.ErrorForCode(v.code))
		}
		copy(b[batch.HeaderSize:], bytes.Repeat([]byte{0x5a}, len(b)-batch.HeaderSize))
		fixCRC(b)
		if v := validateProduceRecords(b, 9, s, topicPartition{"t", 0}, now); v.code != kerr.UnknownServerError.Code {
			t.Errorf("codec %d: undecodable payload answered %v, want UNKNOWN_SERVER_ERROR", codec, kerr.ErrorForCode(v.code))
		}
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
	b := compressBody(t, plain, codec)
	if garbage {
		copy(b[batch.HeaderSize:], bytes.Repeat([]byte{0x5a}, len(b)-batch.HeaderSize))
		fixCRC(b)
	}
	return b
}
