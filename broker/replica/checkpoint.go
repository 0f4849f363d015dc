package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sluice/logstore"
)

// HighWatermarkCheckpointFile is the log directory's high-watermark checkpoint, named and
// formatted as Kafka's: a version line "0", a count line, then one "topic partition offset"
// line per partition.
const HighWatermarkCheckpointFile = "replication-offset-checkpoint"

// maxCheckpointBytes bounds the checkpoint file read at start (a million partitions of long
// names fit).
const maxCheckpointBytes = 256 << 20

// ErrCorruptCheckpoint is a checkpoint file that does not parse.
var ErrCorruptCheckpoint = errors.New("replica: corrupt high-watermark checkpoint")

// TopicPartition names a partition in the checkpoint.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// EncodeHighWatermarks renders the checkpoint, sorted by topic and partition.
func EncodeHighWatermarks(hws map[TopicPartition]int64) []byte {
	keys := make([]TopicPartition, 0, len(hws))
	for tp := range hws {
		keys = append(keys, tp)
	}
	slices.SortFunc(keys, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(keys))
	for _, tp := range keys {
		fmt.Fprintf(&buf, "%s %d %d\n", tp.Topic, tp.Partition, hws[tp])
	}
	return buf.Bytes()
}

// ParseHighWatermarks parses a checkpoint's bytes (untrusted: every field is checked).
func ParseHighWatermarks(data []byte) (map[TopicPartition]int64, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%w: version line %q", ErrCorruptCheckpoint, firstLine(lines))
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: count %q for %d entries", ErrCorruptCheckpoint, lines[1], len(lines)-2)
	}
	out := make(map[TopicPartition]int64, n)
	for i, line := range lines[2:] {
		fields := strings.Split(line, " ")
		if len(fields) != 3 || fields[0] == "" {
			return nil, fmt.Errorf("%w: entry %d: %q", ErrCorruptCheckpoint, i, line)
		}
		partition, err1 := strconv.ParseInt(fields[1], 10, 32)
		offset, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil || partition < 0 || offset < 0 {
			return nil, fmt.Errorf("%w: entry %d: %q", ErrCorruptCheckpoint, i, line)
		}
		out[TopicPartition{fields[0], int32(partition)}] = offset
	}
	return out, nil
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// WriteHighWatermarks replaces dir's checkpoint atomically (temp file, fsync, rename, directory
// fsync), so a crash leaves the old or the new one.
func WriteHighWatermarks(fsys logstore.FS, dir string, hws map[TopicPartition]int64) error {
	return logstore.WriteFileAtomic(fsys, dir, HighWatermarkCheckpointFile, EncodeHighWatermarks(hws))
}

// ReadHighWatermarks reads dir's checkpoint; a missing file is an empty map.
func ReadHighWatermarks(fsys logstore.FS, dir string) (map[TopicPartition]int64, error) {
	path := filepath.Join(dir, HighWatermarkCheckpointFile)
	data, err := logstore.ReadFileLimit(fsys, path, maxCheckpointBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if errors.Is(err, logstore.ErrFileTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrCorruptCheckpoint, err)
	}
	if err != nil {
		return nil, err
	}
	hws, err := ParseHighWatermarks(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return hws, nil
}
