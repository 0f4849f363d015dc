package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"sluice/controller"
)

// offlinePartition is a replica this node is assigned but does not serve because its storage
// failed: its directory could not be opened or read (an unreadable partition.metadata, a
// failed log recovery) or, once marked by the write path, a write failed. It stays offline
// until the broker restarts, as a Kafka log directory does; produce and fetch for it answer
// KAFKA_STORAGE_ERROR. Its files are left alone, except when its topic is deleted.
type offlinePartition struct {
	topicID controller.TopicID
	dir     string
	cause   error
}

// markOffline stops serving tp because of a storage failure and answers KAFKA_STORAGE_ERROR
// for it until restart. It is the one place that takes a partition offline: opening (a
// damaged directory) and writing (a failed append or fsync) both call it. A hosted replica is
// closed, never deleted; parked fetches are woken. The cause is logged at ERROR with the
// partition's directory (and the file, when the cause names one).
func (b *Broker) markOffline(tp topicPartition, topicID controller.TopicID, cause error) {
	dir := b.partitionDir(tp)
	b.mu.Lock()
	p := b.mu.partitions[tp]
	delete(b.mu.partitions, tp)
	if p != nil {
		topicID = p.topicID
	}
	b.mu.offline[tp] = &offlinePartition{topicID: topicID, dir: dir, cause: cause}
	b.mu.Unlock()
	attrs := []any{"partition", tp.String(), "dir", dir, "err", cause}
	var pe *fs.PathError
	if errors.As(cause, &pe) {
		attrs = append(attrs, "file", pe.Path)
	}
	b.logger.Error("partition offline: storage error; answering KAFKA_STORAGE_ERROR for it until restart", attrs...)
	if p != nil {
		p.truncatedOrMoved() // wake parked fetches so they answer promptly
		if err := p.log.Close(); err != nil {
			b.logger.Warn("closing offline partition", "partition", tp.String(), "err", err)
		}
	}
}

// offline reports whether tp is offline, for which topic ID and why.
func (b *Broker) offline(tp topicPartition) (controller.TopicID, error, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if o := b.mu.offline[tp]; o != nil {
		return o.topicID, o.cause, true
	}
	return controller.TopicID{}, nil, false
}

// forgetOffline drops tp from the offline set and deletes its directory: its topic was
// deleted (or replaced by a new topic of the same name), so the damaged data belongs to no
// topic any more.
func (b *Broker) forgetOffline(tp topicPartition) {
	b.mu.Lock()
	o := b.mu.offline[tp]
	delete(b.mu.offline, tp)
	b.mu.Unlock()
	if o == nil {
		return
	}
	if err := b.discardPartitionDir(o.dir, o.topicID); err != nil {
		b.logger.Error("deleting directory of an offline partition whose topic is gone", "partition", tp.String(), "dir", o.dir, "err", err)
	}
}

// deleteDirSuffix marks a partition directory renamed for deletion, as Kafka's
// "<topic>-<partition>.<id>-delete". A partition directory ends in its partition number, so
// no live directory has this suffix.
const deleteDirSuffix = "-delete"

// discardPartitionDir renames dir out of the way (so a new topic of the same name starts from
// an empty directory even if the removal is interrupted) and removes it. A missing dir is
// fine.
func (b *Broker) discardPartitionDir(dir string, id controller.TopicID) error {
	target := fmt.Sprintf("%s.%x%s", dir, id[:], deleteDirSuffix)
	if err := b.fs().Rename(dir, target); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := b.fs().SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return b.fs().RemoveAll(target)
}

// removeDeletedDirs finishes deletions a crash interrupted: directories renamed for deletion.
func (b *Broker) removeDeletedDirs() {
	names, err := b.fs().ReadDir(b.cfg.LogDir)
	if err != nil {
		return
	}
	for _, name := range names {
		if strings.HasSuffix(name, deleteDirSuffix) {
			path := filepath.Join(b.cfg.LogDir, name)
			if err := b.fs().RemoveAll(path); err != nil {
				b.logger.Warn("removing directory left for deletion", "dir", path, "err", err)
			}
		}
	}
}
