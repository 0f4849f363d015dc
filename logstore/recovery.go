package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sluice/internal/batch"
)

// load opens the directory's segments and recovers the log (see the package doc).
// REQUIRES: called from Open only (no concurrency).
func (l *Log) load() error {
	if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	// A cleaned segment whose swap was committed (<base>.log.swap) replaces the old one
	// before anything else looks at the directory (cleaner.go).
	if swapped, err := l.completeSwaps(names); err != nil {
		return err
	} else if swapped {
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return err
		}
	}
	var bases, snapshots []int64
	hasLog := map[int64]bool{}
	indexFiles := map[int64]int{} // base → number of index files present (2 = both)
	hasTxnIndex := map[int64]bool{}
	for _, name := range names {
		if b, ok := parseOffsetName(name, logSuffix); ok {
			bases = append(bases, b)
			hasLog[b] = true
		}
		if b, ok := parseOffsetName(name, indexSuffix); ok {
			indexFiles[b]++
		}
		if b, ok := parseOffsetName(name, timeIndexSuffix); ok {
			indexFiles[b]++
		}
		if b, ok := parseOffsetName(name, txnIndexSuffix); ok {
			hasTxnIndex[b] = true
		}
	}
	for _, name := range names {
		path := filepath.Join(l.dir, name)
		switch {
		case strings.HasSuffix(name, tmpSuffix), strings.HasSuffix(name, ".deleted"),
			strings.HasSuffix(name, ".cleaned"), strings.HasSuffix(name, ".swap"):
			// Leftovers of an interrupted checkpoint write or (Kafka) delete/compaction.
			if err := l.fs.Remove(path); err != nil && !isNotExist(err) {
				return err
			}
		case strings.HasSuffix(name, snapshotSuffix):
			if b, ok := parseOffsetName(name, snapshotSuffix); ok {
				snapshots = append(snapshots, b)
			}
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix), strings.HasSuffix(name, txnIndexSuffix):
			b, ok := parseOffsetName(name, filepath.Ext(name))
			if ok && !hasLog[b] {
				if err := l.fs.Remove(path); err != nil && !isNotExist(err) {
					return err
				}
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	sort.Slice(snapshots, func(i, j int) bool { return snapshots[i] < snapshots[j] })

	recoveryPoint, rpOK := readOffsetCheckpoint(l.fs, l.dir, recoveryPointFile)
	logStart, lsOK := readOffsetCheckpoint(l.fs, l.dir, logStartOffsetFile)
	rpRead, lsRead := recoveryPoint, logStart
	// trustBelow is the offset below which segments are trusted without a scan; recoveryPoint
	// stays the offset below which every segment was flushed, which decides what a damaged
	// segment may cost (see below).
	trustBelow := recoveryPoint
	epochData, err := readFile(l.fs, filepath.Join(l.dir, leaderEpochFile))
	if err != nil {
		return err
	}
	if data := epochData; data != nil {
		c, err := decodeEpochCache(data)
		if err != nil {
			l.logger.Warn("logstore: ignoring bad leader-epoch-checkpoint; rebuilding from batches", "dir", l.dir, "err", err)
			trustBelow = 0 // the scan restores epochs from batch headers
		}
		l.mu.epochs = c
	}

	if len(bases) == 0 {
		seg, err := openSegmentFiles(l.fs, l.dir, logStart, true, &l.mu.cfg)
		if err != nil {
			return err
		}
		l.initNewSegment(seg)
		l.mu.segments = []*segment{seg}
		// The directory fsyncs wait for the first fsync of appended data (syncCreated):
		// creating thousands of partitions must not cost thousands of fsyncs.
		l.created.pending.Store(true)
	}
	lostTail := false         // recovery cut bytes off some segment
	var rebuildTxn []*segment // segments whose .txnindex is rebuilt from their markers
	for i, base := range bases {
		seg, err := openSegmentFiles(l.fs, l.dir, base, false, &l.mu.cfg)
		if err != nil {
			return err
		}
		l.initNewSegment(seg)
		l.mu.segments = append(l.mu.segments, seg)
		nextBase := int64(-1)
		if i+1 < len(bases) {
			nextBase = bases[i+1]
		}
		rp := trustBelow
		if indexFiles[base] < 2 {
			rp = 0 // a missing index: rebuild it by recovering the segment, as Kafka does
		}
		if hasTxnIndex[base] {
			if err := seg.loadTxnIndex(l.fs, l.dir); errors.Is(err, ErrCorruptTxnIndex) {
				l.logger.Warn("logstore: damaged transaction index; recovering its segment to rebuild it", "file", fileName(l.dir, base, txnIndexSuffix))
				rp = 0
			} else if err != nil {
				return err
			}
		}
		// A segment wholly below the recovery point was flushed: its batches were durable,
		// so damage found in it is damage to the disk's contents, not a lost unsynced tail.
		// It costs the damaged segment its invalid bytes and nothing else.
		flushed := nextBase >= 0 && nextBase <= recoveryPoint
		recovered, truncated, err := l.loadSegment(seg, nextBase, rp, recoveryPoint)
		if err != nil {
			return fmt.Errorf("segment %d: %w", base, err)
		}
		lostTail = lostTail || truncated
		if recovered {
			// Its aborted transactions are re-read from its markers by the producer-state
			// replay (rebuildProducerStateLocked).
			if err := seg.resetTxnLocked(); err != nil {
				return err
			}
			rebuildTxn = append(rebuildTxn, seg)
		} else if n := len(seg.txn.entries); n > 0 && seg.txn.entries[n-1].LastOffset >= seg.nextOffset {
			// Entries past a trusted segment's end cannot be right: rebuild.
			if err := seg.resetTxnLocked(); err != nil {
				return err
			}
			rebuildTxn = append(rebuildTxn, seg)
		}
		if flushed {
			continue
		}
		// A recovered segment that ends before the next one starts lost its unsynced tail in
		// a crash after the next segment was created (rolled segments are fsynced in the
		// background). sluice rolls at the log end, so in a directory it wrote (it has
		// sluice's recovery-point file) such a hole is never legitimate; later batches were
		// never acknowledged as durable (group commit waits for the roll's fsync), so the log
		// is cut there rather than left with a hole. Kafka-written directories may have
		// compaction gaps and are left alone.
		hole := recovered && rpOK && i+1 < len(bases) && seg.nextOffset < nextBase
		if (truncated || hole) && i+1 < len(bases) {
			lostTail = true
			// Kafka deletes every unflushed segment after one with a corrupt tail.
			l.logger.Warn("logstore: corrupt or lost tail of an unflushed segment; deleting later (unflushed) segments",
				"dir", l.dir, "segment", base, "recoveryPoint", recoveryPoint, "deleted", len(bases)-i-1)
			for _, b := range bases[i+1:] {
				dead := &segment{baseOffset: b}
				if err := dead.removeFiles(l.fs, l.dir); err != nil {
					return err
				}
			}
			if err := l.fs.SyncDir(l.dir); err != nil {
				return err
			}
			break
		}
	}

	segs := l.mu.segments
	logEnd := segs[len(segs)-1].nextOffset
	logStart = max(logStart, segs[0].baseOffset)
	if logStart > logEnd {
		if lostTail {
			// Recovery cut the log below a log start that DeleteRecords or retention had
			// already checkpointed: everything below it was deleted by the user anyway.
			l.logger.Warn("logstore: log start checkpoint beyond the recovered log end; clamping", "dir", l.dir, "logStart", logStart, "logEnd", logEnd)
			logStart = logEnd
		} else {
			// Nothing was cut, so the log end is what it was when the checkpoint was written,
			// and a log start beyond it cannot have been: the file is damaged. Trusting it
			// would delete every segment but the last.
			l.logger.Error("logstore: ignoring a log-start-offset-checkpoint beyond the log end (damaged file); keeping every segment",
				"file", filepath.Join(l.dir, logStartOffsetFile), "logStart", logStart, "logEnd", logEnd)
			logStart = segs[0].baseOffset
		}
	}
	// Segments wholly below the log start (a retention or DeleteRecords interrupted by a crash).
	removed := false
	for len(segs) > 1 && segs[1].baseOffset <= logStart {
		segs[0].closeAll()
		if err := segs[0].removeFiles(l.fs, l.dir); err != nil {
			return err
		}
		segs = segs[1:]
		removed = true
	}
	l.mu.segments = segs
	l.mu.logStart, l.mu.logEnd = logStart, logEnd
	l.mu.epochs.truncateFromEnd(logEnd)
	l.mu.epochs.truncateFromStart(logStart)
	if removed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	// Everything that remains has been fsynced (trusted segments were, recovered ones just were).
	l.flush.flushedOffset = logEnd
	// Rewrite only the checkpoints that changed: opening thousands of cleanly closed
	// partitions should not cost thousands of fsyncs.
	// None is written whose absence reads back the same: no epochs, the log start at the first
	// segment's base, and, for a log of one empty segment, no recovery point. A created
	// partition, and its restarts while idle, cost no checkpoint fsyncs.
	emptyLog := len(segs) == 1 && segs[0].nextOffset == segs[0].baseOffset
	if !bytes.Equal(l.mu.epochs.encode(), epochData) && !(epochData == nil && len(l.mu.epochs.entries) == 0) {
		if err := l.writeEpochCheckpointLocked(); err != nil {
			return err
		}
	}
	lsSame := lsOK && lsRead == logStart || !lsOK && logStart == segs[0].baseOffset // absent reads back as the base
	if !lsSame {
		if err := l.checkpointLogStartLocked(logStart); err != nil {
			return err
		}
	}
	l.checkpointedLogStart = logStart
	l.loadFirstDirty()
	l.recoveryPoint = logEnd
	rpSame := rpOK && rpRead == logEnd || !rpOK && emptyLog
	if !rpSame {
		if err := l.checkpointRecoveryPointLocked(logEnd); err != nil {
			return err
		}
	}
	l.recoveryPointOnDisk = l.recoveryPointOnDisk || rpOK
	if emptyLog && !rpOK {
		// Never flushed since it was created (every flush of data checkpoints the recovery
		// point): its entries may not be durable yet; the first fsync of data makes them so.
		l.created.pending.Store(true)
	}
	// Segments removed above no longer need their index rebuilt.
	rebuildTxn = slices.DeleteFunc(rebuildTxn, func(s *segment) bool { return !slices.Contains(segs, s) })
	return l.rebuildProducerStateLocked(snapshots, rebuildTxn)
}

// loadSegment loads a segment's indexes and finds its end. A segment wholly below the recovery
// point is trusted (its indexes are sanity-checked only); any other is recovered: every batch
// is checked (length, magic, CRC, increasing offsets), the file is truncated after the last
// valid one, and its indexes are rebuilt. nextBase is the following segment's base, -1 for
// the last segment. truncated reports a torn or corrupt tail that was cut off.
// durableBelow is the recovery point checkpoint: a cut below it loses data known durable and
// is logged as an error.
func (l *Log) loadSegment(seg *segment, nextBase, recoveryPoint, durableBelow int64) (recovered, truncated bool, err error) {
	st, err := seg.log.Stat()
	if err != nil {
		return false, false, err
	}
	size := st.Size()
	seg.lastModified = st.ModTime()
	last := nextBase < 0
	trusted := nextBase >= 0 && nextBase <= recoveryPoint || last && recoveryPoint > seg.baseOffset
	if trusted && !last {
		// An older segment: read only the indexes' last entries now; the rest on first use
		// (ensureIndexes), so opening a long log does not load every index into memory.
		ix, ixLen, err1 := readTail(seg.index.file, offsetIndexEntrySize)
		ti, tiLen, err2 := readTail(seg.timeIndex.file, timeIndexEntrySize)
		if err1 != nil || err2 != nil {
			return false, false, errors.Join(err1, err2)
		}
		if ixLen%offsetIndexEntrySize == 0 && ixLen/offsetIndexEntrySize <= int64(seg.index.maxEntries) &&
			tiLen%timeIndexEntrySize == 0 && tiLen/timeIndexEntrySize <= int64(seg.timeIndex.maxEntries)+1 {
			seg.index.entries, seg.timeIndex.entries = ix, ti
			_, ok := l.trustSegment(seg, size)
			seg.index.entries, seg.timeIndex.entries = nil, nil
			if ok {
				seg.lazy = &lazyIndexes{}
				return false, false, nil
			}
		}
	}
	if trusted && last {
		if seg.index.entries, err = readAll(seg.index.file); err != nil {
			return false, false, err
		}
		if seg.timeIndex.entries, err = readAll(seg.timeIndex.file); err != nil {
			return false, false, err
		}
		seg.index.written, seg.timeIndex.written = len(seg.index.entries), len(seg.timeIndex.entries)
		if next, ok := l.trustSegment(seg, size); ok && next == recoveryPoint {
			return false, false, nil
		}
	}
	truncated, err = l.recoverSegment(seg, size, durableBelow)
	return true, truncated, err
}

// readTail returns the last entry (entrySize bytes) of an index file and the file's size.
func readTail(f File, entrySize int64) ([]byte, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	n := st.Size()
	if n < entrySize || n%entrySize != 0 {
		return nil, n, nil
	}
	b := make([]byte, entrySize)
	if _, err := f.ReadAt(b, n-entrySize); err != nil && !errors.Is(err, io.EOF) {
		return nil, n, err
	}
	return b, n, nil
}

// trustSegment accepts a segment without reading all of it: its indexes must be sane, and the
// batch headers from the last index entry on must chain exactly to the end of the file.
func (l *Log) trustSegment(seg *segment, size int64) (nextOffset int64, ok bool) {
	if !seg.index.sane(size) {
		return 0, false
	}
	_, pos := seg.index.lookup(1<<63 - 1)
	next := seg.baseOffset
	if n := seg.index.len(); n > 0 {
		next, _ = seg.index.entry(n - 1)
		next++
	}
	var first batch.Header
	haveFirst := false
	if size > 0 {
		h, err := readHeaderAt(seg.log, 0, size, l.hdrBuf)
		if err != nil {
			return 0, false
		}
		first, haveFirst = h, true
	}
	for pos < size {
		h, err := readHeaderAt(seg.log, pos, size, l.hdrBuf)
		if err != nil || h.BaseOffset < seg.baseOffset {
			return 0, false
		}
		next = h.NextOffset()
		pos += h.Size()
	}
	if !seg.timeIndex.sane(next) {
		return 0, false
	}
	seg.size = size
	seg.nextOffset = next
	if ts, off := seg.timeIndex.last(); ts >= 0 {
		seg.maxTimestamp, seg.offsetOfMaxTimestamp = ts, off
	}
	if haveFirst {
		seg.rollingBasedTimestamp = first.MaxTimestamp
		if seg.maxTimestamp < first.MaxTimestamp {
			seg.maxTimestamp, seg.offsetOfMaxTimestamp = first.MaxTimestamp, first.LastOffset()
		}
	}
	return next, true
}

func readAll(f File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// recoverSegment scans every batch of a segment, truncates it after the last valid batch and
// rebuilds both indexes, as Kafka's LogSegment.recover. The cut is logged at ERROR when it
// lies below durableBelow, the recovery point (flushed bytes were damaged on disk), else at
// WARN (an unsynced tail lost in a crash).
func (l *Log) recoverSegment(seg *segment, size, durableBelow int64) (truncated bool, err error) {
	end, err := l.reindexSegment(seg, size, true)
	if err != nil {
		return false, err
	}
	if end < size {
		file := fileName(l.dir, seg.baseOffset, logSuffix)
		damaged := fmt.Sprintf("[%d, %d)", end, size)
		if seg.nextOffset < durableBelow {
			l.logger.Error("logstore: damaged segment below the recovery point: cutting its invalid bytes; later segments are kept, the offsets after the cut and before the next segment are lost",
				"file", file, "bytes", damaged, "lastValidOffset", seg.nextOffset-1)
		} else {
			l.logger.Warn("logstore: truncating invalid bytes at the tail of an unflushed segment", "file", file, "bytes", damaged)
		}
		if err := seg.log.Truncate(end); err != nil {
			return false, err
		}
	}
	if size > 0 { // an empty segment has nothing to make durable
		if err := seg.syncAll(); err != nil {
			return false, err
		}
	}
	return end < size, nil
}

// reindexSegment rebuilds the indexes and statistics of a segment from its first size bytes and
// returns the end of the valid batches. With verify, each batch's CRC and offsets are checked
// and leader epochs are added to the epoch cache; otherwise only the headers are read.
// REQUIRES: appendMu held or called from load.
func (l *Log) reindexSegment(seg *segment, size int64, verify bool) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seg.ensureIndexes() // a lazy load must not later overwrite what is rebuilt here
	if err := seg.index.truncateLocked(0); err != nil {
		return 0, err
	}
	if err := seg.timeIndex.truncateLocked(0); err != nil {
		return 0, err
	}
	seg.size, seg.nextOffset = 0, seg.baseOffset
	seg.maxTimestamp, seg.offsetOfMaxTimestamp = -1, -1
	seg.bytesSinceLastIndexEntry, seg.rollingBasedTimestamp = 0, -1
	interval := l.mu.cfg.IndexIntervalBytes
	sc := scanner{f: seg.log, size: size}
	pos := int64(0)
	for pos < size {
		b, h, err := sc.next(pos, verify)
		if err != nil {
			if errors.Is(err, errScanIO) {
				return 0, err
			}
			break
		}
		_ = b
		if h.BaseOffset < seg.nextOffset || h.LastOffset()-seg.baseOffset > 1<<31-1 {
			break
		}
		if err := seg.indexBatchLocked(&h, pos, interval); err != nil {
			return 0, err
		}
		if verify {
			l.mu.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		}
		pos += h.Size()
		seg.size = pos
	}
	return pos, nil
}

var errScanIO = errors.New("logstore: read error while scanning")

// scanner reads batches from a file through a window buffer.
type scanner struct {
	f        File
	size     int64
	buf      []byte
	bufStart int64
}

const scanWindow = 1 << 20

// next returns the batch at pos (whole, if verify; else just the header), checking it.
func (s *scanner) next(pos int64, verify bool) ([]byte, batch.Header, error) {
	hdr, err := s.window(pos, batch.HeaderSize)
	if err != nil {
		return nil, batch.Header{}, err
	}
	h, err := batch.ParseHeader(hdr)
	if err != nil {
		return nil, h, err
	}
	if h.Size() > s.size-pos {
		return nil, h, batch.ErrTruncated
	}
	if !verify {
		return hdr, h, nil
	}
	b, err := s.window(pos, h.Size())
	if err != nil {
		return nil, h, err
	}
	h, err = batch.Check(b)
	return b, h, err
}

// window returns bytes [pos, pos+n) of the file, or batch.ErrTruncated past the end.
func (s *scanner) window(pos, n int64) ([]byte, error) {
	if pos+n > s.size {
		return nil, batch.ErrTruncated
	}
	if pos >= s.bufStart && pos+n <= s.bufStart+int64(len(s.buf)) {
		return s.buf[pos-s.bufStart : pos-s.bufStart+n], nil
	}
	want := max(n, scanWindow)
	if pos+want > s.size {
		want = s.size - pos
	}
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	k, err := s.f.ReadAt(s.buf, pos)
	if int64(k) < want {
		if err == nil || errors.Is(err, io.EOF) {
			s.buf = s.buf[:k]
			s.bufStart = pos
			if int64(k) < n {
				return nil, batch.ErrTruncated
			}
			return s.buf[:n], nil
		}
		return nil, fmt.Errorf("%w: %v", errScanIO, err)
	}
	s.bufStart = pos
	return s.buf[:n], nil
}

// rebuildProducerStateLocked loads the newest valid snapshot at or below the log end and
// replays the batches after it (Kafka's ProducerStateManager.truncateAndReload). rebuildTxn
// are segments (ascending) whose .txnindex was emptied by recovery: the replay then starts at
// a snapshot at or below the first of them (or at the log start) and re-adds their aborted
// transactions as it passes their ABORT markers, as Kafka's LogSegment.recover does.
// REQUIRES: appendMu held or called from load.
func (l *Log) rebuildProducerStateLocked(snapshots []int64, rebuildTxn []*segment) error {
	l.mu.RLock()
	logEnd, segs := l.mu.logEnd, l.mu.segments
	l.mu.RUnlock()
	l.producers = newProducerState()
	l.producersDirty = true
	var ended []txnSpan // transactions the replay saw end
	defer func() { l.resetTxnStateLocked(ended) }()
	from := segs[0].baseOffset
	need := int64(math.MaxInt64) // the replay must start at or below it
	rebuild := map[*segment]bool{}
	for _, seg := range rebuildTxn {
		need = min(need, seg.baseOffset)
		rebuild[seg] = true
	}
	var kept []int64
	loaded := false
	for i := len(snapshots) - 1; i >= 0; i-- {
		off := snapshots[i]
		path := fileName(l.dir, off, snapshotSuffix)
		if off > logEnd || len(kept) >= 2 {
			if err := l.fs.Remove(path); err != nil && !isNotExist(err) {
				return err
			}
			continue
		}
		if !loaded && off <= need {
			data, err := readFile(l.fs, path)
			if err != nil {
				return err
			}
			snapOff, p, err := decodeSnapshot(data)
			if err != nil || snapOff != off {
				l.logger.Warn("logstore: removing unreadable producer snapshot", "dir", l.dir, "file", path)
				if err := l.fs.Remove(path); err != nil && !isNotExist(err) {
					return err
				}
				continue
			}
			l.producers = p
			from = max(off, from)
			loaded = true
		}
		kept = append([]int64{off}, kept...)
	}
	l.snapshots = kept
	if from >= logEnd {
		l.producersDirty = len(kept) == 0 || kept[len(kept)-1] != logEnd
		return nil
	}
	type pendingTxn struct {
		seg *segment
		txn AbortedTxn
	}
	var pending []pendingTxn
	err := func() error {
		l.mu.RLock()
		defer l.mu.RUnlock()
		var body []byte
		for i := l.segmentIndexFor(from); i < len(segs); i++ {
			seg := segs[i]
			seg.ensureIndexes()
			_, pos := seg.index.lookup(from)
			for pos < seg.size {
				h, err := readHeaderAt(seg.log, pos, seg.size, l.hdrBuf)
				if err != nil {
					return err
				}
				if h.BaseOffset >= from {
					var marker *endTxnMarker
					if h.IsControl() && h.HasProducerID() && h.Size() <= 1<<16 {
						body = append(body[:0], make([]byte, h.Size())...)
						if _, err := seg.log.ReadAt(body, pos); err != nil {
							return err
						}
						if m, ok, err := parseEndTxnMarker(&h, body); err == nil && ok {
							marker = &m
						}
					}
					first := l.producers.replay(&h, marker)
					if first >= 0 {
						ended = append(ended, txnSpan{first: first, last: h.BaseOffset})
					}
					if first >= 0 && !marker.commit && rebuild[seg] {
						lso := h.BaseOffset + 1
						if f := l.producers.firstOngoing(); f >= 0 && f < lso {
							lso = f
						}
						pending = append(pending, pendingTxn{seg, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, LastStableOffset: lso}})
					}
				}
				pos += h.Size()
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, p := range pending {
			if err := p.seg.appendTxnLocked(l.fs, l.dir, p.txn); err != nil {
				return err
			}
		}
		for seg := range rebuild {
			if seg.txn.file != nil {
				if err := seg.txn.file.Sync(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var _ = os.ErrNotExist
