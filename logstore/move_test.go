package logstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sluice/internal/batch"
)

// writeMoveLog writes a log of several segments in dir and returns its records' bytes.
func writeMoveLog(t *testing.T, dir string) []byte {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 100
	cfg.RetentionMs = -1
	l, err := Open(dir, cfg, Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		b := mkBatch(1+i%3, time.Now().UnixMilli(), -1, 0, 0)
		batch.SetBaseOffset(b, l.LogEndOffset())
		if _, err := l.AppendAsLeader(b, 1); err != nil {
			t.Fatal(err)
		}
	}
	data := readAllRecords(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return data
}

// liveCopies lists the directories named tp in logDirs.
func liveCopies(t *testing.T, logDirs []string, tp string) []string {
	t.Helper()
	var out []string
	for _, d := range logDirs {
		if _, err := os.Stat(filepath.Join(d, tp)); err == nil {
			out = append(out, filepath.Join(d, tp))
		}
	}
	return out
}

// TestCommitFutureCrashAtEveryStep crashes the swap of a moved log at each of its file-system
// operations in turn (ErrorFS fails that operation and every later one, as a crash stops the
// process) and checks what a restart finds after ResolveMoves: exactly one live directory of
// the partition, holding every record, and no future or moved directory left; without a crash
// the partition is in the destination.
func TestCommitFutureCrashAtEveryStep(t *testing.T) {
	errCrash := errors.New("crash")
	for n := 0; ; n++ {
		root := t.TempDir()
		src, dst := filepath.Join(root, "d1"), filepath.Join(root, "d2")
		for _, d := range []string{src, dst} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		const tp = "orders-3"
		want := writeMoveLog(t, filepath.Join(src, tp))
		future := filepath.Join(dst, FutureDirName(tp, "0123abcd"))
		if _, err := CopyDir(context.Background(), OSFS{}, filepath.Join(src, tp), future, false, 0); err != nil {
			t.Fatal(err)
		}
		efs := NewErrorFS(OSFS{})
		efs.FailFrom(OpAny, n, errCrash)
		moved, err := CommitFuture(efs, filepath.Join(src, tp), future)
		if err == nil {
			err = RemoveMoved(efs, moved)
		}
		crashed := efs.Injected() > 0
		if crashed != (err != nil) {
			t.Fatalf("crash at op %d: injected %d, CommitFuture err %v", n, efs.Injected(), err)
		}

		// The restart.
		res, err := ResolveMoves(OSFS{}, []string{src, dst})
		if err != nil {
			t.Fatalf("crash at op %d: ResolveMoves: %v", n, err)
		}
		live := liveCopies(t, []string{src, dst}, tp)
		if len(live) != 1 {
			t.Fatalf("crash at op %d (%v): live copies %v, want exactly one", n, res, live)
		}
		for _, d := range []string{src, dst} {
			names, _ := os.ReadDir(d)
			for _, e := range names {
				if _, _, _, ok := ParseMoveDir(e.Name()); ok {
					t.Fatalf("crash at op %d: %s left in %s", n, e.Name(), d)
				}
			}
		}
		l, err := Open(live[0], DefaultConfig(), Options{Logger: quietLogger})
		if err != nil {
			t.Fatalf("crash at op %d: open %s: %v", n, live[0], err)
		}
		got := readAllRecords(t, l)
		l.Close()
		if !bytes.Equal(got, want) {
			t.Fatalf("crash at op %d: %s holds %d bytes of records, want the %d written", n, live[0], len(got), len(want))
		}
		if !crashed {
			if live[0] != filepath.Join(dst, tp) {
				t.Fatalf("completed move left the partition in %s", live[0])
			}
			if n < 3 {
				t.Fatalf("the swap took only %d operations: the crash points were not exercised", n)
			}
			return
		}
	}
}

// TestCopyDirSecondPass: a later pass copies only the new tail of a segment that grew, nothing
// of one that did not, the whole of one that was truncated and regrown or of any other file
// (a checkpoint rewritten with the same size), and removes files the source no longer has.
func TestCopyDirSecondPass(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	os.MkdirAll(src, 0o755)
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("00.log", "closed-segment")
	write("10.log", "active")
	write("20.log", "truncated-later")
	write("leader-epoch-checkpoint", "0\n1\n3 100\n")
	write("gone.index", "xx")
	if n, err := CopyDir(context.Background(), OSFS{}, src, dst, false, 0); err != nil || n != 14+6+15+10+2 {
		t.Fatalf("first pass copied %d, %v", n, err)
	}
	write("10.log", "active+tail")                    // grew: 5 new bytes
	write("20.log", "TRUNCATED-and-more")             // rewritten past its old size: whole
	write("leader-epoch-checkpoint", "0\n1\n4 100\n") // same size, new content: whole
	os.Remove(filepath.Join(src, "gone.index"))
	if n, err := CopyDir(context.Background(), OSFS{}, src, dst, true, 0); err != nil || n != 5+18+10 {
		t.Fatalf("second pass copied %d, %v; want 5+18+10", n, err)
	}
	for _, name := range []string{"00.log", "10.log", "20.log", "leader-epoch-checkpoint"} {
		want, _ := os.ReadFile(filepath.Join(src, name))
		if got, _ := os.ReadFile(filepath.Join(dst, name)); !bytes.Equal(got, want) {
			t.Fatalf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "gone.index")); !os.IsNotExist(err) {
		t.Fatalf("gone.index still in the copy: %v", err)
	}
}

func TestParseMoveDir(t *testing.T) {
	for _, c := range []struct {
		name, tp, id, suffix string
		ok                   bool
	}{
		{"my.topic-0.abc-future", "my.topic-0", "abc", FutureDirSuffix, true},
		{"t-12.ff-moved", "t-12", "ff", MovedDirSuffix, true},
		{"t-12", "", "", "", false},
		{"t-12.-future", "", "", "", false},
		{"-future", "", "", "", false},
		{"t-1.abc-delete", "", "", "", false},
	} {
		tp, id, suffix, ok := ParseMoveDir(c.name)
		if tp != c.tp || id != c.id || suffix != c.suffix || ok != c.ok {
			t.Errorf("ParseMoveDir(%q) = %q %q %q %v", c.name, tp, id, suffix, ok)
		}
	}
}

// FuzzParseMoveDir: directory names come from the disk. Parsing never panics, and a name it
// accepts is rebuilt exactly from its parts.
func FuzzParseMoveDir(f *testing.F) {
	for _, s := range []string{"t-0.ab-future", "t-0.ab-moved", "a.b.c-1.ff-future", ".-future", "x-moved", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tp, id, suffix, ok := ParseMoveDir(name)
		if !ok {
			return
		}
		if tp+"."+id+suffix != name || id == "" || tp == "" {
			t.Fatalf("ParseMoveDir(%q) = %q %q %q", name, tp, id, suffix)
		}
	})
}
