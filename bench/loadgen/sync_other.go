//go:build !linux

package main

import "os"

func fdatasyncFile(f *os.File) error { return f.Sync() }

func writeBackDirtyPages() {}
