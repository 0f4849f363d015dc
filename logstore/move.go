package logstore

// Moving a partition's log between log directories (JBOD, KIP-858's AlterReplicaLogDirs).
//
// A move copies the partition directory into a future directory in the destination log
// directory, "<topic>-<partition>.<moveID>-future" as Kafka names it, and then swaps it in.
// The swap (CommitFuture) is three renames, each made durable before the next:
//
//  1. the current directory "<tp>" is renamed "<tp>.<moveID>-moved" in the source log directory;
//  2. the future directory is renamed "<tp>" in the destination log directory;
//  3. the moved directory is removed.
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
// dst itself. Files already in dst with the same size as in src are skipped when skipSame is
// set (a second pass after a first copy of a live log: closed segments do not change, so only
// what grew or changed size is copied again); files in dst that src no longer has are
// removed. bytesPerSecond > 0 bounds the copy rate (replica.alter.log.dirs.io.max.bytes.per.second).
// It returns the bytes copied.
func CopyDir(ctx context.Context, fsys FS, src, dst string, skipSame bool, bytesPerSecond int64) (int64, error) {
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
		n, err := copyFile(ctx, fsys, filepath.Join(src, name), filepath.Join(dst, name), skipSame, bytesPerSecond, start, &copied)
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

func copyFile(ctx context.Context, fsys FS, src, dst string, skipSame bool, bytesPerSecond int64, start time.Time, total *int64) (int64, error) {
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
	if skipSame {
		if out, err := fsys.OpenFile(dst, os.O_RDONLY, 0); err == nil {
			ost, serr := out.Stat()
			out.Close()
			if serr == nil && ost.Size() == size {
				return 0, nil
			}
		}
	}
	out, err := fsys.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, min(size, copyChunk))
	var off int64
	for off < size {
		if err := ctx.Err(); err != nil {
			out.Close()
			return off, err
		}
		n := int(min(int64(len(buf)), size-off))
		if _, err := in.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			out.Close()
			return off, err
		}
		if _, err := out.WriteAt(buf[:n], off); err != nil {
			out.Close()
			return off, err
		}
		off += int64(n)
		if bytesPerSecond > 0 {
			// Sleep until the bytes copied so far fit the rate since start.
			due := start.Add(time.Duration(float64(*total+off) / float64(bytesPerSecond) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					out.Close()
					return off, ctx.Err()
				case <-t.C:
				}
			}
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return off, err
	}
	return off, out.Close()
}

// CommitFuture swaps the future directory future (a complete, fsynced copy made by CopyDir)
// in for current, tp's live directory in another log directory; see the top of this file for
// the steps and why a crash at any of them loses nothing. The caller has closed the log of
// current and stopped everything that writes to it. On an error the directories are left in a
// state ResolveMoves repairs (as after a crash).
func CommitFuture(fsys FS, current, future string) error {
	tp, moveID, suffix, ok := ParseMoveDir(filepath.Base(future))
	if !ok || suffix != FutureDirSuffix || tp != filepath.Base(current) {
		return fmt.Errorf("commit move: %s is not a future directory of %s", future, current)
	}
	if err := fsys.SyncDir(future); err != nil {
		return err
	}
	moved := filepath.Join(filepath.Dir(current), movedDirName(tp, moveID))
	if err := fsys.Rename(current, moved); err != nil {
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(current)); err != nil {
		return err
	}
	final := filepath.Join(filepath.Dir(future), tp)
	if err := fsys.Rename(future, final); err != nil {
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(final)); err != nil {
		return err
	}
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
	syncParent := func(path string) error { return fsys.SyncDir(filepath.Dir(path)) }
	for _, f := range futures {
		path := filepath.Join(f.logDir, f.name)
		if live[f.tp] {
			if err := fsys.RemoveAll(path); err != nil {
				return out, err
			}
			if err := syncParent(path); err != nil {
				return out, err
			}
			out = append(out, MoveResolution{path, "removed"})
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
		final := filepath.Join(f.logDir, f.tp)
		if err := fsys.Rename(path, final); err != nil {
			return out, err
		}
		if err := syncParent(final); err != nil {
			return out, err
		}
		live[f.tp] = true
		out = append(out, MoveResolution{path, "completed"})
	}
	for _, m := range moved {
		path := filepath.Join(m.logDir, m.name)
		if live[m.tp] {
			if err := fsys.RemoveAll(path); err != nil {
				return out, err
			}
			if err := syncParent(path); err != nil {
				return out, err
			}
			out = append(out, MoveResolution{path, "removed"})
			continue
		}
		final := filepath.Join(m.logDir, m.tp)
		if err := fsys.Rename(path, final); err != nil {
			return out, err
		}
		if err := syncParent(final); err != nil {
			return out, err
		}
		live[m.tp] = true
		out = append(out, MoveResolution{path, "restored"})
	}
	return out, nil
}
