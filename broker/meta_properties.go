package broker

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluice/logstore"
)

// metaPropertiesFile is Kafka's per-log-directory identity file: which cluster and node the
// directory belongs to. Kafka refuses to start on a log directory of another cluster; so does
// sluice, which is what keeps a lost or rewound metadata log from starting a new, empty
// cluster on top of the old one's partitions (a topic created again with an old name would
// then discard the old directory as a leftover).
const metaPropertiesFile = "meta.properties"

// KafkaMetadataBackupDir is where `sluice migrate` keeps an adopted Kafka broker's metadata
// log (migrate.KafkaMetadataBackup).
const KafkaMetadataBackupDir = "__cluster_metadata-0.kafka"

// maxMetaPropertiesBytes bounds how much of meta.properties is read (Kafka's is ~150 bytes).
const maxMetaPropertiesBytes = 64 << 10

// MetaProperties is the content of a log directory's meta.properties (Kafka's version 1 keys).
type MetaProperties struct {
	ClusterID   string
	NodeID      int32
	DirectoryID string
}

// parseMetaProperties reads meta.properties in Java properties syntax as Kafka writes it:
// "key=value" lines, '#' and '!' comments, whitespace and CRLF tolerated. version must be 1
// (KRaft) and cluster.id and node.id present; anything else is an error.
func parseMetaProperties(data []byte) (MetaProperties, error) {
	kv := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return MetaProperties{}, fmt.Errorf("malformed line %q", clip(line))
		}
		kv[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	if v := kv["version"]; v != "1" {
		return MetaProperties{}, fmt.Errorf("unsupported or missing version %q (want 1)", clip(v))
	}
	mp := MetaProperties{ClusterID: kv["cluster.id"], DirectoryID: kv["directory.id"]}
	if mp.ClusterID == "" {
		return MetaProperties{}, errors.New("no cluster.id")
	}
	id, err := strconv.ParseInt(kv["node.id"], 10, 32)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("node.id %q: %v", clip(kv["node.id"]), err)
	}
	mp.NodeID = int32(id)
	return mp, nil
}

func encodeMetaProperties(mp MetaProperties, now time.Time) []byte {
	return []byte(fmt.Sprintf("#\n#%s\ncluster.id=%s\ndirectory.id=%s\nnode.id=%d\nversion=1\n",
		now.UTC().Format(time.UnixDate), mp.ClusterID, mp.DirectoryID, mp.NodeID))
}

// CheckLogDir looks at logDir before the metadata quorum starts. metadataPresent says whether
// the metadata directory holds any state (controller.HasState). It returns the directory's
// meta.properties (nil if it has none) and refuses — an error naming the directory and what it
// found — when the metadata is missing but the directory belongs to a cluster: it has a
// meta.properties or partition directories. Starting would create a new, empty cluster over
// the old data, and recreating a topic of an old name would then delete that topic's data.
func CheckLogDir(logDir string, metadataPresent bool) (*MetaProperties, error) {
	path := filepath.Join(logDir, metaPropertiesFile)
	var found *MetaProperties
	data, err := readSmallFile(path, maxMetaPropertiesBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("log directory %s: %w", logDir, err)
	default:
		mp, err := parseMetaProperties(data)
		if err != nil {
			return nil, fmt.Errorf("log directory %s: cannot read %s: %v (fix or remove the file; it names the cluster the directory belongs to)", logDir, path, err)
		}
		found = &mp
	}
	if metadataPresent {
		return found, nil
	}
	if found != nil {
		return nil, fmt.Errorf("log directory %s belongs to cluster %s (%s) but the metadata log is missing or empty: "+
			"starting would create a new, empty cluster over that cluster's data. Restore the metadata directory "+
			"(%s), or move the log directory's contents away to start a new cluster", logDir, found.ClusterID, path, metadataDirName)
	}
	parts, err := partitionDirs(logDir)
	if err != nil {
		return nil, fmt.Errorf("log directory %s: %w", logDir, err)
	}
	if len(parts) > 0 {
		shown := parts[:min(len(parts), 5)]
		return nil, fmt.Errorf("log directory %s holds %d partition directories (%s) but the metadata log is missing or empty: "+
			"starting would create a new, empty cluster over that data. Restore the metadata directory (%s), "+
			"or move the partition directories away to start a new cluster", logDir, len(parts), strings.Join(shown, ", "), metadataDirName)
	}
	return found, nil
}

// metadataDirName is the metadata quorum's directory inside the first log directory.
const metadataDirName = "__cluster_metadata-0"

// ClaimLogDir checks logDir's meta.properties (found by CheckLogDir) against the cluster the
// metadata log describes, or writes one: a directory of another cluster or node is refused,
// as Kafka refuses it.
func ClaimLogDir(logDir string, found *MetaProperties, clusterID string, nodeID int32) error {
	return ClaimLogDirAs(logDir, found, clusterID, nodeID, [16]byte{})
}

// ClaimLogDirAs is ClaimLogDir writing dirID (zero: a random one) as the directory.id of a
// directory without meta.properties: the ID the broker registered for it.
func ClaimLogDirAs(logDir string, found *MetaProperties, clusterID string, nodeID int32, dirID [16]byte) error {
	path := filepath.Join(logDir, metaPropertiesFile)
	if found != nil {
		if found.ClusterID != clusterID {
			return fmt.Errorf("log directory %s belongs to cluster %s (%s) but the metadata log is of cluster %s: "+
				"refusing to mix two clusters' data", logDir, found.ClusterID, path, clusterID)
		}
		if found.NodeID != nodeID {
			return fmt.Errorf("log directory %s belongs to node %d (%s), not to node.id %d", logDir, found.NodeID, path, nodeID)
		}
		return nil
	}
	if dirID == ([16]byte{}) {
		if _, err := rand.Read(dirID[:]); err != nil {
			return err
		}
	}
	mp := MetaProperties{ClusterID: clusterID, NodeID: nodeID, DirectoryID: base64.RawURLEncoding.EncodeToString(dirID[:])}
	return logstore.WriteFileAtomic(logstore.OSFS{}, logDir, metaPropertiesFile, encodeMetaProperties(mp, time.Now()))
}

// partitionDirs lists the directories of logDir that hold partition data: a partition.metadata
// or a segment file.
//
// Kafka's metadata log, renamed to KafkaMetadataBackupDir by `sluice migrate`, is not a
// partition: it holds a partition.metadata with Kafka's metadata topic ID, which would
// otherwise read as a deleted topic's leftover and be removed.
func partitionDirs(logDir string) ([]string, error) {
	entries, err := os.ReadDir(logDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == metadataDirName || e.Name() == KafkaMetadataBackupDir || strings.HasSuffix(e.Name(), deleteDirSuffix) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(logDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(files, func(f os.DirEntry) bool {
			return f.Name() == partitionMetadataFile || strings.HasSuffix(f.Name(), ".log")
		}) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// FormatLogDir writes logDir's meta.properties for `sluice format` (Kafka's kafka-storage
// format): mp names the cluster, the node and the directory's ID (base64url, Kafka's Uuid
// form). It refuses a directory that already has one unless ignoreFormatted, and then leaves
// that one as it is when it names the same cluster and node (as kafka-storage format
// --ignore-formatted does), else refuses.
func FormatLogDir(logDir string, mp MetaProperties, ignoreFormatted bool) error {
	path := filepath.Join(logDir, metaPropertiesFile)
	data, err := readSmallFile(path, maxMetaPropertiesBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("log directory %s: %w", logDir, err)
	default:
		found, perr := parseMetaProperties(data)
		if !ignoreFormatted || perr != nil || found.ClusterID != mp.ClusterID || found.NodeID != mp.NodeID {
			return fmt.Errorf("log directory %s is already formatted (%s); use --ignore-formatted to keep a directory formatted for the same cluster and node", logDir, path)
		}
		return nil
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	return logstore.WriteFileAtomic(logstore.OSFS{}, logDir, metaPropertiesFile, encodeMetaProperties(mp, time.Now()))
}

// NewDirectoryID returns a random directory ID in Kafka's Uuid form (base64url, 22 characters).
func NewDirectoryID() string {
	var id [16]byte
	rand.Read(id[:])
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ReadMetaProperties returns logDir's meta.properties, nil when it has none.
func ReadMetaProperties(logDir string) (*MetaProperties, error) {
	data, err := readSmallFile(filepath.Join(logDir, metaPropertiesFile), maxMetaPropertiesBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mp, err := parseMetaProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(logDir, metaPropertiesFile), err)
	}
	return &mp, nil
}
