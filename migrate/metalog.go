package migrate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// KafkaMetadataDir is the directory of Kafka's KRaft metadata log inside its metadata log
// directory.
const KafkaMetadataDir = "__cluster_metadata-0"

// maxMetadataFileBytes bounds one snapshot or metadata segment read into memory (Kafka's
// metadata segments are 1 GiB at most, metadata.log.segment.bytes; snapshots are far smaller
// for any cluster a single node held).
const maxMetadataFileBytes = 1 << 30

// maxDecompressedBatch bounds a decompressed metadata batch.
const maxDecompressedBatch = 64 << 20

// kafkaImage is the state Kafka's metadata records leave, as far as a sluice cluster keeps it.
type kafkaImage struct {
	topics         map[kafkaUUID]*kTopicState
	topicByName    map[string]kafkaUUID
	configs        map[configKey]map[string]string
	quotas         map[string]*quotaState
	scram          map[scramKey]*kScram
	acls           map[kafkaUUID]*kACL
	features       map[string]int16
	nextProducerID int64
	// skipped counts records not carried over, by api key.
	skipped map[uint16]int
	// records counts every record replayed.
	records int
	// snapshot is the snapshot file the replay started from ("" = none); endOffset the offset
	// after the last record replayed.
	snapshot  string
	endOffset int64
	// openTxnRecords is how many records of a metadata transaction were still open at the end
	// of the log (not committed, so not applied).
	openTxnRecords int
}

type kTopicState struct {
	kTopic
	partitions map[int32]*kPartition
}

type configKey struct {
	resourceType int8
	name         string
}

type scramKey struct {
	name      string
	mechanism int8
}

type quotaState struct {
	entity []kQuotaEntity
	values map[string]float64
}

func newKafkaImage() *kafkaImage {
	return &kafkaImage{
		topics:      map[kafkaUUID]*kTopicState{},
		topicByName: map[string]kafkaUUID{},
		configs:     map[configKey]map[string]string{},
		quotas:      map[string]*quotaState{},
		scram:       map[scramKey]*kScram{},
		acls:        map[kafkaUUID]*kACL{},
		features:    map[string]int16{},
		skipped:     map[uint16]int{},
	}
}

// apply replays one decoded record, as Kafka's metadata image does.
func (im *kafkaImage) apply(rec any) error {
	im.records++
	switch r := rec.(type) {
	case *kTopic:
		if _, dup := im.topics[r.ID]; dup {
			return fmt.Errorf("%w: topic ID of %q created twice", ErrCorruptMetadata, r.Name)
		}
		im.topics[r.ID] = &kTopicState{kTopic: *r, partitions: map[int32]*kPartition{}}
		im.topicByName[r.Name] = r.ID
	case *kPartition:
		t := im.topics[r.TopicID]
		if t == nil {
			return fmt.Errorf("%w: partition %d of an unknown topic ID", ErrCorruptMetadata, r.Partition)
		}
		t.partitions[r.Partition] = r
	case *kPartitionChange:
		t := im.topics[r.TopicID]
		if t == nil || t.partitions[r.Partition] == nil {
			return fmt.Errorf("%w: change of partition %d of an unknown topic or partition", ErrCorruptMetadata, r.Partition)
		}
		p := t.partitions[r.Partition]
		if r.setISR {
			p.ISR = r.ISR
		}
		if r.setReplicas {
			p.Replicas = r.Replicas
		}
		if r.setRemoving {
			p.Removing = r.Removing
		}
		if r.setAdding {
			p.Adding = r.Adding
		}
		if r.setELR {
			p.ELR = r.ELR
		}
		if r.Leader != -2 && r.Leader != p.Leader {
			p.Leader = r.Leader
			p.LeaderEpoch++
		}
		p.PartitionEpoch++
	case *kRemoveTopic:
		t := im.topics[r.ID]
		if t == nil {
			return fmt.Errorf("%w: removal of an unknown topic ID", ErrCorruptMetadata)
		}
		delete(im.topics, r.ID)
		delete(im.topicByName, t.Name)
		delete(im.configs, configKey{resourceTypeTopic, t.Name})
	case *kConfig:
		k := configKey{r.ResourceType, r.ResourceName}
		if r.Value == nil {
			delete(im.configs[k], r.Name)
			if len(im.configs[k]) == 0 {
				delete(im.configs, k)
			}
			break
		}
		if im.configs[k] == nil {
			im.configs[k] = map[string]string{}
		}
		im.configs[k][r.Name] = *r.Value
	case *kQuota:
		key := quotaEntityKey(r.Entity)
		q := im.quotas[key]
		if r.Remove {
			if q != nil {
				delete(q.values, r.Key)
				if len(q.values) == 0 {
					delete(im.quotas, key)
				}
			}
			break
		}
		if q == nil {
			q = &quotaState{entity: r.Entity, values: map[string]float64{}}
			im.quotas[key] = q
		}
		q.values[r.Key] = r.Value
	case *kScram:
		k := scramKey{r.Name, r.Mechanism}
		if r.Remove {
			delete(im.scram, k)
		} else {
			im.scram[k] = r
		}
	case *kACL:
		im.acls[r.ID] = r
	case *kRemoveACL:
		delete(im.acls, r.ID)
	case *kFeature:
		im.features[r.Name] = r.Level
	case *kProducerIDs:
		im.nextProducerID = max(im.nextProducerID, r.NextProducerID)
	case *kClearElr:
		for _, t := range im.topics {
			if r.TopicName == "" || r.TopicName == t.Name {
				for _, p := range t.partitions {
					p.ELR = nil
				}
			}
		}
	case *kSkipped:
		im.skipped[r.APIKey]++
	}
	return nil
}

const resourceTypeTopic int8 = 2

func quotaEntityKey(e []kQuotaEntity) string {
	parts := make([]string, 0, len(e))
	for _, p := range e {
		name := "<default>"
		if p.Name != nil {
			name = strconv.Quote(*p.Name)
		}
		parts = append(parts, p.Type+"="+name)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// readKafkaMetadata replays Kafka's metadata log in dir (a __cluster_metadata-0 directory):
// the newest snapshot (<offset>-<epoch>.checkpoint: a header control record, batches of
// metadata records, a footer) and then every batch of the log's segments at or above the
// snapshot's offset. Control batches (leader changes, voter sets, snapshot header and footer)
// carry no metadata and are skipped. Every batch's CRC is checked; a damaged batch, a torn
// tail or a gap between the snapshot and the log is ErrCorruptMetadata naming the file.
func readKafkaMetadata(dir string) (*kafkaImage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var snapshots, segments []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".checkpoint") && len(name) == len("00000000000000000000-0000000000.checkpoint"):
			snapshots = append(snapshots, name)
		case strings.HasSuffix(name, ".log") && len(name) == 24:
			segments = append(segments, name)
		}
	}
	// Zero-padded names sort by offset (then epoch).
	slices.Sort(snapshots)
	slices.Sort(segments)
	im := newKafkaImage()
	from := int64(0)
	if len(snapshots) > 0 {
		name := snapshots[len(snapshots)-1]
		off, err := strconv.ParseInt(name[:20], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: snapshot name %s", ErrCorruptMetadata, name)
		}
		im.snapshot = name
		if _, err := replayFile(filepath.Join(dir, name), im, -1); err != nil {
			return nil, err
		}
		from = off
	}
	im.endOffset = from
	var txn []any
	inTxn := false
	apply := func(rec any) error {
		if t, ok := rec.(*kTxn); ok {
			switch t.APIKey {
			case keyBeginTransaction:
				inTxn, txn = true, nil
			case keyEndTransaction:
				for _, r := range txn {
					if err := im.apply(r); err != nil {
						return err
					}
				}
				inTxn, txn = false, nil
			case keyAbortTransaction:
				inTxn, txn = false, nil
			}
			return nil
		}
		if inTxn {
			txn = append(txn, rec)
			return nil
		}
		return im.apply(rec)
	}
	for i, name := range segments {
		base, err := strconv.ParseInt(name[:20], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: segment name %s", ErrCorruptMetadata, name)
		}
		if i == 0 && base > from {
			return nil, fmt.Errorf("%w: the metadata log starts at offset %d, after the newest snapshot (%d): records are missing", ErrCorruptMetadata, base, from)
		}
		if i+1 < len(segments) {
			if next, _ := strconv.ParseInt(segments[i+1][:20], 10, 64); next <= from {
				continue // wholly below the snapshot
			}
		}
		end, err := replayFileFrom(filepath.Join(dir, name), from, apply)
		if err != nil {
			return nil, err
		}
		im.endOffset = max(im.endOffset, end)
	}
	im.openTxnRecords = len(txn)
	return im, nil
}

// replayFile replays every data batch of a snapshot file into im.
func replayFile(path string, im *kafkaImage, _ int64) (int64, error) {
	return replayFileFrom(path, -1, im.apply)
}

// replayFileFrom walks the batches of one file (a segment or a snapshot) and hands every
// record of a data batch whose last offset is at or above from to fn. It returns the offset
// after the last batch.
func replayFileFrom(path string, from int64, fn func(any) error) (int64, error) {
	data, err := readFileLimit(path, maxMetadataFileBytes)
	if err != nil {
		return 0, err
	}
	return replayBatches(path, data, from, fn)
}

// replayBatches is replayFileFrom on the bytes of the file path.
func replayBatches(path string, data []byte, from int64, fn func(any) error) (int64, error) {
	end := int64(0)
	for pos := 0; pos < len(data); {
		h, err := batch.Check(data[pos:])
		if err != nil {
			return 0, fmt.Errorf("%w: %s at byte %d: %v", ErrCorruptMetadata, path, pos, err)
		}
		b := data[pos : pos+int(h.Size())]
		pos += int(h.Size())
		end = h.NextOffset()
		if h.IsControl() || h.LastOffset() < from {
			continue
		}
		records := b[batch.HeaderSize:]
		if c := h.Compression(); c != 0 {
			if records, err = compress.Decompress(c, records, maxDecompressedBatch); err != nil {
				return 0, fmt.Errorf("%w: %s at byte %d: %v", ErrCorruptMetadata, path, pos, err)
			}
		}
		var applyErr error
		walkErr := batch.WalkRecords(records, h.RecordCount, func(ri batch.RecordInfo) bool {
			if h.BaseOffset+int64(ri.OffsetDelta) < from {
				return true
			}
			rec, err := decodeMetadataRecord(ri.Value)
			if err == nil {
				err = fn(rec)
			}
			if err != nil {
				applyErr = fmt.Errorf("%s offset %d: %w", path, h.BaseOffset+int64(ri.OffsetDelta), err)
				return false
			}
			return true
		})
		if walkErr != nil {
			return 0, fmt.Errorf("%w: %s at byte %d: %v", ErrCorruptMetadata, path, pos, walkErr)
		}
		if applyErr != nil {
			return 0, applyErr
		}
	}
	return end, nil
}

// readFileLimit reads a whole file of at most limit bytes.
func readFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errors.New(path + ": larger than " + strconv.FormatInt(limit, 10) + " bytes")
	}
	return data, nil
}
