package logstore

import (
	"fmt"
	"math"
	"time"
)

// EnforceRetention runs the periodic work of the log: it closes files of segments deleted more
// than file.delete.delay.ms ago, rolls the active segment when segment.ms has passed, expires
// idle producer state (producer.id.expiration.ms), flushes
// when flush.ms has passed, and deletes the oldest segments that are expired by retention.ms,
// beyond retention.bytes, or wholly below the log start offset (Kafka's deleteOldSegments).
// The active segment is deleted only by rolling it first, when every segment has expired.
func (l *Log) EnforceRetention() error { return l.EnforceRetentionUpTo(math.MaxInt64) }

// EnforceRetentionUpTo is EnforceRetention that never moves the log start offset past limit:
// a segment is deleted only when the next one starts at or below limit, as Kafka's
// deleteOldSegments deletes only segments wholly below the high watermark, so records a
// follower may still need (or consumers cannot see yet) are kept.
func (l *Log) EnforceRetentionUpTo(limit int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	now := l.now()
	l.closePendingLocked(now, false)
	cfg := l.cfg()

	l.mu.RLock()
	act := l.active()
	logEnd := l.mu.logEnd
	l.mu.RUnlock()
	if !act.empty() {
		waited := now.Sub(act.created).Milliseconds()
		if act.rollingBasedTimestamp >= 0 {
			waited = now.UnixMilli() - act.rollingBasedTimestamp
		}
		expired := cfg.RetentionMs >= 0 && now.UnixMilli()-act.largestTimestamp() > cfg.RetentionMs
		if waited > cfg.SegmentMs-act.rollJitterMs || (expired && l.allButActiveExpired(now, &cfg)) {
			if err := l.rollLocked(logEnd); err != nil {
				return l.fail(err)
			}
		}
	}
	if l.producers.expire(now.UnixMilli()-cfg.ProducerIDExpirationMs) > 0 {
		l.producersDirty = true
	}
	if now.Sub(l.lastFlush).Milliseconds() >= cfg.FlushMs && l.flushedOffset() < logEnd {
		if err := l.flushLocked(); err != nil {
			return l.fail(err)
		}
	}

	l.mu.RLock()
	segs := l.mu.segments
	logStart := l.mu.logStart
	var total int64
	for _, s := range segs {
		total += s.size
	}
	l.mu.RUnlock()
	excess := total - cfg.RetentionBytes
	n := 0
	for i := 0; i < len(segs)-1; i++ {
		s := segs[i]
		expired := cfg.RetentionMs >= 0 && now.UnixMilli()-s.largestTimestamp() > cfg.RetentionMs
		tooBig := cfg.RetentionBytes >= 0 && excess-s.size >= 0
		belowStart := segs[i+1].baseOffset <= logStart
		if !expired && !tooBig && !belowStart {
			break
		}
		if segs[i+1].baseOffset > limit && !belowStart {
			break
		}
		excess -= s.size
		n++
	}
	if n == 0 {
		return nil
	}
	l.logger.Info("logstore: deleting segments by retention", "dir", l.dir, "segments", n, "newLogStart", max(logStart, segs[n].baseOffset))
	return l.fail(l.deleteSegmentsBeforeLocked(n, max(logStart, segs[n].baseOffset)))
}

// allButActiveExpired reports whether every non-active segment is expired by time.
func (l *Log) allButActiveExpired(now time.Time, cfg *Config) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.mu.segments[:len(l.mu.segments)-1] {
		if now.UnixMilli()-s.largestTimestamp() <= cfg.RetentionMs {
			return false
		}
	}
	return true
}

// deleteSegmentsBeforeLocked deletes the first n segments and moves the log start to newStart.
// The log start checkpoint is written first, so a crash leaves at worst segments below the log
// start, which Open deletes.
// REQUIRES: appendMu held; n < len(segments).
func (l *Log) deleteSegmentsBeforeLocked(n int, newStart int64) error {
	if err := l.checkpointLogStartLocked(newStart); err != nil {
		return err
	}
	l.mu.Lock()
	dead := append([]*segment(nil), l.mu.segments[:n]...)
	l.mu.segments = append([]*segment(nil), l.mu.segments[n:]...)
	l.mu.logStart = max(l.mu.logStart, newStart)
	epochsChanged := l.mu.epochs.truncateFromStart(l.mu.logStart)
	l.mu.Unlock()
	for _, s := range dead {
		if err := s.removeFiles(l.fs, l.dir); err != nil {
			return err
		}
	}
	l.scheduleCloseLocked(dead)
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	if epochsChanged {
		return l.writeEpochCheckpointLocked()
	}
	return nil
}

// DeleteRecordsBefore moves the log start offset forward to offset (never backward; offset
// beyond the log end is ErrOffsetOutOfRange) and deletes segments wholly below it. It returns
// the new log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	l.mu.RLock()
	logStart, logEnd, segs := l.mu.logStart, l.mu.logEnd, l.mu.segments
	l.mu.RUnlock()
	if offset > logEnd {
		return logStart, fmt.Errorf("%w: delete records before %d beyond log end %d", ErrOffsetOutOfRange, offset, logEnd)
	}
	if offset <= logStart {
		return logStart, nil
	}
	n := 0
	for n < len(segs)-1 && segs[n+1].baseOffset <= offset {
		n++
	}
	if err := l.deleteSegmentsBeforeLocked(n, offset); err != nil {
		return 0, l.fail(err)
	}
	return offset, nil
}

// TruncateTo removes every batch that ends at or after offset... precisely: the log keeps the
// batches wholly below offset and drops the batch containing offset and all later ones (a
// follower truncating to a leader's epoch end offset, which is a batch boundary). The result is
// fsynced before TruncateTo returns.
func (l *Log) TruncateTo(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	l.mu.RLock()
	logEnd, segs := l.mu.logEnd, l.mu.segments
	l.mu.RUnlock()
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= logEnd {
		return nil
	}
	l.noteTruncationLocked(offset)
	if offset < segs[0].baseOffset {
		return l.fail(l.truncateFullyLocked(offset))
	}
	return l.fail(l.truncateToLocked(offset))
}

// REQUIRES: appendMu held; segments[0].baseOffset <= offset < logEnd.
func (l *Log) truncateToLocked(offset int64) error {
	// Segments before the cut must be durable before settleTruncation says so.
	if err := l.waitRollSyncs(); err != nil {
		return err
	}
	// A stale recovery point above the cut would make Open trust rewritten bytes.
	if l.recoveryPoint > offset {
		if err := l.checkpointRecoveryPointLocked(offset); err != nil {
			return err
		}
	}
	l.resetFlushed(offset)
	l.mu.Lock()
	k := l.segmentIndexFor(offset)
	dead := append([]*segment(nil), l.mu.segments[k+1:]...)
	l.mu.segments = l.mu.segments[:k+1]
	seg := l.mu.segments[k]
	pos, _, found, err := seg.findBatch(offset, l.hdrBuf)
	if err == nil && found {
		l.mu.logEnd = offset // readers see nothing past the cut while it is made
	}
	l.mu.Unlock()
	if err != nil {
		return err
	}
	// Newest first, so a crash leaves a prefix of the old log.
	for i := len(dead) - 1; i >= 0; i-- {
		if err := dead[i].removeFiles(l.fs, l.dir); err != nil {
			return err
		}
	}
	if len(dead) > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	l.scheduleCloseLocked(dead)
	if found {
		if err := seg.log.Truncate(pos); err != nil {
			return err
		}
	} else {
		pos = seg.size
	}
	if _, err := l.reindexSegment(seg, pos, false); err != nil {
		return err
	}
	l.mu.Lock()
	err = seg.truncateTxnLocked(seg.nextOffset)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := seg.syncAll(); err != nil {
		return err
	}
	l.mu.Lock()
	l.mu.logEnd = seg.nextOffset
	l.mu.logStart = min(l.mu.logStart, l.mu.logEnd)
	l.mu.epochs.truncateFromEnd(l.mu.logEnd)
	logEnd := l.mu.logEnd
	l.mu.Unlock()
	l.settleTruncation(logEnd)
	if err := l.writeEpochCheckpointLocked(); err != nil {
		return err
	}
	if err := l.checkpointRecoveryPointLocked(logEnd); err != nil {
		return err
	}
	// Producer state: drop snapshots past the cut and rebuild from the newest remaining one.
	var keep []int64
	for _, s := range l.snapshots {
		if s > logEnd {
			if err := l.fs.Remove(fileName(l.dir, s, snapshotSuffix)); err != nil && !isNotExist(err) {
				return err
			}
			continue
		}
		keep = append(keep, s)
	}
	return l.rebuildProducerStateLocked(keep, nil)
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty at offset (a
// replica that must fetch from scratch).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrOffsetOutOfRange, offset)
	}
	l.noteTruncationLocked(offset)
	return l.fail(l.truncateFullyLocked(offset))
}

// REQUIRES: appendMu held.
func (l *Log) truncateFullyLocked(offset int64) error {
	if err := l.waitRollSyncs(); err != nil {
		return err
	}
	l.resetFlushed(offset)
	l.mu.Lock()
	dead := l.mu.segments
	l.mu.logEnd = min(l.mu.logEnd, offset) // hide everything while files go
	l.mu.logStart = min(l.mu.logStart, l.mu.logEnd)
	l.mu.Unlock()
	// Newest first, so a crash leaves a prefix of the old log.
	for i := len(dead) - 1; i >= 0; i-- {
		if err := dead[i].removeFiles(l.fs, l.dir); err != nil {
			return err
		}
	}
	for _, s := range l.snapshots {
		if err := l.fs.Remove(fileName(l.dir, s, snapshotSuffix)); err != nil && !isNotExist(err) {
			return err
		}
	}
	l.snapshots = nil
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	seg, err := openSegmentFiles(l.fs, l.dir, offset, true, &l.mu.cfg)
	if err != nil {
		return err
	}
	l.initNewSegment(seg)
	if err := l.fs.SyncDir(l.dir); err != nil {
		seg.closeAll()
		return err
	}
	l.mu.Lock()
	l.mu.segments = []*segment{seg}
	l.mu.logStart, l.mu.logEnd = offset, offset
	l.mu.epochs = epochCache{}
	l.mu.Unlock()
	l.scheduleCloseLocked(dead)
	l.producers = newProducerState()
	l.producersDirty = true
	l.settleTruncation(offset)
	if err := l.writeEpochCheckpointLocked(); err != nil {
		return err
	}
	if err := l.checkpointLogStartLocked(offset); err != nil {
		return err
	}
	return l.checkpointRecoveryPointLocked(offset)
}
