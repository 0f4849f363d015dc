package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"sluice/internal/batch"
)

// File name suffixes, as Kafka names them. Format constants; never change them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	snapshotSuffix  = ".snapshot"
	tmpSuffix       = ".tmp"
)

// fileName is Kafka's segment file name: the base offset as 20 zero-padded decimal digits.
func fileName(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", baseOffset, suffix))
}

// parseOffsetName parses "<20 digits><suffix>".
func parseOffsetName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(name, suffix)
	if len(digits) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// segment is one .log file with its two indexes.
//
// Fields other than the files are guarded by Log.mu (writes need Log.appendMu too). Bytes
// [0, size) of the log file are whole, valid batches; readers never look past size.
type segment struct {
	baseOffset int64
	log        File
	index      *offsetIndex
	timeIndex  *timeIndex
	// txn is the segment's aborted transaction index (txnindex.go).
	txn txnIndex

	// size is the published end position of the log file.
	size int64
	// nextOffset is the offset after the last batch (baseOffset if empty).
	nextOffset int64
	// maxTimestamp is the largest batch max timestamp (-1 if none) and offsetOfMaxTimestamp
	// the last offset of the batch that has it (Kafka's shallow offset).
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	// bytesSinceLastIndexEntry drives sparse indexing (index.interval.bytes).
	bytesSinceLastIndexEntry int64
	// rollingBasedTimestamp is the first batch's max timestamp (-1 if none): segment.ms counts
	// from it, as Kafka's LogSegment does; created is used when it is absent.
	rollingBasedTimestamp int64
	created               time.Time
	rollJitterMs          int64
	// lastModified approximates the file's mtime for retention of timestamp-less segments.
	lastModified time.Time
	// lazy is set for a segment opened as trusted whose index entries are not loaded yet.
	lazy *lazyIndexes
	// logHeld: removeFiles pinned the log file so that it outlives its unlink until
	// closeAll. Set and cleared with Log.appendMu held.
	logHeld bool
}

// lazyIndexes loads a trusted segment's index files on first use.
type lazyIndexes struct {
	once sync.Once
	// damaged is set if the files failed the sanity check; the segment then works with empty
	// indexes (lookups scan from the segment start: correct, slower).
	damaged bool
}

// ensureIndexes loads the index entries of a lazily opened segment. Safe for concurrent
// callers holding Log.mu shared; sync.Once orders the load before every use.
func (s *segment) ensureIndexes() {
	if s.lazy == nil {
		return
	}
	s.lazy.once.Do(func() {
		ix, err1 := readAll(s.index.file)
		ti, err2 := readAll(s.timeIndex.file)
		s.index.entries, s.timeIndex.entries = ix, ti
		if err1 != nil || err2 != nil || !s.index.sane(s.size) || !s.timeIndex.sane(s.nextOffset) {
			s.index.entries, s.timeIndex.entries = nil, nil
			s.lazy.damaged = true
		}
		s.index.written, s.timeIndex.written = len(s.index.entries), len(s.timeIndex.entries)
	})
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

func (s *segment) empty() bool { return s.size == 0 }

// largestTimestamp is what time retention compares: the max batch timestamp, or the last
// modification time when the segment has none (Kafka's LogSegment.largestTimestamp).
func (s *segment) largestTimestamp() int64 {
	if s.maxTimestamp >= 0 {
		return s.maxTimestamp
	}
	return s.lastModified.UnixMilli()
}

// openSegmentFiles opens (creating if asked) the three files of a segment, through the file
// cache of fsys (see cachingFS): they are closed when idle and reopened on use.
func openSegmentFiles(fsys FS, dir string, base int64, create bool, cfg *Config) (*segment, error) {
	fsys, cache := segmentFileCache(fsys)
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	lf, err := cache.openFile(fsys, fileName(dir, base, logSuffix), flag, 0o644)
	if err != nil {
		return nil, err
	}
	// Indexes are always created if missing: recovery rebuilds them.
	xf, err := cache.openFile(fsys, fileName(dir, base, indexSuffix), flag|os.O_CREATE, 0o644)
	if err != nil {
		lf.Close()
		return nil, err
	}
	tf, err := cache.openFile(fsys, fileName(dir, base, timeIndexSuffix), flag|os.O_CREATE, 0o644)
	if err != nil {
		lf.Close()
		xf.Close()
		return nil, err
	}
	s := &segment{
		baseOffset:            base,
		log:                   lf,
		index:                 &offsetIndex{file: xf, baseOffset: base, maxEntries: maxIndexEntries(cfg, offsetIndexEntrySize)},
		timeIndex:             &timeIndex{file: tf, baseOffset: base, maxEntries: maxIndexEntries(cfg, timeIndexEntrySize)},
		nextOffset:            base,
		maxTimestamp:          -1,
		offsetOfMaxTimestamp:  -1,
		rollingBasedTimestamp: -1,
	}
	return s, nil
}

func maxIndexEntries(cfg *Config, entrySize int) int {
	n := cfg.SegmentIndexBytes / int64(entrySize)
	if n < 1 {
		n = 1
	}
	if n > 1<<28 {
		n = 1 << 28
	}
	return int(n)
}

// indexBatchLocked updates the segment's indexes and timestamps for one batch just written at
// position pos, exactly as Kafka 4.x's LogSegment.append does per batch.
// REQUIRES: Log.appendMu and Log.mu (exclusive) held.
func (s *segment) indexBatchLocked(h *batch.Header, pos int64, indexInterval int64) error {
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = h.MaxTimestamp
		s.offsetOfMaxTimestamp = h.LastOffset()
	}
	if s.bytesSinceLastIndexEntry > indexInterval {
		if err := s.index.appendLocked(h.LastOffset(), pos); err != nil {
			return err
		}
		if err := s.timeIndex.maybeAppendLocked(s.maxTimestamp, s.offsetOfMaxTimestamp, false); err != nil {
			return err
		}
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += h.Size()
	if s.rollingBasedTimestamp < 0 && s.nextOffset == s.baseOffset {
		s.rollingBasedTimestamp = h.MaxTimestamp
	}
	s.nextOffset = h.NextOffset()
	return nil
}

// files returns the segment's files (the .txnindex once it exists).
func (s *segment) files() []File {
	if s.txn.file != nil {
		return []File{s.log, s.indexFile(), s.timeIndexFile(), s.txn.file}
	}
	return []File{s.log, s.indexFile(), s.timeIndexFile()}
}

// syncAll writes pending index entries and fsyncs the segment's three files.
// REQUIRES: Log.appendMu held.
func (s *segment) syncAll() error {
	if err := s.index.persist(); err != nil {
		return err
	}
	if err := s.timeIndex.persist(); err != nil {
		return err
	}
	for _, f := range s.files() {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// releaseFiles gives the descriptors of the segment's cached files back to the cache (an idle
// file is reopened on its next use).
func (s *segment) releaseFiles() {
	for _, f := range s.files() {
		if cf, ok := f.(*cachedFile); ok {
			cf.release()
		}
	}
}

// closeAll closes the segment's files (a file in use is closed when its operation ends).
func (s *segment) closeAll() error {
	var first error
	if s.logHeld {
		s.logHeld = false
		s.log.(*cachedFile).unpin()
	}
	for _, f := range s.files() {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// removeFiles unlinks the segment's files. The log file is kept open (pinned in the file
// cache) until closeAll, so that FileSlices handed to readers stay readable until the
// segment's delayed close.
func (s *segment) removeFiles(fs FS, dir string) error {
	if cf, ok := s.log.(*cachedFile); ok && !s.logHeld {
		if _, err := cf.pin(); err == nil {
			s.logHeld = true
		}
	}
	for _, f := range s.files() {
		if cf, ok := f.(*cachedFile); ok {
			cf.markRemoved()
		}
	}
	var first error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := fs.Remove(fileName(dir, s.baseOffset, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}

func (s *segment) indexFile() File {
	if s.index == nil {
		return nil
	}
	return s.index.file
}

func (s *segment) timeIndexFile() File {
	if s.timeIndex == nil {
		return nil
	}
	return s.timeIndex.file
}

// readHeaderAt reads and parses the batch header at pos. limit is the end of valid data.
func readHeaderAt(f File, pos, limit int64, buf []byte) (batch.Header, error) {
	if limit-pos < batch.HeaderSize {
		return batch.Header{}, batch.ErrTruncated
	}
	buf = buf[:batch.HeaderSize]
	if _, err := f.ReadAt(buf, pos); err != nil {
		if errors.Is(err, io.EOF) {
			return batch.Header{}, batch.ErrTruncated
		}
		return batch.Header{}, err
	}
	h, err := batch.ParseHeader(buf)
	if err != nil {
		return h, err
	}
	if pos+h.Size() > limit {
		return h, batch.ErrTruncated
	}
	return h, nil
}

// findBatch returns the position and header of the first batch whose last offset >= target,
// scanning from the index entry at or below target. found is false if the segment ends first.
// REQUIRES: Log.mu held (shared suffices).
func (s *segment) findBatch(target int64, buf []byte) (pos int64, h batch.Header, found bool, err error) {
	s.ensureIndexes()
	_, pos = s.index.lookup(target)
	for pos < s.size {
		h, err = readHeaderAt(s.log, pos, s.size, buf)
		if err != nil {
			return 0, h, false, err
		}
		if h.LastOffset() >= target {
			return pos, h, true, nil
		}
		pos += h.Size()
	}
	return pos, h, false, nil
}
