package broker

// Several log directories (JBOD, log.dirs; KIP-858 on KRaft). Each directory has its own
// meta.properties (its directory.id), replication-offset-checkpoint and clean shutdown file;
// a partition lives in exactly one of them.
//
// Placement: at start every log directory is scanned and each partition directory found is
// placed where it is; the same partition in two directories is refused (New fails with both
// paths, as Kafka's LogManager refuses duplicate log directories), after ResolveMoves has
// finished or undone any move a crash interrupted (logstore/move.go). A partition created
// later goes to the online directory holding the fewest partitions (Kafka's default
// placement: least loaded by partition count), ties to the first listed.
//
// A directory counts as failed while one of its partitions whose log was open has failed
// (offline.go): new partitions are not placed there, DescribeLogDirs answers it with
// KAFKA_STORAGE_ERROR, and AlterReplicaLogDirs does not move a replica into or out of it.
// Only that directory's partitions are offline; the others keep serving.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"sluice/logstore"
)

// logDirState is one of the broker's log directories.
type logDirState struct {
	path string
	// id is meta.properties' directory.id (zero without one: tests, a node alone before it
	// claimed the directory).
	id [16]byte
}

// logDirPlacement is which log directory holds each partition hosted here (or assigned here
// and offline). Its lock is a leaf.
type logDirPlacement struct {
	mu sync.Mutex
	// of maps a partition to its index in Broker.dirs. Invariant: a partition is in at most
	// one directory; an entry exists from the first partitionDir call (creation or scan)
	// until the partition's data is deleted (unplace).
	of map[topicPartition]int
}

// initLogDirs sets b.dirs from the configuration and places every partition directory found
// in them. REQUIRES: New, before any partition is opened.
func (b *Broker) initLogDirs() error {
	paths := b.cfg.LogDirs
	if len(paths) == 0 {
		paths = []string{b.cfg.LogDir}
	}
	b.dirs = make([]logDirState, len(paths))
	for i, p := range paths {
		b.dirs[i].path = p
		if mp, err := ReadMetaProperties(p); err == nil && mp != nil {
			if id, err := base64.RawURLEncoding.DecodeString(mp.DirectoryID); err == nil && len(id) == 16 {
				copy(b.dirs[i].id[:], id)
			}
		}
	}
	if len(paths) > 1 {
		seen := map[[16]byte]string{}
		for _, d := range b.dirs {
			if d.id == ([16]byte{}) {
				continue
			}
			if other, dup := seen[d.id]; dup {
				return fmt.Errorf("log directories %s and %s have the same directory.id in meta.properties: each log directory needs its own (format them with `sluice format`, or remove one meta.properties to have it claimed again)", other, d.path)
			}
			seen[d.id] = d.path
		}
	}
	resolved, err := logstore.ResolveMoves(b.fs(), paths)
	for _, r := range resolved {
		b.logger.Warn("finished a log directory move a crash interrupted", "dir", r.Dir, "action", r.Action)
	}
	if err != nil {
		return fmt.Errorf("resolving interrupted log directory moves: %w", err)
	}
	b.placement.of = make(map[topicPartition]int)
	for i, d := range b.dirs {
		tps, err := scanPartitionDirs(d.path)
		if err != nil {
			// An unreadable directory: its partitions fail to open and go offline.
			b.logger.Error("cannot list a log directory", "dir", d.path, "err", err)
			continue
		}
		for _, tp := range tps {
			if j, dup := b.placement.of[tp]; dup {
				return fmt.Errorf("partition %s is in two log directories, %s and %s: a move between them was interrupted in a way sluice cannot resolve, or a directory was copied by hand. Remove one of the two (keep the one whose log directory did not fail) and start again",
					tp, filepath.Join(b.dirs[j].path, tp.String()), filepath.Join(d.path, tp.String()))
			}
			b.placement.of[tp] = i
		}
	}
	return nil
}

// scanPartitionDirs lists the partition directories ("<topic>-<partition>") in dir.
func scanPartitionDirs(dir string) ([]topicPartition, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []topicPartition
	for _, e := range entries {
		if !e.IsDir() || e.Name() == metadataDirName {
			continue
		}
		if tp, ok := parsePartitionDirName(e.Name()); ok {
			out = append(out, tp)
		}
	}
	return out, nil
}

// parsePartitionDirName parses "<topic>-<partition>"; the delete, future and moved
// directories end in a suffix that is not a number and are not partition directories.
func parsePartitionDirName(name string) (topicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return topicPartition{}, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[i+1:] {
		return topicPartition{}, false
	}
	return topicPartition{name[:i], int32(n)}, true
}

// logDirPaths lists the broker's log directories.
func (b *Broker) logDirPaths() []string {
	if len(b.dirs) == 0 {
		return []string{b.cfg.LogDir}
	}
	out := make([]string, len(b.dirs))
	for i, d := range b.dirs {
		out[i] = d.path
	}
	return out
}

// partitionDirIndex returns the log directory of tp, placing it when it has none yet: the
// online directory with the fewest partitions.
func (b *Broker) partitionDirIndex(tp topicPartition) int {
	if len(b.dirs) <= 1 {
		return 0
	}
	failed := b.failedLogDirs()
	b.placement.mu.Lock()
	defer b.placement.mu.Unlock()
	if i, ok := b.placement.of[tp]; ok {
		return i
	}
	counts := make([]int, len(b.dirs))
	for _, i := range b.placement.of {
		counts[i]++
	}
	best := -1
	for i := range b.dirs {
		if failed[i] && len(failed) < len(b.dirs) {
			continue
		}
		if best < 0 || counts[i] < counts[best] {
			best = i
		}
	}
	b.placement.of[tp] = best
	return best
}

// placedIn returns tp's log directory without placing it; ok is false when it has none.
func (b *Broker) placedIn(tp topicPartition) (int, bool) {
	if len(b.dirs) <= 1 {
		return 0, true
	}
	b.placement.mu.Lock()
	defer b.placement.mu.Unlock()
	i, ok := b.placement.of[tp]
	return i, ok
}

// setPlacement records that tp now lives in log directory i (a finished move).
func (b *Broker) setPlacement(tp topicPartition, i int) {
	b.placement.mu.Lock()
	defer b.placement.mu.Unlock()
	if b.placement.of != nil {
		b.placement.of[tp] = i
	}
}

// unplace forgets tp's log directory: its data was deleted.
func (b *Broker) unplace(tp topicPartition) {
	b.placement.mu.Lock()
	defer b.placement.mu.Unlock()
	delete(b.placement.of, tp)
}

// logDirIndex returns the index of the log directory at path (as given in log.dirs, or the
// same directory spelled differently), or -1.
func (b *Broker) logDirIndex(path string) int {
	want := filepath.Clean(path)
	if abs, err := filepath.Abs(want); err == nil {
		want = abs
	}
	for i, p := range b.logDirPaths() {
		p = filepath.Clean(p)
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if p == want {
			return i
		}
	}
	return -1
}
