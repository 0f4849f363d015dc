package coordinator

import "strconv"

// TopicName is the internal topic holding group state and offsets.
const TopicName = "__consumer_offsets"

// TopicConfig returns the topic configuration Kafka gives __consumer_offsets
// (offsets.topic.segment.bytes 100 MiB, compaction, the producer's
// compression), for the broker to use when it creates the topic on the first
// FindCoordinator, with offsets.topic.num.partitions partitions and
// offsets.topic.replication.factor replicas.
func TopicConfig() map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.Itoa(100 * 1024 * 1024),
	}
}
