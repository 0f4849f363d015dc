package config

import (
	"math"
	"strconv"
)

// Broker keys Kafka defines only as dynamic broker configs, not in KafkaConfig: the replication
// quotas of QuotaConfig (DynamicConfig.Broker). They are set per broker id or as the
// cluster-wide default with AlterConfigs / IncrementalAlterConfigs (kafka-configs
// --entity-type brokers, kafka-reassign-partitions --throttle), never in server.properties
// (Kafka ignores them there; sluice refuses them as unknown keys). They are not in BrokerDefs,
// which lists Kafka's static ConfigDef; DynamicBrokerDef finds them.
var dynamicOnlyBrokerDefs = map[string]*Def{
	"leader.replication.throttled.rate": {Name: "leader.replication.throttled.rate", Type: TypeLong,
		Default: str(maxLongText), Validate: atLeast(0), Support: Honoured,
		Doc: "Bytes per second a leader sends to out-of-sync followers of the partitions its topics list in leader.replication.throttled.replicas."},
	"follower.replication.throttled.rate": {Name: "follower.replication.throttled.rate", Type: TypeLong,
		Default: str(maxLongText), Validate: atLeast(0), Support: Honoured,
		Doc: "Bytes per second a follower fetches for the out-of-sync replicas its topics list in follower.replication.throttled.replicas."},
	"replica.alter.log.dirs.io.max.bytes.per.second": {Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: TypeLong,
		Default: str(maxLongText), Validate: atLeast(0), Support: Honoured,
		Doc: "Bytes per second each replica move between log directories copies (AlterReplicaLogDirs), read when the move starts."},
}

var maxLongText = strconv.FormatInt(math.MaxInt64, 10)

// DynamicBrokerDef is BrokerDef for dynamic broker configs: it also finds the keys Kafka
// defines only dynamically (the replication throttle rates).
func DynamicBrokerDef(name string) (*Def, bool) {
	if d, ok := BrokerDef(name); ok {
		return d, true
	}
	d, ok := dynamicOnlyBrokerDefs[name]
	return d, ok
}
