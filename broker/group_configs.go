package broker

// Group configs (the GROUP config resource, type 32, KIP-848/KIP-932): per-group overrides set
// with IncrementalAlterConfigs or AlterConfigs, stored in the metadata log as ConfigRecords of
// controller.ResourceGroup (so every node agrees) and described by DescribeConfigs.
//
// sluice takes only the group keys it honours: share.auto.offset.reset (earliest or latest),
// share.record.lock.duration.ms and share.isolation.level (read_uncommitted or
// read_committed, share_isolation.go), read by the share coordinator (share_groups.go) for
// the group's share partitions; the integer keys of group_configs_modern.go (consumer.*,
// streams.*, and share.session.timeout.ms, share.heartbeat.interval.ms,
// share.delivery.count.limit, share.partition.max.record.locks). Every other key Kafka 4.4's GroupConfig defines is refused
// INVALID_CONFIG naming it (sluice would store it without honouring it); a key GroupConfig
// does not define is INVALID_CONFIG "Unknown group config name: <key>", as Kafka words it.
// Values are checked as Kafka's GroupConfig.validate checks them, against this broker's
// group.share.* bounds.

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/controller"
	"sluice/internal/config"
)

const resourceGroup = controller.ResourceGroup

// Group config keys sluice honours.
const (
	groupShareAutoOffsetReset    = "share.auto.offset.reset"
	groupShareRecordLockDuration = "share.record.lock.duration.ms"
)

// kafkaGroupConfigKeys are the keys Kafka 4.4's GroupConfig defines.
var kafkaGroupConfigKeys = map[string]bool{
	"consumer.session.timeout.ms": true, "consumer.heartbeat.interval.ms": true,
	"consumer.assignment.interval.ms": true, "consumer.assignor.offload.enable": true,
	"share.session.timeout.ms": true, "share.heartbeat.interval.ms": true,
	groupShareRecordLockDuration: true, "share.delivery.count.limit": true,
	"share.partition.max.record.locks": true, groupShareAutoOffsetReset: true,
	"share.isolation.level": true, "share.renew.acknowledge.enable": true,
	"share.assignment.interval.ms": true, "share.assignor.offload.enable": true,
	"streams.session.timeout.ms": true, "streams.heartbeat.interval.ms": true,
	"streams.num.standby.replicas": true, "streams.initial.rebalance.delay.ms": true,
	"streams.assignment.interval.ms": true, "streams.rack.aware.assignment.tags": true,
	"streams.assignor.offload.enable": true, "streams.task.offset.interval.ms": true,
	"streams.num.warmup.replicas": true, "streams.acceptable.recovery.lag": true,
	"streams.assignor.name": true, "errors.deadletterqueue.topic.name": true,
	"errors.deadletterqueue.copy.record.enable": true,
}

// groupConfigDef describes one honoured group key for DescribeConfigs.
type groupConfigDef struct {
	name string
	typ  config.Type
	// brokerKey is the broker config whose value is the default, "" for a fixed default.
	brokerKey, fixedDefault string
	doc                     string
}

// groupConfigDefs are the honoured keys, in the order DescribeConfigs lists them.
var groupConfigDefs = []groupConfigDef{
	{name: groupShareAutoOffsetReset, typ: config.TypeString, fixedDefault: "latest",
		doc: "Where a share partition of this group starts when it has no state: earliest or latest."},
	{name: groupShareRecordLockDuration, typ: config.TypeInt, brokerKey: "group.share.record.lock.duration.ms",
		doc: "The record acquisition lock duration in milliseconds for share groups."},
	{name: groupShareIsolationLevel, typ: config.TypeString, fixedDefault: "read_uncommitted",
		doc: "Which records a share group may acquire: read_committed stops at the last stable offset and never hands out records of aborted transactions; read_uncommitted reads up to the high watermark."},
}

// groupConfigProblem checks one group resource's operations before the controller; a
// non-zero code refuses the whole resource.
func (b *Broker) groupConfigProblem(ops []controller.ConfigOp) (int16, string) {
	s := b.cfg.Static
	for _, op := range ops {
		if !kafkaGroupConfigKeys[op.Key] {
			return kerr.InvalidConfig.Code, "Unknown group config name: " + op.Key
		}
		if op.Value == nil {
			continue // reverting to the default is always allowed
		}
		v := *op.Value
		switch op.Key {
		case groupShareAutoOffsetReset:
			switch {
			case v == "earliest" || v == "latest":
			case strings.HasPrefix(strings.ToLower(v), "by_duration:"):
				return kerr.InvalidConfig.Code, "sluice does not implement share.auto.offset.reset=" + v + " (by_duration) yet; use earliest or latest"
			default:
				return kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration share.auto.offset.reset: Invalid share.auto.offset.reset strategy: " + v + ". Valid values are earliest, latest or by_duration:<PnDTnHnMn.nS>"
			}
		case groupShareRecordLockDuration:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration " + op.Key + ": Not a number of type INT"
			}
			switch {
			case n < 1000:
				return kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration " + op.Key + ": Value must be at least 1000"
			case int32(n) < s.Int32("group.share.min.record.lock.duration.ms"):
				return kerr.InvalidConfig.Code, op.Key + " must be greater than or equal to group.share.min.record.lock.duration.ms"
			case int32(n) > s.Int32("group.share.max.record.lock.duration.ms"):
				return kerr.InvalidConfig.Code, op.Key + " must be less than or equal to group.share.max.record.lock.duration.ms"
			}
		case groupShareIsolationLevel:
			// As Kafka's GroupConfig: a ValidString, case-sensitive.
			if v != "read_committed" && v != "read_uncommitted" {
				return kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration " + op.Key + ": String must be one of: read_committed, read_uncommitted"
			}
		default:
			if code, msg, ok := b.modernGroupConfigProblem(op.Key, v); ok { // group_configs_modern.go
				if code != 0 {
					return code, msg
				}
				continue
			}
			return kerr.InvalidConfig.Code, "sluice does not honour the group config " + op.Key + " yet, so it refuses to store it"
		}
	}
	return 0, ""
}

// groupConfigEntries lists a group's honoured keys: its override (GROUP_CONFIG), else the
// default (DEFAULT_CONFIG), as Kafka's ConfigHelper lists a group.
func (b *Broker) groupConfigEntries(dynamic map[string]string, names []string) []configEntry {
	var out []configEntry
	for _, d := range groupConfigDefs {
		if !wanted(names, d.name) {
			continue
		}
		e := configEntry{name: d.name, typ: d.typ, doc: d.doc, source: config.SourceDefaultConfig}
		def := d.fixedDefault
		if d.brokerKey != "" {
			def = b.groupDefault(d.brokerKey)
		}
		if v, ok := dynamic[d.name]; ok {
			e.source = config.SourceGroupConfig
			e.value = strPtr(v)
			e.synonyms = append(e.synonyms, config.Synonym{Name: d.name, Value: strPtr(v), Source: config.SourceGroupConfig})
		} else {
			e.value = strPtr(def)
		}
		e.synonyms = append(e.synonyms, config.Synonym{Name: d.name, Value: strPtr(def), Source: config.SourceDefaultConfig})
		out = append(out, e)
	}
	return out
}

// groupDefault is the broker's value of a static group.* key, in decimal.
func (b *Broker) groupDefault(key string) string {
	return strconv.Itoa(int(b.cfg.Static.Int32(key)))
}

// shareOverrides are a share group's honoured overrides; zero values mean the broker's.
type shareOverrides struct {
	earliest        bool  // share.auto.offset.reset=earliest: start at the log start
	lockMs          int32 // share.record.lock.duration.ms
	deliveryLimit   int   // share.delivery.count.limit
	maxRecordLocks  int   // share.partition.max.record.locks
	sessionTimeout  time.Duration
	heartbeatPeriod time.Duration // share.heartbeat.interval.ms
}

// shareGroupOverrides reads a share group's honoured overrides from the image, the integer
// ones clamped to the broker's group.share.min/max.* bounds as Kafka's GroupConfig.evaluate
// clamps them.
func (b *Broker) shareGroupOverrides(group string) shareOverrides {
	var o shareOverrides
	m := b.ctrl.Image().GroupConfigs[group]
	if m == nil {
		return o
	}
	o.earliest = m[groupShareAutoOffsetReset] == "earliest"
	if v, ok := m[groupShareRecordLockDuration]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n > 0 {
			o.lockMs = int32(n)
		}
	}
	if n, ok := b.clampedGroupInt(m, "share.delivery.count.limit"); ok {
		o.deliveryLimit = int(n)
	}
	if n, ok := b.clampedGroupInt(m, "share.partition.max.record.locks"); ok {
		o.maxRecordLocks = int(n)
	}
	if n, ok := b.clampedGroupInt(m, "share.session.timeout.ms"); ok {
		o.sessionTimeout = time.Duration(n) * time.Millisecond
	}
	if n, ok := b.clampedGroupInt(m, "share.heartbeat.interval.ms"); ok {
		o.heartbeatPeriod = time.Duration(n) * time.Millisecond
	}
	return o
}
