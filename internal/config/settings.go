package config

// TopicSettings is a topic's effective configuration, typed, for the storage engine and the
// produce path. Build it with ResolveTopic.
type TopicSettings struct {
	CleanupDelete  bool // cleanup.policy contains delete
	CleanupCompact bool // cleanup.policy contains compact

	CompressionType      string // compression.type: producer, uncompressed, gzip, snappy, lz4, zstd
	CompressionGzipLevel int32
	CompressionLz4Level  int32
	CompressionZstdLevel int32

	DeleteRetentionMs int64
	FileDeleteDelayMs int64
	FlushMessages     int64
	FlushMs           int64

	IndexIntervalBytes     int32
	MaxCompactionLagMs     int64
	MinCompactionLagMs     int64
	MinCleanableDirtyRatio float64

	MaxMessageBytes             int32
	MessageTimestampType        string // CreateTime or LogAppendTime
	MessageTimestampAfterMaxMs  int64
	MessageTimestampBeforeMaxMs int64
	MinInsyncReplicas           int32
	UncleanLeaderElectionEnable bool

	Preallocate    bool
	RetentionBytes int64 // -1: no size limit
	RetentionMs    int64 // -1: no time limit
	// RetentionConsumedGroups is retention.consumed.groups (sluice's own), as set: a comma
	// list of the groups whose committed offsets let segments go early; "" is off. A string,
	// so that TopicSettings stays comparable; ConsumedGroups splits it.
	RetentionConsumedGroups string
	// RetentionConsumedRequireCommit: a named group without a commit holds the data.
	RetentionConsumedRequireCommit bool
	// SegmentBytes is segment.bytes, or internal.segment.bytes when that is set (Kafka 4.1's
	// LogConfig.segmentSize does the same), so tests can use segments below 1 MiB.
	SegmentBytes      int32
	SegmentIndexBytes int32
	SegmentJitterMs   int64
	SegmentMs         int64
}

// ResolveTopic resolves every topic key (TopicValue) and types the result. The maps and static
// are as for TopicValue; any may be nil.
func ResolveTopic(topicOverrides, dynamicBroker, dynamicDefault map[string]string, static *Broker) TopicSettings {
	vals := TopicValues(topicOverrides, dynamicBroker, dynamicDefault, static)
	get := func(key string) string {
		if v := vals[key]; v != nil {
			return *v
		}
		return ""
	}
	i64 := func(key string) int64 { n, _ := ParseInt64(get(key)); return n }
	i32 := func(key string) int32 { n, _ := ParseInt32(get(key)); return n }
	boolean := func(key string) bool { b, _ := ParseBool(get(key)); return b }
	s := TopicSettings{
		CompressionType:                get("compression.type"),
		CompressionGzipLevel:           i32("compression.gzip.level"),
		CompressionLz4Level:            i32("compression.lz4.level"),
		CompressionZstdLevel:           i32("compression.zstd.level"),
		DeleteRetentionMs:              i64("delete.retention.ms"),
		FileDeleteDelayMs:              i64("file.delete.delay.ms"),
		FlushMessages:                  i64("flush.messages"),
		FlushMs:                        i64("flush.ms"),
		IndexIntervalBytes:             i32("index.interval.bytes"),
		MaxCompactionLagMs:             i64("max.compaction.lag.ms"),
		MinCompactionLagMs:             i64("min.compaction.lag.ms"),
		MaxMessageBytes:                i32("max.message.bytes"),
		MessageTimestampType:           get("message.timestamp.type"),
		MessageTimestampAfterMaxMs:     i64("message.timestamp.after.max.ms"),
		MessageTimestampBeforeMaxMs:    i64("message.timestamp.before.max.ms"),
		MinInsyncReplicas:              i32("min.insync.replicas"),
		UncleanLeaderElectionEnable:    boolean("unclean.leader.election.enable"),
		Preallocate:                    boolean("preallocate"),
		RetentionBytes:                 i64("retention.bytes"),
		RetentionMs:                    i64("retention.ms"),
		RetentionConsumedGroups:        get("retention.consumed.groups"),
		RetentionConsumedRequireCommit: boolean("retention.consumed.require.commit"),
		SegmentBytes:                   i32("segment.bytes"),
		SegmentIndexBytes:              i32("segment.index.bytes"),
		SegmentJitterMs:                i64("segment.jitter.ms"),
		SegmentMs:                      i64("segment.ms"),
	}
	s.MinCleanableDirtyRatio, _ = ParseDouble(get("min.cleanable.dirty.ratio"))
	for _, p := range ParseList(get("cleanup.policy")) {
		s.CleanupDelete = s.CleanupDelete || p == "delete"
		s.CleanupCompact = s.CleanupCompact || p == "compact"
	}
	if vals["internal.segment.bytes"] != nil {
		s.SegmentBytes = i32("internal.segment.bytes")
	}
	return s
}

// ConsumedGroups is retention.consumed.groups as a list of group names; nil when it is off.
func (s *TopicSettings) ConsumedGroups() []string {
	groups := ParseList(s.RetentionConsumedGroups)
	if len(groups) == 0 {
		return nil
	}
	return groups
}
