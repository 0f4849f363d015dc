package coordinator

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
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
// state and count (a later update batch wins over an earlier one it
// overlaps), offsets below startOffset are dropped, and adjacent runs with
// the same state and count are joined. The result is sorted and
// non-overlapping. It sweeps the runs' boundaries once: O(n log n) in the
// number of batches, whatever their lengths.
func mergeShareStateBatches(current, updates []ShareStateBatch, startOffset int64) []ShareStateBatch {
	type run struct {
		b    ShareStateBatch
		prio int // higher wins: current runs in order, then updates in order
	}
	runs := make([]run, 0, len(current)+len(updates))
	add := func(b ShareStateBatch) {
		if b.LastOffset < startOffset || b.LastOffset < b.FirstOffset {
			return
		}
		b.FirstOffset = max(b.FirstOffset, startOffset)
		runs = append(runs, run{b, len(runs)})
	}
	for _, b := range current {
		add(b)
	}
	for _, b := range updates {
		add(b)
	}
	if len(runs) == 0 {
		return nil
	}
	// Boundaries: every run's first offset and the offset after its last.
	points := make([]int64, 0, 2*len(runs))
	for _, r := range runs {
		points = append(points, r.b.FirstOffset)
		if r.b.LastOffset < math.MaxInt64 {
			points = append(points, r.b.LastOffset+1)
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)
	byFirst := slices.Clone(runs)
	sort.SliceStable(byFirst, func(i, j int) bool { return byFirst[i].b.FirstOffset < byFirst[j].b.FirstOffset })
	// active holds the runs started so far, highest priority on top; runs that ended are
	// dropped lazily when they reach the top.
	active := &runHeap{}
	next := 0
	var out []ShareStateBatch
	for pi, p := range points {
		for next < len(byFirst) && byFirst[next].b.FirstOffset <= p {
			active.push(byFirst[next].b, byFirst[next].prio)
			next++
		}
		for active.Len() > 0 && active.top().LastOffset < p {
			active.pop()
		}
		if active.Len() == 0 {
			continue
		}
		top := active.top()
		last := top.LastOffset
		if pi+1 < len(points) {
			last = min(last, points[pi+1]-1)
		}
		seg := ShareStateBatch{FirstOffset: p, LastOffset: last, DeliveryState: top.DeliveryState, DeliveryCount: top.DeliveryCount}
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == seg.FirstOffset &&
			out[n-1].DeliveryState == seg.DeliveryState && out[n-1].DeliveryCount == seg.DeliveryCount {
			out[n-1].LastOffset = seg.LastOffset
			continue
		}
		out = append(out, seg)
	}
	return out
}

// runHeap is a max-heap of state batches by priority.
type runHeap struct {
	b    []ShareStateBatch
	prio []int
}

func (h *runHeap) Len() int { return len(h.b) }

func (h *runHeap) top() ShareStateBatch { return h.b[0] }

func (h *runHeap) less(i, j int) bool { return h.prio[i] > h.prio[j] }

func (h *runHeap) swap(i, j int) {
	h.b[i], h.b[j] = h.b[j], h.b[i]
	h.prio[i], h.prio[j] = h.prio[j], h.prio[i]
}

func (h *runHeap) pop() {
	n := len(h.b) - 1
	h.swap(0, n)
	h.b, h.prio = h.b[:n], h.prio[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *runHeap) push(b ShareStateBatch, prio int) {
	h.b, h.prio = append(h.b, b), append(h.prio, prio)
	for i := len(h.b) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}
