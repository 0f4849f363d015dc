package logstore

import (
	"fmt"
	"sort"

	"sluice/internal/batch"
)

// segmentIndexFor returns the index of the segment that holds offset: the last one whose base
// offset <= offset (0 if offset is below every base).
// REQUIRES: mu held (shared suffices).
func (l *Log) segmentIndexFor(offset int64) int {
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset })
	if i == 0 {
		return 0
	}
	return i - 1
}

// Read returns whole batches starting with the one that contains offset, from one segment, none
// starting at or after maxOffset (the high watermark), at most maxBytes in total except that
// minOneBatch returns the first batch whole even if it is larger. offset < log start or > log
// end is ErrOffsetOutOfRange; offset == log end gives an empty result. The slices stay readable
// for file.delete.delay.ms even if retention deletes their segment meanwhile.
func (l *Log) Read(offset int64, maxBytes int64, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return ReadResult{}, ErrClosed
	}
	res := ReadResult{LogStartOffset: l.mu.logStart, LogEndOffset: l.mu.logEnd}
	if offset < l.mu.logStart || offset > l.mu.logEnd {
		return res, fmt.Errorf("%w: offset %d, log [%d, %d)", ErrOffsetOutOfRange, offset, l.mu.logStart, l.mu.logEnd)
	}
	if offset == l.mu.logEnd || offset >= maxOffset {
		return res, nil
	}
	buf := make([]byte, batch.HeaderSize)
	for i := l.segmentIndexFor(offset); i < len(l.mu.segments); i++ {
		seg := l.mu.segments[i]
		start, h, found, err := seg.findBatch(offset, buf)
		if err != nil {
			return res, fmt.Errorf("%w: segment %d: %v", ErrCorruptBatch, seg.baseOffset, err)
		}
		if !found {
			continue
		}
		if h.BaseOffset >= maxOffset || (h.Size() > maxBytes && !minOneBatch) {
			return res, nil
		}
		end := start + h.Size()
		budget := max(maxBytes, h.Size())
		if budget > seg.size-start {
			budget = seg.size - start
		}
		limit := start + budget
		if maxOffset >= seg.nextOffset && seg.size <= limit {
			end = seg.size
		} else if p := seg.index.lastBefore(limit, maxOffset); p > end {
			// Every batch before an indexed batch that starts at or below limit and ends
			// below maxOffset fits both bounds: jump there and walk on from it.
			end = p
		}
		for end < seg.size {
			h, err := readHeaderAt(seg.log, end, seg.size, buf)
			if err != nil {
				return res, fmt.Errorf("%w: segment %d: %v", ErrCorruptBatch, seg.baseOffset, err)
			}
			if h.BaseOffset >= maxOffset || end+h.Size() > limit {
				break
			}
			end += h.Size()
		}
		res.Slices = []FileSlice{{File: seg.log, Position: start, Length: end - start}}
		res.Bytes = end - start
		l.readaheadLocked(seg, end)
		return res, nil
	}
	return res, nil
}

// OffsetForTimestamp finds the first offset (>= log start) whose record timestamp is >= ts,
// as Kafka's ListOffsets does. The record is exact for uncompressed batches, and for
// compressed ones when Options.Decompress is set; otherwise it is the batch's first offset
// with the batch's max timestamp (the consumer skips the earlier records itself). ok is false
// if no batch has such a timestamp.
func (l *Log) OffsetForTimestamp(ts int64) (OffsetAndEpoch, bool) {
	b, h, logStart, ok := l.batchForTimestamp(ts)
	if !ok {
		return OffsetAndEpoch{}, false
	}
	return l.recordAtTimestamp(b, &h, logStart, func(offset, recordTs int64) bool {
		return recordTs >= ts && offset >= logStart
	}), true
}

// batchForTimestamp returns the first batch (bytes, if worth walking) with max timestamp >= ts
// ending at or after the log start.
func (l *Log) batchForTimestamp(ts int64) (b []byte, h batch.Header, logStart int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil, h, 0, false
	}
	logStart = l.mu.logStart
	buf := make([]byte, batch.HeaderSize)
	for i := l.segmentIndexFor(logStart); i < len(l.mu.segments); i++ {
		seg := l.mu.segments[i]
		if seg.maxTimestamp < ts {
			continue
		}
		seg.ensureIndexes()
		_, fromOffset := seg.timeIndex.lookup(ts)
		_, pos := seg.index.lookup(fromOffset)
		for pos < seg.size {
			h, err := readHeaderAt(seg.log, pos, seg.size, buf)
			if err != nil {
				return nil, h, 0, false
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= logStart {
				return l.batchBytesLocked(seg, pos, &h), h, logStart, true
			}
			pos += h.Size()
		}
	}
	return nil, h, 0, false
}

// MaxTimestamp returns the offset and timestamp of the record with the largest timestamp (the
// first such record), as ListOffsets MAX_TIMESTAMP; ok is false for an empty log.
func (l *Log) MaxTimestamp() (OffsetAndEpoch, bool) {
	b, h, maxTs, logStart, ok := l.batchOfMaxTimestamp()
	if !ok {
		return OffsetAndEpoch{}, false
	}
	return l.recordAtTimestamp(b, &h, logStart, func(offset, recordTs int64) bool {
		return recordTs == maxTs && offset >= logStart
	}), true
}

func (l *Log) batchOfMaxTimestamp() (b []byte, h batch.Header, maxTs, logStart int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed || l.mu.logStart == l.mu.logEnd {
		return nil, h, 0, 0, false
	}
	logStart = l.mu.logStart
	var best *segment
	for i := l.segmentIndexFor(logStart); i < len(l.mu.segments); i++ {
		if s := l.mu.segments[i]; s.maxTimestamp >= 0 && (best == nil || s.maxTimestamp > best.maxTimestamp) {
			best = s
		}
	}
	if best == nil {
		return nil, h, 0, 0, false
	}
	buf := make([]byte, batch.HeaderSize)
	pos, h, found, err := best.findBatch(best.offsetOfMaxTimestamp, buf)
	if err != nil || !found || h.LastOffset() < logStart {
		return nil, h, 0, 0, false
	}
	return l.batchBytesLocked(best, pos, &h), h, best.maxTimestamp, logStart, true
}

// batchBytesLocked reads the batch at pos if its records can be walked for timestamps (not
// LogAppendTime, not too large, and decodable), else returns nil.
// REQUIRES: mu held (shared suffices).
func (l *Log) batchBytesLocked(seg *segment, pos int64, h *batch.Header) []byte {
	if h.Attributes&batch.AttrTimestampType != 0 || h.Size() > 64<<20 || (h.Compression() != 0 && l.decompress == nil) {
		return nil
	}
	b := make([]byte, h.Size())
	if _, err := seg.log.ReadAt(b, pos); err != nil {
		return nil
	}
	return b
}

// recordAtTimestamp returns the first record of batch b (header h) that match accepts, or the
// batch's first offset (clamped to log start) with its max timestamp when b is nil (not
// walkable) or no record matches. Runs without the lock: decompression may take a while.
func (l *Log) recordAtTimestamp(b []byte, h *batch.Header, logStart int64, match func(offset, ts int64) bool) OffsetAndEpoch {
	res := OffsetAndEpoch{Offset: max(h.BaseOffset, logStart), Timestamp: h.MaxTimestamp, LeaderEpoch: h.PartitionLeaderEpoch}
	if b == nil {
		return res
	}
	if h.Compression() != 0 {
		// Rebuild an uncompressed batch image (header + decoded records) to walk.
		records, err := l.decompress(h.Compression(), b[batch.HeaderSize:])
		if err != nil {
			return res
		}
		plain := append(b[:batch.HeaderSize:batch.HeaderSize], records...)
		batch.SetLength(plain, int32(len(plain)-batch.LogOverhead))
		batch.SetCompression(plain, 0)
		b = plain
	}
	batch.ForEachRecord(b, func(r batch.RecordInfo) bool {
		off, ts := h.BaseOffset+int64(r.OffsetDelta), h.BaseTimestamp+r.TimestampDelta
		if match(off, ts) {
			res.Offset, res.Timestamp = off, ts
			return false
		}
		return true
	})
	return res
}

// EarliestOffset answers ListOffsets EARLIEST: the log start offset with the leader epoch that
// wrote it (Kafka looks it up in the epoch cache), timestamp -1.
func (l *Log) EarliestOffset() OffsetAndEpoch {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return OffsetAndEpoch{Offset: l.mu.logStart, Timestamp: -1, LeaderEpoch: l.mu.epochs.epochFor(l.mu.logStart)}
}

// LatestOffset answers ListOffsets LATEST: the log end offset with the latest leader epoch,
// timestamp -1.
func (l *Log) LatestOffset() OffsetAndEpoch {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return OffsetAndEpoch{Offset: l.mu.logEnd, Timestamp: -1, LeaderEpoch: l.mu.epochs.latestEpoch()}
}
