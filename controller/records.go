package controller

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// RecordType identifies a metadata record. The numeric values are part of the on-disk format
// and must never change; new record kinds get new numbers.
type RecordType uint8

const (
	RecordClusterID       RecordType = 1
	RecordRegisterBroker  RecordType = 2
	RecordTopic           RecordType = 3
	RecordPartition       RecordType = 4
	RecordConfig          RecordType = 5
	RecordRemoveTopic     RecordType = 6
	RecordProducerIDs     RecordType = 7
	RecordBrokerChange    RecordType = 8
	RecordPartitionChange RecordType = 9
	// RecordUnregisterBroker is UnregisterBrokerRecord (unregister.go).
	RecordUnregisterBroker RecordType = 10
	// RecordUserScramCredential and RecordRemoveUserScramCredential are Kafka's
	// UserScramCredentialRecord and RemoveUserScramCredentialRecord (scram.go).
	RecordUserScramCredential       RecordType = 12
	RecordRemoveUserScramCredential RecordType = 13
	// RecordClientQuota is Kafka's ClientQuotaRecord (quotas.go).
	RecordClientQuota RecordType = 16
	// RecordAccessControlEntry and RecordRemoveAccessControlEntry are the ACL records
	// (acls.go).
	RecordAccessControlEntry       RecordType = 14
	RecordRemoveAccessControlEntry RecordType = 15
	// RecordFeatureLevel is Kafka's FeatureLevelRecord (features.go).
	RecordFeatureLevel RecordType = 17
	// RecordReplicaDirs is ReplicaDirsRecord (log_dirs.go).
	RecordReplicaDirs RecordType = 18
)

// recordVersion is the version of every record's JSON payload. Decoders accept versions up to
// this one; a newer version is ErrCorruptRecord (a node must not apply records it does not
// understand).
const recordVersion = 1

// entryFormatVersion is the first byte of every raft entry that carries metadata records.
const entryFormatVersion = 1

// maxRecordsPerEntry bounds how many records one raft entry may declare, so a corrupt count
// cannot make the decoder allocate without limit.
const maxRecordsPerEntry = 1 << 20

// ErrCorruptRecord is returned when an entry or record cannot be decoded.
var ErrCorruptRecord = errors.New("controller: corrupt metadata record")

// Record is one metadata record. The state machine is a pure function of the sequence of
// records (see apply.go).
type Record interface {
	Type() RecordType
}

// ClusterIDRecord bootstraps the cluster: it is the first record of a new metadata log.
type ClusterIDRecord struct {
	ClusterID string `json:"cluster_id"`
}

// RegisterBrokerRecord registers (or re-registers, with a higher epoch) a broker. The
// registration remembers the raft index of the entry that carried it (BrokerInfo.
// RegisteredOffset): a fenced broker is unfenced once it has caught up to there.
type RegisterBrokerRecord struct {
	BrokerID    int32      `json:"broker_id"`
	BrokerEpoch int64      `json:"broker_epoch"`
	Endpoints   []Endpoint `json:"endpoints"`
	Rack        *string    `json:"rack,omitempty"`
	Fenced      bool       `json:"fenced,omitempty"`
	// IncarnationID is the UUID the broker process made at its start; zero for the
	// registrations Start makes for its own node.
	IncarnationID [16]byte `json:"incarnation_id,omitempty"`
	// LogDirs are the IDs of the broker's log directories (BrokerRegistration v2+).
	LogDirs [][16]byte `json:"log_dirs,omitempty"`
}

// BrokerChangeRecord changes the state of the registration BrokerID/BrokerEpoch (as Kafka's
// BrokerRegistrationChangeRecord): fenced or unfenced, entering controlled shutdown. A nil
// field is unchanged. A record for another epoch than the registered one is skipped.
type BrokerChangeRecord struct {
	BrokerID             int32 `json:"broker_id"`
	BrokerEpoch          int64 `json:"broker_epoch"`
	Fenced               *bool `json:"fenced,omitempty"`
	InControlledShutdown *bool `json:"in_controlled_shutdown,omitempty"`
	// LogDirOffline, when set, is whether the broker's log directory is offline
	// (BrokerInfo.LogDirOffline).
	LogDirOffline *bool `json:"log_dir_offline,omitempty"`
	// OfflineLogDirs, when set, are the broker's log directories reported offline while
	// others work (BrokerInfo.OfflineLogDirs, log_dirs.go).
	OfflineLogDirs *[][16]byte `json:"offline_log_dirs,omitempty"`
}

// PartitionChangeRecord changes the leadership of an existing partition (as Kafka's
// PartitionChangeRecord, with the new values in full): leader (-1 = none), ISR and both
// epochs. PartitionEpoch must be above the partition's current one, else it is skipped.
// Replicas, when set, changes the assignment (a reassignment starting, completing or being
// cancelled, reassign.go) and then AddingReplicas and RemovingReplicas are the new values in
// full too (absent = none); without Replicas all three stay as they are.
type PartitionChangeRecord struct {
	TopicID          TopicID `json:"topic_id"`
	Partition        int32   `json:"partition"`
	Leader           int32   `json:"leader"`
	ISR              []int32 `json:"isr"`
	LeaderEpoch      int32   `json:"leader_epoch"`
	PartitionEpoch   int32   `json:"partition_epoch"`
	Replicas         []int32 `json:"replicas,omitempty"`
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// ELR and LastKnownELR are the new eligible leader replicas and last known ELR (KIP-966)
	// in full; LeaderRecovering the new leader recovery state (RECOVERING when true). Absent
	// = empty / RECOVERED: unlike Kafka's record, which leaves absent fields unchanged, every
	// change here carries the whole partition state.
	ELR              []int32 `json:"elr,omitempty"`
	LastKnownELR     []int32 `json:"last_known_elr,omitempty"`
	LeaderRecovering bool    `json:"leader_recovering,omitempty"`
}

// TopicRecord creates a topic. Its partitions follow as PartitionRecords.
type TopicRecord struct {
	Name     string  `json:"name"`
	TopicID  TopicID `json:"topic_id"`
	Internal bool    `json:"internal,omitempty"`
}

// PartitionRecord creates or replaces one partition of an existing topic. Partitions of a
// topic are dense: partition p may only be recorded once partitions 0..p-1 exist.
type PartitionRecord struct {
	TopicID        TopicID `json:"topic_id"`
	Partition      int32   `json:"partition"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas: an ongoing reassignment (as Kafka's
	// PartitionRecord carries it), normally empty.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// ELR, LastKnownELR and LeaderRecovering as in PartitionChangeRecord (snapshots of older
	// logs and new partitions have none).
	ELR              []int32 `json:"elr,omitempty"`
	LastKnownELR     []int32 `json:"last_known_elr,omitempty"`
	LeaderRecovering bool    `json:"leader_recovering,omitempty"`
}

// Config resource types, as Kafka's ConfigResource.Type.
const (
	ResourceTopic  int8 = 2
	ResourceBroker int8 = 4
	// ResourceGroup is a consumer, share or streams group (KIP-848/KIP-932), by group ID.
	ResourceGroup int8 = 32
	// ResourceClientMetrics is a client metrics subscription (KIP-714), by name.
	ResourceClientMetrics int8 = 16
)

// ConfigRecord sets (Value non-nil) or deletes (Value nil) one dynamic config key. For
// ResourceTopic the name is the topic name; for ResourceBroker it is "" (cluster default) or
// a node ID in decimal.
type ConfigRecord struct {
	ResourceType int8    `json:"resource_type"`
	ResourceName string  `json:"resource_name"`
	Key          string  `json:"key"`
	Value        *string `json:"value,omitempty"`
}

// RemoveTopicRecord deletes a topic, its partitions and its configs.
type RemoveTopicRecord struct {
	TopicID TopicID `json:"topic_id"`
}

// ProducerIDsRecord hands the block [previous NextProducerID, NextProducerID) to a broker.
type ProducerIDsRecord struct {
	BrokerID       int32 `json:"broker_id"`
	BrokerEpoch    int64 `json:"broker_epoch"`
	NextProducerID int64 `json:"next_producer_id"`
}

func (*ClusterIDRecord) Type() RecordType       { return RecordClusterID }
func (*RegisterBrokerRecord) Type() RecordType  { return RecordRegisterBroker }
func (*TopicRecord) Type() RecordType           { return RecordTopic }
func (*PartitionRecord) Type() RecordType       { return RecordPartition }
func (*ConfigRecord) Type() RecordType          { return RecordConfig }
func (*RemoveTopicRecord) Type() RecordType     { return RecordRemoveTopic }
func (*ProducerIDsRecord) Type() RecordType     { return RecordProducerIDs }
func (*BrokerChangeRecord) Type() RecordType    { return RecordBrokerChange }
func (*PartitionChangeRecord) Type() RecordType { return RecordPartitionChange }

func newRecord(t RecordType) Record {
	switch t {
	case RecordClusterID:
		return new(ClusterIDRecord)
	case RecordRegisterBroker:
		return new(RegisterBrokerRecord)
	case RecordTopic:
		return new(TopicRecord)
	case RecordPartition:
		return new(PartitionRecord)
	case RecordConfig:
		return new(ConfigRecord)
	case RecordRemoveTopic:
		return new(RemoveTopicRecord)
	case RecordProducerIDs:
		return new(ProducerIDsRecord)
	case RecordBrokerChange:
		return new(BrokerChangeRecord)
	case RecordPartitionChange:
		return new(PartitionChangeRecord)
	case RecordUnregisterBroker:
		return new(UnregisterBrokerRecord)
	case RecordUserScramCredential:
		return new(UserScramCredentialRecord)
	case RecordRemoveUserScramCredential:
		return new(RemoveUserScramCredentialRecord)
	case RecordClientQuota:
		return new(ClientQuotaRecord)
	case RecordAccessControlEntry:
		return new(AccessControlEntryRecord)
	case RecordRemoveAccessControlEntry:
		return new(RemoveAccessControlEntryRecord)
	case RecordFeatureLevel:
		return new(FeatureLevelRecord)
	case RecordReplicaDirs:
		return new(ReplicaDirsRecord)
	}
	return nil
}

// EncodeRecord encodes one record: type byte, version byte, JSON payload.
func EncodeRecord(r Record) []byte {
	payload, err := json.Marshal(r)
	if err != nil {
		// Records are plain structs of strings, ints and slices: Marshal cannot fail.
		panic(fmt.Sprintf("controller: encoding %T: %v", r, err))
	}
	out := make([]byte, 0, 2+len(payload))
	out = append(out, byte(r.Type()), recordVersion)
	return append(out, payload...)
}

// DecodeRecord decodes one record produced by EncodeRecord.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: record of %d bytes", ErrCorruptRecord, len(b))
	}
	r := newRecord(RecordType(b[0]))
	if r == nil {
		return nil, fmt.Errorf("%w: unknown record type %d", ErrCorruptRecord, b[0])
	}
	if b[1] == 0 || b[1] > recordVersion {
		return nil, fmt.Errorf("%w: record type %d has unsupported version %d", ErrCorruptRecord, b[0], b[1])
	}
	if err := json.Unmarshal(b[2:], r); err != nil {
		return nil, fmt.Errorf("%w: record type %d: %v", ErrCorruptRecord, b[0], err)
	}
	return r, nil
}

// encodeEntry builds the data of a raft entry carrying records:
//
//	version   uint8  = entryFormatVersion
//	proposal  uint64 big endian; identifies the proposal to the proposing node (0 = none)
//	count     uvarint
//	count × { length uvarint; record [length]byte (EncodeRecord) }
func encodeEntry(proposal uint64, recs []Record) []byte {
	out := make([]byte, 9, 64)
	out[0] = entryFormatVersion
	binary.BigEndian.PutUint64(out[1:9], proposal)
	out = binary.AppendUvarint(out, uint64(len(recs)))
	for _, r := range recs {
		enc := EncodeRecord(r)
		out = binary.AppendUvarint(out, uint64(len(enc)))
		out = append(out, enc...)
	}
	return out
}

// entryOverhead bounds encodeEntry's bytes besides the records' own: format version,
// proposal ID, and the record count and per-record lengths (uvarints of at most 10 bytes).
const entryOverhead = 1 + 8 + binary.MaxVarintLen64

// encodedEntrySize is len(encodeEntry(_, recs)) without building it.
func encodedEntrySize(recs []Record) int {
	n := 9 + uvarintLen(uint64(len(recs)))
	for _, r := range recs {
		l := len(EncodeRecord(r))
		n += uvarintLen(uint64(l)) + l
	}
	return n
}

// splitEntries cuts recs, in order, into runs whose entries each take at most maxBytes. A
// single record larger than that gets a run of its own, which the caller refuses.
func splitEntries(recs []Record, maxBytes int) [][]Record {
	var out [][]Record
	start, size := 0, entryOverhead
	for i, r := range recs {
		l := len(EncodeRecord(r))
		l += uvarintLen(uint64(l))
		if i > start && size+l > maxBytes {
			out = append(out, recs[start:i])
			start, size = i, entryOverhead
		}
		size += l
	}
	return append(out, recs[start:])
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}

// decodeEntry is the inverse of encodeEntry. Every length is checked before use.
func decodeEntry(b []byte) (proposal uint64, recs []Record, err error) {
	if len(b) < 9 {
		return 0, nil, fmt.Errorf("%w: entry of %d bytes", ErrCorruptRecord, len(b))
	}
	if b[0] != entryFormatVersion {
		return 0, nil, fmt.Errorf("%w: entry format version %d", ErrCorruptRecord, b[0])
	}
	proposal = binary.BigEndian.Uint64(b[1:9])
	b = b[9:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > maxRecordsPerEntry || count > uint64(len(b)) {
		return 0, nil, fmt.Errorf("%w: bad record count", ErrCorruptRecord)
	}
	b = b[n:]
	recs = make([]Record, 0, count)
	for i := uint64(0); i < count; i++ {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return 0, nil, fmt.Errorf("%w: bad length of record %d", ErrCorruptRecord, i)
		}
		r, err := DecodeRecord(b[n : n+int(l)])
		if err != nil {
			return 0, nil, err
		}
		recs = append(recs, r)
		b = b[n+int(l):]
	}
	if len(b) != 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes after records", ErrCorruptRecord, len(b))
	}
	return proposal, recs, nil
}
