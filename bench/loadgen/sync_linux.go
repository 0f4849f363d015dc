package main

import (
	"os"
	"syscall"
)

func fdatasyncFile(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// writeBackDirtyPages writes every dirty page of the page cache to disk (sync(2)).
func writeBackDirtyPages() { syscall.Sync() }

// openDirect creates path for writing with O_DIRECT (buffers, offsets and sizes must be
// 4 KiB-aligned).
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_DIRECT, 0o644)
}

// dropPageCache empties the page cache (clean pages; call writeBackDirtyPages first). It needs
// root; without it the cache is left as it is and false is returned.
func dropPageCache() bool {
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0o644) == nil
}
