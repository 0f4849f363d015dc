package broker

import (
	"math"
	"strconv"
	"strings"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/logstore"
)

// topicConfigValue resolves one topic config key as Kafka does: the topic's override, then the
// broker's dynamic config, the cluster-wide dynamic default, server.properties, Kafka's default.
func (b *Broker) topicConfigValue(im *controller.Image, topic *controller.TopicInfo, key string) string {
	v, _, _ := config.TopicValue(key, topic.Configs, im.BrokerConfigs[strconv.Itoa(int(b.nodeID))], im.BrokerConfigs[""], b.cfg.Static)
	if v == nil {
		return ""
	}
	return *v
}

// topicConfigInt64 resolves key as a number; an unparsable value (already rejected by
// validation, so only possible for a missing key) yields def.
func (b *Broker) topicConfigInt64(im *controller.Image, topic *controller.TopicInfo, key string, def int64) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(b.topicConfigValue(im, topic, key)), 10, 64)
	if err != nil {
		return def
	}
	return n
}

// logConfig is the storage configuration of topic's partitions.
func (b *Broker) logConfig(im *controller.Image, topic *controller.TopicInfo) logstore.Config {
	get := func(key string, def int64) int64 { return b.topicConfigInt64(im, topic, key, def) }
	return logstore.Config{
		SegmentBytes:       get("segment.bytes", 1<<30),
		SegmentMs:          get("segment.ms", 7*24*3600*1000),
		SegmentJitterMs:    get("segment.jitter.ms", 0),
		SegmentIndexBytes:  get("segment.index.bytes", 10<<20),
		IndexIntervalBytes: get("index.interval.bytes", 4096),
		RetentionMs:        get("retention.ms", 7*24*3600*1000),
		RetentionBytes:     get("retention.bytes", -1),
		FlushMessages:      get("flush.messages", math.MaxInt64),
		FlushMs:            get("flush.ms", math.MaxInt64),
		FileDeleteDelayMs:  get("file.delete.delay.ms", 60000),
		Preallocate:        b.topicConfigValue(im, topic, "preallocate") == "true",
	}
}

// topicLimits are the per-topic settings the produce path checks.
type topicLimits struct {
	maxMessageBytes   int64
	minInsyncReplicas int
}

func (b *Broker) topicLimits(im *controller.Image, topic *controller.TopicInfo) topicLimits {
	return topicLimits{
		maxMessageBytes:   b.topicConfigInt64(im, topic, "max.message.bytes", 1048588),
		minInsyncReplicas: int(b.topicConfigInt64(im, topic, "min.insync.replicas", 1)),
	}
}
