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
