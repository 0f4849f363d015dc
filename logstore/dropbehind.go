package logstore

import "sync"

// Drop-behind keeps a log's page-cache footprint to its most recent bytes. After every
// dropBehindChunk bytes appended, the log starts the kernel's writeback of them at once
// (sync_file_range, without waiting), and once bytes are more than Options.CacheWindowBytes
// behind the end of the active segment a background worker waits for their writeback and
// drops them from the page cache (posix_fadvise DONTNEED).
//
// Why: a broker writes a stream that the page cache would otherwise keep until memory runs
// out, and from then on every new page of the stream comes from reclaim. On the virtual
// machines sluice is measured on, copying into such pages cost 3.6 CPU s/GiB and capped a
// plain sequential pwrite at ~290 MiB/s; recycling a small window of pages did the same
// writes at 0.5 CPU s/GiB and ~2 GB/s (see bench/results). Consumers at the tail read the
// window from memory; older data is read from disk, as it would be after reclaim anyway.
//
// It never affects what is stored or when it is durable: the flush policy alone decides
// fsyncs. Files that are not *os.File (MemFS) are left alone.

// dropBehindChunk is the granularity of writeback starts and cache drops.
const dropBehindChunk = 4 << 20

// dropBehindState tracks the active segment's writeback and drop positions.
// Guarded by Log.appendMu.
type dropBehindState struct {
	seg     *segment
	kicked  int64 // bytes of seg whose writeback was started
	dropped int64 // bytes of seg handed to the drop worker
}

// dropBehindLocked starts writeback of what was appended since the last call and schedules
// drops of what is now outside the window.
// REQUIRES: appendMu held.
func (l *Log) dropBehindLocked() {
	window := l.cacheWindow
	if window <= 0 {
		return
	}
	db := &l.dropBehind
	seg := l.active()
	if db.seg != seg {
		if db.seg != nil && db.seg.size > db.dropped {
			// The rolled segment is fsynced in the background; drop what we kept of it.
			scheduleDrop(db.seg.log, db.dropped, db.seg.size-db.dropped)
		}
		*db = dropBehindState{seg: seg}
	}
	if seg.size < db.kicked { // truncated
		db.kicked, db.dropped = seg.size, min(db.dropped, seg.size)
	}
	if seg.size-db.kicked >= dropBehindChunk {
		startWriteback(seg.log, db.kicked, seg.size-db.kicked)
		db.kicked = seg.size
	}
	if upto := db.kicked - window; upto-db.dropped >= dropBehindChunk {
		scheduleDrop(seg.log, db.dropped, upto-db.dropped)
		db.dropped = upto
	}
}

// readaheadBytes is how far past a fetch of data outside the cache window the log asks the
// kernel to read ahead, so that a consumer catching up streams from disk instead of faulting
// the next fetch in synchronously.
const readaheadBytes = 8 << 20

// readaheadLocked asks for [end, end+readaheadBytes) of seg to be read into the page cache in
// the background when a read ended at end outside the cache window.
// REQUIRES: l.mu held (read or write).
func (l *Log) readaheadLocked(seg *segment, end int64) {
	if l.cacheWindow <= 0 || end >= seg.size {
		return
	}
	if seg == l.active() && end >= seg.size-l.cacheWindow {
		return // inside the window: still cached
	}
	scheduleCacheJob(cacheJob{f: seg.log, off: end, len: min(readaheadBytes, seg.size-end), readahead: true})
}

// cacheJob is a byte range of a file to drop from the page cache once written back or, with
// readahead, to read into it.
type cacheJob struct {
	f         File
	off, len  int64
	done      chan struct{} // a marker, not a range: closed when the worker reaches it
	readahead bool
}

var (
	dropOnce sync.Once
	// dropJobs feeds the one drop worker. Full means the worker is behind (the disk is slower
	// than the appends); a job that does not fit is skipped and its pages left to the kernel.
	dropJobs chan cacheJob
	// readaheadJobs feeds the readahead worker; a job that does not fit is skipped.
	readaheadJobs chan cacheJob
)

// scheduleDrop hands [off, off+n) of f to the drop worker.
func scheduleDrop(f File, off, n int64) {
	scheduleCacheJob(cacheJob{f: f, off: off, len: n})
}

func scheduleCacheJob(j cacheJob) {
	if !canDropCache(j.f) || j.len <= 0 {
		return
	}
	dropOnce.Do(func() {
		dropJobs = make(chan cacheJob, 1024)
		readaheadJobs = make(chan cacheJob, 64)
		go cacheWorker(dropJobs)
		go cacheWorker(readaheadJobs) // not queued behind drops that wait for writeback
	})
	jobs := dropJobs
	if j.readahead {
		jobs = readaheadJobs
	}
	select {
	case jobs <- j:
	default:
	}
}

func cacheWorker(jobs chan cacheJob) {
	for j := range jobs {
		switch {
		case j.done != nil:
			close(j.done)
		case j.readahead:
			readIntoCache(j.f, j.off, j.len)
		default:
			dropCache(j.f, j.off, j.len)
		}
	}
}

// waitDrops returns once the drop and readahead workers have finished every job scheduled
// before the call (for tests).
func waitDrops() {
	if dropJobs == nil {
		return
	}
	for _, jobs := range []chan cacheJob{dropJobs, readaheadJobs} {
		done := make(chan struct{})
		jobs <- cacheJob{done: done}
		<-done
	}
}
