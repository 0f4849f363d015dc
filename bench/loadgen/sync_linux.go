package main

import (
	"os"
	"syscall"
)

func fdatasyncFile(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// writeBackDirtyPages writes every dirty page of the page cache to disk (sync(2)).
func writeBackDirtyPages() { syscall.Sync() }
