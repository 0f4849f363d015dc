package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/controller"
)

// resolvedPartition is a request's topic-partition resolved against the metadata image and the
// hosted replicas, or the error code to answer it with.
type resolvedPartition struct {
	topic     *controller.TopicInfo
	partition *Partition
	errCode   int16
}

// resolvePartition finds a partition by topic name, or by topic ID when byID is set (request
// versions that carry topic IDs). It answers UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION for
// unknown topics and partitions, KAFKA_STORAGE_ERROR for a partition taken offline by a
// storage failure, and NOT_LEADER_OR_FOLLOWER when this node does not lead it.
func (b *Broker) resolvePartition(im *controller.Image, name string, id controller.TopicID, byID bool, partition int32, needLeader bool) resolvedPartition {
	var topic *controller.TopicInfo
	if byID {
		topic = im.TopicsByID[id]
		if topic == nil {
			return resolvedPartition{errCode: kerr.UnknownTopicID.Code}
		}
	} else {
		topic = im.Topics[name]
		if topic == nil {
			return resolvedPartition{errCode: kerr.UnknownTopicOrPartition.Code}
		}
	}
	if partition < 0 || int(partition) >= len(topic.Partitions) {
		return resolvedPartition{topic: topic, errCode: kerr.UnknownTopicOrPartition.Code}
	}
	if err := b.offlineCause(topicPartition{topic.Name, partition}); err != nil {
		// A storage error took this replica offline (offline.go); Kafka answers so too.
		return resolvedPartition{topic: topic, errCode: kerr.KafkaStorageError.Code}
	}
	p := b.partition(topic.Name, partition)
	if p == nil || p.topicID != topic.ID {
		return resolvedPartition{topic: topic, errCode: kerr.NotLeaderForPartition.Code}
	}
	if needLeader {
		if isLeader, _ := p.leaderState(); !isLeader {
			return resolvedPartition{topic: topic, errCode: kerr.NotLeaderForPartition.Code}
		}
	}
	return resolvedPartition{topic: topic, partition: p}
}

// checkLeaderEpoch compares a client's idea of the leader epoch (-1: none) with this replica's,
// as Kafka does for Fetch, ListOffsets and OffsetForLeaderEpoch.
func checkLeaderEpoch(clientEpoch, leaderEpoch int32) int16 {
	switch {
	case clientEpoch < 0 || clientEpoch == leaderEpoch:
		return 0
	case clientEpoch < leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}
