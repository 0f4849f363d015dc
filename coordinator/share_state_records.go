package coordinator

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Records of __share_group_state, as Kafka 4.4's share coordinator writes
// them (ShareSnapshotKey/Value, record type 0; ShareUpdateKey/Value, record
// type 1). Keys are non-flexible: int16 record type, then GroupId (int16
// length string), TopicId (16 bytes), Partition (int32). Values are an int16
// version (0) and then the fields in the flexible encoding:
//
//	ShareSnapshotValue: SnapshotEpoch int32, StateEpoch int32, LeaderEpoch
//	  int32, StartOffset int64, CreateTimestamp int64, WriteTimestamp int64,
//	  StateBatches [FirstOffset int64, LastOffset int64, DeliveryState int8,
//	  DeliveryCount int16], tag 0 DeliveryCompleteCount int32 (default -1)
//	ShareUpdateValue: SnapshotEpoch int32, LeaderEpoch int32, StartOffset
//	  int64, StateBatches [as above], tag 0 DeliveryCompleteCount int32
//
// A nil value is a tombstone (DeleteShareGroupState writes one per key kind).
const (
	keyShareSnapshot = 0
	keyShareUpdate   = 1
)

// shareStateMaxBatches bounds the state batches a decoded value may hold
// (a share partition's window is bounded by its record locks, and every
// batch is at least one offset, so this is generous).
const shareStateMaxBatches = 1 << 16

// SharePartitionKey names one share partition's state: a group's view of one
// topic partition.
type SharePartitionKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// ShareStateBatch is a run of offsets with one delivery state (0 AVAILABLE,
// 2 ACKNOWLEDGED, 4 ARCHIVED) and delivery count.
type ShareStateBatch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState int8
	DeliveryCount int16
}

// shareStateValue is a decoded ShareSnapshotValue or ShareUpdateValue
// (StateEpoch, CreateTimestamp and WriteTimestamp are a snapshot's only).
type shareStateValue struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	CreateTimestamp       int64
	WriteTimestamp        int64
	Batches               []ShareStateBatch
}

func shareStateKey(kind int16, k SharePartitionKey) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(kind))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// decodeShareStateKey parses a __share_group_state key.
func decodeShareStateKey(key []byte) (kind int16, k SharePartitionKey, err error) {
	r := &flexReader{b: key}
	kind = r.int16()
	if r.err == nil && kind != keyShareSnapshot && kind != keyShareUpdate {
		return kind, k, fmt.Errorf("%w: share state record type %d", ErrCorruptRecord, kind)
	}
	k.Group = string(r.take(int(r.int16()), "group"))
	copy(k.TopicID[:], r.take(16, "topic id"))
	k.Partition = r.int32()
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing key bytes")
	}
	return kind, k, r.err
}

func encodeShareStateValue(kind int16, v *shareStateValue) []byte {
	w := &flexWriter{}
	w.int16(0)
	w.int32(v.SnapshotEpoch)
	if kind == keyShareSnapshot {
		w.int32(v.StateEpoch)
	}
	w.int32(v.LeaderEpoch)
	w.int64(v.StartOffset)
	if kind == keyShareSnapshot {
		w.int64(v.CreateTimestamp)
		w.int64(v.WriteTimestamp)
	}
	w.uvarint(len(v.Batches) + 1)
	for _, sb := range v.Batches {
		w.int64(sb.FirstOffset)
		w.int64(sb.LastOffset)
		w.int8(sb.DeliveryState)
		w.int16(sb.DeliveryCount)
		w.noTags()
	}
	if v.DeliveryCompleteCount != -1 {
		w.uvarint(1) // one tagged field
		w.uvarint(0) // tag 0
		w.uvarint(4)
		w.int32(v.DeliveryCompleteCount)
	} else {
		w.noTags()
	}
	return w.b
}

// decodeShareStateValue parses a ShareSnapshotValue (kind 0) or
// ShareUpdateValue (kind 1).
func decodeShareStateValue(kind int16, value []byte) (*shareStateValue, error) {
	r := &flexReader{b: value}
	if ver := r.int16(); r.err == nil && ver != 0 {
		return nil, fmt.Errorf("%w: share state value version %d", ErrCorruptRecord, ver)
	}
	v := &shareStateValue{DeliveryCompleteCount: -1}
	v.SnapshotEpoch = r.int32()
	if kind == keyShareSnapshot {
		v.StateEpoch = r.int32()
	}
	v.LeaderEpoch = r.int32()
	v.StartOffset = r.int64()
	if kind == keyShareSnapshot {
		v.CreateTimestamp = r.int64()
		v.WriteTimestamp = r.int64()
	}
	n := r.uvarint() - 1
	if n > shareStateMaxBatches {
		r.fail("too many state batches")
	}
	for i := 0; i < n && r.err == nil; i++ {
		var sb ShareStateBatch
		sb.FirstOffset = r.int64()
		sb.LastOffset = r.int64()
		sb.DeliveryState = r.int8()
		sb.DeliveryCount = r.int16()
		r.skipTags()
		if r.err == nil && (sb.FirstOffset < 0 || sb.LastOffset < sb.FirstOffset) {
			r.fail("state batch offsets")
		}
		v.Batches = append(v.Batches, sb)
	}
	// Tagged fields: tag 0 is DeliveryCompleteCount, others are skipped.
	tags := r.uvarint()
	for i := 0; i < tags && r.err == nil; i++ {
		tag := r.uvarint()
		data := r.take(r.uvarint(), "tag")
		if tag == 0 && r.err == nil {
			if len(data) != 4 {
				r.fail("delivery complete count")
				break
			}
			v.DeliveryCompleteCount = int32(binary.BigEndian.Uint32(data))
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing value bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

// mergeShareStateBatches folds update batches into the current ones, as
// Kafka's PersisterStateBatchCombiner: an updated offset takes the update's
// state and count, offsets below startOffset are dropped, and adjacent runs
// with the same state and count are joined. The result is sorted and
// non-overlapping.
func mergeShareStateBatches(current, updates []ShareStateBatch, startOffset int64) []ShareStateBatch {
	// Later updates win: apply current first, then updates in order, on a
	// sorted list of disjoint runs.
	var out []ShareStateBatch
	apply := func(nb ShareStateBatch) {
		if nb.LastOffset < startOffset {
			return
		}
		nb.FirstOffset = max(nb.FirstOffset, startOffset)
		var next []ShareStateBatch
		inserted := false
		for _, b := range out {
			if b.LastOffset < nb.FirstOffset || b.FirstOffset > nb.LastOffset {
				if !inserted && b.FirstOffset > nb.LastOffset {
					next = append(next, nb)
					inserted = true
				}
				next = append(next, b)
				continue
			}
			if b.FirstOffset < nb.FirstOffset {
				left := b
				left.LastOffset = nb.FirstOffset - 1
				next = append(next, left)
			}
			if !inserted {
				next = append(next, nb)
				inserted = true
			}
			if b.LastOffset > nb.LastOffset {
				right := b
				right.FirstOffset = nb.LastOffset + 1
				next = append(next, right)
			}
		}
		if !inserted {
			next = append(next, nb)
		}
		out = next
	}
	for _, b := range current {
		apply(b)
	}
	for _, b := range updates {
		apply(b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	joined := out[:0]
	for _, b := range out {
		if n := len(joined); n > 0 {
			last := &joined[n-1]
			if last.LastOffset+1 == b.FirstOffset && last.DeliveryState == b.DeliveryState && last.DeliveryCount == b.DeliveryCount {
				last.LastOffset = b.LastOffset
				continue
			}
		}
		joined = append(joined, b)
	}
	return joined
}
