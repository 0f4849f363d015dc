package logstore

import (
	"errors"
	"fmt"
	"math"

	"sluice/internal/batch"
)

// More typed errors (api.go holds the ones the broker already maps).
var (
	ErrInvalidTimestamp       = errors.New("logstore: invalid timestamp")                    // INVALID_TIMESTAMP
	ErrRecordListTooLarge     = errors.New("logstore: record batches larger than a segment") // RECORD_LIST_TOO_LARGE
	ErrUnexpectedAppendOffset = errors.New("logstore: follower batch offset below log end")  // replica fetcher must truncate
)

// validateBatches checks every batch of an append and returns their headers, appended to
// headers (a caller's buffer, to spare an allocation). Leader appends
// get the checks Kafka's LogValidator makes of client batches (record count agrees with
// lastOffsetDelta, uncompressed records well-formed with sequential offset deltas); follower
// appends accept what a leader wrote (compacted batches may skip offsets).
//
// validated (a leader append only) says the broker already checked the bytes as a client's
// batch (LeaderAppend.Validated: CRC, counts, every record, compressed or not), so only the
// header is read: the produce path reads a batch's records once, in the broker.
func validateBatches(data []byte, leader, validated bool, headers []batch.Header) ([]batch.Header, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: no record batches", ErrInvalidRecord)
	}
	validated = validated && leader
	for rest := data; len(rest) > 0; {
		var h batch.Header
		var err error
		if validated {
			h, err = batch.CheckWithoutCRC(rest)
		} else {
			h, err = batch.Check(rest)
		}
		if err != nil {
			return nil, mapBatchError(len(headers), err)
		}
		if h.Compression() > 4 {
			return nil, fmt.Errorf("%w: batch %d: unknown compression %d", ErrCorruptBatch, len(headers), h.Compression())
		}
		if h.BaseTimestamp < -1 || h.MaxTimestamp < -1 {
			return nil, fmt.Errorf("%w: batch %d: timestamp %d", ErrInvalidTimestamp, len(headers), h.MaxTimestamp)
		}
		if leader {
			if err := batch.CheckCount(&h); err != nil {
				return nil, fmt.Errorf("%w: batch %d: %d records but lastOffsetDelta %d", ErrInvalidRecord, len(headers), h.RecordCount, h.LastOffsetDelta)
			}
			// Compressed batches' records are checked by the broker after decompression.
			if h.Compression() == 0 && !validated {
				walked, err := batch.CheckRecordsSequential(rest[batch.HeaderSize:h.Size()], h.RecordCount)
				if err != nil {
					return nil, fmt.Errorf("%w: batch %d: malformed record: %v", ErrCorruptBatch, len(headers), err)
				}
				if walked != h.RecordCount {
					return nil, fmt.Errorf("%w: batch %d: record offset deltas not sequential", ErrInvalidRecord, len(headers))
				}
			}
		}
		headers = append(headers, h)
		rest = rest[h.Size():]
	}
	return headers, nil
}

func mapBatchError(i int, err error) error {
	switch {
	case errors.Is(err, batch.ErrMagic):
		return fmt.Errorf("%w: batch %d", ErrUnsupportedMagic, i)
	case errors.Is(err, batch.ErrInvalid):
		return fmt.Errorf("%w: batch %d: %v", ErrInvalidRecord, i, err)
	default:
		return fmt.Errorf("%w: batch %d: %v", ErrCorruptBatch, i, err)
	}
}

// normalizeConfig replaces values that would break the log's arithmetic (not Kafka defaults:
// callers pass complete configs). Positions are int32 in Kafka's index, so a segment never
// exceeds MaxInt32 bytes.
func normalizeConfig(cfg Config) Config {
	if cfg.SegmentBytes <= 0 || cfg.SegmentBytes > math.MaxInt32 {
		cfg.SegmentBytes = math.MaxInt32
	}
	if cfg.SegmentMs <= 0 {
		cfg.SegmentMs = math.MaxInt64
	}
	if cfg.SegmentJitterMs < 0 {
		cfg.SegmentJitterMs = 0
	}
	if cfg.SegmentIndexBytes < timeIndexEntrySize {
		cfg.SegmentIndexBytes = 10 << 20
	}
	if cfg.FlushMessages <= 0 {
		cfg.FlushMessages = math.MaxInt64
	}
	if cfg.FlushMs <= 0 {
		cfg.FlushMs = math.MaxInt64
	}
	if cfg.FileDeleteDelayMs < 0 {
		cfg.FileDeleteDelayMs = 0
	}
	if cfg.ProducerIDExpirationMs <= 0 {
		cfg.ProducerIDExpirationMs = 24 * 3600 * 1000
	}
	return cfg
}

// DefaultConfig is Kafka 4.x's default topic configuration, for tests and tools.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 3600 * 1000,
		SegmentIndexBytes:  10 << 20,
		IndexIntervalBytes: 4096,
		RetentionMs:        7 * 24 * 3600 * 1000,
		RetentionBytes:     -1,
		FlushMessages:      math.MaxInt64,
		FlushMs:            math.MaxInt64,
		FileDeleteDelayMs:  60000,

		ProducerIDExpirationMs: 24 * 3600 * 1000,
	}
}
