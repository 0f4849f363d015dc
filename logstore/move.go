package logstore

// Moving a partition's log between log directories (JBOD, KIP-858's AlterReplicaLogDirs).
//
// A move copies the partition directory into a future directory in the destination log
// directory, "<topic>-<partition>.<moveID>-future" as Kafka names it, and then swaps it in.
// The swap (CommitFuture) is three renames, each made durable before the next:
//
//  1. the current directory "<tp>" is renamed "<tp>.<moveID>-moved" in the source log directory;
//  2. the future directory is renamed "<tp>" in the destination log directory;
//  3. the moved directory is removed (RemoveMoved; the log may already serve from its new
//     directory meanwhile).
//
// At no point are there two live "<tp>" directories, and at every point one complete copy
// exists under a name ResolveMoves recognises, so a crash at any step leaves either the old
// replica or the new one, never neither and never both. ResolveMoves runs at start, over all
// log directories, before any log is opened:
//
//   - a future directory whose partition has a live directory: the move did not reach the
//     swap; the future copy is removed (the old replica stays);
//   - a future directory whose partition has no live directory but a moved one with the same
//     moveID: the crash fell between steps 1 and 2; the future is renamed into place (step 2)
//     and the moved directory removed (step 3);
//   - a moved directory whose partition has a live directory: step 3 did not finish; removed;
//   - a moved directory with neither a live nor a future directory: renamed back.
//
// The future directory is fully written and fsynced (CopyDir, then SyncDir) before step 1,
// so the copy that step 2 brings into place is complete.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Suffixes of the directories of a move in progress. A partition directory ends in its
// partition number, so no live directory has either.
const (
	FutureDirSuffix = "-future"
	MovedDirSuffix  = "-moved"
)

// FutureDirName is the name of tp's future directory for the move moveID (hex, no dots).
func FutureDirName(tp, moveID string) string { return tp + "." + moveID + FutureDirSuffix }

// movedDirName is the name the current directory takes in swap step 1.
func movedDirName(tp, moveID string) string { return tp + "." + moveID + MovedDirSuffix }

// ParseMoveDir splits a future or moved directory name into its partition directory name and
// move ID; ok is false for any other name.
func ParseMoveDir(name string) (tp, moveID, suffix string, ok bool) {
	for _, s := range []string{FutureDirSuffix, MovedDirSuffix} {
		if rest, found := strings.CutSuffix(name, s); found {
			i := strings.LastIndexByte(rest, '.')
			if i <= 0 || i == len(rest)-1 {
				return "", "", "", false
			}
			return rest[:i], rest[i+1:], s, true
		}
	}
	return "", "", "", false
}

// CopyDir copies every file of src into dst (created if missing), fsyncing each copy and
// dst itself. With again set (a later pass over a live log already copied once), an
// append-only file (segment, offset, time and transaction index) whose copy ends with the
// same bytes as src at the same position is taken as an unchanged prefix: only what src has
// beyond it is copied (nothing when the sizes match), so closed segments are not copied twice
// and the active one only for its new tail. A copy that does not match (the file was
// truncated, or compaction replaced it) is copied whole, and so is every other file
// (checkpoints and snapshots are rewritten in place of the old, with the same size at
// times). Files in dst that src no longer has are removed. bytesPerSecond > 0 bounds the copy rate (replica.alter.log.dirs.io.max.bytes.per.second).
// It returns the bytes copied.
func CopyDir(ctx context.Context, fsys FS, src, dst string, again bool, bytesPerSecond int64) (int64, error) {
	if err := fsys.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	names, err := fsys.ReadDir(src)
	if err != nil {
		return 0, err
	}
	have, err := fsys.ReadDir(dst)
	if err != nil {
		return 0, err
	}
	keep := make(map[string]bool, len(names))
	var copied int64
	start := time.Now()
	for _, name := range names {
		if strings.HasSuffix(name, tmpSuffix) {
			continue // a half-written checkpoint; the log's open removes these
		}
		keep[name] = true
		n, err := copyFile(ctx, fsys, filepath.Join(src, name), filepath.Join(dst, name), again && appendOnlyFile(name), bytesPerSecond, start, &copied)
		if err != nil {
			return copied, err
		}
		copied += n
	}
	for _, name := range have {
		if !keep[name] {
			if err := fsys.Remove(filepath.Join(dst, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return copied, err
			}
		}
	}
	return copied, fsys.SyncDir(dst)
}

// copyChunk is the unit of CopyDir's reads and writes.
const copyChunk = 1 << 20

// prefixCheckBytes is how much of the end of a copy CopyDir compares with the source before
// it takes the copy as an unchanged prefix.
const prefixCheckBytes = 64 << 10

// appendOnlyFile reports whether a partition directory's file named name only grows while it
// is not truncated: segments and their indexes.
func appendOnlyFile(name string) bool {
	for _, ext := range []string{".log", ".index", ".timeindex", ".txnindex"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// unchangedPrefix returns the length of dst when it matches src up to there (its last
// prefixCheckBytes compared), else 0.
func unchangedPrefix(in, out File, srcSize int64) int64 {
	ost, err := out.Stat()
	if err != nil || ost.Size() == 0 || ost.Size() > srcSize {
		return 0
	}
	n := ost.Size()
	w := min(n, prefixCheckBytes)
	a, b := make([]byte, w), make([]byte, w)
	if _, err := in.ReadAt(a, n-w); err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	if _, err := out.ReadAt(b, n-w); err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	if !bytes.Equal(a, b) {
		return 0
	}
	return n
}

func copyFile(ctx context.Context, fsys FS, src, dst string, tailOnly bool, bytesPerSecond int64, start time.Time, total *int64) (int64, error) {
	in, err := fsys.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if st.IsDir() {
		return 0, fmt.Errorf("copy %s: unexpected directory in a partition directory", src)
	}
	size := st.Size()
	var off int64 // where the copy starts: after an unchanged prefix of the old copy
	out, err := fsys.OpenFile(dst, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	if tailOnly {
		off = unchangedPrefix(in, out, size)
		if off == size {
			return 0, out.Close()
		}
	}
	if err := out.Truncate(off); err != nil {
		out.Close()
		return 0, err
	}
	copiedFrom := off
	buf := make([]byte, min(size-off, copyChunk))
	for off < size {
		if err := ctx.Err(); err != nil {
			out.Close()
			return off - copiedFrom, err
		}
		n := int(min(int64(len(buf)), size-off))
		if _, err := in.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			out.Close()
			return off - copiedFrom, err
		}
		if _, err := out.WriteAt(buf[:n], off); err != nil {
			out.Close()
			return off - copiedFrom, err
		}
		off += int64(n)
		if bytesPerSecond > 0 {
			// Sleep until the bytes copied so far fit the rate since start.
			due := start.Add(time.Duration(float64(*total+off-copiedFrom) / float64(bytesPerSecond) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					out.Close()
					return off - copiedFrom, ctx.Err()
				case <-t.C:
				}
			}
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return off - copiedFrom, err
	}
	return off - copiedFrom, out.Close()
}

// CommitFuture swaps the future directory future (a complete, fsynced copy made by CopyDir)
// in for current, tp's live directory in another log directory; see the top of this file for
// the steps and why a crash at any of them loses nothing. The caller has closed the log of
// current and stopped everything that writes to it. It returns the moved directory, for
// RemoveMoved once the log serves from its new place. On an error the directories are left in
// a state ResolveMoves repairs (as after a crash).
func CommitFuture(fsys FS, current, future string) (moved string, err error) {
	tp, moveID, suffix, ok := ParseMoveDir(filepath.Base(future))
	if !ok || suffix != FutureDirSuffix || tp != filepath.Base(current) {
		return "", fmt.Errorf("commit move: %s is not a future directory of %s", future, current)
	}
	if err := fsys.SyncDir(future); err != nil {
		return "", err
	}
	moved = filepath.Join(filepath.Dir(current), movedDirName(tp, moveID))
	if err := fsys.Rename(current, moved); err != nil {
		return "", err
	}
	if err := fsys.SyncDir(filepath.Dir(current)); err != nil {
		return "", err
	}
	final := filepath.Join(filepath.Dir(future), tp)
	if err := fsys.Rename(future, final); err != nil {
		return "", err
	}
	if err := fsys.SyncDir(filepath.Dir(final)); err != nil {
		return "", err
	}
	return moved, nil
}

// RemoveMoved removes the old copy CommitFuture left (step 3). A crash before it finishes
// leaves it for ResolveMoves.
func RemoveMoved(fsys FS, moved string) error {
	if err := fsys.RemoveAll(moved); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(moved))
}

// MoveResolution is one repair ResolveMoves made.
type MoveResolution struct {
	Dir    string // the future or moved directory it acted on
	Action string // "removed", "completed" or "restored"
}

// ResolveMoves finishes or undoes the moves a crash (or a failed CommitFuture) interrupted,
// over every log directory of the broker; see the top of this file. It must run before any
// log in logDirs is opened. Every other name in a log directory counts as live (a partition
// directory, or a file the move's names never clash with); a log directory that cannot be
// read is skipped (it is offline, and its partitions with it).
func ResolveMoves(fsys FS, logDirs []string) ([]MoveResolution, error) {
	type moveDir struct{ logDir, name, tp, moveID string }
	live := map[string]bool{}
	var futures, moved []moveDir
	for _, d := range logDirs {
		names, err := fsys.ReadDir(d)
		if err != nil {
			continue
		}
		for _, name := range names {
			if tp, id, suffix, ok := ParseMoveDir(name); ok {
				md := moveDir{d, name, tp, id}
				if suffix == FutureDirSuffix {
					futures = append(futures, md)
				} else {
					moved = append(moved, md)
				}
				continue
			}
			live[name] = true
		}
	}
	var out []MoveResolution
	// remove deletes a leftover directory; rename gives one the partition's own name. Each
	// makes its parent's entry durable before the resolution is reported.
	remove := func(path string) error {
		if err := fsys.RemoveAll(path); err != nil {
			return err
		}
		if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
			return err
		}
		out = append(out, MoveResolution{path, "removed"})
		return nil
	}
	rename := func(path, final, tp, how string) error {
		if err := fsys.Rename(path, final); err != nil {
			return err
		}
		if err := fsys.SyncDir(filepath.Dir(final)); err != nil {
			return err
		}
		live[tp] = true
		out = append(out, MoveResolution{path, how})
		return nil
	}
	for _, f := range futures {
		path := filepath.Join(f.logDir, f.name)
		if live[f.tp] {
			if err := remove(path); err != nil {
				return out, err
			}
			continue
		}
		hasMoved := false
		for _, m := range moved {
			if m.tp == f.tp && m.moveID == f.moveID {
				hasMoved = true
			}
		}
		if !hasMoved {
			continue // not ours to decide: left for the operator
		}
		if err := rename(path, filepath.Join(f.logDir, f.tp), f.tp, "completed"); err != nil {
			return out, err
		}
	}
	for _, m := range moved {
		path := filepath.Join(m.logDir, m.name)
		var err error
		if live[m.tp] {
			err = remove(path)
		} else {
			err = rename(path, filepath.Join(m.logDir, m.tp), m.tp, "restored")
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
