package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Checkpoint file names in a partition directory.
const (
	recoveryPointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetFile = "log-start-offset-checkpoint"
	leaderEpochFile    = "leader-epoch-checkpoint"
)

// WriteFileAtomic writes data to dir/name through name.tmp, fsync, rename and a directory sync,
// so a crash leaves either the old or the new content.
func WriteFileAtomic(fs FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	f, err := fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// readFile reads a whole file of at most 64 MiB; a missing file is (nil, nil).
func readFile(fs FS, path string) ([]byte, error) {
	b, err := ReadFileLimit(fs, path, 64<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// ErrFileTooLarge is ReadFileLimit's refusal of a file longer than its limit.
var ErrFileTooLarge = errors.New("file too large")

// ReadFileLimit reads a whole small file (a checkpoint, partition.metadata, meta.properties)
// through fsys, refusing one longer than limit before reading it: that error is an
// *fs.PathError wrapping ErrFileTooLarge, and a missing file's error wraps fs.ErrNotExist.
// The bound keeps a damaged or hostile metadata file from costing memory.
func ReadFileLimit(fsys FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, &iofs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: longer than %d bytes", ErrFileTooLarge, limit)}
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, &iofs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// parseCheckpointLines parses Kafka's checkpoint text format: a version line ("0"), a count
// line, then count lines of fieldsPerLine space-separated fields.
func parseCheckpointLines(data []byte, fieldsPerLine int) ([][]string, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, errors.New("logstore: bad checkpoint header")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, errors.New("logstore: bad checkpoint count")
	}
	out := make([][]string, 0, n)
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != fieldsPerLine {
			return nil, errors.New("logstore: bad checkpoint line")
		}
		out = append(out, f)
	}
	return out, nil
}

// offsetCheckpoint is Kafka's per-log-dir "topic partition offset" checkpoint reduced to the
// one partition that owns the directory.
func encodeOffsetCheckpoint(dir string, offset int64) []byte {
	topic, partition := topicPartitionOf(dir)
	return fmt.Appendf(nil, "0\n1\n%s %d %d\n", topic, partition, offset)
}

func decodeOffsetCheckpoint(data []byte) (int64, bool) {
	lines, err := parseCheckpointLines(data, 3)
	if err != nil || len(lines) != 1 {
		return 0, false
	}
	v, err := strconv.ParseInt(lines[0][2], 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// topicPartitionOf splits Kafka's "<topic>-<partition>" directory name; other names give
// (name, -1). Topic names cannot hold spaces, so the line stays parseable.
func topicPartitionOf(dir string) (string, int) {
	base := filepath.Base(dir)
	if i := strings.LastIndexByte(base, '-'); i > 0 {
		if p, err := strconv.Atoi(base[i+1:]); err == nil && p >= 0 {
			return base[:i], p
		}
	}
	if base == "" || strings.ContainsAny(base, " \n") {
		base = "-"
	}
	return base, -1
}

func readOffsetCheckpoint(fs FS, dir, name string) (int64, bool) {
	data, err := readFile(fs, filepath.Join(dir, name))
	if err != nil || data == nil {
		return 0, false
	}
	return decodeOffsetCheckpoint(bytes.TrimSpace(append(data, '\n')))
}
