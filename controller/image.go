package controller

import "sluice/authz"

// The metadata image: an immutable snapshot of cluster metadata, published by the controller
// after every applied batch of committed records. Readers never lock: they load the current
// *Image and use it; nothing in an Image is ever modified after publication.

// TopicID is Kafka's 16-byte topic UUID.
type TopicID [16]byte

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener         string // e.g. "PLAINTEXT"
	Host             string
	Port             int32
	SecurityProtocol int16 // 0 = PLAINTEXT
}

// BrokerInfo is a registered broker.
type BrokerInfo struct {
	ID        int32
	Epoch     int64
	Endpoints []Endpoint
	Rack      *string
	// Fenced brokers lead nothing, are in no new ISR and get no new replicas.
	Fenced bool
	// IncarnationID is the UUID of the broker process that registered (zero: Start's own
	// registration).
	IncarnationID [16]byte
	// InControlledShutdown: the broker asked to shut down; leadership is being moved off it
	// and it gets no new replicas.
	InControlledShutdown bool
	// RegisteredOffset is the raft index of the entry that registered this epoch: a fenced
	// broker is unfenced once its heartbeat reports a metadata offset at least this.
	RegisteredOffset int64
	// LogDirOffline: the broker's heartbeats report its log directory offline (a storage
	// error, BrokerHeartbeat's OfflineLogDirs; membership.go). It leads nothing and is in no
	// ISR until they report it online again.
	LogDirOffline bool `json:",omitempty"`
	// LogDirs are the IDs of the broker's log directories, as it registered them.
	LogDirs [][16]byte `json:",omitempty"`
	// OfflineLogDirs are those of LogDirs its heartbeats report offline while others work
	// (log_dirs.go): its replicas in them lead nothing and are in no ISR.
	OfflineLogDirs [][16]byte `json:",omitempty"`
}

// active reports whether the broker may lead, join an ISR by election and get new replicas:
// registered, unfenced, not shutting down (Kafka's "active" broker) and with its log
// directory online (Kafka's LeaderAcceptor and ISR checks refuse a replica in an offline
// directory).
func (b *BrokerInfo) active() bool {
	return b != nil && !b.Fenced && !b.InControlledShutdown && !b.LogDirOffline
}

// PartitionInfo is one partition's replica assignment and leadership.
type PartitionInfo struct {
	Partition      int32
	Replicas       []int32
	ISR            []int32
	Leader         int32 // -1 when none
	LeaderEpoch    int32
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas are an ongoing reassignment (reassign.go): while
	// either is non-empty Replicas is the target followed by the replicas being removed.
	// Invariant: both are subsets of Replicas and disjoint.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
	// ELR are the eligible leader replicas (KIP-966, elections.go): replicas that left the
	// ISR while it was below min.insync.replicas and so hold every committed record; with the
	// ISR empty one of them may be elected cleanly. LastKnownELR is the last leader known
	// when the ISR became empty (as Kafka 4.x keeps it). Invariant: ELR ⊆ Replicas and
	// disjoint from ISR; both are empty while len(ISR) >= min.insync.replicas.
	ELR          []int32 `json:",omitempty"`
	LastKnownELR []int32 `json:",omitempty"`
	// LeaderRecovering is Kafka's LeaderRecoveryState RECOVERING: the leader was elected
	// uncleanly (outside the ISR and ELR) and has not yet told the controller it recovered
	// (AlterPartition with RECOVERED); meanwhile its ISR stays the leader alone.
	LeaderRecovering bool `json:",omitempty"`
	// Directories maps a replica to the ID of its broker's log directory holding it
	// (AssignReplicasToDirs, log_dirs.go); a replica without an entry is not known yet.
	// Read-only: a change replaces the map.
	Directories map[int32][16]byte `json:",omitempty"`
}

// Reassigning reports whether a reassignment of the partition is in progress.
func (p *PartitionInfo) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TopicInfo is a topic with its partitions (indexed by partition number) and its config
// overrides (only keys set explicitly on the topic).
type TopicInfo struct {
	Name       string
	ID         TopicID
	Internal   bool
	Partitions []PartitionInfo
	Configs    map[string]string
}

// Image is the immutable metadata image.
type Image struct {
	// Offset is the raft index of the last record applied; it only grows.
	Offset       int64
	ClusterID    string
	ControllerID int32
	Brokers      map[int32]*BrokerInfo
	Topics       map[string]*TopicInfo
	TopicsByID   map[TopicID]*TopicInfo
	// BrokerConfigs holds dynamic broker configs: key "" is the cluster-wide default
	// resource, "1" the broker with node.id 1.
	BrokerConfigs map[string]map[string]string
	// GroupConfigs holds dynamic group configs by group ID (ConfigRecords of ResourceGroup).
	// May be nil; its maps are never written after the image is published (the builder clones
	// the outer and the changed inner map on every change).
	GroupConfigs map[string]map[string]string
	// ClientMetrics holds the client metrics subscriptions (CLIENT_METRICS config resources,
	// KIP-714) by name: metrics, interval.ms, match. Copied on write like GroupConfigs.
	ClientMetrics map[string]map[string]string
	// NextProducerID is the first producer ID not yet handed out.
	NextProducerID int64
	// VoterEndpoints are the controller endpoints of voters (and demoted voters) recorded by
	// voter changes and by `sluice format` (voters.go), by node ID; voters of
	// controller.quorum.voters have none. Nil when there are none.
	VoterEndpoints map[int32]VoterEndpoint
	// Scram holds SCRAM credentials (scram.go): user -> mechanism -> credential. May be nil.
	Scram map[string]map[int8]ScramInfo
	// Quotas holds client quotas (quotas.go): entity -> key -> value. May be nil.
	Quotas map[QuotaEntity]map[string]float64
	// ACLs are the access control entries (acls.go); nil is none. Never modified once
	// published (authz.Set's invariant).
	ACLs *authz.Set
	// FeatureLevels are the levels FeatureLevelRecords finalized (features.go): feature name
	// -> level, 0 for a feature removed from the finalized set. A feature without an entry
	// is at its default (Image.FinalizedLevel). May be nil.
	FeatureLevels map[string]int16

	// defaults are the active controller's static election configs (Config), carried from
	// image to image by the builder; they are not part of the replicated state (records
	// carry every outcome in full), so images compare equal without them.
	defaults *electionDefaults

	// changed is closed when a newer image replaces this one.
	changed chan struct{}
}

// Changed returns a channel closed when a newer image has been published.
func (im *Image) Changed() <-chan struct{} { return im.changed }
