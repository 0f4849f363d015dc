package broker

// AlterReplicaLogDirs, key 34: v0–v2 (v0, removed by Kafka 4's KIP-896, served as Kafka 3 did; v2 is flexible).
//
// Moves replicas hosted here to another of this broker's log directories (log.dirs); the move
// itself runs in the background (log_dir_moves.go) and DescribeLogDirs shows it as a future
// replica in the destination until it is swapped in. Per partition, as Kafka's
// ReplicaManager.alterReplicaLogDirs answers:
//   - LOG_DIR_NOT_FOUND: the directory is not one of log.dirs (compared as absolute paths);
//   - KAFKA_STORAGE_ERROR: the destination directory has failed, or the replica is offline;
//   - REPLICA_NOT_AVAILABLE: the replica is not hosted here (yet); the directory is
//     remembered, and the partition is created there if it is assigned here later, as Kafka
//     keeps a preferred log directory;
//   - CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster;
//   - INVALID_REQUEST for a replica of __consumer_offsets, __transaction_state or
//     __share_group_state: their coordinators keep the logs open, and sluice does not move
//     them (Kafka does);
//   - NONE otherwise: the move started, or the replica is in (or going to) that directory.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

func init() { registerSync(34, 0, 2, (*Broker).handleAlterReplicaLogDirs) }

// internalTopicsNotMoved are the topics whose replicas AlterReplicaLogDirs does not move.
var internalTopicsNotMoved = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, conn *wire.ConnInfo, req *kmsg.AlterReplicaLogDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	denied := b.authzOn() && !b.allowedCluster(conn, authz.OpAlter)
	failed := b.failedLogDirs()
	byTopic := map[string]int{}
	answer := func(topic string, partition int32, code int16) {
		i, ok := byTopic[topic]
		if !ok {
			t := kmsg.NewAlterReplicaLogDirsResponseTopic()
			t.Topic = topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			byTopic[topic] = i
		}
		p := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		p.Partition, p.ErrorCode = partition, code
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	for _, d := range req.Dirs {
		dst := b.logDirIndex(d.Dir)
		for _, t := range d.Topics {
			for _, partition := range t.Partitions {
				tp := topicPartition{t.Topic, partition}
				switch {
				case denied:
					answer(t.Topic, partition, kerr.ClusterAuthorizationFailed.Code)
				case dst < 0:
					answer(t.Topic, partition, kerr.LogDirNotFound.Code)
				case failed[dst]:
					answer(t.Topic, partition, kerr.KafkaStorageError.Code)
				default:
					answer(t.Topic, partition, b.alterReplicaLogDir(tp, dst))
				}
			}
		}
	}
	return resp, nil
}

// alterReplicaLogDir moves tp to log directory dst and returns the partition's error code.
func (b *Broker) alterReplicaLogDir(tp topicPartition, dst int) int16 {
	if internalTopicsNotMoved[tp.topic] {
		b.logger.Info("refused AlterReplicaLogDirs", "partition", tp.String(), "err", errMoveInternal)
		return kerr.InvalidRequest.Code
	}
	if b.offlineCause(tp) != nil {
		return kerr.KafkaStorageError.Code
	}
	p := b.partition(tp.topic, tp.partition)
	if p == nil {
		if _, placed := b.placedIn(tp); !placed && !b.moveSwapping(tp) {
			b.setPlacement(tp, dst) // a replica assigned here later is created there
		}
		if b.moveSwapping(tp) {
			return 0
		}
		return kerr.ReplicaNotAvailable.Code
	}
	if cur, ok := b.placedIn(tp); ok && cur == dst {
		if mv := b.movingTo(tp); mv != nil && !mv.swapping.Load() {
			mv.cancel() // back to where it is: the copy is dropped
		}
		return 0
	}
	if err := b.startMove(tp, dst); err != nil {
		b.logger.Info("refused AlterReplicaLogDirs", "partition", tp.String(), "err", err)
		return kerr.KafkaStorageError.Code
	}
	return 0
}
