package broker

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"sluice/controller"
	"sluice/internal/batch"
	"sluice/logstore"
)

// syncRecordingFS is the OS file system, recording every file fsync by base name.
type syncRecordingFS struct {
	logstore.OSFS
	mu    sync.Mutex
	syncs []string
}

type syncRecordingFile struct {
	logstore.File
	fs *syncRecordingFS
}

func (f syncRecordingFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs = append(f.fs.syncs, filepath.Base(f.Name()))
	f.fs.mu.Unlock()
	return f.File.Sync()
}

func (r *syncRecordingFS) OpenFile(name string, flag int, perm os.FileMode) (logstore.File, error) {
	f, err := r.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncRecordingFile{f, r}, nil
}

func (r *syncRecordingFS) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.syncs
	r.syncs = nil
	return out
}

// Issue 20: partition.metadata cost a file and a directory fsync per created partition. A new
// directory's file is written without one, and fsynced before the log's first data fsync
// (the BeforeFirstSync openPartition passes); an existing directory's claim writes nothing.
func TestCreatedPartitionMetadataFsyncedBeforeFirstData(t *testing.T) {
	rec := &syncRecordingFS{}
	logDir := t.TempDir()
	dir := filepath.Join(logDir, "t-0")
	b := &Broker{cfg: Config{LogDir: logDir, FS: rec}, logger: slog.New(slog.DiscardHandler)}
	var id controller.TopicID
	id[0] = 7
	created, err := b.claimPartitionDir(dir, id)
	if err != nil || !created {
		t.Fatalf("claim of a new directory: created %v, %v", created, err)
	}
	if s := rec.take(); len(s) != 0 {
		t.Fatalf("claiming a new partition directory fsynced %q", s)
	}
	data, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := parsePartitionMetadata(data); err != nil || got != id {
		t.Fatalf("partition.metadata %q: %v", data, err)
	}
	if created, err := b.claimPartitionDir(dir, id); err != nil || created {
		t.Fatalf("second claim: created %v, %v", created, err)
	}

	l, err := logstore.Open(dir, logstore.DefaultConfig(), logstore.Options{FS: rec, Logger: slog.New(slog.DiscardHandler),
		FileCache:       logstore.NewFileCache(16),
		BeforeFirstSync: func() error { return syncFile(rec, filepath.Join(dir, partitionMetadataFile)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if s := rec.take(); len(s) != 0 {
		t.Fatalf("opening the created log fsynced %q", s)
	}
	b1 := batch.Build(batch.Header{BaseTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []batch.Record{{Value: []byte("v")}})
	if _, err := l.AppendAsLeader(b1, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	s := rec.take()
	meta := slices.Index(s, partitionMetadataFile)
	seg := slices.IndexFunc(s, func(n string) bool { return strings.HasSuffix(n, ".log") })
	if meta < 0 || seg < 0 || meta > seg {
		t.Fatalf("first flush fsynced %q: want partition.metadata before the segment", s)
	}
}
