//go:build !linux

package main

import "os"

func fdatasyncFile(f *os.File) error { return f.Sync() }

func writeBackDirtyPages() {}

func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
}

func dropPageCache() bool { return false }
