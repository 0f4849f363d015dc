package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordBatchHeaderLen is the v2 batch header size from partitionLeaderEpoch
// to the end of numRecords: the part that the batch Length field counts
// besides the records.
const recordBatchHeaderLen = 49

// encodeBatch builds one uncompressed v2 record batch (magic 2, no producer,
// base offset 0: the log assigns offsets) holding recs, timestamped tsMillis.
func encodeBatch(tsMillis int64, recs []record) []byte {
	var body []byte
	var rec []byte
	for i, r := range recs {
		rec = rec[:0]
		rec = append(rec, 0)                     // attributes
		rec = binary.AppendVarint(rec, 0)        // timestamp delta
		rec = binary.AppendVarint(rec, int64(i)) // offset delta
		rec = appendVarBytes(rec, r.key)         // key
		rec = appendVarBytes(rec, r.value)       // value, -1 for tombstones
		rec = binary.AppendUvarint(rec, 0)       // header count (varint 0)
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(recordBatchHeaderLen + len(body)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       tsMillis,
		MaxTimestamp:         tsMillis,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	out := b.AppendTo(make([]byte, 0, 61+len(body)))
	// The CRC covers attributes (offset 21) to the end.
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], castagnoli))
	return out
}

func appendVarBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// ErrCorruptBatch is returned by DecodeBatch for malformed input.
var ErrCorruptBatch = errors.New("coordinator: corrupt record batch")

// DecodeBatch parses an uncompressed v2 record batch as built by the
// coordinator and calls fn for each record with its absolute offset. It is
// exported for PartitionLog implementations and tests that store the batches
// the coordinator appends; it checks every length and the CRC, and refuses
// compressed or non-v2 batches.
func DecodeBatch(batch []byte, fn func(offset int64, key, value []byte) error) error {
	if len(batch) < 61 {
		return fmt.Errorf("%w: %d bytes", ErrCorruptBatch, len(batch))
	}
	base := int64(binary.BigEndian.Uint64(batch[0:8]))
	length := int64(int32(binary.BigEndian.Uint32(batch[8:12])))
	if length < recordBatchHeaderLen || length+12 != int64(len(batch)) {
		return fmt.Errorf("%w: length %d for %d bytes", ErrCorruptBatch, length, len(batch))
	}
	if batch[16] != 2 {
		return fmt.Errorf("%w: magic %d", ErrCorruptBatch, batch[16])
	}
	if crc := binary.BigEndian.Uint32(batch[17:21]); crc != crc32.Checksum(batch[21:], castagnoli) {
		return fmt.Errorf("%w: crc mismatch", ErrCorruptBatch)
	}
	attrs := binary.BigEndian.Uint16(batch[21:23])
	if attrs&0x7 != 0 {
		return fmt.Errorf("%w: compressed batch", ErrCorruptBatch)
	}
	n := int32(binary.BigEndian.Uint32(batch[57:61]))
	if n < 0 {
		return fmt.Errorf("%w: %d records", ErrCorruptBatch, n)
	}
	rest := batch[61:]
	for i := int32(0); i < n; i++ {
		l, m := binary.Varint(rest)
		if m <= 0 || l < 0 || l > int64(len(rest)-m) {
			return fmt.Errorf("%w: record %d length", ErrCorruptBatch, i)
		}
		r := rest[m : m+int(l)]
		rest = rest[m+int(l):]
		if len(r) < 1 {
			return fmt.Errorf("%w: record %d empty", ErrCorruptBatch, i)
		}
		r = r[1:] // attributes
		var ok bool
		if _, r, ok = readVarint(r); !ok { // timestamp delta
			return fmt.Errorf("%w: record %d timestamp", ErrCorruptBatch, i)
		}
		var delta int64
		if delta, r, ok = readVarint(r); !ok {
			return fmt.Errorf("%w: record %d offset delta", ErrCorruptBatch, i)
		}
		var key, value []byte
		if key, r, ok = readVarBytes(r); !ok {
			return fmt.Errorf("%w: record %d key", ErrCorruptBatch, i)
		}
		if value, _, ok = readVarBytes(r); !ok {
			return fmt.Errorf("%w: record %d value", ErrCorruptBatch, i)
		}
		if err := fn(base+delta, key, value); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorruptBatch, len(rest))
	}
	return nil
}

func readVarint(b []byte) (int64, []byte, bool) {
	v, m := binary.Varint(b)
	if m <= 0 {
		return 0, nil, false
	}
	return v, b[m:], true
}

func readVarBytes(b []byte) ([]byte, []byte, bool) {
	l, b, ok := readVarint(b)
	if !ok || l < -1 || l > int64(len(b)) {
		return nil, nil, false
	}
	if l == -1 {
		return nil, b, true
	}
	return b[:l:l], b[l:], true
}
