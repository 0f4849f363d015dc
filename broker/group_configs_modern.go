package broker

// The consumer.*, streams.* and integer share.* group configs (KIP-848 consumer groups, KIP-1071
// streams groups, KIP-932 share groups) sluice honours: a group's session timeout, heartbeat
// interval, for streams groups its standby replicas and initial rebalance delay, for share
// groups its delivery count limit and record lock limit per share partition. They are checked as Kafka 4.4's
// GroupConfig.validate checks them (each within the broker's group.consumer.* /
// group.streams.* bounds; the session timeout greater than the heartbeat interval, with the
// broker's value for the one not set), stored with the other group configs, and read by the
// group coordinator at each heartbeat, assignment and session timer (coordinator.GroupOverrides),
// clamped to the broker's bounds as Kafka's GroupConfig.evaluate clamps them.
//
// Not taken (still refused naming them): consumer.assignment.interval.ms and
// streams.assignment.interval.ms (sluice computes a target assignment at the heartbeat that
// needs it, with no batching interval), the *.assignor.offload.enable keys,
// streams.rack.aware.assignment.tags, streams.task.offset.interval.ms,
// streams.num.warmup.replicas, streams.acceptable.recovery.lag, streams.assignor.name (sluice's
// streams assignor has no warm-up tasks, lag or rack awareness), and the errors.deadletterqueue.*
// keys.

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/controller"
	"sluice/coordinator"
	"sluice/internal/config"
)

// modernGroupKey is one honoured consumer.* or streams.* group key.
type modernGroupKey struct {
	name string
	// brokerKey holds the default; minKey and maxKey the broker's bounds ("" for none).
	brokerKey, minKey, maxKey string
	// atLeast is the key's own lower bound (its ConfigDef validator in Kafka).
	atLeast int64
	doc     string
}

var modernGroupKeys = []modernGroupKey{
	{"consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", 1,
		"The timeout to detect client failures when using the consumer group protocol."},
	{"consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", 1,
		"The heartbeat interval given to the members of a consumer group."},
	{"streams.session.timeout.ms", "group.streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms", 1,
		"The timeout to detect client failures when using the streams group protocol."},
	{"streams.heartbeat.interval.ms", "group.streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", 1,
		"The heartbeat interval given to the members."},
	{"streams.num.standby.replicas", "group.streams.num.standby.replicas", "", "group.streams.max.standby.replicas", 0,
		"The number of standby replicas for each task."},
	{"streams.initial.rebalance.delay.ms", "group.streams.initial.rebalance.delay.ms", "", "", 0,
		"The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance."},
	// KIP-932 share groups: applied by broker/share_groups.go (shareGroupOverrides).
	{"share.session.timeout.ms", "group.share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms", 1,
		"The timeout to detect client failures when using the share group protocol."},
	{"share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", 1,
		"The heartbeat interval given to the members of a share group."},
	{"share.delivery.count.limit", "group.share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit", 2,
		"The maximum number of delivery attempts for a record delivered to a share group."},
	{"share.partition.max.record.locks", "group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks", 100,
		"Share-group record lock limit per share-partition."},
}

// sessionHeartbeatPairs are the keys whose session timeout must exceed the heartbeat interval.
var sessionHeartbeatPairs = [][2]string{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
}

func init() {
	for _, k := range modernGroupKeys {
		groupConfigDefs = append(groupConfigDefs, groupConfigDef{name: k.name, typ: config.TypeInt, brokerKey: k.brokerKey, doc: k.doc})
	}
}

func modernGroupKeyFor(name string) *modernGroupKey {
	for i := range modernGroupKeys {
		if modernGroupKeys[i].name == name {
			return &modernGroupKeys[i]
		}
	}
	return nil
}

// modernGroupConfigProblem checks one consumer.* or streams.* value (ok false: not such a key).
func (b *Broker) modernGroupConfigProblem(key, v string) (code int16, msg string, ok bool) {
	k := modernGroupKeyFor(key)
	if k == nil {
		return 0, "", false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration " + key + ": Not a number of type INT", true
	}
	if n < k.atLeast {
		return kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration " + key + ": Value must be at least " + strconv.FormatInt(k.atLeast, 10), true
	}
	s := b.cfg.Static
	switch {
	case k.minKey != "" && (int32(n) < s.Int32(k.minKey) || int32(n) > s.Int32(k.maxKey)):
		// As Kafka 4.4's GroupConfig.validateIntRange words it.
		return kerr.InvalidConfig.Code, key + " must be in the range " + b.groupDefault(k.minKey) + " to " + b.groupDefault(k.maxKey) + " inclusive.", true
	case k.minKey == "" && k.maxKey != "" && int32(n) > s.Int32(k.maxKey):
		return kerr.InvalidConfig.Code, key + " must be less than or equal to " + b.groupDefault(k.maxKey), true
	}
	return 0, "", true
}

// groupSessionHeartbeatProblem checks, on the group's configs after ops, that each session
// timeout exceeds its heartbeat interval (the broker's value for one not set), when either
// is set, as Kafka's GroupConfig.validateSessionExceedsHeartbeat does.
func (b *Broker) groupSessionHeartbeatProblem(current map[string]string, ops []controller.ConfigOp) (int16, string) {
	merged := make(map[string]string, len(current)+len(ops))
	for k, v := range current {
		merged[k] = v
	}
	for _, op := range ops {
		if op.Value == nil {
			delete(merged, op.Key)
		} else {
			merged[op.Key] = *op.Value
		}
	}
	value := func(key string) (int64, bool) {
		v, set := merged[key]
		if !set {
			return int64(b.cfg.Static.Int32(modernGroupKeyFor(key).brokerKey)), false
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		return n, true
	}
	for _, p := range sessionHeartbeatPairs {
		session, sessionSet := value(p[0])
		heartbeat, heartbeatSet := value(p[1])
		if (sessionSet || heartbeatSet) && session <= heartbeat {
			return kerr.InvalidConfig.Code, p[0] + " must be greater than " + p[1]
		}
	}
	return 0, ""
}

// clampedGroupInt reads a group's honoured integer key from its configs m, clamped to the
// broker's bounds as Kafka's GroupConfig.evaluate clamps it; false when it is not set.
func (b *Broker) clampedGroupInt(m map[string]string, key string) (int64, bool) {
	v, ok := m[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, false
	}
	s := b.cfg.Static
	k := modernGroupKeyFor(key)
	if k.minKey != "" {
		n = max(n, int64(s.Int32(k.minKey)))
	}
	if k.maxKey != "" {
		n = min(n, int64(s.Int32(k.maxKey)))
	}
	return n, true
}

// groupOverrides reads a group's honoured consumer.* and streams.* configs from the newest
// image for the coordinator, clamped to the broker's bounds.
func (b *Broker) groupOverrides(group string) coordinator.GroupOverrides {
	var o coordinator.GroupOverrides
	m := b.ctrl.Image().GroupConfigs[group]
	if len(m) == 0 {
		return o
	}
	get := func(key string) (int64, bool) { return b.clampedGroupInt(m, key) }
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	if n, ok := get("consumer.session.timeout.ms"); ok {
		o.ConsumerSessionTimeout = ms(n)
	}
	if n, ok := get("consumer.heartbeat.interval.ms"); ok {
		o.ConsumerHeartbeatInterval = ms(n)
	}
	if n, ok := get("streams.session.timeout.ms"); ok {
		o.StreamsSessionTimeout = ms(n)
	}
	if n, ok := get("streams.heartbeat.interval.ms"); ok {
		o.StreamsHeartbeatInterval = ms(n)
	}
	if n, ok := get("streams.num.standby.replicas"); ok {
		standbys := int(n)
		o.StreamsNumStandbyReplicas = &standbys
	}
	if n, ok := get("streams.initial.rebalance.delay.ms"); ok {
		d := ms(n)
		o.StreamsInitialRebalanceDelay = &d
	}
	return o
}
