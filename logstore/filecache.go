package logstore

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Segment files are opened through a FileCache, which bounds how many of them the process
// keeps open at once. Every partition has three files per segment (.log, .index, .timeindex);
// without a bound, the descriptors of a broker hosting a few thousand partitions exceed
// RLIMIT_NOFILE, after which accept() fails for new clients and every restart fails with "too
// many open files".
//
// A segment's files are cachedFiles: each operation (ReadAt, WriteAt, Sync, ...) pins the
// file, reopening it by path if it was evicted, and unpins it when done. Eviction closes only
// unpinned files, chosen by the clock algorithm (a file used since the hand last passed gets
// another round), so the active segments being written and the segments being read stay open
// while idle ones are closed. A sendfile pins the file for the whole send (WriteSlice), so
// eviction never closes a descriptor under it. Close of a pinned file is deferred to its last
// unpin.
//
// The bound is exceeded only when more files than the limit are pinned at the same moment
// (each pin is one in-flight operation, so at most one per request being served): an open
// then goes ahead rather than wait, and the next opens evict back under the limit.
//
// Closing a written file loses nothing: its dirty pages stay in the page cache, and an fsync
// through a reopened descriptor writes back every dirty page of the file.

// FileCache bounds the segment files open in a process. Safe for concurrent use.
type FileCache struct {
	limit int

	mu struct {
		sync.Mutex
		// open holds every cachedFile with an open descriptor, in no order; each one's slot
		// is its index. Invariant: len(open)+opening <= limit, unless every file in open is
		// pinned.
		open []*cachedFile
		// opening counts opens in progress (a slot is reserved before the open), closing the
		// evicted files not closed yet; both count against the limit.
		opening, closing int
		// hand is the clock hand: the next index in open that eviction looks at.
		hand int
	}

	opens, evictions atomic.Int64
	// maxOpen is the largest number of open files seen (for tests and metrics).
	maxOpen atomic.Int64
}

// NewFileCache returns a cache that keeps at most limit files open (minimum 1).
func NewFileCache(limit int) *FileCache {
	return &FileCache{limit: max(limit, 1)}
}

// FileCacheStats are a FileCache's counters.
type FileCacheStats struct {
	Limit     int   // the bound
	Open      int   // files open now
	MaxOpen   int64 // the most files open at once so far
	Opens     int64 // opens (first and re-opens)
	Evictions int64 // files closed to make room
}

// Stats returns the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	n := len(c.mu.open)
	c.mu.Unlock()
	return FileCacheStats{Limit: c.limit, Open: n, MaxOpen: c.maxOpen.Load(), Opens: c.opens.Load(), Evictions: c.evictions.Load()}
}

// Limit is the number of files the cache keeps open at most.
func (c *FileCache) Limit() int { return c.limit }

var (
	defaultCacheOnce sync.Once
	defaultCache     *FileCache
)

// fileCacheShare is the part of the descriptor limit given to segment files; the rest is left
// to sockets (one per client connection), the metadata log and short-lived files.
const fileCacheShare = 2

// DefaultFileCache is the process-wide cache every Log uses unless Options.FileCache is set.
// On first use it raises the soft RLIMIT_NOFILE to the hard limit, as most servers do at
// start, logs the result, and sizes itself to half of the resulting limit.
func DefaultFileCache() *FileCache {
	defaultCacheOnce.Do(func() {
		soft, hard, raised, err := raiseFileLimit()
		limit := 512 // no descriptor limit to read (not unix)
		if soft > 0 {
			limit = int(min(soft/fileCacheShare, 1<<30))
		}
		defaultCache = NewFileCache(limit)
		attrs := []any{"soft", soft, "hard", hard, "raised", raised, "segmentFiles", defaultCache.limit}
		if err != nil {
			slog.Warn("logstore: could not raise the open-file limit", append(attrs, "err", err)...)
		} else {
			slog.Info("logstore: open-file limit", attrs...)
		}
	})
	return defaultCache
}

// CloseIdle closes the descriptors of the files that no operation used since the previous
// CloseIdle and none uses now, and returns how many it closed; such a file is reopened on its
// next use. Called periodically (the broker does, every few tens of seconds), it leaves idle
// partitions holding no descriptors while the files in use stay open.
func (c *FileCache) CloseIdle() int {
	c.mu.Lock()
	var victims []File
	for i := 0; i < len(c.mu.open); {
		v := c.mu.open[i]
		if !v.mu.TryLock() {
			i++ // about to be used
			continue
		}
		if v.pins > 0 || v.referenced {
			v.referenced = false
			v.mu.Unlock()
			i++
			continue
		}
		victims = append(victims, v.f)
		v.f = nil
		c.removeLocked(v) // the last file moves into slot i
		v.mu.Unlock()
	}
	c.mu.closing += len(victims)
	c.evictions.Add(int64(len(victims)))
	c.mu.Unlock()
	c.closeVictims(victims)
	return len(victims)
}

// openFile opens path with flag (which may create or truncate it) and returns it as a cached
// file, open and unpinned. Later reopens use O_RDWR without O_CREATE or O_TRUNC.
func (c *FileCache) openFile(fsys FS, path string, flag int, perm os.FileMode) (*cachedFile, error) {
	cf := &cachedFile{cache: c, fs: fsys, path: path, slot: -1}
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if err := c.openLocked(cf, flag, perm); err != nil {
		return nil, err
	}
	_, cf.osBacked = cf.f.(*os.File)
	return cf, nil
}

// openLocked opens cf's file after making room for it.
// REQUIRES: cf.mu held, cf.f == nil.
func (c *FileCache) openLocked(cf *cachedFile, flag int, perm os.FileMode) error {
	c.mu.Lock()
	c.mu.opening++
	victims := c.evictLocked(false)
	c.mu.Unlock()
	c.closeVictims(victims)
	f, err := cf.fs.OpenFile(cf.path, flag, perm)
	if err != nil && isTooManyOpenFiles(err) {
		// The process is at its limit anyway (sockets, other files): give up every idle
		// handle this cache may close, used recently or not, and try once more.
		c.mu.Lock()
		victims = c.evictLocked(true)
		c.mu.Unlock()
		c.closeVictims(victims)
		f, err = cf.fs.OpenFile(cf.path, flag, perm)
	}
	c.mu.Lock()
	c.mu.opening--
	if err == nil {
		cf.f = f
		cf.slot = len(c.mu.open)
		c.mu.open = append(c.mu.open, cf)
		if n := int64(len(c.mu.open)); n > c.maxOpen.Load() {
			c.maxOpen.Store(n) // under c.mu: no lost update
		}
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.opens.Add(1)
	return nil
}

// evictLocked takes unpinned files out of the cache until there is room for the opens in
// progress (all of them, with all) and returns their files to close. Files pinned, or locked
// by another goroutine (which is about to use them), are skipped; with all unset, a file used
// since the hand last passed is skipped once.
// REQUIRES: c.mu held; the caller may hold one cachedFile's mu (that file is not in open).
func (c *FileCache) evictLocked(all bool) []File {
	var victims []File
	target := c.limit - c.mu.opening - c.mu.closing
	if all {
		target = 0
	}
	for steps, n := 0, 2*len(c.mu.open)+1; len(c.mu.open) > max(target, 0) && steps < n; steps++ {
		if c.mu.hand >= len(c.mu.open) {
			c.mu.hand = 0
		}
		v := c.mu.open[c.mu.hand]
		if !v.mu.TryLock() {
			c.mu.hand++
			continue
		}
		if v.pins > 0 || v.referenced && !all {
			v.referenced = false
			v.mu.Unlock()
			c.mu.hand++
			continue
		}
		victims = append(victims, v.f)
		v.f = nil
		c.removeLocked(v)
		v.mu.Unlock()
		c.evictions.Add(1)
	}
	c.mu.closing += len(victims)
	return victims
}

// removeLocked takes cf out of open.
// REQUIRES: c.mu held, cf in open.
func (c *FileCache) removeLocked(cf *cachedFile) {
	last := len(c.mu.open) - 1
	moved := c.mu.open[last]
	c.mu.open[cf.slot] = moved
	moved.slot = cf.slot
	c.mu.open[last] = nil
	c.mu.open = c.mu.open[:last]
	cf.slot = -1
}

// removeForClose takes cf out of open, its file counted as closing until closed(1).
func (c *FileCache) removeForClose(cf *cachedFile) {
	c.mu.Lock()
	c.removeLocked(cf)
	c.mu.closing++
	c.mu.Unlock()
}

// closed records that n files counted as closing are closed.
func (c *FileCache) closed(n int) {
	c.mu.Lock()
	c.mu.closing -= n
	c.mu.Unlock()
}

// closeVictims closes files evictLocked returned.
func (c *FileCache) closeVictims(files []File) {
	if len(files) == 0 {
		return
	}
	for _, f := range files {
		_ = f.Close() // an idle descriptor: closing it loses nothing (see above)
	}
	c.closed(len(files))
}

func isTooManyOpenFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// errFileClosed is returned by a cachedFile used after Close.
var errFileClosed = os.ErrClosed

// cachedFile is a segment file opened through a FileCache. It implements File; every method
// pins the file for its duration.
type cachedFile struct {
	cache *FileCache
	fs    FS
	path  string

	mu sync.Mutex
	// f is the open file, nil while evicted (or after Close). Guarded by mu; eviction takes
	// mu with TryLock, so holding mu keeps f open.
	f File
	// pins counts operations using f. Invariant: pins > 0 implies f != nil. Guarded by mu.
	pins int
	// referenced is set by every pin and cleared by the clock hand. Guarded by mu.
	referenced bool
	// closed is set by Close: the file is not reopened; the last unpin closes f. Guarded by mu.
	closed bool
	// removed is set when the file was unlinked: once evicted there is nothing left to sync.
	// Guarded by mu.
	removed bool
	// slot is the index in cache.mu.open, -1 if not there. Guarded by cache.mu.
	slot int
	// osBacked: the first open returned an *os.File. Set before cf is shared.
	osBacked bool
}

var _ File = (*cachedFile)(nil)

// pin returns the open file, reopening it if it was evicted; unpin must follow.
func (cf *cachedFile) pin() (File, error) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if cf.closed {
		return nil, errFileClosed
	}
	if cf.f == nil {
		if err := cf.cache.openLocked(cf, os.O_RDWR, 0); err != nil {
			return nil, err
		}
	}
	cf.pins++
	cf.referenced = true
	return cf.f, nil
}

// pinIfOpen is pin without a reopen: ok is false if the file is not open now.
func (cf *cachedFile) pinIfOpen() (File, bool) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if cf.f == nil || cf.closed {
		return nil, false
	}
	cf.pins++
	return cf.f, true
}

func (cf *cachedFile) unpin() {
	cf.mu.Lock()
	cf.pins--
	var f File
	if cf.pins == 0 && cf.closed && cf.f != nil {
		f, cf.f = cf.f, nil
		cf.cache.removeForClose(cf)
	}
	cf.mu.Unlock()
	if f != nil {
		cf.cache.closeVictims([]File{f}) // Close already returned; as os.File, the last user closes
	}
}

// release closes cf's descriptor now if no operation uses it; the next one reopens it.
func (cf *cachedFile) release() {
	cf.mu.Lock()
	if cf.f == nil || cf.pins > 0 || cf.closed {
		cf.mu.Unlock()
		return
	}
	f := cf.f
	cf.f = nil
	cf.cache.removeForClose(cf)
	cf.mu.Unlock()
	cf.cache.closeVictims([]File{f})
}

// markRemoved records that the file was unlinked (see removed).
func (cf *cachedFile) markRemoved() {
	cf.mu.Lock()
	cf.removed = true
	cf.mu.Unlock()
}

func (cf *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := cf.pin()
	if err != nil {
		return 0, err
	}
	defer cf.unpin()
	return f.ReadAt(p, off)
}

func (cf *cachedFile) WriteAt(p []byte, off int64) (int, error) {
	f, err := cf.pin()
	if err != nil {
		return 0, err
	}
	defer cf.unpin()
	return f.WriteAt(p, off)
}

// Sync fsyncs the file, reopening it if it was evicted (fsync writes back every dirty page of
// the file, whichever descriptor wrote it). A removed file that is no longer open has nothing
// left to make durable.
func (cf *cachedFile) Sync() error {
	cf.mu.Lock()
	gone := cf.removed && cf.f == nil
	cf.mu.Unlock()
	if gone {
		return nil
	}
	f, err := cf.pin()
	if err != nil {
		return err
	}
	defer cf.unpin()
	return f.Sync()
}

func (cf *cachedFile) Truncate(size int64) error {
	f, err := cf.pin()
	if err != nil {
		return err
	}
	defer cf.unpin()
	return f.Truncate(size)
}

func (cf *cachedFile) Stat() (os.FileInfo, error) {
	f, err := cf.pin()
	if err != nil {
		return nil, err
	}
	defer cf.unpin()
	return f.Stat()
}

func (cf *cachedFile) Name() string { return cf.path }

// Close closes the file for good (at once, or at the last unpin of an operation in flight).
func (cf *cachedFile) Close() error {
	cf.mu.Lock()
	if cf.closed {
		cf.mu.Unlock()
		return nil
	}
	cf.closed = true
	var f File
	if cf.f != nil && cf.pins == 0 {
		f, cf.f = cf.f, nil
		cf.cache.removeForClose(cf)
	}
	cf.mu.Unlock()
	if f == nil {
		return nil
	}
	err := f.Close()
	cf.cache.closed(1)
	return err
}

// writeSlice sends [s.Position, s.Position+s.Length) of the file to w with the file pinned,
// by sendfile when it is an OS file and w a socket.
func (cf *cachedFile) writeSlice(w io.Writer, s FileSlice) (int64, error) {
	f, err := cf.pin()
	if err != nil {
		return 0, err
	}
	defer cf.unpin()
	s.File = f
	return WriteSlice(w, s)
}

// withOpenOSFile runs fn with f's *os.File if f is one, or a cached file that is open now
// (pinned during fn); it reports whether fn ran. Page-cache advice uses it: reopening an
// evicted file just to give advice is not worth a descriptor.
func withOpenOSFile(f File, fn func(*os.File)) bool {
	if cf, ok := f.(*cachedFile); ok {
		inner, open := cf.pinIfOpen()
		if !open {
			return false
		}
		defer cf.unpin()
		f = inner
	}
	of, ok := f.(*os.File)
	if ok {
		fn(of)
	}
	return ok
}

// isOSBacked reports whether f is (or caches) an *os.File.
func isOSBacked(f File) bool {
	if cf, ok := f.(*cachedFile); ok {
		return cf.osBacked
	}
	_, ok := f.(*os.File)
	return ok
}

// cachingFS is the FS a Log does its I/O through: the FS it was given, and the cache its
// segment files are opened through (openSegmentFiles).
type cachingFS struct {
	FS
	cache *FileCache
}

// segmentFileCache returns the FS to open segment files with and the cache to open them
// through: fsys's own if it is a cachingFS, else the process-wide default.
func segmentFileCache(fsys FS) (FS, *FileCache) {
	if c, ok := fsys.(cachingFS); ok {
		return c.FS, c.cache
	}
	return fsys, DefaultFileCache()
}
