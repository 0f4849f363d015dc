package logstore

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrCrashed is returned by a MemFS after its simulated crash until Restart.
var ErrCrashed = errors.New("memfs: crashed")

// MemFS is an in-memory FS that simulates crashes, for tests of this and other packages.
//
// Durability model (strict, like pebble's vfs.MemFS with crash support): a file's bytes are
// durable only as of its last Sync; a directory's entries (creates, renames, removes) only as
// of its last SyncDir. Directories themselves are durable at once. Crash (or reaching the
// CrashAfter op count) freezes the durable state; every later operation fails with ErrCrashed.
// Restart discards everything not durable — optionally keeping a random prefix of each file's
// unsynced appended bytes, sometimes ending in garbage, to simulate partial write-back — and
// makes the FS usable again; files opened before are dead.
type MemFS struct {
	mu      sync.Mutex
	dirs    map[string]*memDir
	gen     int
	crashed bool
	// ops counts mutating operations; crashAt > 0 crashes when ops reaches it.
	ops, crashAt int
	inject       func(op, path string) error
	rng          *rand.Rand
	torn         bool
}

type memDir struct {
	entries map[string]*memNode // current
	durable map[string]*memNode // as of the last SyncDir
}

type memNode struct {
	data    []byte
	synced  []byte
	modTime time.Time
}

// NewMemFS returns an empty MemFS.
func NewMemFS() *MemFS {
	return &MemFS{dirs: map[string]*memDir{}, rng: rand.New(rand.NewPCG(1, 2))}
}

// SetTornWrites makes Restart keep a random prefix of unsynced appended bytes (sometimes with
// its last 16 bytes replaced by garbage), seeded by seed.
func (m *MemFS) SetTornWrites(on bool, seed uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.torn = on
	m.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// CrashAfter makes the FS crash when the n-th mutating operation from now is attempted (that
// operation does not happen). n <= 0 disables.
func (m *MemFS) CrashAfter(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops = 0
	m.crashAt = n
}

// Ops returns the number of mutating operations since the last CrashAfter.
func (m *MemFS) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// Crash freezes the durable state now.
func (m *MemFS) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashed = true
}

// Crashed reports whether the FS has crashed.
func (m *MemFS) Crashed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// InjectError calls fn before every operation; a non-nil result fails that operation.
func (m *MemFS) InjectError(fn func(op, path string) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inject = fn
}

// Restart applies the crash (if not crashed yet, crashes now): everything not durable is lost.
func (m *MemFS) Restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.crashed = false
	m.crashAt = 0
	seen := map[*memNode]bool{}
	for _, d := range m.dirs {
		d.entries = cloneEntries(d.durable)
		for _, n := range d.entries {
			if seen[n] {
				continue
			}
			seen[n] = true
			kept := append([]byte(nil), n.synced...)
			if m.torn && len(n.data) > len(n.synced) && string(n.data[:len(n.synced)]) == string(n.synced) {
				extra := n.data[len(n.synced):]
				k := m.rng.IntN(len(extra) + 1)
				kept = append(kept, extra[:k]...)
				if k > 0 && m.rng.IntN(4) == 0 {
					// The last written-back block holds garbage.
					for i := len(kept) - min(k, 16); i < len(kept); i++ {
						kept[i] = byte(m.rng.IntN(256))
					}
				}
			}
			n.data = kept
			n.synced = append([]byte(nil), kept...)
		}
	}
}

func cloneEntries(e map[string]*memNode) map[string]*memNode {
	c := make(map[string]*memNode, len(e))
	for k, v := range e {
		c[k] = v
	}
	return c
}

// opLocked accounts one operation; mutating ones count toward CrashAfter.
func (m *MemFS) opLocked(op, path string, mutating bool) error {
	if m.crashed {
		return ErrCrashed
	}
	if m.inject != nil {
		if err := m.inject(op, path); err != nil {
			return err
		}
	}
	if mutating {
		m.ops++
		if m.crashAt > 0 && m.ops >= m.crashAt {
			m.crashed = true
			return ErrCrashed
		}
	}
	return nil
}

func (m *MemFS) split(path string) (*memDir, string, error) {
	path = filepath.Clean(path)
	d := m.dirs[filepath.Dir(path)]
	if d == nil {
		return nil, "", &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return d, filepath.Base(path), nil
}

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.split(name)
	if err != nil {
		if err := m.opLocked("open", name, false); err != nil {
			return nil, err
		}
		return nil, err
	}
	n := d.entries[base]
	// Creating or truncating a file mutates; opening an existing one does not.
	if err := m.opLocked("open", name, n == nil && flag&os.O_CREATE != 0 || n != nil && flag&os.O_TRUNC != 0); err != nil {
		return nil, err
	}
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n == nil:
		n = &memNode{modTime: time.Now()}
		d.entries[base] = n
	case flag&os.O_TRUNC != 0:
		n.data = n.data[:0:0]
	}
	return &memFile{fs: m, node: n, name: filepath.Clean(name), gen: m.gen, readOnly: flag&(os.O_RDWR|os.O_WRONLY) == 0}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.opLocked("remove", name, true); err != nil {
		return err
	}
	d, base, err := m.split(name)
	if err != nil {
		return err
	}
	if d.entries[base] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(d.entries, base)
	return nil
}

// RemoveAll implements FS; the removal is durable at once.
func (m *MemFS) RemoveAll(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.opLocked("removeall", path, true); err != nil {
		return err
	}
	path = filepath.Clean(path)
	for p := range m.dirs {
		if p == path || strings.HasPrefix(p, path+string(filepath.Separator)) {
			delete(m.dirs, p)
		}
	}
	if d := m.dirs[filepath.Dir(path)]; d != nil {
		delete(d.entries, filepath.Base(path))
		delete(d.durable, filepath.Base(path))
	}
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.opLocked("rename", oldpath, true); err != nil {
		return err
	}
	od, ob, err := m.split(oldpath)
	if err != nil {
		return err
	}
	nd, nb, err := m.split(newpath)
	if err != nil {
		return err
	}
	n := od.entries[ob]
	if n == nil {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	delete(od.entries, ob)
	nd.entries[nb] = n
	return nil
}

// MkdirAll implements FS; directories are durable at once.
func (m *MemFS) MkdirAll(path string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.opLocked("mkdir", path, false); err != nil {
		return err
	}
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if m.dirs[p] == nil {
			m.dirs[p] = &memDir{entries: map[string]*memNode{}, durable: map[string]*memNode{}}
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return nil
}

// ReadDir implements FS (file names only; subdirectories are not listed).
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.opLocked("readdir", dir, false); err != nil {
		return nil, err
	}
	d := m.dirs[filepath.Clean(dir)]
	if d == nil {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	names := make([]string, 0, len(d.entries))
	for k := range d.entries {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.opLocked("syncdir", dir, true); err != nil {
		return err
	}
	d := m.dirs[filepath.Clean(dir)]
	if d == nil {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	d.durable = cloneEntries(d.entries)
	return nil
}

// ReadFileForTest returns a file's current bytes.
func (m *MemFS) ReadFileForTest(path string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.split(path)
	if err != nil || d.entries[base] == nil {
		return nil, false
	}
	return append([]byte(nil), d.entries[base].data...), true
}

// WriteFileForTest replaces a file's bytes (current and durable), creating it if needed.
func (m *MemFS) WriteFileForTest(path string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.split(path)
	if err != nil {
		return
	}
	n := d.entries[base]
	if n == nil {
		n = &memNode{}
		d.entries[base] = n
		d.durable[base] = n
	}
	n.data = append([]byte(nil), data...)
	n.synced = append([]byte(nil), data...)
}

type memFile struct {
	fs       *MemFS
	node     *memNode
	name     string
	gen      int
	readOnly bool
	closed   bool // guarded by fs.mu
}

func (f *memFile) checkLocked(op string, mutating bool) error {
	if f.closed {
		return os.ErrClosed
	}
	if f.gen != f.fs.gen {
		return ErrCrashed
	}
	if mutating && f.readOnly {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrPermission}
	}
	return f.fs.opLocked(op, f.name, mutating)
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, errors.New("memfs: negative offset")
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, errors.New("memfs: negative offset")
	}
	if end := off + int64(len(p)); end > int64(len(f.node.data)) {
		if end > int64(cap(f.node.data)) {
			grown := make([]byte, end, max(end, 2*int64(cap(f.node.data))))
			copy(grown, f.node.data)
			f.node.data = grown
		} else {
			old := len(f.node.data)
			f.node.data = f.node.data[:end]
			clear(f.node.data[old:])
		}
	}
	copy(f.node.data[off:], p)
	f.node.modTime = time.Now()
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync", true); err != nil {
		return err
	}
	f.node.synced = append(f.node.synced[:0:0], f.node.data...)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return errors.New("memfs: negative size")
	}
	if size <= int64(len(f.node.data)) {
		// Copy so that slices of the old content held by the synced image stay intact.
		f.node.data = append([]byte(nil), f.node.data[:size]...)
	} else {
		f.node.data = append(f.node.data, make([]byte, size-int64(len(f.node.data)))...)
	}
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat", false); err != nil {
		return nil, err
	}
	return memFileInfo{name: filepath.Base(f.name), size: int64(len(f.node.data)), mod: f.node.modTime}, nil
}

func (f *memFile) Name() string { return f.name }

type memFileInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i memFileInfo) Name() string       { return i.name }
func (i memFileInfo) Size() int64        { return i.size }
func (i memFileInfo) Mode() os.FileMode  { return 0o644 }
func (i memFileInfo) ModTime() time.Time { return i.mod }
func (i memFileInfo) IsDir() bool        { return false }
func (i memFileInfo) Sys() any           { return nil }
