package controller

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(1, []Record{&ClusterIDRecord{ClusterID: "x"}, &TopicRecord{Name: "t", TopicID: TopicID{1}}}))
	f.Add(encodeEntry(0, nil))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		proposal, recs, err := decodeEntry(data)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same records.
		again, recs2, err := decodeEntry(encodeEntry(proposal, recs))
		if err != nil || again != proposal || len(recs2) != len(recs) {
			t.Fatalf("re-decode: %v %d %d", err, len(recs), len(recs2))
		}
		// Applying arbitrary records never panics.
		applyRecords(emptyImage(), 1, recs)
	})
}

// seedDir runs a controller to produce a real metadata directory for seeds.
func seedDir(f *testing.F, snapshotEvery int) string {
	dir := f.TempDir()
	cfg := testConfig(dir)
	cfg.SnapshotEvery = snapshotEvery
	c, err := Start(cfg)
	if err != nil {
		f.Fatal(err)
	}
	mustCreate(f, c, CreateTopic{Name: "a", NumPartitions: 2, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1"}})
	mustCreate(f, c, CreateTopic{Name: "b", NumPartitions: 1, ReplicationFactor: 1})
	if err := c.Close(); err != nil {
		f.Fatal(err)
	}
	return dir
}

func FuzzReplayWAL(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(seedDir(f, 0), walFileName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(walMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, walFileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, _, err := openStorage(dir, []uint64{2}, testLogger())
		if err != nil {
			return
		}
		// After a successful open, every frame left in the WAL is valid.
		s.close()
		kept, err := os.ReadFile(filepath.Join(dir, walFileName))
		if err != nil {
			t.Fatal(err)
		}
		for pos := len(walMagic); pos < len(kept); {
			_, _, next, err := readFrame(kept, pos)
			if err != nil {
				t.Fatalf("invalid frame left at %d: %v", pos, err)
			}
			pos = next
		}
	})
}

func FuzzSnapshot(f *testing.F) {
	dir := seedDir(f, 1)
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	for _, s := range snaps {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "snap")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		snap, err := readSnapshotFile(path)
		if err != nil {
			return
		}
		if im, err := decodeImage(snap.GetData()); err == nil {
			// A decoded image serves lookups consistently.
			for name, topic := range im.Topics {
				if topic.Name != name || im.TopicsByID[topic.ID] != topic {
					t.Fatalf("inconsistent topic %q", name)
				}
			}
		}
	})
}
