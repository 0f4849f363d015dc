package broker

// Offline partitions: replicas hosted here that cannot serve because of a storage error. A
// partition goes offline when its log fails (a write, fsync, create, rename or truncate
// error: ENOSPC, EIO; logstore reports it through Options.OnFailure) or when its log cannot
// be opened or created at all. While offline it is answered with KAFKA_STORAGE_ERROR, as
// Kafka answers for a replica in an offline log directory; Metadata lists this node among
// its offline replicas (with no leader when this node led it) and DescribeLogDirs reports the
// log directory with KAFKA_STORAGE_ERROR.
//
// It never stays a zombie: the recovery loop retries with a backoff from minStorageRetry
// doubling to maxStorageRetry. A failed log is Reopened (a write probe, then the same
// recovery as at start, so the tail the failed write left is cut) and serves again at once;
// a partition that could not be opened is opened again by a reconcile. Acknowledged data is
// untouched by either; an append that failed was never acknowledged.
//
// Unlike Kafka, which takes the whole log directory offline and needs a restart to bring it
// back, sluice takes single partitions offline and brings them back by itself once the file
// system accepts writes again (space freed, device back). With several log directories
// (log_dirs.go) a directory counts as failed while one of its opened logs is failed: new
// partitions are placed elsewhere and DescribeLogDirs answers it KAFKA_STORAGE_ERROR; the
// partitions of the other directories keep serving.
//
// Leadership (reportLogDir): while some partition whose log was open has failed (a write
// error, not a log that could not be opened at start), the broker reports its log directory
// offline in every heartbeat (BrokerHeartbeat's OfflineLogDirs, its directory ID from
// meta.properties), and at once when that starts or ends. The controller then moves the
// leadership of every partition this broker leads to another in-sync replica and takes it out
// of every ISR, as Kafka's controller does for a failed directory (controller/membership.go):
// the other ISR members hold every acknowledged record, so the partitions stay available and
// lose nothing, where keeping the failed leader would refuse every produce and fetch. The
// failed partitions keep following the new leaders (their appends fail until the log is
// Reopened). Once no opened log is failed, the broker reports the directory online; the
// controller lets it lead and join ISRs again, and its partitions, followers now, rejoin as
// any follower does: truncate to the leader's epoch, catch up, and the leader's AlterPartition
// adds them. With several log directories only the failed ones are named, and the controller,
// told which directory holds each replica (log_dir_assign.go), moves only their partitions;
// the partitions of the other directories keep this broker as their leader.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluice/controller"
)

// Bounds of the storage recovery loop's retry backoff.
const (
	minStorageRetry = 100 * time.Millisecond
	maxStorageRetry = 5 * time.Second
)

// offlineSet is the broker's offline partitions. Its lock is a leaf: it is taken from
// logstore's failure callback with the log's locks held, so nothing may call into a log while
// holding it.
type offlineSet struct {
	mu struct {
		sync.Mutex
		partitions map[topicPartition]*offlinePartition
	}
	// count mirrors len(mu.partitions), so the produce and fetch paths skip the lock while
	// every partition is healthy.
	count atomic.Int64
	// wake (capacity 1) tells the recovery loop that a partition went offline.
	wake chan struct{}
	// reconcile (capacity 1) asks followImages to reconcile again, reopening partitions whose
	// open failed.
	reconcile chan struct{}
	// reportMu orders reportLogDir's reports, so the last one made is the current state. It
	// is taken before mu, never under it.
	reportMu sync.Mutex
	// reportWatch is set while a log.dir.failure.timeout.ms check is pending.
	reportWatch atomic.Bool
}

// offlinePartition is why and since when one partition is offline.
type offlinePartition struct {
	topicID controller.TopicID
	cause   error
	since   time.Time
	// opened: the partition's log is open (it failed later), so recovery Reopens it;
	// otherwise the open itself failed and recovery opens it again.
	opened bool
	// gen changes whenever the partition fails again, so a recovery that started before does
	// not bring it back online.
	gen uint64
	// dir is the index of the partition's log directory (Broker.dirs).
	dir int
}

func (s *offlineSet) init() {
	s.mu.partitions = make(map[topicPartition]*offlinePartition)
	s.wake = make(chan struct{}, 1)
	s.reconcile = make(chan struct{}, 1)
}

// markOffline takes tp offline because of cause. opened says whether its log is open (it failed
// while serving) or could not be opened. Safe from any goroutine, including logstore's failure
// callback.
func (b *Broker) markOffline(tp topicPartition, id controller.TopicID, cause error, opened bool) {
	s := &b.offline
	dir, _ := b.placedIn(tp)
	s.mu.Lock()
	op := s.mu.partitions[tp]
	fresh := op == nil
	if fresh {
		op = &offlinePartition{since: time.Now()}
		s.mu.partitions[tp] = op
		// One error line for the first partition to go offline names the cause; a full
		// disk takes every partition down with the same one, which would bury it.
		level := slog.LevelDebug
		if s.count.Add(1) == 1 {
			level = slog.LevelError
		}
		attrs := []any{"partition", tp.String(), "dir", filepath.Join(b.logDirPaths()[dir], tp.String()), "err", cause}
		var pe *fs.PathError
		if errors.As(cause, &pe) {
			attrs = append(attrs, "file", pe.Path)
		}
		b.logger.Log(context.Background(), level, "partition offline after a storage error; answering KAFKA_STORAGE_ERROR and retrying in the background", attrs...)
	}
	op.topicID, op.cause, op.opened, op.dir = id, cause, opened, dir
	op.gen++
	s.mu.Unlock()
	b.reportLogDir()
	if fresh {
		// A retry that fails again (a partition still unable to open) keeps backing off.
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// logDirReporter is the Metadata of a broker that heartbeats (cluster.Link): it tells the
// controller which log directories failed, and which it last told it.
type logDirReporter interface {
	SetOfflineLogDirs(dirs [][16]byte)
	ReportedOfflineLogDirs() [][16]byte
}

// reportLogDir tells the controller, through the Metadata's heartbeats, which log directories
// are offline: those where some partition whose log was open has failed (see the top of this
// file). Safe from any goroutine, including logstore's failure callback (it calls into no log).
//
// With several log directories each failed one is named: the controller, told which
// directory holds each replica (log_dir_assign.go), moves only their replicas. A Metadata that
// cannot carry those assignments is told only once every directory has failed, since its
// controller would move all of the broker's partitions.
func (b *Broker) reportLogDir() {
	r, ok := b.ctrl.(logDirReporter)
	if !ok {
		return
	}
	s := &b.offline
	s.reportMu.Lock()
	defer s.reportMu.Unlock()
	dirs := b.offlineDirsToReport()
	r.SetOfflineLogDirs(dirs)
	if len(dirs) > 0 {
		b.watchLogDirReport(r)
	}
}

// offlineDirsToReport are the IDs of the failed log directories the heartbeats name (see
// reportLogDir).
func (b *Broker) offlineDirsToReport() [][16]byte {
	failed := b.failedLogDirs()
	_, perDir := b.ctrl.(replicaDirAssigner)
	var dirs [][16]byte
	if n := max(len(b.dirs), 1); len(failed) == n || perDir && len(failed) > 0 {
		for i := range n {
			if !failed[i] {
				continue
			}
			var id [16]byte
			if i < len(b.dirs) {
				id = b.dirs[i].id
			}
			dirs = append(dirs, id)
		}
	}
	return dirs
}

// watchLogDirReport checks, log.dir.failure.timeout.ms after failed directories were handed to
// the heartbeats, that the controller accepted a heartbeat naming every directory still
// failed; if not, the broker asks the process to shut down (Config.OnFatal), as Kafka's
// broker does: leadership it cannot give up must not stay with a broker whose storage failed.
// One check is pending at a time.
func (b *Broker) watchLogDirReport(r logDirReporter) {
	if !b.offline.reportWatch.CompareAndSwap(false, true) {
		return
	}
	timeout := time.Duration(b.cfg.Static.Int64("log.dir.failure.timeout.ms")) * time.Millisecond
	time.AfterFunc(timeout, func() {
		b.offline.reportWatch.Store(false)
		select {
		case <-b.closing:
			return
		default:
		}
		reported := r.ReportedOfflineLogDirs()
		unreported := 0
		for _, id := range b.offlineDirsToReport() {
			if !slices.Contains(reported, id) {
				unreported++
			}
		}
		if unreported == 0 {
			return
		}
		err := fmt.Errorf("%d failed log directories were not reported to the controller within log.dir.failure.timeout.ms (%v)", unreported, timeout)
		b.logger.Error("shutting down: a failed log directory could not be reported to the controller", "err", err)
		if b.cfg.OnFatal != nil {
			b.fatalOnce.Do(func() { b.cfg.OnFatal(err) })
		}
	})
}

// failedLogDirs returns the indexes of the log directories with a failed opened log.
func (b *Broker) failedLogDirs() map[int]bool {
	s := &b.offline
	if s.count.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[int]bool
	for _, op := range s.mu.partitions {
		if op.opened {
			if out == nil {
				out = map[int]bool{}
			}
			out[op.dir] = true
		}
	}
	return out
}

// offlineTopic reports whether tp is offline and for which topic ID.
func (b *Broker) offlineTopic(tp topicPartition) (controller.TopicID, bool) {
	s := &b.offline
	if s.count.Load() == 0 {
		return controller.TopicID{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if op := s.mu.partitions[tp]; op != nil {
		return op.topicID, true
	}
	return controller.TopicID{}, false
}

// offlineNotIn lists the offline partitions that are not in want (no longer assigned here).
func (b *Broker) offlineNotIn(want map[topicPartition]bool) []topicPartition {
	s := &b.offline
	if s.count.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []topicPartition
	for tp := range s.mu.partitions {
		if !want[tp] {
			out = append(out, tp)
		}
	}
	return out
}

// forgetOffline drops tp from the offline set and deletes its directory: its topic was
// deleted (or replaced by a new topic of the same name), so its data belongs to no topic any
// more. Without this, DeleteTopics left the directories of partitions that failed to open.
func (b *Broker) forgetOffline(tp topicPartition) {
	s := &b.offline
	s.mu.Lock()
	op := s.mu.partitions[tp]
	if op != nil {
		delete(s.mu.partitions, tp)
		s.count.Add(-1)
	}
	s.mu.Unlock()
	if op == nil {
		return
	}
	b.reportLogDir()
	dir := b.partitionDir(tp)
	if err := b.discardPartitionDir(dir, op.topicID); err != nil {
		b.logger.Error("deleting directory of an offline partition whose topic is gone", "partition", tp.String(), "dir", dir, "err", err)
	}
	b.unplace(tp)
}

// markOnline brings tp back, unless it failed again since gen (gen 0: unconditionally).
func (b *Broker) markOnline(tp topicPartition, gen uint64) {
	s := &b.offline
	s.mu.Lock()
	op := s.mu.partitions[tp]
	if op == nil || (gen != 0 && op.gen != gen) {
		s.mu.Unlock()
		return
	}
	delete(s.mu.partitions, tp)
	left := s.count.Add(-1)
	s.mu.Unlock()
	b.logger.Info("partition back online", "partition", tp.String(), "offline_for", time.Since(op.since).Round(time.Millisecond).String(),
		"still_offline", left)
	b.reportLogDir()
}

// offlineCause returns why tp is offline, or nil.
func (b *Broker) offlineCause(tp topicPartition) error {
	s := &b.offline
	if s.count.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if op := s.mu.partitions[tp]; op != nil {
		return op.cause
	}
	return nil
}

// offlineSnapshot returns the offline partitions (nil when there are none).
func (b *Broker) offlineSnapshot() map[topicPartition]bool {
	s := &b.offline
	if s.count.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[topicPartition]bool, len(s.mu.partitions))
	for tp := range s.mu.partitions {
		out[tp] = true
	}
	return out
}

// storageRecoveryLoop retries offline partitions until they serve again or the broker closes.
func (b *Broker) storageRecoveryLoop() {
	defer b.done.Done()
	backoff := minStorageRetry
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-b.closing:
			timer.Stop()
			return
		case <-b.offline.wake:
			// A new failure: first retry soon (the cause may be gone already, e.g. a
			// transient EIO), then back off.
			backoff = minStorageRetry
			timer.Reset(backoff)
			continue
		case <-timer.C:
		}
		if b.retryOffline() {
			backoff = min(2*backoff, maxStorageRetry)
			timer.Reset(backoff)
		} else {
			backoff = minStorageRetry
		}
	}
}

// retryOffline tries once to bring every offline partition back and reports whether some are
// still offline.
func (b *Broker) retryOffline() (stillOffline bool) {
	type attempt struct {
		tp     topicPartition
		gen    uint64
		opened bool
	}
	s := &b.offline
	s.mu.Lock()
	attempts := make([]attempt, 0, len(s.mu.partitions))
	for tp, op := range s.mu.partitions {
		attempts = append(attempts, attempt{tp, op.gen, op.opened})
	}
	s.mu.Unlock()
	needReconcile := false
	for _, a := range attempts {
		if !a.opened {
			needReconcile = true
			continue
		}
		p := b.partition(a.tp.topic, a.tp.partition)
		if p == nil {
			// Removed meanwhile, or to be reopened by reconcile.
			needReconcile = true
			continue
		}
		if err := p.log.Reopen(); err != nil {
			b.logger.Debug("partition still offline", "partition", a.tp.String(), "err", err)
			continue
		}
		p.truncatedOrMoved()
		p.appended()
		b.markOnline(a.tp, a.gen)
	}
	if needReconcile {
		select {
		case s.reconcile <- struct{}{}:
		default:
		}
	}
	return s.count.Load() > 0
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
	for _, dir := range b.logDirPaths() {
		names, err := b.fs().ReadDir(dir)
		if err != nil {
			continue
		}
		for _, name := range names {
			if strings.HasSuffix(name, deleteDirSuffix) {
				path := filepath.Join(dir, name)
				if err := b.fs().RemoveAll(path); err != nil {
					b.logger.Warn("removing directory left for deletion", "dir", path, "err", err)
				}
			}
		}
	}
}
