package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
)

// Record key versions of __consumer_offsets, as Kafka defines them: the key's
// leading int16 is the record type.
const (
	keyOffsetCommitV0  = 0
	keyOffsetCommit    = 1
	keyGroupMetadata   = 2
	keyConsumerGroupLo = 3 // 3..: KIP-848 and later record types
)

// Value versions written. Kafka 4.x writes OffsetCommitValue v3 (v1 when an
// explicit expire timestamp exists) and GroupMetadataValue v3.
const (
	offsetValueVersion        = 3
	offsetValueVersionExpire  = 1
	groupMetadataValueVersion = 3
)

// ErrCorruptRecord is returned (wrapped) when a __consumer_offsets record
// cannot be decoded.
var ErrCorruptRecord = errors.New("coordinator: corrupt __consumer_offsets record")

// record is one key/value to append. A nil value is a tombstone.
type record struct {
	key, value []byte
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: keyOffsetCommit, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: keyGroupMetadata, Group: group}
	return k.AppendTo(nil)
}

func offsetRecord(group, topic string, partition int32, o *offsetEntry) record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	if o.expireTimestamp >= 0 {
		v.Version = offsetValueVersionExpire
		v.ExpireTimestamp = o.expireTimestamp
	}
	v.Offset = o.offset
	v.LeaderEpoch = o.leaderEpoch
	v.Metadata = o.metadata
	v.CommitTimestamp = o.commitTimestamp
	return record{key: offsetKey(group, topic, partition), value: v.AppendTo(nil)}
}

func offsetTombstone(group, topic string, partition int32) record {
	return record{key: offsetKey(group, topic, partition)}
}

func groupTombstone(group string) record {
	return record{key: groupKey(group)}
}

// decodedRecord is the parsed form of one log record.
type decodedRecord struct {
	kind int16 // key version
	// offset commit
	group     string
	topic     string
	partition int32
	offset    *kmsg.OffsetCommitValue // nil: tombstone
	// group metadata
	groupValue *kmsg.GroupMetadataValue // nil: tombstone
}

// decodeRecord parses a key and value read from the log. Unknown key
// versions (newer record types) are reported with kind set and no payload, so
// replay can skip them as Kafka skips records it does not know.
func decodeRecord(key, value []byte) (decodedRecord, error) {
	var d decodedRecord
	if len(key) < 2 {
		return d, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	d.kind = int16(binary.BigEndian.Uint16(key))
	switch d.kind {
	case keyOffsetCommitV0, keyOffsetCommit:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return d, fmt.Errorf("%w: offset key: %v", ErrCorruptRecord, err)
		}
		d.group, d.topic, d.partition = k.Group, k.Topic, k.Partition
		if value != nil {
			v := new(kmsg.OffsetCommitValue)
			if err := v.ReadFrom(value); err != nil {
				return d, fmt.Errorf("%w: offset value: %v", ErrCorruptRecord, err)
			}
			if v.Version < 0 || v.Version > 4 {
				return d, fmt.Errorf("%w: offset value version %d", ErrCorruptRecord, v.Version)
			}
			d.offset = v
		}
	case keyGroupMetadata:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return d, fmt.Errorf("%w: group key: %v", ErrCorruptRecord, err)
		}
		d.group = k.Group
		if value != nil {
			v := new(kmsg.GroupMetadataValue)
			if err := v.ReadFrom(value); err != nil {
				return d, fmt.Errorf("%w: group value: %v", ErrCorruptRecord, err)
			}
			if v.Version < 0 || v.Version > 4 {
				return d, fmt.Errorf("%w: group value version %d", ErrCorruptRecord, v.Version)
			}
			d.groupValue = v
		}
	default:
		if d.kind < 0 {
			return d, fmt.Errorf("%w: key version %d", ErrCorruptRecord, d.kind)
		}
	}
	return d, nil
}

// encodeBatch builds one uncompressed v2 record batch (no producer, base
// offset 0: the log assigns offsets) holding recs, timestamped tsMillis.
func encodeBatch(tsMillis int64, recs []record) []byte {
	return encodeBatchAs(tsMillis, -1, -1, recs)
}

// encodeBatchAs is encodeBatch for a producer: producerID >= 0 makes the
// batch transactional, as Kafka's TxnOffsetCommit appends are.
func encodeBatchAs(tsMillis int64, producerID int64, producerEpoch int16, recs []record) []byte {
	h := batch.Header{
		PartitionLeaderEpoch: -1,
		BaseTimestamp:        tsMillis,
		MaxTimestamp:         tsMillis,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}
	if producerID >= 0 {
		h.ProducerID, h.ProducerEpoch = producerID, producerEpoch
		h.Attributes = batch.AttrTransactional
	}
	out := make([]batch.Record, len(recs))
	for i, r := range recs {
		out[i] = batch.Record{Key: r.key, Value: r.value}
	}
	return batch.Build(h, out)
}

// ErrCorruptBatch is returned (wrapped) for a malformed batch.
var ErrCorruptBatch = errors.New("coordinator: corrupt record batch")

// DecodeBatch parses one v2 record batch (as the coordinator builds them,
// or as stored: compressed batches are decompressed) and calls fn for each
// record with its absolute offset. It is exported for PartitionLog
// implementations and tests that store the batches the coordinator appends;
// it checks every length and the CRC.
func DecodeBatch(b []byte, fn func(offset int64, key, value []byte) error) error {
	if h, err := batch.Check(b); err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	} else if h.Size() != int64(len(b)) {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorruptBatch, int64(len(b))-h.Size())
	}
	return forEachLogRecord(b, func(r *logRecord) error { return fn(r.offset, r.key, r.value) })
}
