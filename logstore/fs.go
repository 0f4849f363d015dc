package logstore

import (
	"io"
	"os"
	"sort"
)

// File is an open file of an FS. *os.File implements it, so callers may type-assert a
// FileSlice's File to *os.File for sendfile.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Name() string
}

// FS is the file system a Log does all its I/O through. Paths are OS-style paths.
type FS interface {
	// OpenFile opens name with os.OpenFile flags.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	MkdirAll(path string, perm os.FileMode) error
	// ReadDir lists the names (not paths) in dir, sorted.
	ReadDir(dir string) ([]string, error)
	// SyncDir makes the directory's entries (creates, renames, removes) durable.
	SyncDir(dir string) error
}

// OSFS is the FS of the operating system.
type OSFS struct{}

var _ FS = OSFS{}

func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}
func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (OSFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OSFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }

func (OSFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
