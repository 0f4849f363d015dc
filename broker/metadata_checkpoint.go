package broker

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"sluice/controller"
	"sluice/logstore"
)

// metadataOffsetFile records, in the log directory, the metadata offset up to which this node
// has created or deleted partition directories. It is written before the directories change,
// so a metadata log that comes back behind it (rewound: restored from an older copy, or cut)
// is noticed at start instead of being taken as the truth: the partitions it no longer knows
// would otherwise look like leftovers of deleted topics. sluice's own file; Kafka has none.
// Format: "0\n<offset>\n".
const metadataOffsetFile = "metadata-offset-checkpoint"

// checkpointMetadataOffset records offset unless a checkpoint at or above it was written.
// Called from the reconcile goroutine only. A failed write is logged: it weakens the rewind
// check, it does not stop metadata from being applied.
func (b *Broker) checkpointMetadataOffset(offset int64) {
	if offset <= b.metadataCheckpointed {
		return
	}
	data := []byte("0\n" + strconv.FormatInt(offset, 10) + "\n")
	if err := logstore.WriteFileAtomic(b.fs(), b.cfg.LogDir, metadataOffsetFile, data); err != nil {
		b.logger.Error("writing the metadata offset checkpoint", "file", filepath.Join(b.cfg.LogDir, metadataOffsetFile), "err", err)
		return
	}
	b.metadataCheckpointed = offset
}

// readMetadataOffset returns the checkpointed offset; ok is false when there is none.
func readMetadataOffset(logDir string) (offset int64, ok bool, err error) {
	path := filepath.Join(logDir, metadataOffsetFile)
	data, err := readSmallFile(path, 1024)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	lines := strings.Fields(string(data))
	if len(lines) != 2 || lines[0] != "0" {
		return 0, false, &fs.PathError{Op: "parse", Path: path, Err: errors.New("not \"0\\n<offset>\\n\"")}
	}
	offset, err = strconv.ParseInt(lines[1], 10, 64)
	if err != nil || offset < 0 {
		return 0, false, &fs.PathError{Op: "parse", Path: path, Err: fmt.Errorf("offset %q", clip(lines[1]))}
	}
	return offset, true, nil
}

// checkMetadataNotRewound runs at start, before any partition is opened. It refuses to start
// when the metadata image is behind the offset this node already acted on (the metadata log
// was rewound). Otherwise partition directories of topic IDs the image does not know are
// leftovers of deletions a crash interrupted, and they are discarded, as Kafka removes stray
// logs; with no checkpoint (a directory of an older sluice) they are left alone.
func (b *Broker) checkMetadataNotRewound(im *controller.Image) error {
	logDir := b.cfg.LogDir
	checkpointed, ok, err := readMetadataOffset(logDir)
	if err != nil {
		return fmt.Errorf("log directory %s: %w (fix or remove the file)", logDir, err)
	}
	if ok && im.Offset < checkpointed {
		return fmt.Errorf("log directory %s: this node created or deleted partitions up to metadata offset %d (%s), "+
			"but the metadata log ends at offset %d: it was rewound or replaced by an older copy. Refusing to start, "+
			"as partitions it no longer knows would be taken for deleted topics. Restore the newest metadata directory (%s)",
			logDir, checkpointed, filepath.Join(logDir, metadataOffsetFile), im.Offset, filepath.Join(logDir, metadataDirName))
	}
	b.metadataCheckpointed = checkpointed
	// Every log directory's partitions (log_dirs.go); the checkpoint lives in the first.
	for _, dataDir := range b.logDirPaths() {
		dirs, err := partitionDirs(dataDir)
		if err != nil {
			return fmt.Errorf("log directory %s: %w", dataDir, err)
		}
		for _, name := range dirs {
			dir := filepath.Join(dataDir, name)
			data, err := readSmallFile(filepath.Join(dir, partitionMetadataFile), maxPartitionMetadataBytes)
			if err != nil {
				continue // no file or unreadable: reconcile decides if the partition is wanted
			}
			id, err := parsePartitionMetadata(data)
			if err != nil || im.TopicsByID[id] != nil {
				continue
			}
			idText := base64.RawURLEncoding.EncodeToString(id[:])
			if !ok {
				b.logger.Warn("partition directory of a topic ID the metadata does not know; leaving it", "dir", dir, "topicID", idText)
				continue
			}
			b.logger.Warn("removing the partition directory of a deleted topic (its deletion was interrupted)", "dir", dir, "topicID", idText)
			if err := b.discardPartitionDir(dir, controller.TopicID(id)); err != nil {
				return fmt.Errorf("removing stray partition directory %s: %w", dir, err)
			}
			if tp, isPartition := parsePartitionDirName(name); isPartition {
				b.unplace(tp)
			}
		}
	}
	return nil
}
