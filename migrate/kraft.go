package migrate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCorruptMetadata is returned (wrapped) when Kafka's metadata log or a snapshot cannot be
// decoded: a batch, a record frame or a record body that breaks its schema.
var ErrCorruptMetadata = errors.New("migrate: corrupt Kafka metadata record")

// Kafka's metadata record API keys (metadata/src/main/resources/common/metadata/*.json). Only
// the records that carry state a sluice cluster keeps are decoded; the others are named so a
// report can say what was skipped.
const (
	keyRegisterBroker                   = 0
	keyUnregisterBroker                 = 1
	keyTopic                            = 2
	keyPartition                        = 3
	keyConfig                           = 4
	keyPartitionChange                  = 5
	keyAccessControl                    = 6 // never written by a released Kafka
	keyFenceBroker                      = 7
	keyUnfenceBroker                    = 8
	keyRemoveTopic                      = 9
	keyDelegationToken                  = 10
	keyUserScramCredential              = 11
	keyFeatureLevel                     = 12
	keyClientQuota                      = 14
	keyProducerIDs                      = 15
	keyBrokerRegistrationChange         = 17
	keyAccessControlEntry               = 18
	keyRemoveAccessControlEntry         = 19
	keyNoOp                             = 20
	keyZkMigrationState                 = 21
	keyRemoveUserScramCredential        = 22
	keyBeginTransaction                 = 23
	keyEndTransaction                   = 24
	keyAbortTransaction                 = 25
	keyRegisterController               = 27
	keyRemoveDelegationToken            = 26
	keyClearElr                         = 28 // Kafka 4.1+: clears the ELR of one topic ("" = all)
	keyUnregisterController             = 29
	maxMetadataArrayLen                 = 1 << 20
	metadataFrameVersion         uint64 = 1
)

// kafkaUUID is Kafka's Uuid: 16 bytes, most significant first.
type kafkaUUID [16]byte

// kTopic is TopicRecord.
type kTopic struct {
	Name string
	ID   kafkaUUID
}

// kPartition is PartitionRecord, and the state PartitionChangeRecords leave.
type kPartition struct {
	TopicID          kafkaUUID
	Partition        int32
	Replicas, ISR    []int32
	Removing, Adding []int32
	Leader           int32
	LeaderEpoch      int32
	PartitionEpoch   int32
	// ELR is KIP-966's eligible leader replicas (tagged field 1 from version 2): replicas out
	// of the ISR that still hold every record below the high watermark.
	ELR []int32
}

// kPartitionChange is PartitionChangeRecord: nil / -2 fields did not change.
type kPartitionChange struct {
	TopicID   kafkaUUID
	Partition int32
	ISR       []int32
	Leader    int32 // -2: unchanged
	Replicas  []int32
	Removing  []int32
	Adding    []int32
	ELR       []int32
	// set* say whether the nullable arrays were present (a change to them).
	setISR, setReplicas, setRemoving, setAdding, setELR bool
}

// kConfig is ConfigRecord (Value nil: the key is deleted).
type kConfig struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string
}

// kQuota is ClientQuotaRecord.
type kQuota struct {
	Entity []kQuotaEntity
	Key    string
	Value  float64
	Remove bool
}

type kQuotaEntity struct {
	Type string
	Name *string
}

// kScram is UserScramCredentialRecord (or, with Remove, RemoveUserScramCredentialRecord).
type kScram struct {
	Name                       string
	Mechanism                  int8
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
	Remove                     bool
}

// kACL is AccessControlEntryRecord.
type kACL struct {
	ID                        kafkaUUID
	ResourceType              int8
	ResourceName              string
	PatternType               int8
	Principal, Host           string
	Operation, PermissionType int8
}

// kRemoveACL is RemoveAccessControlEntryRecord; kRemoveTopic RemoveTopicRecord.
type (
	kRemoveACL   struct{ ID kafkaUUID }
	kRemoveTopic struct{ ID kafkaUUID }
)

// kFeature is FeatureLevelRecord; kProducerIDs ProducerIdsRecord.
type (
	kFeature struct {
		Name  string
		Level int16
	}
	kProducerIDs struct{ NextProducerID int64 }
)

// kClearElr is ClearElrRecord: TopicName "" clears every topic's ELR.
type kClearElr struct{ TopicName string }

// kTxn is a metadata transaction marker (Begin/End/AbortTransactionRecord).
type kTxn struct{ APIKey uint16 }

// kSkipped is a record of a kind migrate does not carry over (broker registrations,
// fencing, no-ops, ...), or does not know.
type kSkipped struct {
	APIKey uint16
	Known  bool
}

// decodeMetadataRecord decodes one metadata record value: Kafka's ApiMessageAndVersion frame
// (unsigned varint frame version 1, unsigned varint apiKey, unsigned varint version) and the
// record's body in its generated schema (all metadata records are flexible: compact strings
// and arrays, tagged fields). It never panics and checks every length against the input.
func decodeMetadataRecord(b []byte) (any, error) {
	r := &reader{b: b}
	frame := r.uvarint()
	apiKey := r.uvarint()
	version := r.uvarint()
	if r.err != nil {
		return nil, r.fail("record frame")
	}
	if frame != metadataFrameVersion {
		return nil, fmt.Errorf("%w: frame version %d", ErrCorruptMetadata, frame)
	}
	if apiKey > math.MaxUint16 || version > math.MaxInt16 {
		return nil, fmt.Errorf("%w: api key %d version %d", ErrCorruptMetadata, apiKey, version)
	}
	var rec any
	switch apiKey {
	case keyTopic:
		t := &kTopic{Name: r.str(), ID: r.uuid()}
		rec = t
	case keyPartition:
		p := &kPartition{Partition: r.int32(), TopicID: r.uuid()}
		p.Replicas, _ = r.int32s()
		p.ISR, _ = r.int32s()
		p.Removing, _ = r.int32s()
		p.Adding, _ = r.int32s()
		p.Leader = r.int32()
		p.LeaderEpoch = r.int32()
		p.PartitionEpoch = r.int32()
		if version >= 1 {
			r.uuids() // Directories
		}
		r.tags(func(tag uint64, f *reader) { // LeaderRecoveryState (0) and LastKnownElr (2) are not kept
			if tag == 1 {
				p.ELR, _ = f.nullableInt32s()
			}
		})
		rec = p
	case keyPartitionChange:
		c := &kPartitionChange{Partition: r.int32(), TopicID: r.uuid(), Leader: -2}
		r.tags(func(tag uint64, f *reader) {
			switch tag {
			case 0:
				c.ISR, c.setISR = f.nullableInt32s()
			case 1:
				c.Leader = f.int32()
			case 2:
				c.Replicas, c.setReplicas = f.nullableInt32s()
			case 3:
				c.Removing, c.setRemoving = f.nullableInt32s()
			case 4:
				c.Adding, c.setAdding = f.nullableInt32s()
			case 6:
				c.ELR, c.setELR = f.nullableInt32s()
			}
		})
		rec = c
	case keyConfig:
		c := &kConfig{ResourceType: r.int8(), ResourceName: r.str(), Name: r.str(), Value: r.nullableStr()}
		rec = c
	case keyRemoveTopic:
		rec = &kRemoveTopic{ID: r.uuid()}
	case keyUserScramCredential:
		rec = &kScram{Name: r.str(), Mechanism: r.int8(), Salt: r.bytes(), StoredKey: r.bytes(), ServerKey: r.bytes(), Iterations: r.int32()}
	case keyRemoveUserScramCredential:
		rec = &kScram{Name: r.str(), Mechanism: r.int8(), Remove: true}
	case keyFeatureLevel:
		rec = &kFeature{Name: r.str(), Level: r.int16()}
	case keyClientQuota:
		q := &kQuota{}
		n := r.arrayLen()
		for i := 0; i < n && r.err == nil; i++ {
			e := kQuotaEntity{Type: r.str(), Name: r.nullableStr()}
			r.tags(nil)
			q.Entity = append(q.Entity, e)
		}
		q.Key = r.str()
		q.Value = math.Float64frombits(uint64(r.int64()))
		q.Remove = r.bool()
		rec = q
	case keyProducerIDs:
		r.int32() // BrokerId
		r.int64() // BrokerEpoch
		rec = &kProducerIDs{NextProducerID: r.int64()}
	case keyAccessControlEntry:
		rec = &kACL{ID: r.uuid(), ResourceType: r.int8(), ResourceName: r.str(), PatternType: r.int8(),
			Principal: r.str(), Host: r.str(), Operation: r.int8(), PermissionType: r.int8()}
	case keyRemoveAccessControlEntry:
		rec = &kRemoveACL{ID: r.uuid()}
	case keyClearElr:
		rec = &kClearElr{TopicName: r.str()}
	case keyBeginTransaction, keyEndTransaction, keyAbortTransaction:
		return &kTxn{APIKey: uint16(apiKey)}, nil // bodies carry only a name
	case keyRegisterBroker, keyUnregisterBroker, keyAccessControl, keyFenceBroker, keyUnfenceBroker,
		keyDelegationToken, keyBrokerRegistrationChange, keyNoOp, keyZkMigrationState,
		keyRegisterController, keyRemoveDelegationToken, keyUnregisterController:
		return &kSkipped{APIKey: uint16(apiKey), Known: true}, nil
	default:
		return &kSkipped{APIKey: uint16(apiKey)}, nil
	}
	if rec != nil && apiKey != keyPartition && apiKey != keyPartitionChange {
		r.tags(nil)
	}
	if r.err != nil {
		return nil, r.fail(fmt.Sprintf("record type %d v%d", apiKey, version))
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: record type %d v%d: %d trailing bytes", ErrCorruptMetadata, apiKey, version, len(r.b))
	}
	return rec, nil
}

// reader reads Kafka's generated-schema primitives. The first short read sets err; later
// reads then return zero values, so a decoder checks err once at the end.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("short or malformed field")

func (r *reader) fail(what string) error {
	return fmt.Errorf("%w: %s: %v", ErrCorruptMetadata, what, r.err)
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxUint32 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int8() int8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *reader) bool() bool { return r.int8() != 0 }

func (r *reader) int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *reader) uuid() kafkaUUID {
	var u kafkaUUID
	copy(u[:], r.take(16))
	return u
}

// compactLen reads a compact length (N+1, 0 = null); -1 means null.
func (r *reader) compactLen() int {
	n := r.uvarint()
	if r.err != nil {
		return -1
	}
	if n == 0 {
		return -1
	}
	if n-1 > uint64(len(r.b)) {
		r.err = errShort
		return -1
	}
	return int(n - 1)
}

func (r *reader) str() string {
	n := r.compactLen()
	if n < 0 {
		if r.err == nil {
			r.err = errors.New("null in a non-nullable string")
		}
		return ""
	}
	return string(r.take(n))
}

func (r *reader) nullableStr() *string {
	n := r.compactLen()
	if n < 0 {
		return nil
	}
	s := string(r.take(n))
	return &s
}

func (r *reader) bytes() []byte {
	n := r.compactLen()
	if n < 0 {
		if r.err == nil {
			r.err = errors.New("null in non-nullable bytes")
		}
		return nil
	}
	return append([]byte{}, r.take(n)...)
}

// arrayLen reads a non-nullable compact array's length, bounded by what is left (every
// element takes at least one byte) and by maxMetadataArrayLen.
func (r *reader) arrayLen() int {
	n := r.compactLen()
	if n < 0 {
		if r.err == nil {
			r.err = errors.New("null in a non-nullable array")
		}
		return 0
	}
	if n > maxMetadataArrayLen {
		r.err = errShort
		return 0
	}
	return n
}

func (r *reader) int32s() ([]int32, bool) {
	n := r.arrayLen()
	if n*4 > len(r.b) {
		r.err = errShort
		return nil, false
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out, true
}

func (r *reader) nullableInt32s() ([]int32, bool) {
	n := r.compactLen()
	if n < 0 {
		return nil, false // null: no change
	}
	if n*4 > len(r.b) {
		r.err = errShort
		return nil, false
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out, true
}

func (r *reader) uuids() {
	n := r.arrayLen()
	r.take(16 * n)
}

// tags reads a tagged-field section: a count, then (tag, size, data) triples. fn, when set,
// gets each field's data in a reader of its own; unknown tags are skipped, as Kafka does.
func (r *reader) tags(fn func(tag uint64, f *reader)) {
	count := r.uvarint()
	if count > uint64(len(r.b)) {
		r.err = errShort
		return
	}
	for i := uint64(0); i < count && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		if size > uint64(len(r.b)) {
			r.err = errShort
			return
		}
		data := r.take(int(size))
		if fn != nil && r.err == nil {
			f := &reader{b: data}
			fn(tag, f)
			if f.err != nil {
				r.err = f.err
			}
		}
	}
}
