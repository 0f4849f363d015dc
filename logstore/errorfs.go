package logstore

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// ErrorFS wraps an FS and fails chosen operations, as pebble's errorfs does: tests inject an
// error at the n-th operation of a kind (or at the n-th operation of any kind) and check that
// the log neither panics nor acknowledges what it could not store, and that it serves again
// once the file system recovers. It also counts operations, so a test can first run a
// workload to learn how many there are and then fail each one in turn.
//
// A failed write may first write part of its bytes (PartialWrites), as a write that runs out
// of space midway does, leaving a torn tail for recovery to cut.
type ErrorFS struct {
	fs FS

	mu struct {
		sync.Mutex
		// counts are the operations attempted so far, per kind; total over all kinds.
		counts [numOps]int
		total  int
		rules  []errorRule
		// partialWrites: a failed WriteAt first writes half its bytes.
		partialWrites bool
		injected      int
	}
}

// Op is a kind of file-system operation ErrorFS counts and can fail.
type Op int

// The operation kinds. OpCreate is an OpenFile that may create the file (O_CREATE); OpOpen any
// other OpenFile. OpSync covers File.Sync and FS.SyncDir.
const (
	OpWrite Op = iota
	OpSync
	OpCreate
	OpOpen
	OpRename
	OpTruncate
	OpRemove
	OpMkdir
	numOps
)

// OpAny, as a rule's kind, counts operations of every kind together.
const OpAny Op = -1

var opNames = [numOps]string{"write", "sync", "create", "open", "rename", "truncate", "remove", "mkdir"}

func (o Op) String() string {
	if o == OpAny {
		return "any"
	}
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// errorRule fails operations of kind whose index (counted per kind, or over all kinds for
// OpAny, from 0 since the FS was made) is at least from and below to.
type errorRule struct {
	kind     Op
	from, to int
	err      error
}

// NewErrorFS wraps fs (the OS's when nil); it fails nothing until told to.
func NewErrorFS(fs FS) *ErrorFS {
	if fs == nil {
		fs = OSFS{}
	}
	return &ErrorFS{fs: fs}
}

// FailAt fails the n-th operation (0-based, counted since the FS was made) of kind with err.
func (e *ErrorFS) FailAt(kind Op, n int, err error) { e.addRule(errorRule{kind, n, n + 1, err}) }

// FailFrom fails every operation of kind from the n-th on with err, until Heal: a full disk.
func (e *ErrorFS) FailFrom(kind Op, n int, err error) {
	e.addRule(errorRule{kind, n, int(^uint(0) >> 1), err})
}

// FailNow fails every later operation of kind with err, until Heal.
func (e *ErrorFS) FailNow(kind Op, err error) {
	e.mu.Lock()
	n := e.mu.total
	if kind != OpAny {
		n = e.mu.counts[kind]
	}
	e.mu.Unlock()
	e.FailFrom(kind, n, err)
}

// Heal removes every rule: the file system works again.
func (e *ErrorFS) Heal() {
	e.mu.Lock()
	e.mu.rules = nil
	e.mu.Unlock()
}

// SetPartialWrites makes a failed WriteAt write the first half of its bytes before failing.
func (e *ErrorFS) SetPartialWrites(on bool) {
	e.mu.Lock()
	e.mu.partialWrites = on
	e.mu.Unlock()
}

// Count returns how many operations of kind (OpAny: of every kind) were attempted so far.
func (e *ErrorFS) Count(kind Op) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if kind == OpAny {
		return e.mu.total
	}
	return e.mu.counts[kind]
}

// Injected returns how many operations were failed so far.
func (e *ErrorFS) Injected() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mu.injected
}

func (e *ErrorFS) addRule(r errorRule) {
	e.mu.Lock()
	e.mu.rules = append(e.mu.rules, r)
	e.mu.Unlock()
}

// op counts one operation and returns the error to fail it with (nil: let it happen), and
// whether a failed write should write part of its bytes first.
func (e *ErrorFS) op(kind Op, path string) (error, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	perKind, total := e.mu.counts[kind], e.mu.total
	e.mu.counts[kind]++
	e.mu.total++
	for _, r := range e.mu.rules {
		n := perKind
		if r.kind == OpAny {
			n = total
		} else if r.kind != kind {
			continue
		}
		if n >= r.from && n < r.to {
			e.mu.injected++
			return &os.PathError{Op: "errorfs " + kind.String(), Path: path, Err: r.err}, e.mu.partialWrites
		}
	}
	return nil, false
}

// OpenFile implements FS.
func (e *ErrorFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	kind := OpOpen
	if flag&os.O_CREATE != 0 {
		kind = OpCreate
	}
	if err, _ := e.op(kind, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: e}, nil
}

// Remove implements FS.
func (e *ErrorFS) Remove(name string) error {
	if err, _ := e.op(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

// RemoveAll implements FS (counted as a remove).
func (e *ErrorFS) RemoveAll(path string) error {
	if err, _ := e.op(OpRemove, path); err != nil {
		return err
	}
	return e.fs.RemoveAll(path)
}

// Rename implements FS.
func (e *ErrorFS) Rename(oldpath, newpath string) error {
	if err, _ := e.op(OpRename, newpath); err != nil {
		return err
	}
	return e.fs.Rename(oldpath, newpath)
}

// MkdirAll implements FS.
func (e *ErrorFS) MkdirAll(path string, perm os.FileMode) error {
	if err, _ := e.op(OpMkdir, path); err != nil {
		return err
	}
	return e.fs.MkdirAll(path, perm)
}

// ReadDir implements FS; reads are never failed.
func (e *ErrorFS) ReadDir(dir string) ([]string, error) { return e.fs.ReadDir(dir) }

// SyncDir implements FS (counted as a sync).
func (e *ErrorFS) SyncDir(dir string) error {
	if err, _ := e.op(OpSync, dir); err != nil {
		return err
	}
	return e.fs.SyncDir(dir)
}

// errorFile is a File of an ErrorFS. Reads, Stat and Close pass through.
type errorFile struct {
	File
	fs *ErrorFS
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	if err, partial := f.fs.op(OpWrite, f.Name()); err != nil {
		n := 0
		if partial && len(p) > 1 {
			n, _ = f.File.WriteAt(p[:len(p)/2], off)
		}
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *errorFile) Sync() error {
	if err, _ := f.fs.op(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err, _ := f.fs.op(OpTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// Errors tests commonly inject.
var (
	ErrNoSpace = syscall.ENOSPC
	ErrIO      = syscall.EIO
)
