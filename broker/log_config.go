package broker

import (
	"strconv"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/logstore"
)

// topicSettings resolves every config of topic as Kafka does: the topic's override, then this
// broker's dynamic config, the cluster-wide dynamic default, server.properties, Kafka's default.
// It costs microseconds, so it runs when an image is applied, not per request.
func (b *Broker) topicSettings(im *controller.Image, topic *controller.TopicInfo) *config.TopicSettings {
	s := config.ResolveTopic(topic.Configs, im.BrokerConfigs[strconv.Itoa(int(b.nodeID))], im.BrokerConfigs[""], b.cfg.Static)
	return &s
}

// topicConfigValue resolves one topic config key.
func (b *Broker) topicConfigValue(im *controller.Image, topic *controller.TopicInfo, key string) string {
	v := config.EffectiveTopicValue(key, topic.Configs, im.BrokerConfigs[strconv.Itoa(int(b.nodeID))], im.BrokerConfigs[""], b.cfg.Static)
	if v == nil {
		return ""
	}
	return *v
}

// logConfig is the storage configuration for a topic's settings and the broker's
// producer.id.expiration.ms.
//
// Time and size retention apply only when cleanup.policy contains delete, as in Kafka: a
// compacted topic (sluice's __consumer_offsets) keeps everything until compaction lands,
// rather than losing the committed offsets of a group that has not committed for a week; the
// cleaner (cleaner.go) compacts it instead.
func (b *Broker) logConfig(s *config.TopicSettings) logstore.Config {
	retentionMs, retentionBytes := s.RetentionMs, s.RetentionBytes
	if !s.CleanupDelete {
		retentionMs, retentionBytes = -1, -1
	}
	return logstore.Config{
		ProducerIDExpirationMs: int64(b.cfg.Static.ProducerIDExpirationMs),
		SegmentBytes:           int64(s.SegmentBytes),
		SegmentMs:              s.SegmentMs,
		SegmentJitterMs:        s.SegmentJitterMs,
		SegmentIndexBytes:      int64(s.SegmentIndexBytes),
		IndexIntervalBytes:     int64(s.IndexIntervalBytes),
		RetentionMs:            retentionMs,
		RetentionBytes:         retentionBytes,
		FlushMessages:          s.FlushMessages,
		FlushMs:                s.FlushMs,
		FileDeleteDelayMs:      s.FileDeleteDelayMs,
		Preallocate:            s.Preallocate,
		Compact:                s.CleanupCompact,
		DeleteRetentionMs:      s.DeleteRetentionMs,
		MinCompactionLagMs:     s.MinCompactionLagMs,
		MaxCompactionLagMs:     s.MaxCompactionLagMs,
		MinCleanableDirtyRatio: s.MinCleanableDirtyRatio,
	}
}
