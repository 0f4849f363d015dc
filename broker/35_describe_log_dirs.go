package broker

// DescribeLogDirs, key 35: v0–v5.
//
// Every log directory of log.dirs is answered (log_dirs.go), each with the hosted partitions
// it holds (all of them with a null topic list, else the requested ones), leaders and
// followers alike, each with its size on disk, and the offset lag Kafka's ReplicaManager
// reports for a replica that is not a future one: max(high watermark − log end offset, 0),
// which is 0 for every healthy replica. A replica moving to another directory
// (AlterReplicaLogDirs, log_dir_moves.go) is also listed in its destination with IsFuture
// set, the bytes copied so far as its size and, until its copy has caught up, the source's
// records (log end − log start) as its offset lag, then 0. v3+: top-level error code. v4+
// (KIP-827): each file system's total and usable bytes, as Kafka reads them from the
// directory's FileStore.
//
// A failed directory (one of its opened logs failed, offline.go) is answered with
// KAFKA_STORAGE_ERROR, no partitions and -1 for its sizes, as Kafka answers for an offline log
// directory; with a single directory, any offline partition fails it, and its healthy
// partitions are still listed.
//
// Retention until consumed (retention_consumed.go) holds back bytes that Kafka's response has
// no field for, and the response keeps Kafka's shape (no sluice tagged fields: a later Kafka
// version may give their tags another meaning). The held bytes are counted in each
// partition's Size like any other segment; what each named group holds back is the
// sluice_retention_consumed_held_bytes{group,topic,partition} metric on the partition's
// leader (ConsumedRetentionHolds), and since every group holds a suffix of the closed
// segments, the largest of a partition's series is what the setting keeps in all. README
// ("Retention until consumed") and the key's DescribeConfigs doc point there.
//
// v5 (KIP-1066) adds IsCordoned per directory: always false, since sluice cannot cordon a
// directory yet (cordoned.log.dirs is refused at start, naming the key), which is what Kafka
// 4.4 answers for a broker without cordoned.log.dirs.

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(35, 0, 5, (*Broker).handleDescribeLogDirs) }

func (b *Broker) handleDescribeLogDirs(_ context.Context, _ *wire.ConnInfo, req *kmsg.DescribeLogDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	paths := b.logDirPaths()
	dirs := make([]kmsg.DescribeLogDirsResponseDir, len(paths))
	// failed directories are answered without partitions or sizes; with one directory an
	// offline partition only sets its error (its healthy partitions are listed, as before).
	failed := b.failedLogDirs()
	offline := b.offlineSnapshot()
	single := len(paths) == 1
	if single {
		failed = nil
	}
	for i, path := range paths {
		dir := &dirs[i]
		*dir = kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir = path
		if abs, err := filepath.Abs(path); err == nil {
			dir.Dir = abs
		}
		dir.TotalBytes, dir.UsableBytes = -1, -1
		if failed[i] || single && len(offline) > 0 {
			dir.ErrorCode = kerr.KafkaStorageError.Code
		}
		if !failed[i] && req.Version >= 4 {
			if total, usable, err := diskSpace(dir.Dir); err == nil {
				dir.TotalBytes, dir.UsableBytes = total, usable
			} else {
				b.logger.Warn("reading log dir disk space", "dir", dir.Dir, "err", err)
			}
		}
	}

	var want map[string]map[int32]bool // nil: every hosted partition
	if req.Topics != nil {
		want = make(map[string]map[int32]bool, len(req.Topics))
		for _, t := range req.Topics {
			ps := want[t.Topic]
			if ps == nil {
				ps = make(map[int32]bool, len(t.Partitions))
				want[t.Topic] = ps
			}
			for _, p := range t.Partitions {
				ps[p] = true
			}
		}
	}
	add := func(i int, topic string, dp kmsg.DescribeLogDirsResponseDirTopicPartition) {
		dir := &dirs[i]
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = topic
			dir.Topics = append(dir.Topics, t)
		}
		t := &dir.Topics[len(dir.Topics)-1]
		t.Partitions = append(t.Partitions, dp)
	}
	for _, p := range b.hostedPartitions() {
		if want != nil && !want[p.tp.topic][p.tp.partition] || offline[p.tp] {
			continue
		}
		i, ok := b.placedIn(p.tp)
		if !ok || failed[i] {
			continue
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition = p.tp.partition
		dp.Size = p.log.Size()
		snap := p.replica.Snapshot()
		dp.OffsetLag = max(snap.HighWatermark-snap.LogEnd, 0)
		add(i, p.tp.topic, dp)
		// A move in progress: the future replica in its destination, as Kafka lists it.
		if mv := b.movingTo(p.tp); mv != nil && !failed[mv.dst] {
			fp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			fp.Partition = p.tp.partition
			fp.Size = mv.copied.Load()
			fp.IsFuture = true
			if !mv.caughtUp.Load() {
				fp.OffsetLag = snap.LogEnd - p.log.LogStartOffset()
			}
			add(mv.dst, p.tp.topic, fp)
		}
	}
	resp.Dirs = dirs
	resp.ErrorCode = 0
	return resp, nil
}

// diskSpace returns the total and the usable (available to an unprivileged process) bytes of
// the file system holding dir.
func diskSpace(dir string) (total, usable int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
}
