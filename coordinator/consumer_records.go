package coordinator

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// KIP-848 record types of __consumer_offsets (the key's leading int16), in
// Kafka's layout: keys are non-flexible (int16 type, then strings with int16
// lengths); values are an int16 version (0) followed by the fields in the
// flexible encoding (compact strings and arrays, tagged fields). kmsg v1.15.1
// has no types for them, so they are encoded here.
const (
	keyConsumerGroupMetadata         = 3 // GroupId → Epoch
	keyConsumerGroupPartitionMeta    = 4 // GroupId → subscribed topic metadata (written as a tombstone only)
	keyConsumerGroupMemberMetadata   = 5 // GroupId, MemberId → member subscription
	keyConsumerGroupTargetMetadata   = 6 // GroupId → AssignmentEpoch
	keyConsumerGroupTargetMember     = 7 // GroupId, MemberId → target partitions
	keyConsumerGroupCurrentAssigment = 8 // GroupId, MemberId → epochs, state, partitions
)

// topicPartitions maps topic ID to partitions (sorted, no duplicates).
type topicPartitions map[[16]byte][]int32

func (tp topicPartitions) clone() topicPartitions {
	out := make(topicPartitions, len(tp))
	for id, ps := range tp {
		out[id] = slices.Clone(ps)
	}
	return out
}

func (tp topicPartitions) count() int {
	n := 0
	for _, ps := range tp {
		n += len(ps)
	}
	return n
}

func (tp topicPartitions) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(tp[id], p)
	return ok
}

func (tp topicPartitions) add(id [16]byte, p int32) {
	ps := tp[id]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		tp[id] = slices.Insert(ps, i, p)
	}
}

func (tp topicPartitions) equal(o topicPartitions) bool {
	if tp.count() != o.count() {
		return false
	}
	for id, ps := range tp {
		if !slices.Equal(ps, o[id]) && len(ps) > 0 {
			return false
		}
	}
	return true
}

// sortedIDs returns the topic IDs in byte order, for deterministic output.
func (tp topicPartitions) sortedIDs() [][16]byte {
	ids := make([][16]byte, 0, len(tp))
	for id, ps := range tp {
		if len(ps) > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	return ids
}

// flexWriter appends the flexible-version encoding.
type flexWriter struct{ b []byte }

func (w *flexWriter) int8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *flexWriter) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *flexWriter) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *flexWriter) uvarint(v int) { w.b = binary.AppendUvarint(w.b, uint64(v)) }
func (w *flexWriter) str(s string) {
	w.uvarint(len(s) + 1)
	w.b = append(w.b, s...)
}
func (w *flexWriter) nullableStr(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.str(*s)
}
func (w *flexWriter) strs(ss []string) {
	w.uvarint(len(ss) + 1)
	for _, s := range ss {
		w.str(s)
	}
}
func (w *flexWriter) noTags() { w.uvarint(0) }
func (w *flexWriter) topicPartitions(tp topicPartitions) {
	ids := tp.sortedIDs()
	w.uvarint(len(ids) + 1)
	for _, id := range ids {
		w.b = append(w.b, id[:]...)
		w.uvarint(len(tp[id]) + 1)
		for _, p := range tp[id] {
			w.int32(p)
		}
		w.noTags()
	}
}

// flexReader reads the flexible encoding; the first error sticks and every
// later read returns zero values, so callers check err once at the end.
type flexReader struct {
	b   []byte
	err error
}

func (r *flexReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCorruptRecord, what)
	}
	r.b = nil
}

func (r *flexReader) take(n int, what string) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.fail(what)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *flexReader) int8() int8 {
	b := r.take(1, "int8")
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *flexReader) int16() int16 {
	b := r.take(2, "int16")
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *flexReader) int32() int32 {
	b := r.take(4, "int32")
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *flexReader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > uint64(len(r.b))+1 {
		// No length or count here can exceed the remaining bytes (+1 for
		// the compact encoding's offset).
		r.fail("uvarint")
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *flexReader) nullableStr() *string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	s := string(r.take(n-1, "string"))
	return &s
}

func (r *flexReader) str() string {
	s := r.nullableStr()
	if s == nil {
		if r.err == nil {
			r.fail("null string")
		}
		return ""
	}
	return *s
}

func (r *flexReader) strs() []string {
	n := r.uvarint() - 1
	if n < 0 {
		return nil
	}
	out := make([]string, 0, min(n, len(r.b)))
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.str())
	}
	return out
}

func (r *flexReader) skipTags() {
	n := r.uvarint()
	for i := 0; i < n && r.err == nil; i++ {
		r.uvarint() // tag
		r.take(r.uvarint(), "tag")
	}
}

func (r *flexReader) topicPartitions() topicPartitions {
	out := make(topicPartitions)
	n := r.uvarint() - 1
	for i := 0; i < n && r.err == nil; i++ {
		var id [16]byte
		copy(id[:], r.take(16, "uuid"))
		m := r.uvarint() - 1
		for j := 0; j < m && r.err == nil; j++ {
			out.add(id, r.int32())
		}
		r.skipTags()
	}
	return out
}

// Keys.

func cgKey(kind int16, group string, member *string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(kind))
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	b = append(b, group...)
	if member != nil {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*member)))
		b = append(b, *member...)
	}
	return b
}

// decodeCGKey parses a KIP-848 key: group, and member for the member
// record types.
func decodeCGKey(key []byte) (kind int16, group, member string, err error) {
	r := &flexReader{b: key}
	kind = r.int16()
	group = string(r.take(int(r.int16()), "group"))
	switch kind {
	case keyConsumerGroupMemberMetadata, keyConsumerGroupTargetMember, keyConsumerGroupCurrentAssigment:
		member = string(r.take(int(r.int16()), "member"))
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing key bytes")
	}
	return kind, group, member, r.err
}

// Values. Each starts with int16 version 0.

// cgEpochValue is ConsumerGroupMetadataValue: the group epoch and, as
// tagged field 0 (Kafka 4.1's MetadataHash), a hash of the subscribed
// topics' metadata, so a restarted coordinator knows whether topics changed.
func cgEpochValue(epoch int32, metadataHash int64) []byte {
	w := &flexWriter{}
	w.int16(0)
	w.int32(epoch)
	if metadataHash == 0 {
		w.noTags()
		return w.b
	}
	w.uvarint(1)
	w.uvarint(0)
	w.uvarint(8)
	w.b = binary.BigEndian.AppendUint64(w.b, uint64(metadataHash))
	return w.b
}

func cgTargetMetadataValue(epoch int32) []byte { return cgEpochValue(epoch, 0) }

// decodeCGEpochValue reads a ConsumerGroupMetadataValue or
// ConsumerGroupTargetAssignmentMetadataValue.
func decodeCGEpochValue(v []byte) (epoch int32, metadataHash int64, err error) {
	r := &flexReader{b: v}
	r.int16()
	epoch = r.int32()
	n := r.uvarint()
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.uvarint()
		b := r.take(r.uvarint(), "tag")
		if tag == 0 && len(b) == 8 {
			metadataHash = int64(binary.BigEndian.Uint64(b))
		}
	}
	return epoch, metadataHash, r.err
}

// cgMemberMeta is ConsumerGroupMemberMetadataValue.
type cgMemberMeta struct {
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	subscribedTopics []string
	regex            *string
	rebalanceTimeout int32 // ms
	serverAssignor   *string
}

func (m *cgMemberMeta) encode() []byte {
	w := &flexWriter{}
	w.int16(0)
	w.nullableStr(m.instanceID)
	w.nullableStr(m.rackID)
	w.str(m.clientID)
	w.str(m.clientHost)
	w.strs(m.subscribedTopics)
	w.nullableStr(m.regex)
	w.int32(m.rebalanceTimeout)
	w.nullableStr(m.serverAssignor)
	w.noTags()
	return w.b
}

func decodeCGMemberMeta(v []byte) (cgMemberMeta, error) {
	r := &flexReader{b: v}
	var m cgMemberMeta
	r.int16()
	m.instanceID = r.nullableStr()
	m.rackID = r.nullableStr()
	m.clientID = r.str()
	m.clientHost = r.str()
	m.subscribedTopics = r.strs()
	m.regex = r.nullableStr()
	m.rebalanceTimeout = r.int32()
	m.serverAssignor = r.nullableStr()
	r.skipTags()
	return m, r.err
}

func cgTargetMemberValue(tp topicPartitions) []byte {
	w := &flexWriter{}
	w.int16(0)
	w.topicPartitions(tp)
	w.noTags()
	return w.b
}

func decodeCGTargetMember(v []byte) (topicPartitions, error) {
	r := &flexReader{b: v}
	r.int16()
	tp := r.topicPartitions()
	r.skipTags()
	return tp, r.err
}

// cgCurrent is ConsumerGroupCurrentMemberAssignmentValue.
type cgCurrent struct {
	memberEpoch   int32
	previousEpoch int32
	state         int8
	assigned      topicPartitions
	pendingRevoke topicPartitions
}

func (c *cgCurrent) encode() []byte {
	w := &flexWriter{}
	w.int16(0)
	w.int32(c.memberEpoch)
	w.int32(c.previousEpoch)
	w.int8(c.state)
	w.topicPartitions(c.assigned)
	w.topicPartitions(c.pendingRevoke)
	w.noTags()
	return w.b
}

func decodeCGCurrent(v []byte) (cgCurrent, error) {
	r := &flexReader{b: v}
	var c cgCurrent
	r.int16()
	c.memberEpoch = r.int32()
	c.previousEpoch = r.int32()
	c.state = r.int8()
	c.assigned = r.topicPartitions()
	c.pendingRevoke = r.topicPartitions()
	r.skipTags()
	return c, r.err
}
