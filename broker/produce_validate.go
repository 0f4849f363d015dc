package broker

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/batch"
	"sluice/internal/compress"
	"sluice/internal/config"
)

// noTimestamp is RecordBatch.NO_TIMESTAMP: a batch without timestamps passes the time checks.
const noTimestamp = -1

// compressionZstd is the zstd codec's attribute value.
const compressionZstd = 4

// checkProduceBatches makes the checks Kafka's produce path makes before the log sees a batch:
// exactly one magic-v2 batch per partition (INVALID_RECORD), within max.message.bytes
// (MESSAGE_TOO_LARGE), and with
// on a compacted topic a key on every record (INVALID_RECORD), and with
// message.timestamp.type=CreateTime its timestamps within message.timestamp.before.max.ms /
// after.max.ms of now (INVALID_TIMESTAMP). For LogAppendTime topics it stamps every batch
// with now. Framing and CRC problems are left to the log, which answers CORRUPT_MESSAGE.
//
// zstd batches need Produce v7+ (UNSUPPORTED_COMPRESSION_TYPE), as in Kafka, since older
// clients could not read them back.
//
// Kafka checks every record's timestamp; sluice checks the batch's first and max timestamps,
// which bound the records' from above and catch clock skew without decoding records.
func checkProduceBatches(records []byte, produceVersion int16, s *config.TopicSettings, now time.Time) (code int16, logAppendTime int64) {
	if len(records) == 0 {
		return kerr.CorruptMessage.Code, -1
	}
	nowMs := now.UnixMilli()
	logAppendTime = -1
	if s.MessageTimestampType == "LogAppendTime" {
		logAppendTime = nowMs
	}
	for rest := records; len(rest) > 0; {
		// The header only: the log verifies the CRC (once, on the append path), as Kafka's
		// checks the size before the CRC.
		h, err := batch.ParseHeader(rest)
		if errors.Is(err, batch.ErrMagic) {
			return kerr.InvalidRecord.Code, -1 // Kafka: produce v3+ must carry magic v2 batches
		}
		if err != nil || h.Size() > int64(len(rest)) {
			return 0, logAppendTime // the log rejects it with the precise code
		}
		size := h.Size()
		if size < int64(len(rest)) {
			// Kafka's ProduceRequest.validateRecords: exactly one batch per partition from v3.
			return kerr.InvalidRecord.Code, -1
		}
		if size > int64(s.MaxMessageBytes) {
			return kerr.MessageTooLarge.Code, -1
		}
		if h.Compression() == compressionZstd && produceVersion < 7 {
			return kerr.UnsupportedCompressionType.Code, -1
		}
		if h.Compression() != 0 {
			if code := checkCompressedRecords(&h, rest[:size], s); code != 0 {
				return code, -1
			}
		} else if s.CleanupCompact && hasKeylessRecord(rest[batch.HeaderSize:size], h.RecordCount) {
			// Kafka's LogValidator: a compacted topic cannot accept a record without a key.
			return kerr.InvalidRecord.Code, -1
		}
		if logAppendTime >= 0 {
			// Stamping rewrites the CRC, so a corrupt batch must be caught first.
			if _, err := batch.Check(rest[:size]); err != nil {
				return 0, logAppendTime // the log rejects it (CORRUPT_MESSAGE)
			}
			batch.SetLogAppendTime(rest[:size], nowMs)
		} else if !timestampInWindow(h.BaseTimestamp, nowMs, s) || !timestampInWindow(h.MaxTimestamp, nowMs, s) {
			return kerr.InvalidTimestamp.Code, -1
		}
		rest = rest[size:]
	}
	return 0, logAppendTime
}

// checkCompressedRecords decompresses a compressed batch and checks its records as the log
// checks an uncompressed batch's (framing, sequential offset deltas, count), since Kafka's
// LogValidator refuses a compressed batch whose payload does not decode rather than store what
// consumers cannot read. It costs a decompression per compressed batch, as in Kafka.
func checkCompressedRecords(h *batch.Header, b []byte, s *config.TopicSettings) int16 {
	limit := max(maxDecompressedBatch, 32*int(s.MaxMessageBytes))
	records, err := compress.Decompress(h.Compression(), b[batch.HeaderSize:], limit)
	if err != nil {
		return kerr.CorruptMessage.Code
	}
	walked, err := batch.CheckRecordsSequential(records, h.RecordCount)
	switch {
	case err != nil:
		return kerr.CorruptMessage.Code
	case walked != h.RecordCount:
		return kerr.InvalidRecord.Code
	case s.CleanupCompact && hasKeylessRecord(records, h.RecordCount):
		return kerr.InvalidRecord.Code
	}
	return 0
}

// maxDecompressedBatch bounds what one compressed batch may expand to during validation (at
// least; 32 × max.message.bytes when that is larger), so a decompression bomb costs bounded
// memory.
const maxDecompressedBatch = 64 << 20

func timestampInWindow(ts, nowMs int64, s *config.TopicSettings) bool {
	if ts == noTimestamp {
		return true
	}
	if ts < nowMs && nowMs-ts > s.MessageTimestampBeforeMaxMs {
		return false
	}
	return ts <= nowMs || ts-nowMs <= s.MessageTimestampAfterMaxMs
}
