package coordinator

import (
	"encoding/binary"
	"slices"
	"sort"
)

// KIP-1071 streams group record types of __consumer_offsets, as Kafka 4.4's
// CoordinatorRecordType numbers them. Keys are non-flexible (int16 type, then
// the group ID and, for member records, the member ID as int16-length
// strings, as cgKey writes them); values are an int16 version (0) followed by
// the fields in the flexible encoding, in the field order of Kafka's
// StreamsGroup*Value schemas. kmsg has no types for them.
const (
	keyStreamsGroupMetadata         = 17 // GroupId → Epoch, MetadataHash (+ tagged fields)
	keyStreamsGroupPartitionMeta    = 18 // retired by Kafka; skipped on load
	keyStreamsGroupMemberMetadata   = 19 // GroupId, MemberId → client, process, topology epoch
	keyStreamsGroupTargetMetadata   = 20 // GroupId → AssignmentEpoch
	keyStreamsGroupTargetMember     = 21 // GroupId, MemberId → target tasks
	keyStreamsGroupCurrentAssigment = 22 // GroupId, MemberId → epochs, state, tasks
	keyStreamsGroupTopology         = 23 // GroupId → the topology the members sent
)

// isStreamsRecordKind reports whether a record key type is a streams group's.
func isStreamsRecordKind(kind int16) bool {
	return kind >= keyStreamsGroupMetadata && kind <= keyStreamsGroupTopology
}

// streamsKey is a streams record key; member is nil for group-level types.
func streamsKey(kind int16, group string, member *string) []byte { return cgKey(kind, group, member) }

// decodeStreamsKey parses a streams record key.
func decodeStreamsKey(key []byte) (kind int16, group, member string, err error) {
	r := &flexReader{b: key}
	kind = r.int16()
	group = string(r.take(int(r.int16()), "group"))
	switch kind {
	case keyStreamsGroupMemberMetadata, keyStreamsGroupTargetMember, keyStreamsGroupCurrentAssigment:
		member = string(r.take(int(r.int16()), "member"))
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing key bytes")
	}
	return kind, group, member, r.err
}

// taskSet maps a subtopology ID to its task partitions (sorted, no
// duplicates); an entry is never empty.
type taskSet map[string][]int32

func (ts taskSet) clone() taskSet {
	out := make(taskSet, len(ts))
	for s, ps := range ts {
		out[s] = slices.Clone(ps)
	}
	return out
}

func (ts taskSet) count() int {
	n := 0
	for _, ps := range ts {
		n += len(ps)
	}
	return n
}

func (ts taskSet) has(subtopology string, p int32) bool {
	_, ok := slices.BinarySearch(ts[subtopology], p)
	return ok
}

func (ts taskSet) add(subtopology string, p int32) {
	ps := ts[subtopology]
	if i, ok := slices.BinarySearch(ps, p); !ok {
		ts[subtopology] = slices.Insert(ps, i, p)
	}
}

func (ts taskSet) equal(o taskSet) bool {
	if ts.count() != o.count() {
		return false
	}
	for s, ps := range ts {
		if !slices.Equal(ps, o[s]) {
			return false
		}
	}
	return true
}

// intersects reports whether ts and o share a task.
func (ts taskSet) intersects(o taskSet) bool {
	for s, ps := range ts {
		for _, p := range ps {
			if o.has(s, p) {
				return true
			}
		}
	}
	return false
}

// subsetOf reports whether every task of ts is in o.
func (ts taskSet) subsetOf(o taskSet) bool {
	for s, ps := range ts {
		for _, p := range ps {
			if !o.has(s, p) {
				return false
			}
		}
	}
	return true
}

func (ts taskSet) sortedSubtopologies() []string {
	ids := make([]string, 0, len(ts))
	for s, ps := range ts {
		if len(ps) > 0 {
			ids = append(ids, s)
		}
	}
	sort.Strings(ids)
	return ids
}

// streamsTasks is one member's active, standby and warm-up tasks.
type streamsTasks struct {
	active, standby, warmup taskSet
}

func newStreamsTasks() streamsTasks {
	return streamsTasks{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
}

func (t streamsTasks) clone() streamsTasks {
	return streamsTasks{active: t.active.clone(), standby: t.standby.clone(), warmup: t.warmup.clone()}
}

func (t streamsTasks) equal(o streamsTasks) bool {
	return t.active.equal(o.active) && t.standby.equal(o.standby) && t.warmup.equal(o.warmup)
}

func (t streamsTasks) count() int { return t.active.count() + t.standby.count() + t.warmup.count() }

func (w *flexWriter) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

func (r *flexReader) int64() int64 {
	b := r.take(8, "int64")
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// taskSet writes Kafka's []TaskIds: subtopology ID, partitions, no tags.
func (w *flexWriter) taskSet(ts taskSet) {
	ids := ts.sortedSubtopologies()
	w.uvarint(len(ids) + 1)
	for _, s := range ids {
		w.str(s)
		w.uvarint(len(ts[s]) + 1)
		for _, p := range ts[s] {
			w.int32(p)
		}
		w.noTags()
	}
}

func (r *flexReader) taskSet() taskSet {
	out := taskSet{}
	n := r.uvarint() - 1
	for i := 0; i < n && r.err == nil; i++ {
		s := r.str()
		m := r.uvarint() - 1
		for j := 0; j < m && r.err == nil; j++ {
			out.add(s, r.int32())
		}
		r.skipTags() // CurrentMemberAssignment's AssignmentEpochs (tag 0) is not kept
	}
	return out
}

// streamsMetadataValue is StreamsGroupMetadataValue: the group epoch and the
// hash of the topics' metadata it was computed against.
func streamsMetadataValue(epoch int32, metadataHash int64) []byte {
	w := &flexWriter{}
	w.int16(0)
	w.int32(epoch)
	w.int64(metadataHash)
	w.noTags()
	return w.b
}

func decodeStreamsMetadataValue(v []byte) (epoch int32, metadataHash int64, err error) {
	r := &flexReader{b: v}
	r.int16()
	epoch = r.int32()
	metadataHash = r.int64()
	r.skipTags()
	return epoch, metadataHash, r.err
}

// streamsTargetMetadataValue is StreamsGroupTargetAssignmentMetadataValue.
func streamsTargetMetadataValue(epoch int32) []byte {
	w := &flexWriter{}
	w.int16(0)
	w.int32(epoch)
	w.noTags()
	return w.b
}

func decodeStreamsTargetMetadataValue(v []byte) (int32, error) {
	r := &flexReader{b: v}
	r.int16()
	epoch := r.int32()
	r.skipTags()
	return epoch, r.err
}

// sgEndpoint is a member's interactive-queries endpoint.
type sgEndpoint struct {
	host string
	port uint16
}

// sgKeyValue is one client tag.
type sgKeyValue struct{ key, value string }

// sgMemberMeta is StreamsGroupMemberMetadataValue.
type sgMemberMeta struct {
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	rebalanceTimeout int32 // ms
	topologyEpoch    int32
	processID        string
	userEndpoint     *sgEndpoint
	clientTags       []sgKeyValue // sorted by key
}

func (m *sgMemberMeta) equal(o *sgMemberMeta) bool {
	return strPtrEqual(m.instanceID, o.instanceID) && strPtrEqual(m.rackID, o.rackID) &&
		m.clientID == o.clientID && m.clientHost == o.clientHost && m.rebalanceTimeout == o.rebalanceTimeout &&
		m.topologyEpoch == o.topologyEpoch && m.processID == o.processID &&
		((m.userEndpoint == nil) == (o.userEndpoint == nil) && (m.userEndpoint == nil || *m.userEndpoint == *o.userEndpoint)) &&
		slices.Equal(m.clientTags, o.clientTags)
}

func (m *sgMemberMeta) encode() []byte {
	w := &flexWriter{}
	w.int16(0)
	w.nullableStr(m.instanceID)
	w.nullableStr(m.rackID)
	w.str(m.clientID)
	w.str(m.clientHost)
	w.int32(m.rebalanceTimeout)
	w.int32(m.topologyEpoch)
	w.str(m.processID)
	if m.userEndpoint == nil {
		w.int8(-1)
	} else {
		w.int8(1)
		w.str(m.userEndpoint.host)
		w.b = binary.BigEndian.AppendUint16(w.b, m.userEndpoint.port)
		w.noTags()
	}
	w.uvarint(len(m.clientTags) + 1)
	for _, kv := range m.clientTags {
		w.str(kv.key)
		w.str(kv.value)
		w.noTags()
	}
	w.noTags()
	return w.b
}

func decodeSGMemberMeta(v []byte) (sgMemberMeta, error) {
	r := &flexReader{b: v}
	var m sgMemberMeta
	r.int16()
	m.instanceID = r.nullableStr()
	m.rackID = r.nullableStr()
	m.clientID = r.str()
	m.clientHost = r.str()
	m.rebalanceTimeout = r.int32()
	m.topologyEpoch = r.int32()
	m.processID = r.str()
	if r.int8() >= 0 {
		host := r.str()
		b := r.take(2, "port")
		if b != nil {
			m.userEndpoint = &sgEndpoint{host: host, port: binary.BigEndian.Uint16(b)}
		}
		r.skipTags()
	}
	n := r.uvarint() - 1
	for i := 0; i < n && r.err == nil; i++ {
		kv := sgKeyValue{key: r.str(), value: r.str()}
		r.skipTags()
		m.clientTags = append(m.clientTags, kv)
	}
	r.skipTags()
	return m, r.err
}

// streamsTargetMemberValue is StreamsGroupTargetAssignmentMemberValue.
func streamsTargetMemberValue(t streamsTasks) []byte {
	w := &flexWriter{}
	w.int16(0)
	w.taskSet(t.active)
	w.taskSet(t.standby)
	w.taskSet(t.warmup)
	w.noTags()
	return w.b
}

func decodeStreamsTargetMember(v []byte) (streamsTasks, error) {
	r := &flexReader{b: v}
	r.int16()
	t := streamsTasks{active: r.taskSet(), standby: r.taskSet(), warmup: r.taskSet()}
	r.skipTags()
	return t, r.err
}

// sgCurrent is StreamsGroupCurrentMemberAssignmentValue.
type sgCurrent struct {
	memberEpoch   int32
	previousEpoch int32
	state         int8
	assigned      streamsTasks
	pendingRevoke streamsTasks
}

func (c *sgCurrent) encode() []byte {
	w := &flexWriter{}
	w.int16(0)
	w.int32(c.memberEpoch)
	w.int32(c.previousEpoch)
	w.int8(c.state)
	w.taskSet(c.assigned.active)
	w.taskSet(c.assigned.standby)
	w.taskSet(c.assigned.warmup)
	w.taskSet(c.pendingRevoke.active)
	w.taskSet(c.pendingRevoke.standby)
	w.taskSet(c.pendingRevoke.warmup)
	w.noTags()
	return w.b
}

func decodeSGCurrent(v []byte) (sgCurrent, error) {
	r := &flexReader{b: v}
	var c sgCurrent
	r.int16()
	c.memberEpoch = r.int32()
	c.previousEpoch = r.int32()
	c.state = r.int8()
	c.assigned = streamsTasks{active: r.taskSet(), standby: r.taskSet(), warmup: r.taskSet()}
	c.pendingRevoke = streamsTasks{active: r.taskSet(), standby: r.taskSet(), warmup: r.taskSet()}
	r.skipTags()
	return c, r.err
}

// sgTopicInfo is a topology's internal topic: name, requested partitions (0:
// derived), replication factor (0: the broker default) and configs.
type sgTopicInfo struct {
	name              string
	partitions        int32
	replicationFactor int16
	configs           []sgKeyValue
}

// sgCopartitionGroup indexes into its subtopology's topic lists.
type sgCopartitionGroup struct {
	sourceTopics, sourceTopicRegex, repartitionSourceTopics []int16
}

// sgSubtopology is one subtopology as the members describe it.
type sgSubtopology struct {
	id                      string
	sourceTopics            []string
	sourceTopicRegex        []string
	stateChangelogTopics    []sgTopicInfo
	repartitionSinkTopics   []string
	repartitionSourceTopics []sgTopicInfo
	copartitionGroups       []sgCopartitionGroup
}

// sgTopology is StreamsGroupTopologyValue: the topology epoch and its
// subtopologies (sorted by ID).
type sgTopology struct {
	epoch         int32
	subtopologies []sgSubtopology
}

func (w *flexWriter) topicInfos(ts []sgTopicInfo) {
	w.uvarint(len(ts) + 1)
	for _, t := range ts {
		w.str(t.name)
		w.int32(t.partitions)
		w.int16(t.replicationFactor)
		w.uvarint(len(t.configs) + 1)
		for _, kv := range t.configs {
			w.str(kv.key)
			w.str(kv.value)
			w.noTags()
		}
		w.noTags()
	}
}

func (r *flexReader) topicInfos() []sgTopicInfo {
	n := r.uvarint() - 1
	var out []sgTopicInfo
	for i := 0; i < n && r.err == nil; i++ {
		t := sgTopicInfo{name: r.str(), partitions: r.int32(), replicationFactor: r.int16()}
		m := r.uvarint() - 1
		for j := 0; j < m && r.err == nil; j++ {
			t.configs = append(t.configs, sgKeyValue{key: r.str(), value: r.str()})
			r.skipTags()
		}
		r.skipTags()
		out = append(out, t)
	}
	return out
}

func (w *flexWriter) int16s(vs []int16) {
	w.uvarint(len(vs) + 1)
	for _, v := range vs {
		w.int16(v)
	}
}

func (r *flexReader) int16s() []int16 {
	n := r.uvarint() - 1
	var out []int16
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.int16())
	}
	return out
}

func (t *sgTopology) encode() []byte {
	w := &flexWriter{}
	w.int16(0)
	w.int32(t.epoch)
	w.uvarint(len(t.subtopologies) + 1)
	for _, s := range t.subtopologies {
		w.str(s.id)
		w.strs(s.sourceTopics)
		w.strs(s.sourceTopicRegex)
		w.topicInfos(s.stateChangelogTopics)
		w.strs(s.repartitionSinkTopics)
		w.topicInfos(s.repartitionSourceTopics)
		w.uvarint(len(s.copartitionGroups) + 1)
		for _, g := range s.copartitionGroups {
			w.int16s(g.sourceTopics)
			w.int16s(g.sourceTopicRegex)
			w.int16s(g.repartitionSourceTopics)
			w.noTags()
		}
		w.noTags()
	}
	w.noTags()
	return w.b
}

func decodeSGTopology(v []byte) (*sgTopology, error) {
	r := &flexReader{b: v}
	t := &sgTopology{}
	r.int16()
	t.epoch = r.int32()
	n := r.uvarint() - 1
	for i := 0; i < n && r.err == nil; i++ {
		s := sgSubtopology{id: r.str(), sourceTopics: r.strs(), sourceTopicRegex: r.strs()}
		s.stateChangelogTopics = r.topicInfos()
		s.repartitionSinkTopics = r.strs()
		s.repartitionSourceTopics = r.topicInfos()
		m := r.uvarint() - 1
		for j := 0; j < m && r.err == nil; j++ {
			g := sgCopartitionGroup{sourceTopics: r.int16s(), sourceTopicRegex: r.int16s(), repartitionSourceTopics: r.int16s()}
			r.skipTags()
			s.copartitionGroups = append(s.copartitionGroups, g)
		}
		r.skipTags()
		t.subtopologies = append(t.subtopologies, s)
	}
	r.skipTags()
	return t, r.err
}
