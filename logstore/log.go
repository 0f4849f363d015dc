package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"sluice/internal/batch"
)

// Log is one partition's log. All methods are safe for concurrent use. Mutations (appends,
// rolls, truncation, retention, flush, close) are serialized by appendMu; reads take mu shared
// and see only what an appender has published under mu.
type Log struct {
	dir        string
	fs         FS
	now        func() time.Time
	logger     *slog.Logger
	decompress func(codec int, records []byte) ([]byte, error)

	// appendMu serializes every mutation of the log. The fields below it are guarded by it.
	appendMu sync.Mutex
	// producers is the idempotent-producer state as of logEnd.
	producers *producerState
	// verifying are the verification guards handed out by BeginTxnVerification, by producer
	// ID (Kafka's VerificationStateEntry; not persisted). At most maxVerifications.
	verifying map[int64]txnVerification
	lastGuard uint64
	// snapshots are the offsets of producer snapshot files on disk, ascending.
	snapshots []int64
	// rpMu serializes writes of the recovery point checkpoint: appenders write it with
	// appendMu held, the background fsync of a rolled segment (rollSync) with rpMu only (an
	// appender holding appendMu may be waiting for it). recoveryPoint and recoveryPointOnDisk
	// are written with both rpMu and either appendMu or a rollSync's goroutine; read them
	// with rpMu (recoveryPointNow), or with appendMu after waitRollSyncs.
	rpMu sync.Mutex
	// recoveryPoint: every batch below it is fsynced, and the checkpoint file says so (or less).
	recoveryPoint int64
	// recoveryPointOnDisk: the recovery point checkpoint file exists. A created log writes it
	// only on its first roll: recovery takes a file's presence as the mark of a directory
	// sluice wrote (a hole before a later segment is then a lost tail), and a hole needs two
	// segments.
	recoveryPointOnDisk bool
	// checkpointedLogStart is the value in log-start-offset-checkpoint (-1 if unknown).
	checkpointedLogStart int64
	// producersDirty: producers changed since the last snapshot was written.
	producersDirty bool
	lastFlush      time.Time
	// pendingClose are files of deleted segments, closed after file.delete.delay.ms so that
	// slices handed to readers stay readable (Kafka renames and deletes later; we unlink now).
	pendingClose []pendingClose
	hdrBuf       []byte
	onFailure    func(error)

	// failure is the sticky error: once a write fails, the log refuses further mutations.
	failure atomic.Pointer[error]
	// groupCommit mirrors mu.cfg.FlushMessages == 1.
	groupCommit atomic.Bool
	// pendingRoll is the latest background fsync of a rolled segment (nil if none yet).
	pendingRoll atomic.Pointer[rollSync]
	// created holds what a log Open created defers to its first fsync of appended data:
	// Options.BeforeFirstSync and the fsyncs of the directory (the new segment's entries)
	// and of its parent (the directory's own entry). Nothing depends on an empty log's
	// entries being durable; appended data does, from its first fsync on.
	created struct {
		mu sync.Mutex // serializes syncCreated
		// pending: the deferred fsyncs have not been done yet. Set by load, cleared (under
		// mu) once they succeeded.
		pending atomic.Bool
		before  func() error
	}
	// cacheWindow is Options.CacheWindowBytes; dropBehind is guarded by appendMu.
	cacheWindow int64
	dropBehind  dropBehindState

	mu struct {
		sync.RWMutex
		cfg Config
		// segments is sorted by base offset and never empty while open; the last is active.
		segments []*segment
		// Invariant: segments[0].baseOffset <= logStart <= logEnd.
		logStart int64
		// logEnd (LEO) is the offset after the last published batch.
		logEnd int64
		epochs epochCache
		closed bool
	}

	flush flushState

	// txn is what the last stable offset is computed from, readable without appendMu.
	txn struct {
		sync.Mutex
		// ongoingFirst is the smallest first offset of an open transaction (-1: none), as of
		// the producer state (updated with it under appendMu).
		ongoingFirst int64
		// unreplicated are transactions ended by a marker that may not be below the high
		// watermark yet, in marker order: until it is, the transaction still holds the last
		// stable offset back, as Kafka's ProducerStateManager.unreplicatedTxns.
		unreplicated []txnSpan
	}

	// cleanMu serializes Clean runs of this log (cleaner.go).
	cleanMu sync.Mutex
	// firstDirty is where the cleaner's next map starts: below it, the log was cleaned with a
	// map covering everything up to it (cleaner-offset-checkpoint on disk).
	firstDirty atomic.Int64
	// truncations counts truncations (under appendMu): a Clean whose map was built before one
	// must not swap anything in, since the map may hold offsets that no longer exist.
	truncations atomic.Uint64
	// tombstonesDueAt (Unix ms) is when the oldest tombstone the last full clean kept outlives
	// delete.retention.ms, so a log without new dirty data is cleaned again (MaxInt64: none
	// known; after a restart, until the next clean).
	tombstonesDueAt atomic.Int64
}

// txnSpan is a transaction's first offset and its marker's offset.
type txnSpan struct{ first, last int64 }

type pendingClose struct {
	seg *segment
	at  time.Time
}

// Open opens (creating if missing) the log in dir and recovers it: see the package doc.
func Open(dir string, cfg Config, opts Options) (*Log, error) {
	l := &Log{dir: dir, fs: opts.FS, now: opts.Now, logger: opts.Logger, decompress: opts.Decompress, hdrBuf: make([]byte, batch.HeaderSize),
		cacheWindow: opts.CacheWindowBytes, onFailure: opts.OnFailure}
	l.created.before = opts.BeforeFirstSync
	if l.fs == nil {
		l.fs = OSFS{}
	}
	if opts.FileCache != nil {
		l.fs = cachingFS{FS: l.fs, cache: opts.FileCache}
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	l.mu.cfg = normalizeConfig(cfg)
	l.groupCommit.Store(l.mu.cfg.FlushMessages == 1)
	l.checkpointedLogStart = -1
	l.txn.ongoingFirst = -1
	l.tombstonesDueAt.Store(math.MaxInt64)
	l.flush.cond.L = &l.flush.mu
	l.lastFlush = l.now()
	if err := l.load(); err != nil {
		for _, s := range l.mu.segments {
			s.closeAll()
		}
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	// A partition is idle until used: the descriptors recovery opened go back to the cache
	// now and are reopened on first use, so thousands of idle partitions hold none.
	for _, seg := range l.mu.segments {
		seg.releaseFiles()
	}
	return l, nil
}

// syncCreated does the fsyncs a created log deferred (see Log.created), once; every fsync
// that makes appended data durable calls it first.
func (l *Log) syncCreated() error {
	if !l.created.pending.Load() {
		return nil
	}
	l.created.mu.Lock()
	defer l.created.mu.Unlock()
	if !l.created.pending.Load() {
		return nil
	}
	if l.created.before != nil {
		if err := l.created.before(); err != nil {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	if err := l.fs.SyncDir(filepath.Dir(l.dir)); err != nil {
		return err
	}
	l.created.pending.Store(false)
	return nil
}

// fail records a write failure; the log refuses further mutations until Reopen. The sticky
// error wraps ErrClosed (the log refuses work), ErrStorage (the file system failed) and err.
func (l *Log) fail(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrClosed) {
		return err
	}
	wrapped := fmt.Errorf("%w: %w: write failed in %s: %w", ErrClosed, ErrStorage, l.dir, err)
	first := l.failure.CompareAndSwap(nil, &wrapped)
	// Wake group-commit waiters so they see the failure.
	l.flush.mu.Lock()
	l.flush.cond.Broadcast()
	l.flush.mu.Unlock()
	if !first {
		return *l.failure.Load()
	}
	l.logger.Error("logstore: log failed, refusing further writes", "dir", l.dir, "err", err)
	if l.onFailure != nil {
		l.onFailure(wrapped)
	}
	return wrapped
}

// Failure returns the error that made the log fail (nil while it is usable or after a
// successful Reopen).
func (l *Log) Failure() error {
	if p := l.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// probeFile is written and removed by Reopen to check that the directory accepts writes; its
// .tmp suffix makes recovery remove it should the process die in between.
const probeFile = ".write-probe" + tmpSuffix

// probeBytes is how much Reopen's probe writes: more than one page, so that a file system with
// a few blocks left does not pass, small enough to cost nothing.
const probeBytes = 64 << 10

// probeWritable checks that dir takes a write, an fsync and a removal.
func probeWritable(fs FS, dir string) error {
	path := filepath.Join(dir, probeFile)
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(make([]byte, probeBytes), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := fs.Remove(path); err == nil && rerr != nil && !isNotExist(rerr) {
		err = rerr
	}
	return err
}

// Reopen makes a failed log serve again once its file system accepts writes. It probes the
// directory with a write and an fsync, then re-runs recovery on it exactly as Open does (a
// torn tail left by the failed write is cut; indexes, epochs and producer state are rebuilt
// from what is on disk) and continues from the recovered state. A batch whose append failed
// may or may not be in the recovered log, as after a crash: it was never acknowledged. An
// append still waiting for an fsync from before the failure gets an error (SyncWait), never a
// success. Readers keep the slices they were handed: the old files are closed after
// file.delete.delay.ms. On error the log stays failed and Reopen may be called again. A log
// that has not failed is left alone (nil); a closed one answers ErrClosed.
func (l *Log) Reopen() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if l.failure.Load() == nil {
		return nil
	}
	l.waitRollSyncs() // its files are about to be replaced; its error is already sticky
	if err := probeWritable(l.fs, l.dir); err != nil {
		return fmt.Errorf("%w: %w: %s does not accept writes: %w", ErrClosed, ErrStorage, l.dir, err)
	}
	fresh, err := Open(l.dir, l.cfg(), Options{FS: l.fs, Now: l.now, Logger: l.logger,
		Decompress: l.decompress, CacheWindowBytes: l.cacheWindow})
	if err != nil {
		return fmt.Errorf("%w: %w: %w", ErrClosed, ErrStorage, err)
	}
	// fresh is only a vessel for the recovered state: its files now belong to l, and it is
	// dropped without Close.
	l.producers, l.snapshots = fresh.producers, fresh.snapshots
	fresh.txn.Lock()
	ended := fresh.txn.unreplicated
	fresh.txn.Unlock()
	l.resetTxnStateLocked(ended)
	l.recoveryPoint, l.checkpointedLogStart = fresh.recoveryPoint, fresh.checkpointedLogStart
	l.producersDirty, l.lastFlush = fresh.producersDirty, fresh.lastFlush
	l.pendingRoll.Store(nil)
	l.dropBehind = dropBehindState{}
	l.mu.Lock()
	old := l.mu.segments
	l.mu.segments = fresh.mu.segments
	l.mu.logStart, l.mu.logEnd = fresh.mu.logStart, fresh.mu.logEnd
	l.mu.epochs = fresh.mu.epochs
	logEnd := l.mu.logEnd
	l.mu.Unlock()
	l.scheduleCloseLocked(old)
	l.flush.mu.Lock()
	// Waiters from before see a new incarnation and fail; a new generation keeps an fsync
	// that was running on the old files from marking anything.
	l.flush.incarnation++
	l.flush.gen++
	l.flush.flushedOffset = logEnd
	l.failure.Store(nil)
	l.flush.cond.Broadcast()
	l.flush.mu.Unlock()
	l.logger.Info("logstore: log recovered after a storage failure and serves again", "dir", l.dir, "logEnd", logEnd)
	return nil
}

// usableLocked returns the sticky error or ErrClosed.
// REQUIRES: appendMu held.
func (l *Log) usableLocked() error {
	if p := l.failure.Load(); p != nil {
		return *p
	}
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return nil
}

func (l *Log) active() *segment { return l.mu.segments[len(l.mu.segments)-1] }

// cfg returns the current config.
func (l *Log) cfg() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.cfg
}

// LogStartOffset is the first offset readable.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.logStart
}

// LogEndOffset is the offset the next appended batch gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.logEnd
}

// LatestEpoch is the leader epoch of the last epoch-cache entry, -1 if none.
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.latestEpoch()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch as Kafka does: the largest epoch <= epoch and
// the start offset of the next higher epoch (or the log end offset for the latest epoch);
// (-1, -1) when epoch is unknown and higher than every epoch in the log.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.endOffsetFor(epoch, l.mu.logEnd)
}

// Size is the total size in bytes of the log's segment files.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// NumSegments is the number of segments (for tests and metrics).
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.mu.segments)
}

// SegmentInfo is one segment as Segments lists it.
type SegmentInfo struct {
	BaseOffset int64
	// EndOffset is the next segment's base offset (the log end for the active segment): every
	// offset the segment may hold is below it.
	EndOffset int64
	Size      int64
	Active    bool
}

// Segments lists the log's segments, oldest first (for retention decisions made outside
// logstore, such as the broker's retention.consumed.groups, and for metrics).
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	segs := l.mu.segments
	out := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		out[i] = SegmentInfo{BaseOffset: s.baseOffset, EndOffset: l.mu.logEnd, Size: s.size, Active: i == len(segs)-1}
		if i+1 < len(segs) {
			out[i].EndOffset = segs[i+1].baseOffset
		}
	}
	return out
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// SetConfig changes the log's configuration; it applies to later appends and retention.
func (l *Log) SetConfig(cfg Config) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	l.mu.cfg = normalizeConfig(cfg)
	l.groupCommit.Store(l.mu.cfg.FlushMessages == 1)
	l.mu.Unlock()
}

// AppendAsLeader validates batches (one or more concatenated v2 batches), deduplicates
// idempotent-producer retries, assigns offsets from the log end and stamps leaderEpoch by
// patching both header fields in place (they are outside the CRC; the caller's buffer is
// modified), and appends the bytes unchanged. It returns once durable per the flush policy.
func (l *Log) AppendAsLeader(batches []byte, leaderEpoch int32) (AppendResult, error) {
	return l.append(batches, true, leaderEpoch)
}

// AppendAsLeaderWith is AppendAsLeaderDeferSync for an append qualified by o: a
// coordinator's records (epochs checked, not sequences) or a transaction marker of a given
// transaction version.
func (l *Log) AppendAsLeaderWith(batches []byte, leaderEpoch int32, o LeaderAppend) (AppendResult, SyncWait, error) {
	return l.appendNoWait(batches, true, leaderEpoch, o)
}

// AppendAsLeaderDeferSync is AppendAsLeader without the wait for durability: the batches are
// in the log (readable, below the log end) when it returns, and the caller calls Wait on the
// returned SyncWait before acknowledging them. A producer with several partitions or several
// requests in flight appends them all and then waits once, so their fsyncs overlap and share
// group commits instead of running one after another.
func (l *Log) AppendAsLeaderDeferSync(batches []byte, leaderEpoch int32) (AppendResult, SyncWait, error) {
	return l.appendNoWait(batches, true, leaderEpoch, LeaderAppend{})
}

// AppendAsFollower appends batches replicated from the leader, keeping their offsets and
// epochs. The first batch must start at or after the log end (Kafka allows the gaps compaction
// leaves); otherwise ErrUnexpectedAppendOffset.
func (l *Log) AppendAsFollower(batches []byte) (AppendResult, error) {
	return l.append(batches, false, -1)
}

func (l *Log) append(data []byte, leader bool, leaderEpoch int32) (AppendResult, error) {
	res, sync, err := l.appendNoWait(data, leader, leaderEpoch, LeaderAppend{})
	if err != nil {
		return res, err
	}
	return res, sync.Wait()
}

// SyncWait is the durability of one append under the log's flush policy.
type SyncWait struct {
	l      *Log // nil: nothing to wait for
	target int64
	gen    uint64
	// incarnation is the log's as of the append: a Reopen in between fails the wait.
	incarnation uint64
}

// Wait returns once the append is durable as the flush policy requires (at once when it
// requires no fsync), or with the error that made the log unusable.
func (s SyncWait) Wait() error {
	if s.l == nil {
		return nil
	}
	return s.l.syncTo(s.target, s.gen, s.incarnation)
}

func (l *Log) appendNoWait(data []byte, leader bool, leaderEpoch int32, o LeaderAppend) (AppendResult, SyncWait, error) {
	var headerBuf [2]batch.Header
	headers, err := validateBatches(data, leader, o.Validated, headerBuf[:0])
	if err != nil {
		return AppendResult{}, SyncWait{}, err
	}
	groupCommit := l.groupCommit.Load()
	if groupCommit {
		l.groupCommitEnter()
	}
	l.appendMu.Lock()
	res, syncTarget, err := l.appendLocked(data, headers, leader, leaderEpoch, o)
	if err == nil && !res.Duplicate {
		l.dropBehindLocked()
	}
	gen, incarnation := l.flushGenIncarnation()
	l.appendMu.Unlock()
	if groupCommit {
		l.groupCommitExit()
	}
	if err != nil || syncTarget < 0 {
		return res, SyncWait{}, err
	}
	return res, SyncWait{l: l, target: syncTarget, gen: gen, incarnation: incarnation}, nil
}

// appendLocked does the append; syncTarget >= 0 asks the caller to wait for an fsync covering
// offsets below it (after releasing appendMu so that appenders share fsyncs).
// REQUIRES: appendMu held.
func (l *Log) appendLocked(data []byte, headers []batch.Header, leader bool, leaderEpoch int32, o LeaderAppend) (res AppendResult, syncTarget int64, err error) {
	syncTarget = -1
	if err := l.usableLocked(); err != nil {
		return res, -1, err
	}
	cfg := l.cfg()
	if int64(len(data)) > cfg.SegmentBytes {
		return res, -1, fmt.Errorf("%w: %d bytes, segment.bytes %d", ErrRecordListTooLarge, len(data), cfg.SegmentBytes)
	}
	l.mu.RLock()
	logEnd, logStart := l.mu.logEnd, l.mu.logStart
	l.mu.RUnlock()

	// Assign offsets (in the headers only, until every check has passed).
	if leader {
		next := logEnd
		for i := range headers {
			headers[i].BaseOffset = next
			headers[i].PartitionLeaderEpoch = leaderEpoch
			next = headers[i].NextOffset()
		}
	} else {
		prevNext := logEnd
		for i := range headers {
			if headers[i].BaseOffset < prevNext {
				return res, -1, fmt.Errorf("%w: batch %d at offset %d, log end %d", ErrUnexpectedAppendOffset, i, headers[i].BaseOffset, prevNext)
			}
			prevNext = headers[i].NextOffset()
		}
	}
	last := &headers[len(headers)-1]
	if last.LastOffset() >= math.MaxInt64-1 {
		return res, -1, fmt.Errorf("%w: offset overflow", ErrInvalidRecord)
	}

	// Producer state: leaders validate, followers and recovery only record.
	var updates map[int64]*producerEntry
	var ended []completedTxn
	batchPos := int64(0)
	for i := range headers {
		h := &headers[i]
		pos := batchPos
		batchPos += h.Size()
		if !h.HasProducerID() {
			continue
		}
		var marker *endTxnMarker
		if h.IsControl() {
			m, ok, err := parseEndTxnMarker(h, data[pos:])
			if err != nil && leader {
				return res, -1, fmt.Errorf("%w: control batch %d of producer %d", err, i, h.ProducerID)
			}
			// A follower keeps what its leader wrote; a control batch it cannot read ends
			// nothing here (ok is false).
			if ok {
				marker = &m
			}
		}
		if updates == nil {
			updates = make(map[int64]*producerEntry, 1)
		}
		e, seen := updates[h.ProducerID]
		if !seen {
			if cur := l.producers.producers[h.ProducerID]; cur != nil {
				// Only a client's retry is a duplicate, as in Kafka: a coordinator's batches
				// (transactional offset commits) carry no sequence.
				if leader && !o.Coordinator && !h.IsControl() {
					if dup, ok := cur.findDuplicate(h); ok {
						// As Kafka: the retry is answered with the original batch's offsets.
						return AppendResult{
							FirstOffset: dup.FirstOffset, LastOffset: dup.LastOffset,
							MaxTimestamp: dup.Timestamp, OffsetOfMaxTimestamp: dup.LastOffset,
							LogStartOffset: logStart, Duplicate: true,
						}, -1, nil
					}
				}
				e = cur.clone()
			}
		}
		if leader {
			if err := checkProducerBatch(e, h, marker, o); err != nil {
				return res, -1, fmt.Errorf("%w: producer %d epoch %d sequence %d", err, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
			}
			if err := l.checkVerificationLocked(e, h, o.VerificationGuard); err != nil {
				return res, -1, err
			}
		}
		if e == nil {
			e = &producerEntry{Epoch: h.ProducerEpoch, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
		}
		if first := e.update(h, marker); first >= 0 {
			ended = append(ended, completedTxn{producerID: h.ProducerID, first: first, last: h.BaseOffset, aborted: !marker.commit})
		}
		updates[h.ProducerID] = e
	}

	// Patch offsets and epochs in place.
	if leader {
		pos := int64(0)
		for i := range headers {
			batch.SetBaseOffset(data[pos:], headers[i].BaseOffset)
			batch.SetPartitionLeaderEpoch(data[pos:], leaderEpoch)
			pos += headers[i].Size()
		}
	}

	maxTs, offMaxTs := int64(-1), int64(-1)
	for i := range headers {
		if headers[i].MaxTimestamp > maxTs {
			maxTs, offMaxTs = headers[i].MaxTimestamp, headers[i].LastOffset()
		}
	}
	if err := l.maybeRollLocked(&cfg, int64(len(data)), headers[0].BaseOffset, maxTs, last.LastOffset()); err != nil {
		return res, -1, l.fail(err)
	}

	seg := l.active()
	pos := seg.size
	if _, err := seg.log.WriteAt(data, pos); err != nil {
		return res, -1, l.fail(err)
	}
	epochChanged := false
	l.mu.Lock()
	for i := range headers {
		h := &headers[i]
		if err := seg.indexBatchLocked(h, pos, cfg.IndexIntervalBytes); err != nil {
			l.mu.Unlock()
			return res, -1, l.fail(err)
		}
		pos += h.Size()
		if l.mu.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) {
			epochChanged = true
		}
	}
	seg.size = pos
	seg.lastModified = l.now()
	for id, e := range updates {
		l.producers.set(id, e)
		l.producersDirty = true
	}
	// Aborted transactions go to the index of the segment holding their marker, each with
	// the last stable offset right after it (Kafka's lastStableOffset(completedTxn)).
	for _, t := range ended {
		if !t.aborted {
			continue
		}
		lso := t.last + 1
		if first := l.producers.firstOngoing(); first >= 0 && first < lso {
			lso = first
		}
		if err := seg.appendTxnLocked(l.fs, l.dir, AbortedTxn{ProducerID: t.producerID, FirstOffset: t.first, LastOffset: t.last, LastStableOffset: lso}); err != nil {
			l.mu.Unlock()
			return res, -1, l.fail(err)
		}
	}
	l.mu.logEnd = last.NextOffset()
	logEnd = l.mu.logEnd
	logStart = l.mu.logStart
	l.mu.Unlock()
	if updates != nil {
		l.noteTxnsLocked(ended)
		for i := range headers {
			if h := &headers[i]; h.IsTransactional() {
				l.spendVerificationLocked(h, o.TransactionVersion)
			}
		}
	}
	if epochChanged {
		if err := l.writeEpochCheckpointLocked(); err != nil {
			return res, -1, l.fail(err)
		}
	}
	res = AppendResult{
		FirstOffset: headers[0].BaseOffset, LastOffset: last.LastOffset(),
		MaxTimestamp: maxTs, OffsetOfMaxTimestamp: offMaxTs,
		LogStartOffset: logStart, Bytes: len(data),
	}
	if logEnd-l.flushedOffset() >= cfg.FlushMessages {
		syncTarget = logEnd
	}
	return res, syncTarget, nil
}

// maybeRollLocked rolls the active segment if an append of size bytes with these offsets and
// max timestamp must go to a new one (Kafka's LogSegment.shouldRoll).
// REQUIRES: appendMu held.
func (l *Log) maybeRollLocked(cfg *Config, size, firstOffset, maxTs, lastOffset int64) error {
	seg := l.active()
	roll := seg.size > cfg.SegmentBytes-size ||
		(seg.size > 0 && l.timeWaitedForRoll(seg, maxTs) > cfg.SegmentMs-seg.rollJitterMs) ||
		seg.index.isFull() || seg.timeIndex.isFull() ||
		lastOffset-seg.baseOffset > math.MaxInt32 ||
		firstOffset-seg.baseOffset < 0
	if !roll {
		return nil
	}
	// Roll at the log end (a follower's gap stays inside the new segment, so segments never
	// leave holes between them), unless the gap itself overflows relative offsets.
	newBase := l.mu.logEnd
	if lastOffset-newBase > math.MaxInt32 {
		newBase = firstOffset
	}
	return l.rollLocked(newBase)
}

func (l *Log) timeWaitedForRoll(seg *segment, messageTimestamp int64) int64 {
	if seg.rollingBasedTimestamp >= 0 {
		return messageTimestamp - seg.rollingBasedTimestamp
	}
	return l.now().Sub(seg.created).Milliseconds()
}

// rollLocked closes the active segment for appends (final time-index entry, index files
// written) and starts a new one at newBase (>= log end), then snapshots producer state. The
// fsyncs are done in the background (rollSync), as Kafka flushes rolled segments and writes
// the roll's producer snapshot asynchronously, so appenders do not stall for a segment's
// write-back or for a snapshot's file and directory fsyncs (5-30 ms per roll under load):
// offsets in the old segment count as durable (flushedOffset, the recovery point) only once
// its fsync is done, and data appended to the new segment only once the snapshot's directory
// fsync made the new segment's entry durable (syncTo and flushLocked wait for the rollSync).
// A crash before the snapshot is on disk leaves the older snapshots, which are removed only
// after it: recovery replays from the newest of them. An empty active segment whose base
// equals newBase is kept.
// REQUIRES: appendMu held.
func (l *Log) rollLocked(newBase int64) error {
	old := l.active()
	l.mu.RLock()
	logEnd := l.mu.logEnd
	l.mu.RUnlock()
	if newBase < logEnd {
		newBase = logEnd
	}
	if old.empty() && old.baseOffset == newBase {
		return nil
	}
	l.mu.Lock()
	err := old.timeIndex.maybeAppendLocked(old.maxTimestamp, old.offsetOfMaxTimestamp, true)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := old.index.persist(); err != nil {
		return err
	}
	if err := old.timeIndex.persist(); err != nil {
		return err
	}
	if old.empty() {
		// An empty segment below newBase (a follower append with a gap) is replaced.
		if err := old.removeFiles(l.fs, l.dir); err != nil {
			return err
		}
	}
	if err := l.ensureRecoveryPointOnDisk(); err != nil {
		return err
	}
	seg, err := openSegmentFiles(l.fs, l.dir, newBase, true, &l.mu.cfg)
	if err != nil {
		return err
	}
	l.initNewSegment(seg)
	if err := l.syncCreated(); err != nil { // before the rolled segment's fsync marks it durable
		return err
	}
	// The new segment's directory entry is made durable by the producer snapshot's write in
	// the rollSync (WriteFileAtomic syncs the directory). Registered before the new segment
	// is published: a group-commit fsync of the new segment then also waits for it (syncTo).
	snap := l.prepareSnapshotLocked(newBase)
	if old.empty() {
		l.startRollSync(nil, -1, snap)
	} else {
		l.startRollSync(old, logEnd, snap)
	}
	l.mu.Lock()
	if old.empty() {
		l.mu.segments[len(l.mu.segments)-1] = seg
		l.pendingClose = append(l.pendingClose, pendingClose{seg: old, at: l.now()})
		if l.mu.logStart < newBase && len(l.mu.segments) == 1 {
			l.mu.logStart = newBase
		}
	} else {
		l.mu.segments = append(l.mu.segments, seg)
	}
	l.mu.Unlock()
	return nil
}

// rollSync is the background work of one roll: the fsync of the rolled segment, the producer
// snapshot at the new segment's base, and the recovery point checkpoint. Each waits for the
// previous one, so when one is done every segment before it is durable and every snapshot
// before it written.
type rollSync struct {
	done chan struct{} // closed when finished
	err  error         // set before done is closed
	upto int64         // the rolled segment's end offset (-1: no segment to sync)
}

// pendingSnapshot is a producer snapshot encoded under appendMu, to be written by a rollSync.
type pendingSnapshot struct {
	offset int64
	data   []byte
	// obsolete are older snapshots to remove once this one is durable.
	obsolete []int64
}

// prepareSnapshotLocked encodes the producer state as of offset (== log end) and records the
// snapshot in l.snapshots (keeping the two newest) as if written; the caller hands it to a
// rollSync, which writes it before removing the obsolete ones, and whose failure is sticky.
// REQUIRES: appendMu held.
func (l *Log) prepareSnapshotLocked(offset int64) *pendingSnapshot {
	snap := &pendingSnapshot{offset: offset, data: l.producers.encodeSnapshot(offset)}
	l.producersDirty = false
	l.snapshots = insertSorted(l.snapshots, offset)
	for len(l.snapshots) > 2 {
		snap.obsolete = append(snap.obsolete, l.snapshots[0])
		l.snapshots = l.snapshots[1:]
	}
	return snap
}

// write writes the snapshot (file and directory fsynced) and then removes the obsolete ones.
func (s *pendingSnapshot) write(fs FS, dir string) error {
	if err := WriteFileAtomic(fs, dir, fileName("", s.offset, snapshotSuffix), s.data); err != nil {
		return err
	}
	for _, off := range s.obsolete {
		if err := fs.Remove(fileName(dir, off, snapshotSuffix)); err != nil && !isNotExist(err) {
			return err
		}
	}
	return nil
}

// startRollSync, in the background: fsyncs seg's files (seg may be nil), writes snap, marks
// offsets below upto durable and checkpoints the recovery point there.
// REQUIRES: appendMu held; seg's index files already persisted.
func (l *Log) startRollSync(seg *segment, upto int64, snap *pendingSnapshot) {
	prev := l.pendingRoll.Load()
	gen := l.flushGen()
	rs := &rollSync{done: make(chan struct{}), upto: upto}
	l.pendingRoll.Store(rs)
	go func() {
		defer close(rs.done)
		if prev != nil {
			<-prev.done
			if prev.err != nil {
				rs.err = prev.err
				return
			}
		}
		if seg != nil {
			began := time.Now()
			for _, f := range seg.files() {
				if err := f.Sync(); err != nil {
					rs.err = l.fail(err)
					return
				}
			}
			observeFlush(time.Since(began))
		}
		if snap != nil {
			if err := snap.write(l.fs, l.dir); err != nil {
				rs.err = l.fail(err)
				return
			}
		}
		if seg == nil {
			return
		}
		l.markFlushedGen(upto, gen)
		if err := l.raiseRecoveryPoint(upto); err != nil {
			rs.err = l.fail(err)
		}
	}()
}

// raiseRecoveryPoint checkpoints the recovery point at rp if that raises it. Called by a
// rollSync without appendMu.
func (l *Log) raiseRecoveryPoint(rp int64) error {
	l.rpMu.Lock()
	defer l.rpMu.Unlock()
	if rp <= l.recoveryPoint {
		return nil
	}
	if err := WriteFileAtomic(l.fs, l.dir, recoveryPointFile, encodeOffsetCheckpoint(l.dir, rp)); err != nil {
		return err
	}
	l.recoveryPoint, l.recoveryPointOnDisk = rp, true
	return nil
}

// ensureRecoveryPointOnDisk writes the recovery point checkpoint if the file does not exist.
func (l *Log) ensureRecoveryPointOnDisk() error {
	l.rpMu.Lock()
	defer l.rpMu.Unlock()
	if l.recoveryPointOnDisk {
		return nil
	}
	if err := WriteFileAtomic(l.fs, l.dir, recoveryPointFile, encodeOffsetCheckpoint(l.dir, l.recoveryPoint)); err != nil {
		return err
	}
	l.recoveryPointOnDisk = true
	return nil
}

// recoveryPointNow returns the recovery point and whether its checkpoint file exists.
func (l *Log) recoveryPointNow() (int64, bool) {
	l.rpMu.Lock()
	defer l.rpMu.Unlock()
	return l.recoveryPoint, l.recoveryPointOnDisk
}

// waitRollSyncs waits for background fsyncs of rolled segments.
func (l *Log) waitRollSyncs() error {
	if rs := l.pendingRoll.Load(); rs != nil {
		<-rs.done
		return rs.err
	}
	return nil
}

func (l *Log) initNewSegment(seg *segment) {
	seg.created = l.now()
	seg.lastModified = seg.created
	if j := l.mu.cfg.SegmentJitterMs; j > 0 {
		seg.rollJitterMs = rand.Int64N(j)
	}
}

// checkpointRecoveryPointLocked records that everything below rp is durable.
// REQUIRES: appendMu held.
func (l *Log) checkpointRecoveryPointLocked(rp int64) error {
	l.rpMu.Lock()
	defer l.rpMu.Unlock()
	if err := WriteFileAtomic(l.fs, l.dir, recoveryPointFile, encodeOffsetCheckpoint(l.dir, rp)); err != nil {
		return err
	}
	l.recoveryPoint, l.recoveryPointOnDisk = rp, true
	return nil
}

// REQUIRES: appendMu held.
func (l *Log) checkpointLogStartLocked(start int64) error {
	if err := WriteFileAtomic(l.fs, l.dir, logStartOffsetFile, encodeOffsetCheckpoint(l.dir, start)); err != nil {
		return err
	}
	l.checkpointedLogStart = start
	return nil
}

// REQUIRES: appendMu held.
func (l *Log) writeEpochCheckpointLocked() error {
	l.mu.RLock()
	data := l.mu.epochs.encode()
	l.mu.RUnlock()
	return WriteFileAtomic(l.fs, l.dir, leaderEpochFile, data)
}

// writeSnapshotLocked writes the producer state as of offset (== log end) and keeps only the
// two newest snapshot files.
// REQUIRES: appendMu held.
func (l *Log) writeSnapshotLocked(offset int64) error {
	name := fileName("", offset, snapshotSuffix)
	if err := WriteFileAtomic(l.fs, l.dir, name, l.producers.encodeSnapshot(offset)); err != nil {
		return err
	}
	l.producersDirty = false
	l.snapshots = insertSorted(l.snapshots, offset)
	for len(l.snapshots) > 2 {
		if err := l.fs.Remove(fileName(l.dir, l.snapshots[0], snapshotSuffix)); err != nil && !isNotExist(err) {
			return err
		}
		l.snapshots = l.snapshots[1:]
	}
	return nil
}

func insertSorted(s []int64, v int64) []int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i] >= v })
	if i < len(s) && s[i] == v {
		return s
	}
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// Flush fsyncs the log and checkpoints the recovery point at the log end.
func (l *Log) Flush() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	return l.fail(l.flushLocked())
}

// REQUIRES: appendMu held.
func (l *Log) flushLocked() error {
	if err := l.waitRollSyncs(); err != nil {
		return err
	}
	l.mu.RLock()
	seg, logEnd, logStart := l.active(), l.mu.logEnd, l.mu.logStart
	gen := l.flushGen()
	l.mu.RUnlock()
	if l.created.pending.Load() {
		if logEnd == logStart {
			return nil // a created log nothing was appended to: nothing to make durable
		}
		if err := l.syncCreated(); err != nil {
			return err
		}
	}
	if err := seg.syncAll(); err != nil {
		return err
	}
	l.markFlushedGen(logEnd, gen)
	l.lastFlush = l.now()
	if l.recoveryPoint == logEnd {
		return nil
	}
	return l.checkpointRecoveryPointLocked(logEnd)
}

// Close flushes the log, snapshots producer state and closes its files. Later calls return
// ErrClosed from every method except Close itself.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return nil
	}
	var err error
	if l.failure.Load() == nil {
		err = l.closeFlushLocked()
	}
	l.waitRollSyncs() // before closing the files it syncs; a failure is already sticky
	l.mu.Lock()
	l.mu.closed = true
	segs := l.mu.segments
	l.mu.Unlock()
	for _, s := range segs {
		if cerr := s.closeAll(); cerr != nil && err == nil {
			err = cerr
		}
	}
	l.closePendingLocked(time.Time{}, true)
	l.flush.mu.Lock()
	l.flush.cond.Broadcast()
	l.flush.mu.Unlock()
	return err
}

// REQUIRES: appendMu held.
func (l *Log) closeFlushLocked() error {
	l.mu.Lock()
	seg := l.active()
	err := seg.timeIndex.maybeAppendLocked(seg.maxTimestamp, seg.offsetOfMaxTimestamp, true)
	logEnd, logStart := l.mu.logEnd, l.mu.logStart
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	if l.created.pending.Load() {
		return nil // created and never written: no state to snapshot (see flushLocked)
	}
	if n := len(l.snapshots); n == 0 || l.snapshots[n-1] != logEnd || l.producersDirty {
		if err := l.writeSnapshotLocked(logEnd); err != nil {
			return err
		}
	}
	if logStart == l.checkpointedLogStart {
		return nil
	}
	return l.checkpointLogStartLocked(logStart)
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
		l.logger.Warn("logstore: close before delete failed", "dir", l.dir, "err", err)
	}
	return l.fs.RemoveAll(l.dir)
}

// closePendingLocked closes deleted segments' files whose delay has passed (all if all).
// REQUIRES: appendMu held.
func (l *Log) closePendingLocked(now time.Time, all bool) {
	if len(l.pendingClose) == 0 {
		return
	}
	l.waitRollSyncs() // a background fsync may still use a deleted segment's files
	kept := l.pendingClose[:0]
	for _, p := range l.pendingClose {
		if all || !now.Before(p.at) {
			p.seg.closeAll()
			continue
		}
		kept = append(kept, p)
	}
	l.pendingClose = kept
}

// scheduleCloseLocked hands deleted segments to closePendingLocked.
// REQUIRES: appendMu held.
func (l *Log) scheduleCloseLocked(segs []*segment) {
	at := l.now().Add(time.Duration(l.cfg().FileDeleteDelayMs) * time.Millisecond)
	for _, s := range segs {
		l.pendingClose = append(l.pendingClose, pendingClose{seg: s, at: at})
	}
}
