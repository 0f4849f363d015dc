package broker

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"sluice/controller"
)

// FuzzPartitionMetadataKeepsData writes arbitrary bytes as a partition directory's
// partition.metadata and claims the directory for a topic. It must not panic, and the
// directory's segment must survive unless the file positively names another topic ID (a
// leftover of a deleted topic, discarded as Kafka does).
func FuzzPartitionMetadataKeepsData(f *testing.F) {
	var id controller.TopicID
	id[0], id[15] = 1, 2
	f.Add(encodePartitionMetadata(id))
	f.Add([]byte{})
	f.Add([]byte("version: 0\r\ntopic_id: AQAAAAAAAAAAAAAAAAAAAg\r\n"))
	f.Add([]byte("version: 1\ntopic_id: AQAAAAAAAAAAAAAAAAAAAg\n"))
	f.Add([]byte("version: 0\ntopic_id: 7gAAAAAAAAAAAAAAAAAAAA\n"))
	f.Add([]byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		logDir := t.TempDir()
		dir := filepath.Join(logDir, "t-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		segment := filepath.Join(dir, "00000000000000000000.log")
		if err := os.WriteFile(segment, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, partitionMetadataFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		b := &Broker{cfg: Config{LogDir: logDir}, logger: slog.New(slog.DiscardHandler)}
		_, claimErr := b.claimPartitionDir(dir, id)
		_, statErr := os.Stat(segment)
		parsed, parseErr := parsePartitionMetadata(data)
		if parseErr == nil && parsed != id {
			if statErr == nil {
				t.Fatalf("a directory of another topic ID (%x) was kept", parsed)
			}
			return
		}
		if statErr != nil {
			t.Fatalf("partition.metadata %q (claim: %v) deleted the segment: %v", data, claimErr, statErr)
		}
		if claimErr == nil {
			// Claimed: the file now names the topic.
			now, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
			if got, perr := parsePartitionMetadata(now); err != nil || perr != nil || got != id {
				t.Fatalf("claimed directory's partition.metadata %q does not name the topic: %v %v", now, err, perr)
			}
		}
	})
}

// FuzzMetaProperties feeds arbitrary bytes as a log directory's meta.properties to the
// start-up checks. They must not panic or touch the directory's partitions; a file they
// accept must name a cluster, and only the cluster and node it names are let in.
func FuzzMetaProperties(f *testing.F) {
	f.Add([]byte("#\n#Tue\ncluster.id=abc\ndirectory.id=x\nnode.id=1\nversion=1\n"), true)
	f.Add([]byte("cluster.id = abc\r\nnode.id = 1\r\nversion = 1\r\n"), false)
	f.Add([]byte("version=0\nbroker.id=1\ncluster.id=abc\n"), true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, data []byte, metadataPresent bool) {
		logDir := t.TempDir()
		segment := filepath.Join(logDir, "t-0", "00000000000000000000.log")
		os.MkdirAll(filepath.Dir(segment), 0o755)
		if err := os.WriteFile(segment, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(logDir, metaPropertiesFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		found, err := CheckLogDir(logDir, metadataPresent)
		if _, statErr := os.Stat(segment); statErr != nil {
			t.Fatalf("start-up check removed a segment: %v", statErr)
		}
		if err != nil {
			return
		}
		if !metadataPresent {
			t.Fatalf("accepted a log directory with partitions and no metadata (meta.properties %q)", data)
		}
		if found == nil || found.ClusterID == "" {
			t.Fatalf("accepted meta.properties %q without a cluster ID: %+v", data, found)
		}
		if ClaimLogDir(logDir, found, found.ClusterID+"-other", found.NodeID) == nil {
			t.Fatalf("meta.properties of cluster %q let cluster %q in", found.ClusterID, found.ClusterID+"-other")
		}
		if err := ClaimLogDir(logDir, found, found.ClusterID, found.NodeID); err != nil {
			t.Fatalf("meta.properties %+v refused its own cluster: %v", found, err)
		}
	})
}
