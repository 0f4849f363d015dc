package broker

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"sluice/controller"
	"sluice/internal/compress"
	"sluice/internal/config"
	"sluice/logstore"
)

// reconcile makes the hosted replicas match im: it opens the partitions assigned to this node,
// deletes those whose topic is gone, and applies leadership and config changes. It is called
// for every published image, in order, from one goroutine (and once from New).
func (b *Broker) reconcile(im *controller.Image) error {
	want := make(map[topicPartition]bool)
	var opens []openJob
	// Before the first directory is created or deleted for im, record that this node acted on
	// metadata up to im.Offset (see checkMetadataNotRewound).
	changing := func() { b.checkpointMetadataOffset(im.Offset) }
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
				changing()
				b.removePartition(tp)
				p = nil
			}
			if p == nil && b.moveSwapping(tp) {
				continue // opened from its new log directory once swapped (log_dir_moves.go)
			}
			if p == nil {
				if id, offline := b.offlineTopic(tp); offline && id != topic.ID {
					changing()
					b.forgetOffline(tp) // its topic was replaced by a new one of the same name
				}
				// Opened again even when offline: a partition whose open failed comes back
				// once its cause is gone (offline.go).
				opens = append(opens, openJob{tp: tp, id: topic.ID, cfg: logCfg, settings: settings, info: info})
				continue
			}
			p.log.SetConfig(logCfg)
			p.settings.Store(settings)
			b.applyLeadership(p, info)
		}
	}
	if len(opens) > 0 {
		changing()
		b.openPartitions(opens)
	}
	b.mu.RLock()
	var gone []topicPartition
	for tp := range b.mu.partitions {
		if !want[tp] {
			gone = append(gone, tp)
		}
	}
	b.mu.RUnlock()
	goneOffline := b.offlineNotIn(want)
	if len(gone)+len(goneOffline) > 0 {
		changing()
	}
	for _, tp := range gone {
		b.removePartition(tp)
	}
	for _, tp := range goneOffline {
		b.forgetOffline(tp) // a deleted topic's partition that failed to open: remove its directory
	}

	b.reconcileCoordinator(im)
	b.reconcileTxnCoordinator(im)
	b.reconcileShareCoordinator(im)
	b.shares.reconcile(im)

	b.mu.Lock()
	b.mu.appliedImage = im
	close(b.mu.appliedChanged)
	b.mu.appliedChanged = make(chan struct{})
	b.mu.Unlock()
	return nil
}

// openJob is a partition reconcile must open: its log may need recovery.
type openJob struct {
	tp       topicPartition
	id       controller.TopicID
	cfg      logstore.Config
	settings *config.TopicSettings
	info     *controller.PartitionInfo
}

// openPartitions opens the partitions of jobs with num.recovery.threads.per.data.dir workers
// per log directory (one pool over all of them), as Kafka's LogManager loads logs: after an unclean stop
// each open may scan segments, and one at a time leaves the port closed for the sum of them.
// A partition that fails to open goes offline; nothing is deleted.
//
// Opening many logs (a start after a stop, most of all an unclean one) reports its progress
// every openProgressInterval and, when it took long or was large, a summary: partitions,
// segments and bytes opened, and the time taken.
func (b *Broker) openPartitions(jobs []openJob) {
	workers := int(b.cfg.Static.Int32("num.recovery.threads.per.data.dir")) * len(b.logDirPaths())
	start := time.Now()
	var opened, failed, segments, bytes atomic.Int64
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(openProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				b.logger.Info("opening partition logs", "opened", opened.Load(), "of", len(jobs), "segments", segments.Load(),
					"bytes", bytes.Load(), "took", time.Since(start).Round(time.Millisecond))
			}
		}
	}()
	runBounded(workers, len(jobs), func(i int) {
		j := &jobs[i]
		p, err := b.openPartition(j.tp, j.id, j.cfg, j.settings)
		if err != nil {
			// Never a reason to delete anything: the data stays for the operator. Offline,
			// reported and retried there (offline.go); not an error of the image.
			failed.Add(1)
			b.markOffline(j.tp, j.id, err, false)
			return
		}
		opened.Add(1)
		segments.Add(int64(p.log.NumSegments()))
		bytes.Add(p.log.Size())
		b.markOnline(j.tp, 0)
		if i, ok := b.placedIn(j.tp); ok {
			b.queueDirAssignment(j.tp, j.id, i)
		}
		b.applyLeadership(p, j.info)
	})
	close(stop)
	if took := time.Since(start); took >= openProgressInterval/5 || len(jobs) >= 100 {
		b.logger.Info("partition logs opened", "partitions", opened.Load(), "offline", failed.Load(), "segments", segments.Load(),
			"bytes", bytes.Load(), "workers", max(1, min(workers, len(jobs))), "took", took.Round(time.Millisecond))
	}
}

// idleFileSweepInterval is how often segment files unused since the previous sweep are closed
// (logstore.FileCache.CloseIdle): an idle partition holds no descriptor after one to two
// intervals, and one in use keeps its files open.
const idleFileSweepInterval = 30 * time.Second

// closeIdleSegmentFiles closes the idle segment files of the process-wide cache every log of
// this process opens through.
func closeIdleSegmentFiles() { logstore.DefaultFileCache().CloseIdle() }

// openProgressInterval is how often openPartitions reports its progress.
const openProgressInterval = 5 * time.Second

// runBounded calls fn(0..n-1) on at most workers goroutines (at least one) and returns when
// all calls returned.
func runBounded(workers, n int, fn func(i int)) {
	workers = max(1, min(workers, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// openPartition opens (or creates) the log of tp and starts hosting it.
func (b *Broker) openPartition(tp topicPartition, id controller.TopicID, cfg logstore.Config, settings *config.TopicSettings) (*Partition, error) {
	dir := b.partitionDir(tp)
	created, err := b.claimPartitionDir(dir, id)
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", tp, err)
	}
	opts := logstore.Options{
		FS:               b.cfg.FS,
		Logger:           b.logger.With("partition", tp.String()),
		Decompress:       compress.Decoder(maxDecompressedBatch), // exact timestamp lookups inside compressed batches
		CacheWindowBytes: b.cfg.CacheWindowBytes,
		OnFailure:        func(err error) { b.markOffline(tp, id, err, true) },
	}
	if created {
		// partition.metadata was written without fsyncs: the log makes it durable before its
		// first data is (with the directory's entries, which it defers as well).
		opts.BeforeFirstSync = func() error { return syncFile(b.fs(), filepath.Join(dir, partitionMetadataFile)) }
	}
	log, err := logstore.Open(dir, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("open partition %s: %w", tp, err)
	}
	hw := b.checkpointedHighWatermark(tp)
	if moved, ok := b.takeHandoverHW(tp); ok {
		hw = moved // the HW it had before its move to another log directory
	}
	p := b.newPartition(tp, id, log, hw)
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
	b.fetchers.remove(tp) // no fetcher writes to the log from here on
	p.truncatedOrMoved()  // wake parked fetches so they answer promptly
	if err := p.log.Close(); err != nil && !errors.Is(err, logstore.ErrClosed) {
		b.logger.Warn("closing a deleted partition", "partition", tp.String(), "err", err)
	}
	// Renamed first, so that a crash during the removal never leaves a directory that a new
	// topic of the same name could adopt (one whose partition.metadata was removed already).
	if err := b.discardPartitionDir(b.partitionDir(tp), p.topicID); err != nil {
		b.logger.Error("deleting partition", "partition", tp.String(), "err", err)
	}
	b.unplace(tp)
}

// claimPartitionDir makes dir belong to topic id. created reports a directory made here (it
// did not exist, or was a deleted topic's and was discarded): its partition.metadata is written
// without fsyncs, as Kafka writes it asynchronously, and must be fsynced before the log's first
// data fsync (Options.BeforeFirstSync); until then the directory holds nothing durable that
// the file would have to protect. Creating thousands of partitions then costs no fsync each.
//
// Otherwise: claimPartitionDir makes dir belong to topic id. A directory whose partition.metadata names
// another topic ID is a leftover of a deleted topic of the same name and is discarded, as Kafka
// does — only on a positively parsed, different ID. A directory without the file, or with an
// empty one, keeps its data and gets the file (re)written. A file that cannot be read or
// parsed is an error naming it: the caller takes the partition offline and deletes nothing.
func (b *Broker) claimPartitionDir(dir string, id controller.TopicID) (created bool, err error) {
	path := filepath.Join(dir, partitionMetadataFile)
	existing, err := readSmallFile(path, maxPartitionMetadataBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			created = true
		}
	case err != nil:
		return false, err
	default:
		onDisk, perr := parsePartitionMetadata(existing)
		switch {
		case perr == nil && onDisk == id:
			return false, nil
		case perr == nil:
			b.logger.Warn("discarding the partition directory of a deleted topic with the same name", "dir", dir,
				"dirTopicID", base64.RawURLEncoding.EncodeToString(onDisk[:]), "topicID", base64.RawURLEncoding.EncodeToString(id[:]))
			if err := b.discardPartitionDir(dir, onDisk); err != nil {
				return false, err
			}
			created = true
		case errors.Is(perr, errNoPartitionMetadata):
			b.logger.Warn("partition.metadata is empty: keeping the directory's data and rewriting the file", "file", path)
		default:
			return false, &fs.PathError{Op: "parse", Path: path, Err: perr}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if created {
		return true, writeFileNoSync(b.fs(), dir, partitionMetadataFile, encodePartitionMetadata(id))
	}
	return false, logstore.WriteFileAtomic(b.fs(), dir, partitionMetadataFile, encodePartitionMetadata(id))
}

// writeFileNoSync writes data to dir/name through name.tmp and a rename, without fsyncs. A
// crash before something fsyncs it may leave the file missing or empty (claimPartitionDir
// rewrites both); the .tmp leftover is removed by the log's open.
func writeFileNoSync(fsys logstore.FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsys.Rename(tmp, filepath.Join(dir, name))
}

// syncFile fsyncs the file at path.
func syncFile(fsys logstore.FS, path string) error {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSmallFile reads a file expected to be small; one longer than limit is an error.
func readSmallFile(path string, limit int64) ([]byte, error) {
	return logstore.ReadFileLimit(logstore.OSFS{}, path, limit)
}
