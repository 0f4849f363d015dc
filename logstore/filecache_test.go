package logstore

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/internal/batch"
)

// countingFS counts the segment files open through it, and the most open at once.
type countingFS struct {
	FS
	open, maxOpen atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if !isSegmentFile(name) {
		return f, nil // checkpoints and snapshots: written and closed at once, outside the cache
	}
	n := c.open.Add(1)
	for {
		m := c.maxOpen.Load()
		if n <= m || c.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	return &countedFile{File: f, fs: c}, nil
}

func isSegmentFile(name string) bool {
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

type countedFile struct {
	File
	fs     *countingFS
	closed atomic.Bool
}

func (f *countedFile) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.fs.open.Add(-1)
	}
	return f.File.Close()
}

// readAllRecords reads every batch of l from the log start and returns their bytes.
func readAllRecords(t *testing.T, l *Log) []byte {
	t.Helper()
	var out bytes.Buffer
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		rr, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("read %s at %d: %v", l.Dir(), off, err)
		}
		if rr.Bytes == 0 {
			t.Fatalf("read %s at %d: nothing before log end %d", l.Dir(), off, l.LogEndOffset())
		}
		start := out.Len()
		for _, s := range rr.Slices {
			if _, err := WriteSlice(&out, s); err != nil {
				t.Fatal(err)
			}
		}
		// Walk the batches read to find the next offset.
		b := out.Bytes()[start:]
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			off = h.NextOffset()
			b = b[h.Size():]
		}
	}
	return out.Bytes()
}

// Regression: every segment kept its three files open for its whole life, so a process with
// many partitions ran out of descriptors (and could not even reopen its own directory). With a
// FileCache of 12, 40 partitions of several segments each are written, read, closed, reopened
// and read again, and at no moment are more than 12 of their files open.
func TestFileCacheBoundsOpenSegmentFiles(t *testing.T) {
	const partitions, limit = 40, 12
	fsys := &countingFS{FS: NewMemFS()}
	cache := NewFileCache(limit)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 250 // a few batches per segment: several segments per partition
	open := func() []*Log {
		logs := make([]*Log, partitions)
		for i := range logs {
			l, err := Open(fmt.Sprintf("/data/t-%d", i), cfg, Options{FS: fsys, Logger: quietLogger, FileCache: cache})
			if err != nil {
				t.Fatal(err)
			}
			logs[i] = l
		}
		return logs
	}
	logs := open()
	want := make([][]byte, partitions)
	for round := 0; round < 6; round++ {
		for i, l := range logs {
			b := mkBatch(3, int64(1000+round), -1, 0, 0)
			if _, err := l.AppendAsLeader(b, 0); err != nil {
				t.Fatal(err)
			}
			// One operation at a time (no background fsync of a rolled segment running
			// beside the next append), so that no more than one file is pinned at once.
			l.waitRollSyncs()
			want[i] = append(want[i], b...) // patched in place: the stored bytes
		}
	}
	if n := logs[0].NumSegments(); n < 3 {
		t.Fatalf("%d segments per partition; the test wants several", n)
	}
	for i, l := range logs {
		if got := readAllRecords(t, l); !bytes.Equal(got, want[i]) {
			t.Fatalf("partition %d: read %d bytes, want %d", i, len(got), len(want[i]))
		}
	}
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := fsys.open.Load(); n != 0 {
		t.Fatalf("%d files still open after every log closed", n)
	}
	logs = open() // the restart on the same directories
	for i, l := range logs {
		if got := readAllRecords(t, l); !bytes.Equal(got, want[i]) {
			t.Fatalf("after reopen, partition %d: read %d bytes, want %d", i, len(got), len(want[i]))
		}
		if _, err := l.AppendAsLeader(mkBatch(1, 5000, -1, 0, 0), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range logs {
		l.Close()
	}
	if m := fsys.maxOpen.Load(); m > limit {
		t.Fatalf("%d segment files open at once, cache limit %d", m, limit)
	}
	if st := cache.Stats(); st.MaxOpen > limit || st.Evictions == 0 || st.Open != 0 {
		t.Fatalf("cache stats %+v", st)
	}
}

// A pinned file (an operation or a sendfile in flight) is never evicted; an unpinned one is,
// and it reopens on its next use with its bytes intact.
func TestFileCacheEvictionSkipsPinnedAndReopens(t *testing.T) {
	fsys := &countingFS{FS: NewMemFS()}
	fsys.MkdirAll("/c", 0o755)
	cache := NewFileCache(2)
	open := func(name string) *cachedFile {
		cf, err := cache.openFile(fsys, filepath.Join("/c", name+logSuffix), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return cf
	}
	a := open("a")
	if _, err := a.WriteAt([]byte("alpha"), 0); err != nil {
		t.Fatal(err)
	}
	pinned, err := a.pin()
	if err != nil {
		t.Fatal(err)
	}
	b, c := open("b"), open("c") // c's open must evict b, not the pinned a
	isOpen := func(cf *cachedFile) bool { cf.mu.Lock(); defer cf.mu.Unlock(); return cf.f != nil }
	if !isOpen(a) || isOpen(b) || !isOpen(c) {
		t.Fatalf("open: a %v b %v c %v; want a (pinned) and c", isOpen(a), isOpen(b), isOpen(c))
	}
	buf := make([]byte, 5)
	if _, err := pinned.ReadAt(buf, 0); err != nil || string(buf) != "alpha" {
		t.Fatalf("pinned file: %q %v", buf, err)
	}
	a.unpin()
	if _, err := b.WriteAt([]byte("bravo"), 0); err != nil { // reopens b, evicting a or c
		t.Fatal(err)
	}
	for _, f := range []*cachedFile{a, b, c} {
		f.ReadAt(buf, 0) // every file reopens on use
	}
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "alpha" {
		t.Fatalf("a after eviction: %q %v", buf, err)
	}
	if _, err := b.ReadAt(buf, 0); err != nil || string(buf) != "bravo" {
		t.Fatalf("b after eviction: %q %v", buf, err)
	}
	if m := fsys.maxOpen.Load(); m > 2 {
		t.Fatalf("%d files open at once, limit 2", m)
	}
	if st := cache.Stats(); st.Evictions < 3 || st.Open > 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Close of a file in use closes it when the operation ends; it never reopens afterwards.
func TestFileCacheCloseWhilePinned(t *testing.T) {
	fsys := &countingFS{FS: NewMemFS()}
	fsys.MkdirAll("/c", 0o755)
	cache := NewFileCache(4)
	cf, err := cache.openFile(fsys, "/c/a.log", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cf.WriteAt([]byte("x"), 0)
	f, err := cf.pin()
	if err != nil {
		t.Fatal(err)
	}
	if err := cf.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := f.ReadAt(buf, 0); err != nil {
		t.Fatalf("read of a pinned file after Close: %v", err)
	}
	if fsys.open.Load() != 1 {
		t.Fatal("pinned file closed under its user")
	}
	cf.unpin()
	if n := fsys.open.Load(); n != 0 || cache.Stats().Open != 0 {
		t.Fatalf("%d files open after the last unpin of a closed file", n)
	}
	if _, err := cf.ReadAt(buf, 0); err == nil {
		t.Fatal("closed file reopened")
	}
}

// Under concurrent appends and reads of more partitions than the cache holds, every read
// returns what was appended and the open files stay within the limit plus the operations in
// flight (one pin each).
func TestFileCacheConcurrentUse(t *testing.T) {
	const partitions, limit, workers = 12, 4, 6
	fsys := &countingFS{FS: NewMemFS()}
	cache := NewFileCache(limit)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600
	logs := make([]*Log, partitions)
	for i := range logs {
		l, err := Open(fmt.Sprintf("/data/t-%d", i), cfg, Options{FS: fsys, Logger: quietLogger, FileCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				l := logs[(w*7+i)%partitions]
				if w%2 == 0 {
					if _, err := l.AppendAsLeader(mkBatch(2, 1000, -1, 0, 0), 0); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				rr, err := l.Read(l.LogStartOffset(), 1<<16, math.MaxInt64, true)
				if err != nil {
					t.Error(err)
					return
				}
				for _, s := range rr.Slices {
					if _, err := WriteSlice(io.Discard, s); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	var total int64
	for _, l := range logs {
		got := readAllRecords(t, l)
		total += int64(len(got))
		if int64(len(got)) != l.Size() {
			t.Fatalf("%s: read %d bytes of %d", l.Dir(), len(got), l.Size())
		}
	}
	if total == 0 {
		t.Fatal("nothing appended")
	}
	if m := fsys.maxOpen.Load(); m > limit+workers {
		t.Fatalf("%d files open at once, limit %d with %d workers", m, limit, workers)
	}
}

// A sendfile in flight pins its segment file: evictions forced meanwhile by another log's
// opens close other files, never that one, and the receiver gets every byte.
func TestSendfileSurvivesEviction(t *testing.T) {
	dir := t.TempDir()
	cache := NewFileCache(3) // one segment's three files
	cfg := DefaultConfig()
	l, err := Open(filepath.Join(dir, "t-0"), cfg, Options{Logger: quietLogger, FileCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var want []byte
	for len(want) < 8<<20 { // far more than the socket buffers: the send blocks midway
		b := mkBatch(4000, 1000, -1, 0, 0)
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
	}
	rr, err := l.Read(0, int64(len(want)), math.MaxInt64, true)
	if err != nil || rr.Bytes != int64(len(want)) {
		t.Fatalf("read %d of %d bytes: %v", rr.Bytes, len(want), err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	sent := make(chan error, 1)
	go func() {
		_, err := WriteSlice(server, rr.Slices[0])
		server.(*net.TCPConn).CloseWrite()
		sent <- err
	}()
	cf := rr.Slices[0].File.(*cachedFile)
	deadline := time.Now().Add(10 * time.Second)
	for {
		cf.mu.Lock()
		pins := cf.pins
		cf.mu.Unlock()
		if pins > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the send never pinned its file")
		}
		time.Sleep(time.Millisecond) // waiting for the sender goroutine to start, not for a result
	}
	// Another log's three files need the whole cache: everything unpinned goes.
	other, err := Open(filepath.Join(dir, "t-1"), cfg, Options{Logger: quietLogger, FileCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.AppendAsLeader(mkBatch(3, 1, -1, 0, 0), 0); err != nil {
		t.Fatal(err)
	}
	if cache.Stats().Evictions == 0 {
		t.Fatal("no eviction happened: the test proves nothing")
	}
	cf.mu.Lock()
	stillOpen := cf.f != nil
	cf.mu.Unlock()
	if !stillOpen {
		t.Fatal("the file under a sendfile in flight was evicted")
	}
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("send: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("received %d bytes, want %d (equal prefix %v)", len(got), len(want), bytes.HasPrefix(want, got))
	}
}
