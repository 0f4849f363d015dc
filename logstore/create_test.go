package logstore

import (
	"slices"
	"sync"
	"testing"
)

// syncRecorder records every fsync (file and directory) a MemFS is asked for, in order.
type syncRecorder struct {
	mu  sync.Mutex
	ops []string
}

func (r *syncRecorder) watch(fs *MemFS) {
	fs.InjectError(func(op, path string) error {
		if op == "sync" || op == "syncdir" {
			r.mu.Lock()
			r.ops = append(r.ops, op+" "+path)
			r.mu.Unlock()
		}
		return nil
	})
}

func (r *syncRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ops
	r.ops = nil
	return out
}

// Issue 20: creating a partition cost 7 fsyncs in logstore (a directory fsync for the new
// segment, then three checkpoints each written with a file and a directory fsync), and closing
// it idle 5 more; 10,000 partitions took tens of seconds of fsyncs. A created log fsyncs
// nothing until something is appended, and holds no descriptor while idle.
func TestCreatedIdleLogFsyncsNothing(t *testing.T) {
	fs := NewMemFS()
	var rec syncRecorder
	rec.watch(fs)
	cache := NewFileCache(100)
	l, err := Open("/d/t-0", DefaultConfig(), Options{FS: fs, Logger: quietLogger, FileCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if ops := rec.take(); len(ops) != 0 {
		t.Errorf("creating a log fsynced: %q", ops)
	}
	if open := cache.Stats().Open; open != 0 {
		t.Errorf("an idle created log holds %d open segment files", open)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if ops := rec.take(); len(ops) != 0 {
		t.Errorf("flushing and closing an idle created log fsynced: %q", ops)
	}
	// The directory is a log all the same: it opens again, empty, still without fsyncs.
	l, err = Open("/d/t-0", DefaultConfig(), Options{FS: fs, Logger: quietLogger, FileCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 {
		t.Fatalf("reopened created log: start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	if ops := rec.take(); len(ops) != 0 {
		t.Errorf("reopening an idle created log fsynced: %q", ops)
	}
}

// The directory fsyncs a created log defers happen before its first data fsync completes, on
// every path that makes appended data durable (Flush, an fsync per append, a roll), after the
// owner's BeforeFirstSync, and once: a crash right after loses nothing that was acknowledged
// durable.
func TestCreatedLogFirstFsyncMakesEntriesDurable(t *testing.T) {
	for _, path := range []string{"flush", "flush.messages=1", "roll"} {
		t.Run(path, func(t *testing.T) {
			fs := NewMemFS()
			var rec syncRecorder
			rec.watch(fs)
			cfg := DefaultConfig()
			switch path {
			case "flush.messages=1":
				cfg.FlushMessages = 1
			case "roll":
				cfg.SegmentBytes = 400
			}
			var before int
			opts := Options{FS: fs, Logger: quietLogger, BeforeFirstSync: func() error {
				before++
				rec.mu.Lock()
				rec.ops = append(rec.ops, "before-first-sync")
				rec.mu.Unlock()
				return nil
			}}
			l, err := Open("/d/t-0", cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			appends := 1
			if path == "roll" {
				appends = 8 // rolls segment 0 after ~400 bytes
			}
			for range appends {
				if _, err := l.AppendAsLeader(mkBatch(3, 1, -1, 0, 0), 0); err != nil {
					t.Fatal(err)
				}
			}
			var durable int64
			switch path {
			case "flush":
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
				durable = l.LogEndOffset()
			case "flush.messages=1":
				durable = l.LogEndOffset()
			case "roll":
				if l.NumSegments() < 2 {
					t.Fatalf("no roll: %d segments", l.NumSegments())
				}
				if err := l.waitRollSyncs(); err != nil {
					t.Fatal(err)
				}
				durable = l.Segments()[1].BaseOffset
			}
			ops := rec.take()
			first := slices.Index(ops, "before-first-sync")
			after := func(from int, op string) int {
				if from < 0 {
					return -1
				}
				if i := slices.Index(ops[from:], op); i >= 0 {
					return from + i
				}
				return -1
			}
			dirSync := after(first, "syncdir /d/t-0")
			parentSync := after(dirSync, "syncdir /d")
			dataSync := after(parentSync, "sync /d/t-0/00000000000000000000.log")
			if before != 1 || first < 0 || dirSync < 0 || parentSync < 0 || dataSync < 0 {
				t.Fatalf("BeforeFirstSync called %d times; fsyncs %q", before, ops)
			}
			fs.Restart() // crash
			l.Close()
			l2, err := Open("/d/t-0", cfg, Options{FS: fs, Logger: quietLogger})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if l2.LogEndOffset() < durable {
				t.Fatalf("after a crash the log ends at %d; %d was durable", l2.LogEndOffset(), durable)
			}
		})
	}
}

// Issue 20: after a restart every partition's segment files stayed open until the cache was
// full (half of RLIMIT_NOFILE: 15,013 descriptors held by idle partitions). Open gives the
// descriptors back; CloseIdle closes a file used since, once a whole sweep interval passed
// without use, and a later read reopens it.
func TestIdleSegmentFilesHoldNoDescriptors(t *testing.T) {
	fs := NewMemFS()
	cache := NewFileCache(100)
	opts := Options{FS: fs, Logger: quietLogger, FileCache: cache}
	l, err := Open("/d/t-0", DefaultConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.AppendAsLeader(mkBatch(2, 1, -1, 0, 0), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open("/d/t-0", DefaultConfig(), opts); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if open := cache.Stats().Open; open != 0 {
		t.Fatalf("a reopened idle log holds %d open segment files", open)
	}
	if _, err := l.AppendAsLeader(mkBatch(2, 1, -1, 0, 0), 0); err != nil {
		t.Fatal(err)
	}
	if cache.Stats().Open == 0 {
		t.Fatal("an append left no segment file open")
	}
	cache.CloseIdle() // used since the last sweep: kept
	if cache.Stats().Open == 0 {
		t.Fatal("CloseIdle closed a file used since the previous sweep")
	}
	if n := cache.CloseIdle(); n == 0 || cache.Stats().Open != 0 {
		t.Fatalf("a second sweep without use closed %d files, %d still open", n, cache.Stats().Open)
	}
	rr, err := l.Read(0, 1<<20, 1<<62, true)
	if err != nil || rr.Bytes == 0 {
		t.Fatalf("read after the sweep: %+v %v", rr, err)
	}
}
