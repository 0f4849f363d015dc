package logstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sluice/internal/batch"
)

// residentPages reports, for each 4 KiB page of the file at path, whether it is in the page
// cache (mincore of a shared mapping).
func residentPages(t *testing.T, path string) []bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	pageSize := os.Getpagesize()
	vec := make([]byte, (len(m)+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out
}

// windowedLog opens a log on the OS file system with a cache window of window bytes, appends
// about 40 MiB in 256 KiB batches, and waits for the drop worker. It returns the log, the path
// of its segment file and the bytes appended.
func windowedLog(t *testing.T, window int64) (*Log, string, int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, err := Open(dir, DefaultConfig(), Options{Logger: quietLogger, CacheWindowBytes: window})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	total := 0
	for total < 40<<20 {
		b := benchBatch(256 << 10)
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
		total += len(b)
	}
	waitDrops()
	return l, filepath.Join(dir, "00000000000000000000.log"), total
}

// With a cache window, appended bytes older than the window leave the page cache, the newest
// window stays, and everything reads back.
func TestDropBehindKeepsOnlyTheWindowCached(t *testing.T) {
	const window = 8 << 20
	l, path, total := windowedLog(t, window)
	pages := residentPages(t, path)
	pageSize := os.Getpagesize()
	oldEnd := (total - window - 2*dropBehindChunk) / pageSize // surely dropped
	newStart := (total - window + dropBehindChunk) / pageSize // surely kept
	dropped, kept := 0, 0
	for i := 0; i < oldEnd; i++ {
		if !pages[i] {
			dropped++
		}
	}
	for i := newStart; i < len(pages); i++ {
		if pages[i] {
			kept++
		}
	}
	if dropped < oldEnd*9/10 {
		t.Errorf("%d of %d pages older than the window left the page cache", dropped, oldEnd)
	}
	if kept < (len(pages)-newStart)*9/10 {
		t.Errorf("%d of %d pages inside the window stayed cached", kept, len(pages)-newStart)
	}
	// Dropped pages are still data: the log reads them back from disk.
	res, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil || len(res.Slices) == 0 {
		t.Fatalf("read of dropped bytes: %v", err)
	}
	s := res.Slices[0]
	buf := make([]byte, s.Length)
	if _, err := s.File.ReadAt(buf, s.Position); err != nil {
		t.Fatal(err)
	}
	if _, err := batch.Check(buf); err != nil {
		t.Fatalf("first batch read back from disk: %v", err)
	}
}

// A read of bytes outside the cache window has the next readaheadBytes read into the page
// cache in the background, so a consumer catching up does not fault each fetch in.
func TestReadOutsideWindowReadsAhead(t *testing.T) {
	const window = 8 << 20
	l, path, _ := windowedLog(t, window)
	pageSize := int64(os.Getpagesize())
	if residentPages(t, path)[(1<<20)/pageSize] {
		t.Fatal("page at 1 MiB still cached before the read; the test needs it dropped")
	}
	res, err := l.Read(0, 512<<10, l.LogEndOffset(), true)
	if err != nil || len(res.Slices) == 0 {
		t.Fatalf("read: %v", err)
	}
	end := res.Slices[0].Position + res.Slices[0].Length
	waitDrops()
	first, last := end/pageSize+1, (end+readaheadBytes)/pageSize-1
	deadline := time.Now().Add(10 * time.Second)
	for {
		pages := residentPages(t, path)
		missing := 0
		for i := first; i <= last; i++ {
			if !pages[i] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pages after the read were not read ahead", missing, last-first+1)
		}
		time.Sleep(10 * time.Millisecond) // reads submitted by WILLNEED complete asynchronously
	}
}
