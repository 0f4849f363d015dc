package logstore

import (
	"os"

	"golang.org/x/sys/unix"
)

func canDropCache(f File) bool { return isOSBacked(f) }

// startWriteback asks the kernel to start writing [off, off+n) of f back, without waiting.
// Errors are ignored: it is advice, and a failing disk shows up in the next fsync.
func startWriteback(f File, off, n int64) {
	withFd(f, func(fd int) { _ = unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE) })
}

// dropCache waits for the writeback of [off, off+n) of f and drops those pages from the page
// cache. Dirty pages (a range rewritten after a truncation) are written first, so nothing is
// lost; a closed file is skipped.
func dropCache(f File, off, n int64) {
	withFd(f, func(fd int) {
		flags := unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
		if unix.SyncFileRange(fd, off, n, flags) == nil {
			_ = unix.Fadvise(fd, off, n, unix.FADV_DONTNEED)
		}
	})
}

// withFd runs fn with f's descriptor while f cannot be closed under it; a segment file the
// file cache has closed is skipped (advice is not worth reopening it).
func withFd(f File, fn func(fd int)) {
	withOpenOSFile(f, func(of *os.File) {
		rc, err := of.SyscallConn()
		if err != nil {
			return // closed
		}
		_ = rc.Control(func(fd uintptr) { fn(int(fd)) })
	})
}

// readIntoCache starts reading [off, off+n) of f into the page cache (POSIX_FADV_WILLNEED
// submits the reads without waiting for them).
func readIntoCache(f File, off, n int64) {
	withFd(f, func(fd int) { _ = unix.Fadvise(fd, off, n, unix.FADV_WILLNEED) })
}
