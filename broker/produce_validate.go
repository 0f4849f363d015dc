package broker

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
	"sluice/internal/compress"
	"sluice/internal/config"
)

// noTimestamp is RecordBatch.NO_TIMESTAMP: a record without a timestamp passes the time checks.
const noTimestamp = -1

// compressionZstd is the zstd codec's attribute value.
const compressionZstd = 4

// maxRecordErrors bounds the record_errors of one partition's answer: Kafka lists every
// offending record of a batch; a batch holds at most max.message.bytes of them, but the answer
// need not grow with it.
const maxRecordErrors = 1000

// produceValidation is the outcome of validating one partition's records from a client.
type produceValidation struct {
	// code is the partition's error (0: the records may be appended).
	code int16
	// message is the partition's error_message (Produce v8+), set only where Kafka sets one:
	// record-level errors (its RecordValidationException).
	message *string
	// recordErrors are the offending records' indexes in the batch, with Kafka's messages.
	recordErrors []kmsg.ProduceResponseTopicPartitionErrorRecord
	// withLogStart: Kafka answers this error with the partition's log start offset (errors
	// its ReplicaManager does not list as known: the LogValidator's).
	withLogStart bool
	// records is what to append: the request's batch without the trailing partial bytes Kafka
	// trims (UnifiedLog.trimInvalidBytes).
	records []byte
	// logAppendTime is the time a LogAppendTime topic stamped on the batch (-1: CreateTime).
	logAppendTime int64
}

// validateProduceRecords checks one partition's records from a client (produce v3+, or what a
// v0–v2 message set was converted to) as Kafka does between KafkaApis and the log, in Kafka's
// order, so a batch breaking several rules gets the code Kafka gives. It walks the records once
// (decompressing a compressed batch once) and, when they pass, sets the batch's max timestamp
// as Kafka's LogValidator does (the max of its records' for CreateTime, now for a
// LogAppendTime topic), recomputing the CRC when that changes it. The log trusts the result
// (logstore.LeaderAppend.Validated) and does not check the records again.
//
// The rules, with Kafka's code (the table in produce_validate_test.go cites Kafka's classes):
//   - ProduceRequest.validateRecords: no whole batch (INVALID_RECORD), a batch length below 14
//     or a magic above 2 (CORRUPT_MESSAGE), magic 0/1 (INVALID_RECORD), zstd before Produce v7
//     (UNSUPPORTED_COMPRESSION_TYPE), a second whole batch (INVALID_RECORD); trailing bytes
//     shorter than a batch are dropped.
//   - UnifiedLog.analyzeAndValidateRecords: baseOffset not 0 (INVALID_RECORD), larger than
//     max.message.bytes (MESSAGE_TOO_LARGE), shorter than a header or a bad CRC
//     (CORRUPT_MESSAGE), an unknown codec (UNKNOWN_SERVER_ERROR, Kafka's
//     IllegalArgumentException).
//   - LogValidator.validateBatch: lastOffsetDelta < 0, records count <= 0, or count !=
//     lastOffsetDelta+1 (INVALID_RECORD), a control batch (INVALID_RECORD), a producer ID
//     with a negative base sequence (INVALID_RECORD).
//   - The records (DefaultRecordBatch's iterator, DefaultRecord.readFrom): a payload that does
//     not decompress (UNKNOWN_SERVER_ERROR, Kafka's KafkaException), malformed record framing
//     or bytes after the last record (INVALID_RECORD).
//   - LogValidator.validateRecord, per record, reported as record_errors with an
//     error_message: a null key on a compacted topic (INVALID_RECORD), a CreateTime timestamp
//     outside message.timestamp.before/after.max.ms of now, or a batch the producer marked
//     LogAppendTime (INVALID_TIMESTAMP, which wins over INVALID_RECORD).
//
// sluice also refuses, with INVALID_RECORD, a batch whose records' offset deltas are not 0,
// 1, 2, ...: Kafka rewrites such a compressed batch (recompressing it) and stores an
// uncompressed one as it came, with offsets outside its batch; sluice never re-encodes.
//
// Producer epochs and sequences (INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER,
// INVALID_TXN_STATE) need the partition's producer state and are the log's
// (logstore.checkProducerBatch, as Kafka's ProducerAppendInfo), as is the segment size
// (RECORD_LIST_TOO_LARGE).
func validateProduceRecords(records []byte, produceVersion int16, s *config.TopicSettings, tp topicPartition, now time.Time) produceValidation {
	v := produceValidation{logAppendTime: -1}
	invalid := func(code int16) produceValidation { v.code = code; return v }

	// ProduceRequest.validateRecords: exactly one magic-v2 batch.
	size, code := nextBatchSize(records)
	if code != 0 {
		return invalid(code)
	}
	if size == 0 { // no whole batch
		if produceVersion < 3 {
			// What a v0–v2 message set without a whole message converts to: refused as
			// corrupt, as legacy_records.go refuses a truncated set (Kafka 3.x stored nothing
			// and answered NONE; ProduceRequest.validateRecords is for v3+).
			return invalid(kerr.CorruptMessage.Code)
		}
		return invalid(kerr.InvalidRecord.Code)
	}
	b := records[:size]
	magic := int8(b[16])
	if magic != batch.MagicV2 {
		return invalid(kerr.InvalidRecord.Code)
	}
	attributes := int16(binary.BigEndian.Uint16(b[21:]))
	codec := int(attributes & batch.AttrCompressionMask)
	if produceVersion < 7 && codec == compressionZstd {
		return invalid(kerr.UnsupportedCompressionType.Code)
	}
	switch next, code := nextBatchSize(records[size:]); {
	case code != 0:
		return invalid(code)
	case next != 0:
		return invalid(kerr.InvalidRecord.Code)
	}
	v.records = b // trailing bytes shorter than a batch are trimmed, as Kafka does

	// UnifiedLog.analyzeAndValidateRecords: base offset, size, CRC, codec.
	v.withLogStart = true
	if binary.BigEndian.Uint64(b) != 0 {
		return invalid(kerr.InvalidRecord.Code)
	}
	v.withLogStart = false
	if len(b) > int(s.MaxMessageBytes) {
		return invalid(kerr.MessageTooLarge.Code)
	}
	// The CRC only: the offset fields are validateBatch's (INVALID_RECORD), below.
	h, err := batch.ParseHeader(b)
	if err != nil || batch.CRC(b) != h.CRC {
		return invalid(kerr.CorruptMessage.Code)
	}
	v.withLogStart = true
	if codec > compressionZstd {
		return invalid(kerr.UnknownServerError.Code)
	}

	// LogValidator.validateBatch.
	if h.LastOffsetDelta < 0 || h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 ||
		h.IsControl() || (h.HasProducerID() && h.BaseSequence < 0) {
		return invalid(kerr.InvalidRecord.Code)
	}

	// The records, walked once.
	recs := b[batch.HeaderSize:]
	if codec != 0 {
		limit := max(maxDecompressedBatch, 32*int(s.MaxMessageBytes))
		if recs, err = compress.Decompress(codec, recs, limit); err != nil {
			return invalid(kerr.UnknownServerError.Code)
		}
	}
	sum, err := batch.ValidateClientRecords(recs, h.RecordCount)
	if err != nil || sum.Walked != h.RecordCount {
		return invalid(kerr.InvalidRecord.Code)
	}

	// LogValidator.validateRecord: keys and timestamps, per record.
	nowMs := now.UnixMilli()
	logAppendTimeTopic := s.MessageTimestampType == "LogAppendTime"
	producerLogAppendTime := h.Attributes&batch.AttrTimestampType != 0
	// A record's timestamp is baseTimestamp+delta, or the batch's maxTimestamp when the batch
	// is marked LogAppendTime (DefaultRecordBatch's iterator).
	minTs, maxTs := h.BaseTimestamp+sum.MinTimestampDelta, h.BaseTimestamp+sum.MaxTimestampDelta
	wrapped := minTs > h.BaseTimestamp && sum.MinTimestampDelta < 0 || maxTs < h.BaseTimestamp && sum.MaxTimestampDelta > 0
	if producerLogAppendTime {
		minTs, maxTs, wrapped = h.MaxTimestamp, h.MaxTimestamp, false
	}
	if wrapped || (s.CleanupCompact && sum.NullKeys > 0) ||
		(!logAppendTimeTopic && timestampsMayBeOutOfRange(minTs, maxTs, nowMs, s)) ||
		(producerLogAppendTime && (logAppendTimeTopic || h.MaxTimestamp == noTimestamp)) {
		// Rare: walk again, record by record, to name every offending record as Kafka
		// reports them (and to take the exact max timestamp when the bounds were not exact).
		if v, maxTs = recordErrors(v, &h, recs, s, tp, nowMs); v.code != 0 {
			return v
		}
	}

	// LogValidator sets the batch's max timestamp (and its timestamp type).
	if logAppendTimeTopic {
		v.logAppendTime = nowMs
		batch.SetLogAppendTime(b, nowMs)
	} else if max(maxTs, noTimestamp) != h.MaxTimestamp || producerLogAppendTime {
		batch.SetCreateTimeMax(b, max(maxTs, noTimestamp))
	}
	v.code, v.withLogStart = 0, false
	return v
}

// timestampsMayBeOutOfRange reports whether a CreateTime record with a timestamp in [lo, hi]
// might be outside message.timestamp.before/after.max.ms of now. The range check is monotonic,
// so the bounds decide it, except that a record without a timestamp (-1) is never out of range
// (the next possible values stand in for it) and values far enough from now for Java's
// wrapping arithmetic to matter are left to the exact walk.
func timestampsMayBeOutOfRange(lo, hi, nowMs int64, s *config.TopicSettings) bool {
	const far = 1 << 62
	if lo < -far || hi > far {
		return true
	}
	if lo == noTimestamp {
		if hi == noTimestamp {
			return false
		}
		lo = 0
	}
	if hi == noTimestamp {
		hi = noTimestamp - 1
	}
	return timestampOutOfRange(lo, nowMs, s) || timestampOutOfRange(hi, nowMs, s)
}

// nextBatchSize is Kafka's ByteBufferLogInputStream.nextBatch: the size of the whole batch at
// the start of b, 0 when b holds no whole batch (fewer bytes than its header up to the magic,
// or than its length says), or CORRUPT_MESSAGE for a length below Kafka's smallest record
// overhead (14) or a magic above 2.
func nextBatchSize(b []byte) (size int, code int16) {
	const smallestRecordOverhead = 14 // LegacyRecord.RECORD_OVERHEAD_V0
	if len(b) < batch.LogOverhead {
		return 0, 0
	}
	length := int32(binary.BigEndian.Uint32(b[8:]))
	if length < smallestRecordOverhead {
		return 0, kerr.CorruptMessage.Code
	}
	if len(b) < 17 {
		return 0, 0
	}
	if magic := int8(b[16]); magic < 0 || magic > batch.MagicV2 {
		return 0, kerr.CorruptMessage.Code
	}
	if int64(len(b)) < batch.LogOverhead+int64(length) {
		return 0, 0
	}
	return batch.LogOverhead + int(length), 0
}

// timestampOutOfRange is LogValidator.recordHasInvalidTimestamp for a CreateTime record (with
// Java's wrapping arithmetic); a record without a timestamp is never out of range.
func timestampOutOfRange(ts, nowMs int64, s *config.TopicSettings) bool {
	if ts == noTimestamp {
		return false
	}
	diff := nowMs - ts
	return diff > s.MessageTimestampBeforeMaxMs || -diff > s.MessageTimestampAfterMaxMs
}

// recordErrors walks a batch whose records may break a per-record rule and answers as Kafka's
// LogValidator.processRecordErrors: every offending record's index and message, the
// partition's code INVALID_TIMESTAMP if any timestamp is wrong, else INVALID_RECORD, and
// Kafka's error_message. When no record breaks a rule it returns v with code 0. maxTs is the
// records' max timestamp (-1 if none has one), with Java's wrapping arithmetic.
func recordErrors(v produceValidation, h *batch.Header, recs []byte, s *config.TopicSettings, tp topicPartition, nowMs int64) (_ produceValidation, maxTs int64) {
	logAppendTimeTopic := s.MessageTimestampType == "LogAppendTime"
	producerLogAppendTime := h.Attributes&batch.AttrTimestampType != 0
	index := int32(0)
	total, timestampErrors := 0, 0
	maxTs = noTimestamp
	add := func(msg string) {
		total++
		if len(v.recordErrors) < maxRecordErrors {
			v.recordErrors = append(v.recordErrors, kmsg.ProduceResponseTopicPartitionErrorRecord{RelativeOffset: index, ErrorMessage: &msg})
		}
	}
	// The records were walked and found well-formed: WalkRecords cannot fail here.
	_ = batch.WalkRecords(recs, h.RecordCount, func(r batch.RecordInfo) bool {
		defer func() { index++ }()
		ts := h.BaseTimestamp + r.TimestampDelta
		if producerLogAppendTime {
			ts = h.MaxTimestamp
		}
		maxTs = max(maxTs, ts)
		if s.CleanupCompact && r.Key == nil {
			add("Compacted topic cannot accept message without key in topic partition " + tp.String())
			return true
		}
		if !logAppendTimeTopic && ts != noTimestamp {
			if timestampOutOfRange(ts, nowMs, s) {
				timestampErrors++
				add(fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
					ts, r.OffsetDelta, nowMs-s.MessageTimestampBeforeMaxMs, nowMs+s.MessageTimestampAfterMaxMs))
			}
		} else if producerLogAppendTime {
			timestampErrors++
			add(fmt.Sprintf("Invalid timestamp type in message with offset %d. Producer should not set timestamp type to LogAppendTime.", r.OffsetDelta))
		}
		return true
	})
	switch {
	case total == 0:
		v.code = 0
		return v, maxTs
	case timestampErrors > 0:
		v.code, v.withLogStart = kerr.InvalidTimestamp.Code, true
		msg := "One or more records have been rejected due to invalid timestamp"
		v.message = &msg
		return v, maxTs
	}
	v.code, v.withLogStart = kerr.InvalidRecord.Code, true
	shown := ""
	for i, e := range v.recordErrors[:min(3, len(v.recordErrors))] {
		if i > 0 {
			shown += ", "
		}
		shown += fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.RelativeOffset, *e.ErrorMessage)
	}
	msg := fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]", total, shown)
	v.message = &msg
	return v, maxTs
}

// maxDecompressedBatch bounds what one compressed batch may expand to during validation (at
// least; 32 × max.message.bytes when that is larger), so a decompression bomb costs bounded
// memory. A batch that expands further is answered as one that does not decompress.
const maxDecompressedBatch = 64 << 20
