package broker

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"sluice/controller"
	"sluice/internal/compress"
	"sluice/internal/config"
	"sluice/logstore"
)

// reconcile makes the hosted replicas match im: it opens the partitions assigned to this node,
// deletes those whose topic is gone, and applies leadership and config changes. It is called
// for every published image, in order, from one goroutine (and once from New).
func (b *Broker) reconcile(im *controller.Image) error {
	var errs []error
	want := make(map[topicPartition]bool)
	for name, topic := range im.Topics {
		settings := b.topicSettings(im, topic)
		logCfg := b.logConfig(settings)
		for i := range topic.Partitions {
			info := &topic.Partitions[i]
			if !slices.Contains(info.Replicas, b.nodeID) {
				continue
			}
			tp := topicPartition{name, info.Partition}
			want[tp] = true
			p := b.partition(tp.topic, tp.partition)
			if p != nil && p.topicID != topic.ID {
				// Same name, new topic: the old replica's data must not leak into it.
				b.removePartition(tp)
				p = nil
			}
			if p == nil {
				var err error
				if p, err = b.openPartition(tp, topic.ID, logCfg, settings); err != nil {
					// Offline, reported and retried there (offline.go); not an error of
					// the image, which would repeat it on every retry.
					b.markOffline(tp, topic.ID, err, false)
					continue
				}
				b.markOnline(tp, 0)
			} else {
				p.log.SetConfig(logCfg)
			}
			p.settings.Store(settings)
			p.applyMetadata(info, b.nodeID)
		}
	}
	b.mu.RLock()
	var gone []topicPartition
	for tp := range b.mu.partitions {
		if !want[tp] {
			gone = append(gone, tp)
		}
	}
	b.mu.RUnlock()
	for _, tp := range gone {
		b.removePartition(tp)
	}
	b.forgetOfflineExcept(want)

	b.reconcileCoordinator(im)

	b.mu.Lock()
	b.mu.appliedImage = im
	close(b.mu.appliedChanged)
	b.mu.appliedChanged = make(chan struct{})
	b.mu.Unlock()
	return errors.Join(errs...)
}

// openPartition opens (or creates) the log of tp and starts hosting it.
func (b *Broker) openPartition(tp topicPartition, id controller.TopicID, cfg logstore.Config, settings *config.TopicSettings) (*Partition, error) {
	dir := b.partitionDir(tp)
	if err := b.claimPartitionDir(dir, id); err != nil {
		return nil, fmt.Errorf("partition %s: %w", tp, err)
	}
	log, err := logstore.Open(dir, cfg, logstore.Options{
		FS:               b.cfg.FS,
		Logger:           b.logger.With("partition", tp.String()),
		Decompress:       compress.Decoder(maxDecompressedBatch), // exact timestamp lookups inside compressed batches
		CacheWindowBytes: b.cfg.CacheWindowBytes,
		OnFailure:        func(err error) { b.markOffline(tp, id, err, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("open partition %s: %w", tp, err)
	}
	p := newPartition(tp, id, log)
	p.settings.Store(settings)
	b.mu.Lock()
	b.mu.partitions[tp] = p
	b.mu.Unlock()
	return p, nil
}

// removePartition stops hosting tp and deletes its data.
func (b *Broker) removePartition(tp topicPartition) {
	b.mu.Lock()
	p := b.mu.partitions[tp]
	delete(b.mu.partitions, tp)
	b.mu.Unlock()
	if p == nil {
		return
	}
	p.truncatedOrMoved() // wake parked fetches so they answer promptly
	if err := p.log.Delete(); err != nil {
		b.logger.Error("deleting partition", "partition", tp.String(), "err", err)
	}
}

// partitionMetadataFile is Kafka's per-partition file naming the topic ID the directory belongs
// to, so that a directory left from a deleted topic is never taken for a new topic of the same
// name.
const partitionMetadataFile = "partition.metadata"

// claimPartitionDir makes dir belong to topic id: a directory of another topic ID is removed,
// and the partition.metadata file is written in Kafka's format.
func (b *Broker) claimPartitionDir(dir string, id controller.TopicID) error {
	content := []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n")
	path := filepath.Join(dir, partitionMetadataFile)
	existing, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(existing, content):
		return nil
	case err == nil:
		b.logger.Warn("removing partition directory of a previous topic with the same name", "dir", dir)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return logstore.WriteFileAtomic(b.fs(), dir, partitionMetadataFile, content)
}
