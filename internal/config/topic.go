package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Topic configuration keys, as Kafka 4.4's LogConfig defines them. Names, types, defaults and
// validation rules match Kafka; docs are sluice's own. message.downconversion.enable is absent
// because Kafka 4.0 removed it.

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// topicTable lists every topic key. syn lists the broker keys that supply the default, in
// Kafka's precedence order (ServerTopicConfigSynonyms).
var topicTable = []*Def{
	{Name: "cleanup.policy", Type: TypeList, Default: str("delete"), Validate: listOf("compact", "delete"),
		Doc:      "How old log segments are discarded: 'delete' removes them by age or size, 'compact' keeps the latest record per key; both may be listed.",
		synonyms: syn("log.cleanup.policy")},
	{Name: "compression.gzip.level", Type: TypeInt, Default: str("-1"), Validate: betweenOr(1, 9, -1),
		Doc:      "gzip level used when the broker (re)compresses for this topic; -1 is the codec's default.",
		synonyms: syn("compression.gzip.level")},
	{Name: "compression.lz4.level", Type: TypeInt, Default: str("9"), Validate: between(1, 17),
		Doc:      "lz4 level used when the broker (re)compresses for this topic.",
		synonyms: syn("compression.lz4.level")},
	{Name: "compression.type", Type: TypeString, Default: str("producer"), Validate: oneOf(compressionTypes...),
		Doc:      "Codec batches are stored with: 'producer' keeps whatever the producer sent; any other value makes the broker recompress to that codec.",
		synonyms: syn("compression.type")},
	{Name: "compression.zstd.level", Type: TypeInt, Default: str("3"), Validate: between(-131072, 22),
		Doc:      "zstd level used when the broker (re)compresses for this topic.",
		synonyms: syn("compression.zstd.level")},
	{Name: "delete.retention.ms", Type: TypeLong, Default: str("86400000"), Validate: atLeast(0),
		Doc:      "On compacted topics, how long a tombstone (null value) stays readable after compaction reaches it.",
		synonyms: syn("log.cleaner.delete.retention.ms")},
	{Name: "errors.deadletterqueue.group.enable", Type: TypeBoolean, Default: str("false"),
		Doc: "Share groups (KIP-1191): let this topic be a dead-letter topic of share groups. sluice has no share-group dead-letter queues yet."},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: str("60000"), Validate: atLeast(0),
		Doc:      "Delay between a segment leaving the log and its files being removed, so in-flight reads finish.",
		synonyms: syn("log.segment.delete.delay.ms")},
	{Name: "flush.messages", Type: TypeLong, Default: str("9223372036854775807"), Validate: atLeast(1),
		Doc:      "fsync the log after this many appended messages. 1 makes every acknowledged write durable against power loss (sluice group-commits these fsyncs).",
		synonyms: syn("log.flush.interval.messages")},
	{Name: "flush.ms", Type: TypeLong, Default: str("9223372036854775807"), Validate: atLeast(0),
		Doc:      "fsync the log when the oldest unflushed write is this old.",
		synonyms: syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms")},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: str(""), Validate: throttledReplicas("follower.replication.throttled.replicas"),
		Doc: "Replicas (partition:broker pairs, or '*') whose follower-side replication is subject to the replication throttle."},
	{Name: "index.interval.bytes", Type: TypeInt, Default: str("4096"), Validate: atLeast(0),
		Doc:      "Bytes of log between offset-index entries; smaller means larger indexes and more precise seeks.",
		synonyms: syn("log.index.interval.bytes")},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: str(""), Validate: throttledReplicas("leader.replication.throttled.replicas"),
		Doc: "Replicas (partition:broker pairs, or '*') whose leader-side replication is subject to the replication throttle."},
	{Name: "local.retention.bytes", Type: TypeLong, Default: str("-2"), Validate: atLeast(-2),
		Doc:      "Tiered storage: bytes kept on local disk per partition (-2: use retention.bytes). sluice has no tiered storage.",
		synonyms: syn("log.local.retention.bytes")},
	{Name: "local.retention.ms", Type: TypeLong, Default: str("-2"), Validate: atLeast(-2),
		Doc:      "Tiered storage: time data stays on local disk (-2: use retention.ms). sluice has no tiered storage.",
		synonyms: syn("log.local.retention.ms")},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Default: str("9223372036854775807"), Validate: atLeast(1),
		Doc:      "Longest time a record may stay uncompacted on a compacted topic.",
		synonyms: syn("log.cleaner.max.compaction.lag.ms")},
	{Name: "max.decompressed.message.bytes", Type: TypeInt, Default: str("2147483639"), Validate: between(1, 2147483639),
		Doc:      "Most bytes one record may have once decompressed (Kafka checks it in produce validation, compaction and timestamp lookups, answering INVALID_RECORD). sluice bounds instead what a whole compressed batch may expand to, max(64 MiB, 32 × max.message.bytes), and takes no other value yet.",
		synonyms: syn("max.decompressed.message.bytes")},
	{Name: "max.message.bytes", Type: TypeInt, Default: str("1048588"), Validate: atLeast(0),
		Doc:      "Largest record batch (after compression) the topic accepts; larger produce requests fail with MESSAGE_TOO_LARGE.",
		synonyms: syn("message.max.bytes")},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: str("3600000"), Validate: atLeast(0),
		Doc:      "With CreateTime, how far in the future a record's timestamp may be relative to the broker clock.",
		synonyms: syn("log.message.timestamp.after.max.ms")},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: str("9223372036854775807"), Validate: atLeast(0),
		Doc:      "With CreateTime, how far in the past a record's timestamp may be relative to the broker clock.",
		synonyms: syn("log.message.timestamp.before.max.ms")},
	{Name: "message.timestamp.type", Type: TypeString, Default: str("CreateTime"), Validate: oneOf("CreateTime", "LogAppendTime"),
		Doc:      "CreateTime keeps the producer's timestamps; LogAppendTime replaces them with the broker's time of append.",
		synonyms: syn("log.message.timestamp.type")},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: str("0.5"), Validate: doubleBetween(0, 1),
		Doc:      "Compaction starts when the uncompacted share of the log exceeds this ratio.",
		synonyms: syn("log.cleaner.min.cleanable.ratio")},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Default: str("0"), Validate: atLeast(0),
		Doc:      "Shortest time a record stays uncompacted on a compacted topic.",
		synonyms: syn("log.cleaner.min.compaction.lag.ms")},
	{Name: "min.insync.replicas", Type: TypeInt, Default: str("1"), Validate: atLeast(1),
		Doc:      "With acks=all, fewest in-sync replicas that must hold a write; fewer fails the produce with NOT_ENOUGH_REPLICAS.",
		synonyms: syn("min.insync.replicas")},
	{Name: "preallocate", Type: TypeBoolean, Default: str("false"),
		Doc:      "Allocate a new segment's file at full size when it is created.",
		synonyms: syn("log.preallocate")},
	{Name: "remote.copy.lag.bytes", Type: TypeLong, Default: str("-1"), Validate: atLeast(-1),
		Doc:      "Tiered storage: bytes a segment must be behind the log end before it is copied to remote storage. sluice has no tiered storage.",
		synonyms: syn("log.remote.copy.lag.bytes")},
	{Name: "remote.copy.lag.ms", Type: TypeLong, Default: str("0"), Validate: atLeast(-1),
		Doc:      "Tiered storage: time a segment must be closed before it is copied to remote storage. sluice has no tiered storage.",
		synonyms: syn("log.remote.copy.lag.ms")},
	{Name: "remote.log.copy.disable", Type: TypeBoolean, Default: str("false"),
		Doc: "Tiered storage: stop copying segments to remote storage. sluice has no tiered storage."},
	{Name: "remote.log.delete.on.disable", Type: TypeBoolean, Default: str("false"),
		Doc: "Tiered storage: delete remote data when tiering is turned off. sluice has no tiered storage."},
	{Name: "remote.storage.enable", Type: TypeBoolean, Default: str("false"), Validate: remoteStorageOff,
		Doc: "Tiered storage for this topic. sluice has no tiered storage, so only false is accepted (as Kafka does when the broker has tiered storage disabled)."},
	{Name: "retention.bytes", Type: TypeLong, Default: str("-1"),
		Doc:      "Per partition, the log size beyond which the oldest segments are deleted (cleanup.policy=delete); -1 means no size limit.",
		synonyms: syn("log.retention.bytes")},
	{Name: "retention.consumed.groups", Type: TypeList, Default: str(""), Validate: groupNames,
		Doc: "sluice's own (no Kafka broker has it): consumer groups that must all have committed an offset past a segment's end before the segment is deleted, on top of time and size retention, which still delete data unconsumed at their limits (cleanup.policy must contain delete). Empty: off. The bytes each group holds back are the leader's sluice_retention_consumed_held_bytes{group,topic,partition} metric (DescribeLogDirs counts them in the partition's size)."},
	{Name: "retention.consumed.require.commit", Type: TypeBoolean, Default: str("true"),
		Doc: "sluice's own: with retention.consumed.groups, whether a named group that has no committed offset for a partition holds its data (true) or is left out of the decision (false; when no named group has committed, every segment below the high watermark may go)."},
	{Name: "retention.ms", Type: TypeLong, Default: str("604800000"), Validate: atLeast(-1),
		Doc:      "Age after which whole segments are deleted (cleanup.policy=delete); -1 keeps data forever.",
		synonyms: []synonymDef{{"log.retention.ms", 1}, {"log.retention.minutes", 60_000}, {"log.retention.hours", 3_600_000}}},
	{Name: "segment.bytes", Type: TypeInt, Default: str("1073741824"), Validate: atLeast(1048576),
		Doc:      "Size at which the active segment is closed and a new one started. Kafka's minimum, 1 MiB, applies; tests wanting smaller segments use internal.segment.bytes.",
		synonyms: syn("log.segment.bytes")},
	{Name: "segment.index.bytes", Type: TypeInt, Default: str("10485760"), Validate: atLeast(4),
		Doc:      "Maximum size of a segment's offset and time indexes; a full index rolls the segment.",
		synonyms: syn("log.index.size.max.bytes")},
	{Name: "segment.jitter.ms", Type: TypeLong, Default: str("0"), Validate: atLeast(0),
		Doc:      "Random amount subtracted from segment.ms per segment so many partitions do not roll at once.",
		synonyms: []synonymDef{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", 3_600_000}}},
	{Name: "segment.ms", Type: TypeLong, Default: str("604800000"), Validate: atLeast(1),
		Doc:      "Age at which the active segment is rolled even if not full, so retention and compaction can act on it.",
		synonyms: []synonymDef{{"log.roll.ms", 1}, {"log.roll.hours", 3_600_000}}},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: str("false"),
		Doc:      "Allow a replica outside the ISR to become leader when no ISR member is available, accepting data loss.",
		synonyms: syn("unclean.leader.election.enable")},
	{Name: "internal.segment.bytes", Type: TypeInt, Default: nil, Internal: true,
		Doc: "Testing only: when set, replaces segment.bytes without its 1 MiB minimum (as Kafka 4.1's internal key of the same name)."},
}

// ownTopicKeys are sluice's own topic keys, which no Kafka broker has (README, "Retention").
var ownTopicKeys = map[string]bool{"retention.consumed.groups": true, "retention.consumed.require.commit": true}

func syn(names ...string) []synonymDef {
	out := make([]synonymDef, len(names))
	for i, n := range names {
		out[i] = synonymDef{name: n, factor: 1}
	}
	return out
}

// groupNames refuses an empty group name in retention.consumed.groups ("g1,,g2").
func groupNames(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for _, g := range ParseList(v) {
		if g == "" {
			return badValue{shown: v, err: errors.New("Group names must be non-empty")}
		}
	}
	return nil
}

func remoteStorageOff(v string) error {
	if b, err := ParseBool(v); err == nil && b {
		return errTieredStorage
	}
	return nil
}

var errTieredStorage = tieredStorageError{}

type tieredStorageError struct{}

// As Kafka says when remote.log.storage.system.enable is false on the broker.
func (tieredStorageError) Error() string {
	return "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
}

var (
	topicByName  = map[string]*Def{}
	topicSorted  []*Def
	brokerByName = map[string]*Def{}
	brokerSorted []*Def
)

func init() {
	for _, d := range topicTable {
		if len(d.synonyms) > 0 {
			d.BrokerKey = d.synonyms[0].name
		}
		topicByName[d.Name] = d
	}
	topicSorted = append([]*Def(nil), topicTable...)
	sortDefs(topicSorted)
}

// TopicDefs returns every topic key, sorted by name, including Internal ones. Callers must not
// modify the Defs.
func TopicDefs() []*Def { return append([]*Def(nil), topicSorted...) }

// TopicDef looks up a topic key.
func TopicDef(name string) (*Def, bool) {
	d, ok := topicByName[name]
	return d, ok
}

// ValidateTopic checks one topic key and value as CreateTopics and AlterConfigs require. The
// error is an *Error: Unknown for a key sluice does not know, otherwise naming the problem.
// A value asking for a feature sluice lacks (cleanup.policy=compact) is refused too.
func ValidateTopic(key, value string) error {
	if err := ValidateTopicValue(key, value); err != nil {
		return err
	}
	return topicByName[key].CheckSupported(value)
}

// ValidateTopicValue is ValidateTopic without the refusal of unimplemented features, for the
// internal topics sluice creates itself (__consumer_offsets is compacted in Kafka; sluice keeps
// its cleanup.policy=compact, and only retains it whole until compaction lands).
func ValidateTopicValue(key, value string) error {
	d, ok := topicByName[key]
	if !ok {
		return &Error{Key: key, Value: value, Unknown: true, Topic: true}
	}
	if err := d.Check(value); err != nil {
		err.(*Error).Topic = true
		return err
	}
	return nil
}

// ValidateTopicConfigs checks a topic's whole set of overrides, as CreateTopics and
// AlterConfigs must (Kafka's LogConfig.validate): each key and value, in sorted key order so
// the first problem reported is deterministic, then the checks that involve several keys.
func ValidateTopicConfigs(configs map[string]string) error {
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := ValidateTopic(k, configs[k]); err != nil {
			return err
		}
	}
	value := func(key string) int64 {
		v, ok := configs[key]
		if !ok {
			v = *topicByName[key].Default
		}
		n, _ := ParseInt64(v)
		return n
	}
	if minLag, maxLag := value("min.compaction.lag.ms"), value("max.compaction.lag.ms"); minLag > maxLag {
		return &Error{Key: "min.compaction.lag.ms", Value: configs["min.compaction.lag.ms"], Topic: true,
			Message: fmt.Sprintf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)}
	}
	return nil
}
