package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Broker is a node's parsed static configuration: server.properties plus command-line
// overrides. Fields hold effective values (the explicit value, else the default); keys
// without a field are read with the typed getters (Int32, Int64, Bool, String, List).
//
// Invariant: every key in Raw is known (BrokerDef) and its value passed validation, so the
// typed getters cannot fail on a key from the tables.
type Broker struct {
	// Raw holds every key set explicitly (file + overrides), as written.
	Raw map[string]string
	// Warnings lists explicitly set keys that sluice accepts but does not act on, one
	// human-readable line each, for cmd/sluice to log at startup.
	Warnings []string

	NodeID       int32    // node.id (broker.id is accepted as its legacy name); sluice default 1
	ProcessRoles []string // process.roles; sluice default broker,controller
	// Listeners (listeners) with SecurityProtocol filled in; sluice default
	// PLAINTEXT://127.0.0.1:9092.
	Listeners []Listener
	// AdvertisedListeners (advertised.listeners); by default the listeners other than the
	// controller listeners. A Host of "" means "this machine's host name".
	AdvertisedListeners []Listener
	// ListenerSecurityProtocolMap maps upper-case listener names to security protocols. As in
	// Kafka 4, when the map is not set explicitly, controller listeners whose names are not
	// security protocols map to PLAINTEXT.
	ListenerSecurityProtocolMap      map[string]string
	InterBrokerListenerName          string // inter.broker.listener.name, or derived from security.inter.broker.protocol
	ControllerQuorumVoters           string // controller.quorum.voters as written
	QuorumVoters                     []QuorumVoter
	ControllerQuorumBootstrapServers []string
	ControllerListenerNames          string   // controller.listener.names as written
	ControllerListeners              []string // controller.listener.names, split and upper-cased

	// LogDirs from log.dirs, else log.dir. sluice's log.dir default is ./data, not Kafka's
	// /tmp/kafka-logs, because `sluice` with no arguments keeps its data in ./data.
	LogDirs        []string
	MetadataLogDir string // metadata.log.dir, default LogDirs[0]
	BrokerRack     string // broker.rack; "" when unset

	NumPartitions               int32
	DefaultReplicationFactor    int16
	MinInsyncReplicas           int32
	AutoCreateTopicsEnable      bool
	DeleteTopicEnable           bool
	UncleanLeaderElectionEnable bool
	AutoLeaderRebalanceEnable   bool
	LogCleanerEnable            bool
	CompressionType             string

	MessageMaxBytes                      int32 // message.max.bytes, 1048588
	SocketRequestMaxBytes                int32 // socket.request.max.bytes, 104857600
	SocketSendBufferBytes                int32
	SocketReceiveBufferBytes             int32
	ConnectionsMaxIdleMs                 int64 // connections.max.idle.ms, 600000
	QueuedMaxRequests                    int32
	MaxConnections                       int32
	MaxConnectionsPerIP                  int32
	FetchMaxBytes                        int32
	MaxIncrementalFetchSessionCacheSlots int32

	LogRetentionCheckIntervalMs int64

	OffsetsTopicNumPartitions int32 // 50
	// OffsetsTopicReplicationFactor is Kafka's 3; Kafka refuses to create __consumer_offsets
	// with fewer live brokers, sluice's coordinator caps it at the number of brokers.
	OffsetsTopicReplicationFactor   int16
	OffsetsTopicSegmentBytes        int32
	OffsetsRetentionMinutes         int32
	OffsetsRetentionCheckIntervalMs int64
	OffsetsCommitTimeoutMs          int32
	OffsetMetadataMaxBytes          int32

	TransactionStateLogNumPartitions     int32
	TransactionStateLogReplicationFactor int16
	TransactionStateLogMinISR            int32
	TransactionStateLogSegmentBytes      int32
	TransactionMaxTimeoutMs              int32
	TransactionalIDExpirationMs          int32
	ProducerIDExpirationMs               int32

	GroupInitialRebalanceDelayMs        int32
	GroupMinSessionTimeoutMs            int32
	GroupMaxSessionTimeoutMs            int32
	GroupMaxSize                        int32
	GroupConsumerSessionTimeoutMs       int32
	GroupConsumerMinSessionTimeoutMs    int32
	GroupConsumerMaxSessionTimeoutMs    int32
	GroupConsumerHeartbeatIntervalMs    int32
	GroupConsumerMinHeartbeatIntervalMs int32
	GroupConsumerMaxHeartbeatIntervalMs int32
	GroupConsumerMaxSize                int32
	GroupConsumerAssignors              []string
	GroupCoordinatorRebalanceProtocols  []string

	ReplicaLagTimeMaxMs          int64
	ReplicaFetchMaxBytes         int32
	ReplicaFetchMinBytes         int32
	ReplicaFetchWaitMaxMs        int32
	ReplicaFetchResponseMaxBytes int32
	ReplicaFetchBackoffMs        int32
	NumReplicaFetchers           int32

	BrokerHeartbeatIntervalMs int32
	BrokerSessionTimeoutMs    int32

	SaslEnabledMechanisms []string
	AuthorizerClassName   string
}

// Value returns the effective value of a broker key: the explicit one, else the default
// (nil for a null default or an unknown key).
func (b *Broker) Value(key string) *string {
	if v, ok := b.Raw[key]; ok {
		return &v
	}
	if d, ok := BrokerDef(key); ok {
		return d.Default
	}
	return nil
}

// IsSet reports whether key was set explicitly.
func (b *Broker) IsSet(key string) bool {
	_, ok := b.Raw[key]
	return ok
}

// String returns the effective value of key, "" when null.
func (b *Broker) String(key string) string {
	if v := b.Value(key); v != nil {
		return strings.TrimSpace(*v)
	}
	return ""
}

// Int32 returns the effective value of an INT key; 0 when null.
// REQUIRES: key is an INT (or SHORT) key from the tables.
func (b *Broker) Int32(key string) int32 {
	n, _ := ParseInt32(b.nonNull(key, "0"))
	return n
}

// Int16 returns the effective value of a SHORT key; 0 when null.
func (b *Broker) Int16(key string) int16 {
	n, _ := ParseInt16(b.nonNull(key, "0"))
	return n
}

// Int64 returns the effective value of a LONG (or INT) key; 0 when null.
func (b *Broker) Int64(key string) int64 {
	n, _ := ParseInt64(b.nonNull(key, "0"))
	return n
}

// Float64 returns the effective value of a DOUBLE key; 0 when null.
func (b *Broker) Float64(key string) float64 {
	f, _ := ParseDouble(b.nonNull(key, "0"))
	return f
}

// Bool returns the effective value of a BOOLEAN key; false when null.
func (b *Broker) Bool(key string) bool {
	v, _ := ParseBool(b.nonNull(key, "false"))
	return v
}

// List returns the effective value of a LIST key; empty when null.
func (b *Broker) List(key string) []string {
	return ParseList(b.nonNull(key, ""))
}

func (b *Broker) nonNull(key, null string) string {
	if v := b.Value(key); v != nil {
		return *v
	}
	return null
}

// DefaultBroker returns the configuration of `sluice` with no arguments.
func DefaultBroker() *Broker {
	b, err := ParseBroker(nil)
	if err != nil {
		panic("config: defaults do not parse: " + err.Error())
	}
	return b
}

// ParseBroker checks and types a broker configuration: every key must be known and valid,
// and related keys must agree (listeners, controller listeners, roles, session timeouts), as
// Kafka's KafkaConfig checks them. Each error is an *Error naming the offending key.
// Then it refuses what sluice does not implement yet (checkSupported), so a file that Kafka
// itself would refuse gets Kafka's message first. props is not retained; Raw is a copy.
func ParseBroker(props map[string]string) (*Broker, error) {
	b, err := parseBroker(props)
	if err != nil {
		return nil, err
	}
	if err := b.checkSupported(); err != nil {
		return nil, err
	}
	return b, nil
}

// parseBroker is ParseBroker without the refusal of unimplemented features, so the parsing of
// configurations sluice will serve later (clusters, TLS) stays tested.
func parseBroker(props map[string]string) (*Broker, error) {
	b := &Broker{Raw: make(map[string]string, len(props))}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad key deterministically
	for _, k := range keys {
		v := props[k]
		if err := ValidateBroker(k, v); err != nil {
			return nil, err
		}
		d, _ := BrokerDef(k)
		b.Raw[k] = v
		if d.Support == NoEffect {
			b.Warnings = append(b.Warnings, fmt.Sprintf("%s is accepted for compatibility with Kafka but has no effect in sluice: %s", k, d.supportWhy))
		}
	}

	// node.id, with broker.id as its legacy synonym (Kafka copies one to the other).
	b.NodeID = b.Int32("node.id")
	if b.IsSet("broker.id") {
		brokerID := b.Int32("broker.id")
		switch {
		case !b.IsSet("node.id") && brokerID >= 0:
			b.NodeID = brokerID
		case b.IsSet("node.id") && brokerID != b.NodeID:
			return nil, b.errorf("broker.id", "must equal node.id (%d) when both are set", b.NodeID)
		}
	}

	b.ProcessRoles = dedupe(b.List("process.roles"))
	if len(b.ProcessRoles) == 0 {
		return nil, b.errorf("process.roles", "must name broker, controller or both")
	}
	isBroker, isController := b.HasRole("broker"), b.HasRole("controller")

	if err := b.parseListeners(isBroker, isController); err != nil {
		return nil, err
	}

	if b.IsSet("log.dirs") {
		b.LogDirs = b.List("log.dirs")
		if len(b.LogDirs) == 0 || slices.Contains(b.LogDirs, "") {
			return nil, b.errorf("log.dirs", "must list one or more directories without empty entries")
		}
		// Each directory once (Kafka's LogManager refuses duplicates too): two entries for
		// one directory would place partitions in it twice over.
		seen := map[string]bool{}
		for _, d := range b.LogDirs {
			c := filepath.Clean(d)
			if abs, err := filepath.Abs(c); err == nil {
				c = abs
			}
			if seen[c] {
				return nil, b.errorf("log.dirs", "lists %s twice", d)
			}
			seen[c] = true
		}
	} else {
		dir := b.String("log.dir")
		if dir == "" {
			return nil, b.errorf("log.dir", "must not be empty")
		}
		b.LogDirs = []string{dir}
	}
	b.MetadataLogDir = b.String("metadata.log.dir")
	if b.MetadataLogDir == "" {
		b.MetadataLogDir = b.LogDirs[0]
	}
	b.BrokerRack = b.String("broker.rack")

	b.NumPartitions = b.Int32("num.partitions")
	b.DefaultReplicationFactor = b.Int16("default.replication.factor")
	b.MinInsyncReplicas = b.Int32("min.insync.replicas")
	b.AutoCreateTopicsEnable = b.Bool("auto.create.topics.enable")
	b.DeleteTopicEnable = b.Bool("delete.topic.enable")
	b.UncleanLeaderElectionEnable = b.Bool("unclean.leader.election.enable")
	b.AutoLeaderRebalanceEnable = b.Bool("auto.leader.rebalance.enable")
	b.LogCleanerEnable = b.Bool("log.cleaner.enable")
	b.CompressionType = b.String("compression.type")

	b.MessageMaxBytes = b.Int32("message.max.bytes")
	b.SocketRequestMaxBytes = b.Int32("socket.request.max.bytes")
	b.SocketSendBufferBytes = b.Int32("socket.send.buffer.bytes")
	b.SocketReceiveBufferBytes = b.Int32("socket.receive.buffer.bytes")
	b.ConnectionsMaxIdleMs = b.Int64("connections.max.idle.ms")
	b.QueuedMaxRequests = b.Int32("queued.max.requests")
	b.MaxConnections = b.Int32("max.connections")
	b.MaxConnectionsPerIP = b.Int32("max.connections.per.ip")
	b.FetchMaxBytes = b.Int32("fetch.max.bytes")
	b.MaxIncrementalFetchSessionCacheSlots = b.Int32("max.incremental.fetch.session.cache.slots")
	b.LogRetentionCheckIntervalMs = b.Int64("log.retention.check.interval.ms")

	b.OffsetsTopicNumPartitions = b.Int32("offsets.topic.num.partitions")
	b.OffsetsTopicReplicationFactor = b.Int16("offsets.topic.replication.factor")
	b.OffsetsTopicSegmentBytes = b.Int32("offsets.topic.segment.bytes")
	b.OffsetsRetentionMinutes = b.Int32("offsets.retention.minutes")
	b.OffsetsRetentionCheckIntervalMs = b.Int64("offsets.retention.check.interval.ms")
	b.OffsetsCommitTimeoutMs = b.Int32("offsets.commit.timeout.ms")
	b.OffsetMetadataMaxBytes = b.Int32("offset.metadata.max.bytes")

	b.TransactionStateLogNumPartitions = b.Int32("transaction.state.log.num.partitions")
	b.TransactionStateLogReplicationFactor = b.Int16("transaction.state.log.replication.factor")
	b.TransactionStateLogMinISR = b.Int32("transaction.state.log.min.isr")
	b.TransactionStateLogSegmentBytes = b.Int32("transaction.state.log.segment.bytes")
	b.TransactionMaxTimeoutMs = b.Int32("transaction.max.timeout.ms")
	b.TransactionalIDExpirationMs = b.Int32("transactional.id.expiration.ms")
	b.ProducerIDExpirationMs = b.Int32("producer.id.expiration.ms")

	b.GroupInitialRebalanceDelayMs = b.Int32("group.initial.rebalance.delay.ms")
	b.GroupMinSessionTimeoutMs = b.Int32("group.min.session.timeout.ms")
	b.GroupMaxSessionTimeoutMs = b.Int32("group.max.session.timeout.ms")
	b.GroupMaxSize = b.Int32("group.max.size")
	b.GroupConsumerSessionTimeoutMs = b.Int32("group.consumer.session.timeout.ms")
	b.GroupConsumerMinSessionTimeoutMs = b.Int32("group.consumer.min.session.timeout.ms")
	b.GroupConsumerMaxSessionTimeoutMs = b.Int32("group.consumer.max.session.timeout.ms")
	b.GroupConsumerHeartbeatIntervalMs = b.Int32("group.consumer.heartbeat.interval.ms")
	b.GroupConsumerMinHeartbeatIntervalMs = b.Int32("group.consumer.min.heartbeat.interval.ms")
	b.GroupConsumerMaxHeartbeatIntervalMs = b.Int32("group.consumer.max.heartbeat.interval.ms")
	b.GroupConsumerMaxSize = b.Int32("group.consumer.max.size")
	b.GroupConsumerAssignors = b.List("group.consumer.assignors")
	b.GroupCoordinatorRebalanceProtocols = b.List("group.coordinator.rebalance.protocols")

	b.ReplicaLagTimeMaxMs = b.Int64("replica.lag.time.max.ms")
	b.ReplicaFetchMaxBytes = b.Int32("replica.fetch.max.bytes")
	b.ReplicaFetchMinBytes = b.Int32("replica.fetch.min.bytes")
	b.ReplicaFetchWaitMaxMs = b.Int32("replica.fetch.wait.max.ms")
	b.ReplicaFetchResponseMaxBytes = b.Int32("replica.fetch.response.max.bytes")
	b.ReplicaFetchBackoffMs = b.Int32("replica.fetch.backoff.ms")
	b.NumReplicaFetchers = b.Int32("num.replica.fetchers")

	b.BrokerHeartbeatIntervalMs = b.Int32("broker.heartbeat.interval.ms")
	b.BrokerSessionTimeoutMs = b.Int32("broker.session.timeout.ms")

	b.SaslEnabledMechanisms = b.List("sasl.enabled.mechanisms")
	b.AuthorizerClassName = b.String("authorizer.class.name")

	if err := b.checkRelations(); err != nil {
		return nil, err
	}
	return b, nil
}

// checkSupported refuses combinations of keys that ask for features sluice does not implement
// yet (single keys are refused by Def.CheckSupported): listeners whose security protocol is
// not PLAINTEXT, and a controller whose dynamic quorum names other nodes (a broker-only node
// may name the controllers to learn the voters from).
func (b *Broker) checkSupported() error {
	keys := make([]string, 0, len(b.Raw))
	for k := range b.Raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d, _ := BrokerDef(k)
		if err := d.CheckSupported(b.Raw[k]); err != nil {
			return err
		}
	}
	if err := b.checkSecuritySupported(); err != nil {
		return err
	}
	// controller.quorum.bootstrap.servers is served in full (KIP-853, cmd/sluice): a node
	// asks those servers for the voters, and a controller not yet in the quorum joins it as an
	// observer until AddRaftVoter promotes it.
	return nil
}

// checkSecuritySupported refuses the security set-ups sluice does not serve yet: a
// broker-wide sasl.jaas.config (Kafka's brokers ignore it with a warning; sluice refuses
// rather than ignore), and listener.name.NAME. keys naming no listener. The inter-broker
// client's own settings (mechanism, credentials) are checked where it is built (cmd/sluice).
func (b *Broker) checkSecuritySupported() error {
	if b.IsSet("sasl.jaas.config") {
		return notSupported("sasl.jaas.config", "[hidden]",
			"a broker reads its SASL users per listener and mechanism: set listener.name.NAME.MECHANISM.sasl.jaas.config (for example listener.name.sasl_ssl.plain.sasl.jaas.config)", false)
	}
	for k := range b.Raw {
		rest, ok := strings.CutPrefix(k, "listener.name.")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		found := false
		for _, l := range b.Listeners {
			found = found || strings.ToLower(l.Name) == name
		}
		for _, l := range b.ControllerListeners { // a broker-only node's client side of them
			found = found || strings.ToLower(l) == name
		}
		if !found {
			return notSupported(k, "[not shown]", fmt.Sprintf(
				"%q names no listener in listeners (listener prefixes use the lower-case listener name, as in Kafka)", name), false)
		}
	}
	return nil
}

// IsOwnControllerAddress reports whether host:port names one of this node's controller
// listeners; see isOwnControllerAddress.
func (b *Broker) IsOwnControllerAddress(server string) bool { return b.isOwnControllerAddress(server) }

// isOwnControllerAddress reports whether host:port names one of this node's controller
// listeners (by port, on a loopback name, an unspecified address or the listener's own host).
func (b *Broker) isOwnControllerAddress(server string) bool {
	host, port, err := splitHostPort(server)
	if err != nil {
		return false
	}
	for _, l := range b.Listeners {
		if !slices.Contains(b.ControllerListeners, l.Name) || l.Port != port {
			continue
		}
		switch host {
		case l.Host, "localhost", "127.0.0.1", "::1", "0.0.0.0", "::":
			return true
		}
	}
	return false
}

// HasRole reports whether process.roles includes role ("broker" or "controller").
func (b *Broker) HasRole(role string) bool { return slices.Contains(b.ProcessRoles, role) }

func (b *Broker) errorf(key, format string, args ...any) error {
	return &Error{Key: key, Value: b.String(key), Reason: fmt.Sprintf(format, args...)}
}

func (b *Broker) parseListeners(isBroker, isController bool) error {
	var err error
	if b.Listeners, err = ParseListeners(b.String("listeners")); err != nil {
		return b.errorf("listeners", "%v", err)
	}
	if len(b.Listeners) == 0 {
		return b.errorf("listeners", "must name at least one listener")
	}
	for _, name := range ParseList(b.String("controller.listener.names")) {
		b.ControllerListeners = append(b.ControllerListeners, strings.ToUpper(name))
	}
	b.ControllerListenerNames = b.String("controller.listener.names")
	isControllerListener := func(name string) bool { return slices.Contains(b.ControllerListeners, name) }

	if b.ListenerSecurityProtocolMap, err = ParseProtocolMap(b.String("listener.security.protocol.map")); err != nil {
		return b.errorf("listener.security.protocol.map", "%v", err)
	}
	if !b.IsSet("listener.security.protocol.map") {
		// Kafka 4: controller listeners missing from a default map use PLAINTEXT.
		for _, name := range b.ControllerListeners {
			if _, ok := b.ListenerSecurityProtocolMap[name]; !ok {
				b.ListenerSecurityProtocolMap[name] = "PLAINTEXT"
			}
		}
	}
	fill := func(key string, ls []Listener) error {
		for i := range ls {
			proto, ok := b.ListenerSecurityProtocolMap[ls[i].Name]
			if !ok {
				return b.errorf(key, "listener %s is not in listener.security.protocol.map", ls[i].Name)
			}
			ls[i].SecurityProtocol = proto
		}
		return nil
	}
	if err := fill("listeners", b.Listeners); err != nil {
		return err
	}
	// Two listeners may share a port only on different hosts.
	for i, l := range b.Listeners {
		for _, m := range b.Listeners[:i] {
			if l.Port != 0 && l.Port == m.Port && (l.Host == m.Host || l.Host == "" || m.Host == "") {
				return b.errorf("listeners", "listeners %s and %s use the same port %d", m.Name, l.Name, l.Port)
			}
		}
	}

	if b.IsSet("advertised.listeners") {
		if b.AdvertisedListeners, err = ParseListeners(b.String("advertised.listeners")); err != nil {
			return b.errorf("advertised.listeners", "%v", err)
		}
		if err := fill("advertised.listeners", b.AdvertisedListeners); err != nil {
			return err
		}
	} else {
		for _, l := range b.Listeners {
			if !isControllerListener(l.Name) {
				b.AdvertisedListeners = append(b.AdvertisedListeners, l)
			}
		}
	}
	for _, l := range b.AdvertisedListeners {
		if !slices.ContainsFunc(b.Listeners, func(m Listener) bool { return m.Name == l.Name }) {
			// As Kafka: advertised names must be a subset of the listeners' names.
			return b.errorf("advertised.listeners", "listener %s is not in listeners", l.Name)
		}
		if l.Host == "0.0.0.0" || l.Host == "::" {
			// As Kafka: clients cannot connect to the unspecified address.
			return b.errorf("advertised.listeners", "cannot use the nonroutable meta-address %s; use a routable address", l.Host)
		}
	}

	b.ControllerQuorumVoters = b.String("controller.quorum.voters")
	b.QuorumVoters, _ = ParseQuorumVoters(b.ControllerQuorumVoters) // validated already
	b.ControllerQuorumBootstrapServers = b.List("controller.quorum.bootstrap.servers")
	multiNodeQuorum := len(b.QuorumVoters) > 0 || len(b.ControllerQuorumBootstrapServers) > 0
	if len(b.QuorumVoters) > 0 && len(b.ControllerQuorumBootstrapServers) > 0 {
		return b.errorf("controller.quorum.bootstrap.servers", "cannot be set together with controller.quorum.voters")
	}

	// As Kafka: a controller must be one of the static voters, a broker-only node must not.
	if len(b.QuorumVoters) > 0 {
		isVoter := slices.ContainsFunc(b.QuorumVoters, func(v QuorumVoter) bool { return v.ID == b.NodeID })
		if isController && !isVoter {
			return b.errorf("controller.quorum.voters", "must include this node (node.id %d) when process.roles contains controller", b.NodeID)
		}
		if !isController && isVoter {
			return b.errorf("controller.quorum.voters", "must not include this node (node.id %d) when process.roles is broker only", b.NodeID)
		}
	}

	listenerNames := map[string]bool{}
	for _, l := range b.Listeners {
		listenerNames[l.Name] = true
	}
	switch {
	case isController && multiNodeQuorum && len(b.ControllerListeners) == 0:
		return b.errorf("controller.listener.names", "must be set on a controller of a multi-node quorum")
	case isController && len(b.ControllerListeners) > 0 && !listenerNames[b.ControllerListeners[0]]:
		return b.errorf("controller.listener.names", "its first listener %s must appear in listeners when process.roles includes controller", b.ControllerListeners[0])
	case !isController:
		if !multiNodeQuorum {
			return b.errorf("controller.quorum.voters", "a node without the controller role needs controller.quorum.voters or controller.quorum.bootstrap.servers")
		}
		if len(b.ControllerListeners) == 0 {
			return b.errorf("controller.listener.names", "must be set so a broker knows how to reach the controllers")
		}
		for _, name := range b.ControllerListeners {
			if listenerNames[name] {
				return b.errorf("controller.listener.names", "must not name a listener in listeners (%s) when process.roles is broker only", name)
			}
		}
	}
	if isController && !isBroker {
		for _, l := range b.Listeners {
			if !isControllerListener(l.Name) {
				return b.errorf("listeners", "must only contain controller listeners from controller.listener.names when process.roles=controller, found %s", l.Name)
			}
		}
	}
	for _, l := range b.AdvertisedListeners {
		if isBroker && isControllerListener(l.Name) && !isController {
			return b.errorf("advertised.listeners", "must not contain controller listener %s", l.Name)
		}
	}

	// Inter-broker listener: explicit, or the first listener with the inter-broker protocol.
	if b.IsSet("inter.broker.listener.name") && b.IsSet("security.inter.broker.protocol") {
		return b.errorf("inter.broker.listener.name", "only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
	}
	if isBroker {
		name := strings.ToUpper(b.String("inter.broker.listener.name"))
		if name == "" {
			proto := b.String("security.inter.broker.protocol")
			for _, l := range b.AdvertisedListeners {
				if l.SecurityProtocol == proto && !isControllerListener(l.Name) {
					name = l.Name
					break
				}
			}
			if name == "" {
				return b.errorf("security.inter.broker.protocol", "no advertised listener uses protocol %s; set inter.broker.listener.name", proto)
			}
		}
		found := false
		for _, l := range b.AdvertisedListeners {
			found = found || l.Name == name
		}
		if !found {
			return b.errorf("inter.broker.listener.name", "must be a listener name in advertised.listeners, %s is not", name)
		}
		b.InterBrokerListenerName = name
	}
	return nil
}

// checkRelations checks keys against each other as Kafka's KafkaConfig and
// GroupCoordinatorConfig do.
func (b *Broker) checkRelations() error {
	type pair struct{ lowKey, highKey string }
	// Only the pairs Kafka itself checks, so every file Kafka accepts is accepted here.
	for _, p := range []pair{
		{"group.consumer.min.session.timeout.ms", "group.consumer.session.timeout.ms"},
		{"group.consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
		{"group.consumer.min.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms"},
		{"group.consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
		{"group.consumer.heartbeat.interval.ms", "group.consumer.session.timeout.ms"},
		{"replica.fetch.wait.max.ms", "replica.socket.timeout.ms"},
		{"replica.fetch.wait.max.ms", "replica.lag.time.max.ms"},
	} {
		if b.Int64(p.lowKey) > b.Int64(p.highKey) {
			key := p.lowKey
			if b.IsSet(p.highKey) && !b.IsSet(p.lowKey) {
				key = p.highKey
			}
			return b.errorf(key, "%s (%d) must not be greater than %s (%d)", p.lowKey, b.Int64(p.lowKey), p.highKey, b.Int64(p.highKey))
		}
	}
	for _, a := range b.GroupConsumerAssignors {
		if a != "uniform" && a != "range" {
			return b.errorf("group.consumer.assignors", "sluice provides the uniform and range assignors, not %q", a)
		}
	}
	if !slices.Contains(b.GroupCoordinatorRebalanceProtocols, "classic") {
		return b.errorf("group.coordinator.rebalance.protocols", "must include classic")
	}
	return nil
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
