package logstore

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
)

// metadataFiles are the small files of a partition directory FuzzMetadataFilesKeepSegments
// damages, by the selector's value modulo their count. "snapshot" is the newest producer
// snapshot.
var metadataFiles = []string{recoveryPointFile, logStartOffsetFile, leaderEpochFile, "snapshot"}

// fuzzSegmentedDir writes a cleanly closed log of several segments (with producer snapshots)
// and returns its segment files.
func fuzzSegmentedDir(t *testing.T, fs *MemFS, dir string) []string {
	segmentedLog(t, fs, dir, 40)
	return segmentFiles(t, fs, dir)
}

// FuzzMetadataFilesKeepSegments replaces one small metadata file of a healthy, cleanly closed
// partition directory with arbitrary bytes (or removes it) and opens the log. Open must not
// panic, must not fail, and must not remove a segment file: a damaged checkpoint or snapshot
// is ignored or rebuilt, never a reason to delete data. The one rule that removes segments is
// a log-start checkpoint that parses to an offset inside the log (an interrupted retention or
// DeleteRecords, as Kafka): then exactly the segments wholly below it go.
func FuzzMetadataFilesKeepSegments(f *testing.F) {
	f.Add(uint8(0), []byte("0\n1\nt 0 45\n"), false)
	f.Add(uint8(0), []byte("0\n1\nt 0 999999\n"), false)
	f.Add(uint8(1), []byte("0\n1\nt 0 999999\n"), false)
	f.Add(uint8(1), []byte("0\n1\nt 0 30\n"), false)
	f.Add(uint8(1), []byte(""), true)
	f.Add(uint8(2), []byte("0\n2\n0 0\n7 999\n"), false)
	f.Add(uint8(2), []byte("garbage"), false)
	f.Add(uint8(3), []byte("SLPS\x00\x01"), false)
	f.Add(uint8(3), []byte{}, true)
	f.Fuzz(func(t *testing.T, which uint8, data []byte, remove bool) {
		fs := NewMemFS()
		dir := "/z/t-0"
		before := fuzzSegmentedDir(t, fs, dir)
		name := metadataFiles[int(which)%len(metadataFiles)]
		if name == "snapshot" {
			names, _ := fs.ReadDir(dir)
			for _, n := range names {
				if _, ok := parseOffsetName(n, snapshotSuffix); ok {
					name = n // the newest: names are sorted
				}
			}
		}
		path := filepath.Join(dir, name)
		if remove {
			if err := fs.Remove(path); err != nil && !isNotExist(err) {
				t.Fatal(err)
			}
		} else {
			fs.WriteFileForTest(path, data)
		}
		l, err := Open(dir, DefaultConfig(), Options{FS: fs, Logger: quietLogger})
		if err != nil {
			t.Fatalf("open with damaged %s: %v", name, err)
		}
		defer l.Close()
		after := segmentFiles(t, fs, dir)
		if equalStrings(before, after) {
			return
		}
		// Only a log start inside the log may remove segments: those wholly below it.
		logStart, ok := decodeOffsetCheckpoint(bytes.TrimSpace(append(slices.Clone(data), '\n'))) // as readOffsetCheckpoint
		if name != logStartOffsetFile || remove || !ok || logStart > l.LogEndOffset() {
			t.Fatalf("damaged %s (%q) removed segments:\n before %v\n after  %v", name, clip(data), before, after)
		}
		for i, seg := range before {
			if containsString(after, seg) || i+1 == len(before) {
				continue
			}
			if next, _ := parseOffsetName(before[i+1], logSuffix); next > logStart {
				t.Fatalf("log start %d removed segment %s, which is not wholly below it", logStart, seg)
			}
		}
	})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
