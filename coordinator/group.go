package coordinator

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is a classic group's state, named as Kafka names it in
// DescribeGroups and ListGroups.
type groupState int8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

func (st groupState) String() string {
	switch st {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// offsetEntry is one committed offset.
type offsetEntry struct {
	offset          int64
	leaderEpoch     int32 // -1 if unknown
	metadata        string
	commitTimestamp int64 // ms
	expireTimestamp int64 // ms, -1 if none (only OffsetCommit v2-v4 set it)
	topicID         [16]byte
}

type protocol struct {
	name     string
	metadata []byte
}

// member is a classic group member.
type member struct {
	id               string
	instanceID       *string // static membership (KIP-345)
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []protocol // in the member's preference order
	assignment       []byte

	// joinReply is non-nil while the member waits for its JoinGroup to
	// complete ("awaiting join").
	joinReply func(*kmsg.JoinGroupResponse)
	// syncReply is non-nil while the member waits in SyncGroup for the
	// leader's assignment ("awaiting sync").
	syncReply func(code int16, assignment []byte)

	heartbeatTimer *shardTimer
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

func (m *member) supports(name string) bool {
	for _, p := range m.protocols {
		if p.name == name {
			return true
		}
	}
	return false
}

// sameProtocols reports whether ps equals the member's protocols (names and
// metadata, in order), as Kafka's member.matches does.
func (m *member) sameProtocols(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && string(a.metadata) == string(b.metadata)
	})
}

// group is one group's state: classic membership and committed offsets.
type group struct {
	s  *shard
	id string

	state     groupState
	stateTime time.Time // when state last changed (CurrentStateTimestamp)

	protocolType string // "" for a group that only holds offsets
	protocol     string // selected protocol; "" when none
	generation   int32
	leader       string // member ID of the leader; "" when none

	// members and order hold the same members; order is join order, which
	// makes leader choice and member lists deterministic.
	members map[string]*member
	order   []string
	// static maps group.instance.id to the member ID currently holding it.
	static map[string]string
	// pending holds member IDs handed out with MEMBER_ID_REQUIRED (KIP-394)
	// and not yet used to join, each with its expiry timer.
	pending map[string]*shardTimer

	// joinTimer completes the join phase of a rebalance; initialDelay says
	// it is group.initial.rebalance.delay.ms's timer, which, as Kafka's
	// InitialDelayedJoin, never completes early.
	joinTimer      *shardTimer
	initialDelay   bool
	newMemberAdded bool
	// pendingSync are the members that have not sent SyncGroup since the
	// join phase completed; syncTimer removes them after the rebalance
	// timeout.
	pendingSync map[string]struct{}
	syncTimer   *shardTimer

	// cg is non-nil for a KIP-848 consumer group; then the classic fields
	// above stay empty (state Empty, no members).
	cg *consumerGroup
	// sg is non-nil for a KIP-1071 streams group (streams.go); then cg is
	// nil and the classic fields stay empty.
	sg *streamsGroup

	offsets map[string]map[int32]*offsetEntry
	// pendingCommits counts offset writes in flight per partition; such
	// partitions are not expired.
	pendingCommits map[topicPartition]int
}

type topicPartition struct {
	topic     string
	partition int32
}

func newGroup(s *shard, id string, now time.Time) *group {
	return &group{
		s:              s,
		id:             id,
		state:          groupEmpty,
		stateTime:      now,
		members:        make(map[string]*member),
		static:         make(map[string]string),
		pending:        make(map[string]*shardTimer),
		offsets:        make(map[string]map[int32]*offsetEntry),
		pendingCommits: make(map[topicPartition]int),
	}
}

func (g *group) transition(st groupState) {
	g.state = st
	g.stateTime = g.s.now()
}

func (g *group) setOffset(topic string, partition int32, e *offsetEntry) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = make(map[int32]*offsetEntry)
		g.offsets[topic] = ps
	}
	ps[partition] = e
}

func (g *group) deleteOffset(topic string, partition int32) {
	ps := g.offsets[topic]
	delete(ps, partition)
	if len(ps) == 0 {
		delete(g.offsets, topic)
	}
}

func (g *group) numOffsets() int {
	n := 0
	for _, ps := range g.offsets {
		n += len(ps)
	}
	return n
}

// isSimple reports whether the group has never had members through the
// classic protocol: Kafka's "simple" or standalone group that only stores
// offsets.
func (g *group) isSimple() bool { return g.protocolType == "" && len(g.members) == 0 }

// resetToSimple forgets the group's membership metadata (a replayed group
// tombstone), keeping offsets.
func (g *group) resetToSimple() {
	g.protocolType, g.protocol, g.leader = "", "", ""
	g.generation = 0
	g.members = make(map[string]*member)
	g.order = nil
	g.static = make(map[string]string)
	g.state = groupEmpty
}

// loadMetadata applies a replayed GroupMetadataValue: a group with members
// is Stable (members must heartbeat again within their session timeout), one
// without is Empty, as Kafka loads groups.
func (g *group) loadMetadata(v *kmsg.GroupMetadataValue, now time.Time) {
	g.resetToSimple()
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	for i := range v.Members {
		vm := &v.Members[i]
		m := &member{
			id:               vm.MemberID,
			instanceID:       vm.InstanceID,
			clientID:         vm.ClientID,
			clientHost:       vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []protocol{{name: g.protocol, metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.addMemberRaw(m)
	}
	if len(g.members) > 0 {
		g.state = groupStable
	}
	g.stateTime = now
	if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
}

// metadataRecord is the GroupMetadata record describing the group now, with
// assignments taken from assign (or each member's current assignment when
// assign is nil).
func (g *group) metadataRecord(assign map[string][]byte) record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTime.UnixMilli()
	for _, id := range g.order {
		m := g.members[id]
		a := m.assignment
		if assign != nil {
			a = assign[id]
		}
		if a == nil {
			a = []byte{}
		}
		sub := m.metadataFor(g.protocol)
		if sub == nil {
			sub = []byte{}
		}
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{
			MemberID:               m.id,
			InstanceID:             m.instanceID,
			ClientID:               m.clientID,
			ClientHost:             m.clientHost,
			RebalanceTimeoutMillis: int32(m.rebalanceTimeout / time.Millisecond),
			SessionTimeoutMillis:   int32(m.sessionTimeout / time.Millisecond),
			Subscription:           sub,
			Assignment:             a,
		})
	}
	return record{key: groupKey(g.id), value: v.AppendTo(nil)}
}

// addMemberRaw inserts m without any rebalance logic.
func (g *group) addMemberRaw(m *member) {
	if len(g.members) == 0 && g.protocolType == "" {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
}

// removeMemberRaw drops m, answering its waiting JoinGroup/SyncGroup with
// code, and elects a new leader if m led.
func (g *group) removeMemberRaw(m *member, code int16) {
	g.s.stopTimer(m.heartbeatTimer)
	if m.joinReply != nil {
		reply := m.joinReply
		m.joinReply = nil
		reply(g.joinError(m.id, code))
	}
	if m.syncReply != nil {
		reply := m.syncReply
		m.syncReply = nil
		reply(code, nil)
	}
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		// Prefer a member that is rejoining, so the join can complete.
		for _, id := range g.order {
			if g.members[id].joinReply != nil {
				g.leader = id
				break
			}
		}
		if g.leader == "" && len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	if len(g.members) == 0 {
		// Kafka keeps the protocol type of an empty group (it is shown by
		// ListGroups) but a new first member may set it anew.
		g.leader = ""
	}
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// candidateProtocols are the protocols every member supports, in the order
// the first member lists them.
func (g *group) candidateProtocols() []string {
	if len(g.order) == 0 {
		return nil
	}
	var out []string
	for _, p := range g.members[g.order[0]].protocols {
		all := true
		for _, m := range g.members {
			if !m.supports(p.name) {
				all = false
				break
			}
		}
		if all {
			out = append(out, p.name)
		}
	}
	return out
}

// selectProtocol chooses the protocol as Kafka does: among those every member
// supports, each member votes for the first one in its own preference order,
// and the most votes win (ties go to the first member's preference).
func (g *group) selectProtocol() string {
	candidates := g.candidateProtocols()
	if len(candidates) == 0 {
		return ""
	}
	votes := make(map[string]int)
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if slices.Contains(candidates, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// supportsProtocols reports whether a joining member with this protocol type
// and these protocols may join, as Kafka's supportsProtocols.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	candidates := g.candidateProtocols()
	for _, p := range ps {
		if slices.Contains(candidates, p.name) {
			return true
		}
	}
	return false
}

// failAllWaiters answers every blocked JoinGroup/SyncGroup with code (used by
// unload).
func (g *group) failAllWaiters(code int16) {
	for _, id := range g.order {
		m := g.members[id]
		if m.joinReply != nil {
			reply := m.joinReply
			m.joinReply = nil
			reply(g.joinError(m.id, code))
		}
		if m.syncReply != nil {
			reply := m.syncReply
			m.syncReply = nil
			reply(code, nil)
		}
	}
}

func (g *group) joinError(memberID string, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode = code
	r.Generation = -1
	r.MemberID = memberID
	return r
}

// isEmpty reports whether the group has no members of either protocol.
func (g *group) isEmpty() bool {
	if g.cg != nil {
		return len(g.cg.members) == 0
	}
	if g.sg != nil {
		return len(g.sg.members) == 0
	}
	return g.state == groupEmpty
}

// deletionRecords are the tombstones that delete the group's membership
// state (not its offsets). REQUIRES: g.isEmpty().
func (g *group) deletionRecords() []record {
	if g.sg != nil {
		return g.streamsDeletionRecords()
	}
	if g.cg != nil {
		return []record{
			{key: cgKey(keyConsumerGroupTargetMetadata, g.id, nil)},
			{key: cgKey(keyConsumerGroupMetadata, g.id, nil)},
		}
	}
	return []record{groupTombstone(g.id)}
}

// stateName is the state ListGroups shows.
func (g *group) stateName() string {
	if g.sg != nil {
		return g.s.streamsStateName(g)
	}
	if g.cg != nil {
		if g.state == groupDead {
			return "Dead"
		}
		return g.cg.stateName()
	}
	return g.state.String()
}
