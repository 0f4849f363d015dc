package broker

// DescribeLogDirs, key 35: v0–v4.
//
// sluice has one log directory per node. It is answered with every hosted partition (a null
// topic list) or the requested ones that are hosted here, leaders and followers alike, each
// with its size on disk, IsFuture false and the offset lag Kafka's ReplicaManager reports for
// a replica that is not a future one: max(high watermark − log end offset, 0), which is 0 for
// every healthy replica (a follower's HW never passes its own log end; the lag is meant for
// replicas moving between directories, which sluice does not have). v3+: top-level error
// code. v4+ (KIP-827): the file system's total and usable bytes, as Kafka reads them from the
// directory's FileStore.
//
// While a storage error keeps partitions offline (offline.go) the directory is answered with
// KAFKA_STORAGE_ERROR, as Kafka answers for an offline log directory, and the offline
// partitions are left out; the healthy ones are still listed.
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
// Not done: multiple log directories, v5 (cordoned directories, KIP-1066).

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(35, 0, 4, (*Broker).handleDescribeLogDirs) }

func (b *Broker) handleDescribeLogDirs(_ context.Context, _ *wire.ConnInfo, req *kmsg.DescribeLogDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.LogDir
	if abs, err := filepath.Abs(b.cfg.LogDir); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = -1, -1
	if req.Version >= 4 {
		if total, usable, err := diskSpace(dir.Dir); err == nil {
			dir.TotalBytes, dir.UsableBytes = total, usable
		} else {
			b.logger.Warn("reading log dir disk space", "dir", dir.Dir, "err", err)
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
	offline := b.offlineSnapshot()
	if len(offline) > 0 {
		dir.ErrorCode = kerr.KafkaStorageError.Code
	}
	for _, p := range b.hostedPartitions() {
		if want != nil && !want[p.tp.topic][p.tp.partition] || offline[p.tp] {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != p.tp.topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = p.tp.topic
			dir.Topics = append(dir.Topics, t)
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition = p.tp.partition
		dp.Size = p.log.Size()
		snap := p.replica.Snapshot()
		dp.OffsetLag = max(snap.HighWatermark-snap.LogEnd, 0)
		t := &dir.Topics[len(dir.Topics)-1]
		t.Partitions = append(t.Partitions, dp)
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
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
