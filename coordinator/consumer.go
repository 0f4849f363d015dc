package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups: the server computes the assignment ("uniform" or
// "range"), members heartbeat with their epoch, and each member moves from
// its current assignment to its target one by first revoking what it must
// give up and then receiving partitions as others release them.

// cgMemberState is Kafka's MemberState of a consumer group member.
type cgMemberState int8

const (
	cgStable     cgMemberState = 0 // owns exactly its target at the assignment epoch
	cgUnrevoked  cgMemberState = 1 // must revoke pendingRevoke before moving on
	cgUnreleased cgMemberState = 2 // at the assignment epoch, waiting for partitions others still own
)

// Member epochs with a special meaning in ConsumerGroupHeartbeat.
const (
	epochJoin        = 0
	epochLeave       = -1
	epochStaticLeave = -2
)

type cgMember struct {
	id   string
	meta cgMemberMeta
	// epoch is the epoch the member must send; prevEpoch is accepted too
	// when the member's owned partitions are a subset of its assignment
	// (the response that bumped the epoch may have been lost).
	epoch, prevEpoch int32
	state            cgMemberState
	assigned         topicPartitions // partitions the member owns
	pendingRevoke    topicPartitions // partitions it must give up (still owned)
	// assignedAt is the member epoch at which each partition in assigned
	// or pendingRevoke was given to the member (KIP-1251's assignment
	// epochs): an OffsetCommit carrying an older member epoch is accepted
	// for a partition the member has held since that epoch or before.
	// Invariant: its keys are exactly assigned ∪ pendingRevoke (restored by
	// stampAssignment after every change to either). Not persisted: after a
	// load each partition counts from the epoch of the member's last
	// CurrentMemberAssignment record that first held it.
	assignedAt map[memberPartition]int32

	sessionTimer   *shardTimer
	rebalanceTimer *shardTimer // runs while the member must revoke
}

// memberPartition names one partition by topic ID.
type memberPartition struct {
	topic     [16]byte
	partition int32
}

// stampAssignment restores assignedAt's invariant after assigned or
// pendingRevoke changed: partitions no longer held are forgotten, and
// partitions newly held count from the member's current epoch (reconcile
// sets the new epoch before it hands out partitions).
func (m *cgMember) stampAssignment() {
	n := m.assigned.count() + m.pendingRevoke.count()
	if len(m.assignedAt) == n && m.stampsCurrent() {
		return // nothing changed: the common heartbeat
	}
	held := make(map[memberPartition]int32, n)
	for _, tp := range []topicPartitions{m.assigned, m.pendingRevoke} {
		for id, ps := range tp {
			for _, p := range ps {
				k := memberPartition{id, p}
				if at, ok := m.assignedAt[k]; ok {
					held[k] = at
				} else {
					held[k] = m.epoch
				}
			}
		}
	}
	m.assignedAt = held
}

// stampsCurrent reports whether every held partition has a stamp.
func (m *cgMember) stampsCurrent() bool {
	for _, tp := range []topicPartitions{m.assigned, m.pendingRevoke} {
		for id, ps := range tp {
			for _, p := range ps {
				if _, ok := m.assignedAt[memberPartition{id, p}]; !ok {
					return false
				}
			}
		}
	}
	return true
}

// heldSince reports whether m holds the partition and has held it since
// epoch or before (KIP-1251).
func (m *cgMember) heldSince(epoch int32, id [16]byte, p int32) bool {
	at, ok := m.assignedAt[memberPartition{id, p}]
	return ok && at <= epoch
}

func (m *cgMember) rebalanceTimeout() time.Duration {
	if m.meta.rebalanceTimeout <= 0 {
		return 5 * time.Minute
	}
	return time.Duration(m.meta.rebalanceTimeout) * time.Millisecond
}

// consumerGroup is the KIP-848 state of a group (group.cg).
type consumerGroup struct {
	epoch           int32 // group epoch: bumped by membership/subscription/metadata changes
	assignmentEpoch int32 // epoch of target; target is current iff assignmentEpoch == epoch
	members         map[string]*cgMember
	target          map[string]topicPartitions
	// metadataHash summarizes the subscribed topics' names, IDs and
	// partition counts; a change bumps the group epoch.
	metadataHash int64
	assignor     string // the assignor last used
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: make(map[string]*cgMember), target: make(map[string]topicPartitions), assignor: assignorUniform}
}

// stateName is the group state as ConsumerGroupDescribe and ListGroups show it.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.assignmentEpoch < cg.epoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != cgStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (cg *consumerGroup) staticMember(instanceID string) *cgMember {
	for _, m := range cg.members {
		if m.meta.instanceID != nil && *m.meta.instanceID == instanceID {
			return m
		}
	}
	return nil
}

// ConsumerGroupHeartbeat handles ConsumerGroupHeartbeat (key 68) v0–v1,
// the KIP-848 consumer protocol. client is as for JoinGroup.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, client JoinClient, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	errResp := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		r := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		r.ErrorCode = code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		return r
	}
	if code, msg := validateConsumerHeartbeat(req); code != 0 {
		return errResp(code, msg), nil
	}
	s, code := c.lookup(req.Group)
	if code != 0 {
		return errResp(code, ""), nil
	}
	return await(ctx, s, func(reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
		s.consumerHeartbeat(client, req, reply)
	}, func() *kmsg.ConsumerGroupHeartbeatResponse { return errResp(errNotCoordinator, "") })
}

// validateConsumerHeartbeat checks the request as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid.
func validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	invalid := kerr.InvalidRequest.Code
	if req.Group == "" {
		return invalid, "GroupId can't be empty."
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		return invalid, "InstanceId can't be empty."
	}
	if req.RackID != nil && *req.RackID == "" {
		return invalid, "RackId can't be empty."
	}
	if req.Version >= 1 && req.MemberID == "" {
		return invalid, "MemberId can't be empty."
	}
	switch {
	case req.MemberEpoch == epochJoin:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid, "RebalanceTimeoutMs must be provided in first request."
		}
		if len(req.Topics) != 0 {
			return invalid, "TopicPartitions must be empty when (re-)joining."
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	case req.MemberEpoch > 0 || req.MemberEpoch == epochLeave:
		if req.MemberID == "" {
			return invalid, "MemberId can't be empty."
		}
	case req.MemberEpoch == epochStaticLeave:
		if req.MemberID == "" {
			return invalid, "MemberId can't be empty."
		}
		if req.InstanceID == nil {
			return invalid, "InstanceId can't be null when MemberEpoch is -2."
		}
	default:
		return invalid, fmt.Sprintf("MemberEpoch %d is invalid.", req.MemberEpoch)
	}
	if req.ServerAssignor != nil && !slices.Contains(supportedAssignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor.Code, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: " + strings.Join(supportedAssignors, ", ") + "."
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code, err.Error()
		}
	}
	return 0, ""
}

func randomMemberID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// consumerHeartbeat is the KIP-848 heartbeat. REQUIRES: shard event.
func (s *shard) consumerHeartbeat(client JoinClient, req *kmsg.ConsumerGroupHeartbeatRequest, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	fail := func(code int16, msg string) {
		r := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		r.ErrorCode = code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		reply(r)
	}
	g := s.groups[req.Group]
	var recs []record
	if g != nil && g.cg == nil {
		if len(g.members) > 0 || g.state != groupEmpty || (g.sg != nil && len(g.sg.members) > 0) {
			fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a consumer group.")
			return
		}
		// An empty classic group (or one holding only offsets) becomes a
		// consumer group, keeping its offsets.
		if g.protocolType != "" || g.generation != 0 {
			recs = append(recs, g.deletionRecords()...)
		}
		g.sg = nil
		g.resetToSimple()
		g.cg = newConsumerGroup()
		g.protocolType = "consumer"
	}
	if g == nil {
		if req.MemberEpoch != epochJoin {
			fail(errUnknownMember, "Group "+req.Group+" not found.")
			return
		}
		g = s.newGroup(req.Group)
		g.cg = newConsumerGroup()
		g.protocolType = "consumer"
	}
	if g.state == groupDead {
		fail(errCoordNotAvailable, "")
		return
	}
	cg := g.cg
	owned := ownedPartitions(req.Topics)

	var m *cgMember
	// bump says the group epoch must advance (once per heartbeat, as Kafka:
	// a new member, a changed subscription, or changed topic metadata).
	bump := false
	switch req.MemberEpoch {
	case epochJoin:
		if req.InstanceID != nil {
			if old := cg.staticMember(*req.InstanceID); old != nil && old.id != req.MemberID {
				if old.epoch != epochStaticLeave {
					fail(kerr.UnreleasedInstanceID.Code, "Static member with instance id "+*req.InstanceID+" is still in use.")
					return
				}
				m = g.replaceStaticConsumer(old, req.MemberID, &recs)
			}
		}
		if m == nil {
			id := req.MemberID
			if id == "" {
				id = randomMemberID()
			}
			m = cg.members[id]
			if m == nil {
				m = &cgMember{id: id, assigned: make(topicPartitions), pendingRevoke: make(topicPartitions)}
				cg.members[id] = m
				if len(cg.members) > s.cfg.ConsumerGroupMaxSize {
					delete(cg.members, id)
					fail(kerr.GroupMaxSizeReached.Code, "")
					return
				}
				bump = true
			} else {
				// A known member rejoining has lost its partitions.
				s.stopTimer(m.rebalanceTimer)
				m.epoch, m.prevEpoch, m.state = 0, 0, cgStable
				m.assigned, m.pendingRevoke = make(topicPartitions), make(topicPartitions)
				m.assignedAt = nil
			}
		}
	case epochLeave, epochStaticLeave:
		m = cg.members[req.MemberID]
		if m == nil {
			fail(errUnknownMember, "")
			return
		}
		r := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		r.MemberID = &m.id
		r.MemberEpoch = req.MemberEpoch
		if req.MemberEpoch == epochStaticLeave && m.meta.instanceID != nil {
			// The static member keeps its assignment until its session ends
			// or its instance rejoins (KIP-848 static membership).
			m.prevEpoch, m.epoch = m.epoch, epochStaticLeave
			recs = append(recs, g.cgCurrentRecord(m))
		} else {
			g.removeConsumer(m, &recs)
		}
		s.write(recs, func(code int16) {
			r.ErrorCode = code
			reply(r)
		})
		return
	default:
		m = cg.members[req.MemberID]
		if m == nil {
			fail(errUnknownMember, "")
			return
		}
		if req.InstanceID != nil && (m.meta.instanceID == nil || *m.meta.instanceID != *req.InstanceID) {
			fail(errFencedInstance, "")
			return
		}
		if req.MemberEpoch != m.epoch {
			if !(req.MemberEpoch == m.prevEpoch && owned != nil && owned.subsetOf(m.assigned)) {
				fail(kerr.FencedMemberEpoch.Code, fmt.Sprintf("The member epoch %d is not the expected %d.", req.MemberEpoch, m.epoch))
				return
			}
		}
	}

	// Update the member's subscription and metadata.
	before := m.meta
	meta := m.meta
	meta.clientID, meta.clientHost = client.ClientID, client.ClientHost
	if req.InstanceID != nil {
		meta.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		meta.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis > 0 {
		meta.rebalanceTimeout = req.RebalanceTimeoutMillis
	}
	if req.SubscribedTopicNames != nil {
		meta.subscribedTopics = slices.Clone(req.SubscribedTopicNames)
		sort.Strings(meta.subscribedTopics)
	}
	if req.SubscribedTopicRegex != nil {
		meta.regex = req.SubscribedTopicRegex
		if *meta.regex == "" {
			meta.regex = nil
		}
	}
	if req.ServerAssignor != nil {
		meta.serverAssignor = req.ServerAssignor
	}
	if !metaEqual(&before, &meta) {
		subscriptionChanged := !slices.Equal(before.subscribedTopics, meta.subscribedTopics) || !strPtrEqual(before.regex, meta.regex)
		m.meta = meta
		recs = append(recs, record{key: cgKey(keyConsumerGroupMemberMetadata, g.id, &m.id), value: meta.encode()})
		if subscriptionChanged {
			bump = true
		}
	}
	// Topic metadata changes (partitions added, topics created or deleted)
	// also start a new group epoch.
	topics := s.subscribedTopics(cg)
	if h := metadataHash(topics); h != cg.metadataHash {
		cg.metadataHash = h
		bump = true
	}
	if bump {
		g.bumpEpoch(&recs)
	}
	if cg.assignmentEpoch < cg.epoch {
		g.computeTarget(topics, &recs)
	}
	beforeAssigned := m.assigned.clone()
	beforeEpoch, beforeState := m.epoch, m.state
	g.reconcile(m, owned)
	changed := m.epoch != beforeEpoch || m.state != beforeState || !m.assigned.equal(beforeAssigned)
	if changed {
		recs = append(recs, g.cgCurrentRecord(m))
	}
	g.scheduleConsumerSession(m)

	r := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	r.MemberID = &m.id
	r.MemberEpoch = m.epoch
	r.HeartbeatIntervalMillis = int32(s.consumerHeartbeatInterval(g.id) / time.Millisecond)
	if changed || req.MemberEpoch == epochJoin || (owned != nil && !owned.equal(m.assigned)) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, id := range m.assigned.sortedIDs() {
			a.Topics = append(a.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: id, Partitions: slices.Clone(m.assigned[id])})
		}
		r.Assignment = &a
	}
	s.write(recs, func(code int16) {
		if code != 0 {
			fail(code, "")
			return
		}
		reply(r)
	})
}

func metaEqual(a, b *cgMemberMeta) bool {
	return strPtrEqual(a.instanceID, b.instanceID) && strPtrEqual(a.rackID, b.rackID) &&
		a.clientID == b.clientID && a.clientHost == b.clientHost &&
		slices.Equal(a.subscribedTopics, b.subscribedTopics) && strPtrEqual(a.regex, b.regex) &&
		a.rebalanceTimeout == b.rebalanceTimeout && strPtrEqual(a.serverAssignor, b.serverAssignor)
}

func strPtrEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func ownedPartitions(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) topicPartitions {
	if ts == nil {
		return nil
	}
	out := make(topicPartitions)
	for _, t := range ts {
		for _, p := range t.Partitions {
			out.add(t.TopicID, p)
		}
	}
	return out
}

func (tp topicPartitions) subsetOf(o topicPartitions) bool {
	for id, ps := range tp {
		for _, p := range ps {
			if !o.has(id, p) {
				return false
			}
		}
	}
	return true
}

func (g *group) bumpEpoch(recs *[]record) {
	g.cg.epoch++
	*recs = append(*recs, record{key: cgKey(keyConsumerGroupMetadata, g.id, nil), value: cgEpochValue(g.cg.epoch, g.cg.metadataHash)})
}

func (g *group) cgCurrentRecord(m *cgMember) record {
	c := cgCurrent{memberEpoch: m.epoch, previousEpoch: m.prevEpoch, state: int8(m.state), assigned: m.assigned, pendingRevoke: m.pendingRevoke}
	return record{key: cgKey(keyConsumerGroupCurrentAssigment, g.id, &m.id), value: c.encode()}
}

// subscribedTopics resolves every member's subscription (names and regex)
// against the existing topics, sorted by name.
func (s *shard) subscribedTopics(cg *consumerGroup) []topicInfo {
	tm := s.cfg.Topics
	if tm == nil {
		return nil
	}
	names := make(map[string]bool)
	var regexes []*regexp.Regexp
	for _, m := range cg.members {
		for _, t := range m.meta.subscribedTopics {
			names[t] = true
		}
		if m.meta.regex != nil {
			if re, err := regexp.Compile(*m.meta.regex); err == nil {
				regexes = append(regexes, re)
			}
		}
	}
	if len(regexes) > 0 {
		for _, t := range tm.TopicNames() {
			for _, re := range regexes {
				if re.MatchString(t) {
					names[t] = true
				}
			}
		}
	}
	var out []topicInfo
	for n := range names {
		if id, parts, ok := tm.TopicByName(n); ok {
			out = append(out, topicInfo{n, id, parts})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func metadataHash(topics []topicInfo) int64 {
	if len(topics) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, t := range topics {
		fmt.Fprintf(h, "%s/%x/%d,", t.name, t.id, t.parts)
	}
	return int64(h.Sum64())
}

// memberTopics is the set of existing topics m subscribes to.
func memberTopics(m *cgMember, topics []topicInfo) map[string]bool {
	out := make(map[string]bool)
	var re *regexp.Regexp
	if m.meta.regex != nil {
		re, _ = regexp.Compile(*m.meta.regex)
	}
	for _, t := range topics {
		if slices.Contains(m.meta.subscribedTopics, t.name) || (re != nil && re.MatchString(t.name)) {
			out[t.name] = true
		}
	}
	return out
}

// computeTarget runs the assignor for the current group epoch and records
// the target assignment.
func (g *group) computeTarget(topics []topicInfo, recs *[]record) {
	cg := g.cg
	name := assignorUniform
	// Kafka uses the assignor the members ask for (the most popular), or
	// the first configured.
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.meta.serverAssignor != nil {
			votes[*m.meta.serverAssignor]++
		}
	}
	for _, a := range supportedAssignors {
		if votes[a] > votes[name] {
			name = a
		}
	}
	cg.assignor = name
	var members []assignorMember
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		members = append(members, assignorMember{id: id, topics: memberTopics(m, topics), prev: cg.target[id]})
	}
	next := assign(name, members, topics)
	for _, id := range cg.sortedMemberIDs() {
		if old, ok := cg.target[id]; !ok || !old.equal(next[id]) {
			*recs = append(*recs, record{key: cgKey(keyConsumerGroupTargetMember, g.id, &id), value: cgTargetMemberValue(next[id])})
		}
	}
	cg.target = next
	cg.assignmentEpoch = cg.epoch
	*recs = append(*recs, record{key: cgKey(keyConsumerGroupTargetMetadata, g.id, nil), value: cgTargetMetadataValue(cg.assignmentEpoch)})
}

// reconcile moves m toward its target assignment, as Kafka's
// CurrentAssignmentBuilder: partitions to give up are revoked first (the
// member keeps its epoch until it confirms by no longer reporting them);
// then the member advances to the assignment epoch and gets the target
// partitions that no other member still owns.
func (g *group) reconcile(m *cgMember, owned topicPartitions) {
	cg := g.cg
	defer m.stampAssignment()
	if m.epoch == epochStaticLeave {
		return
	}
	if m.state == cgUnrevoked {
		for id, ps := range m.pendingRevoke {
			for _, p := range ps {
				if owned == nil || owned.has(id, p) {
					return // still revoking
				}
			}
		}
		m.pendingRevoke = make(topicPartitions)
		g.s.stopTimer(m.rebalanceTimer)
		m.state = cgStable
	}
	if m.epoch == cg.assignmentEpoch && m.state == cgStable {
		return
	}
	target := cg.target[m.id]
	if target == nil {
		target = topicPartitions{}
	}
	kept, revoke := make(topicPartitions), make(topicPartitions)
	for id, ps := range m.assigned {
		for _, p := range ps {
			if target.has(id, p) {
				kept.add(id, p)
			} else {
				revoke.add(id, p)
			}
		}
	}
	if revoke.count() > 0 {
		m.assigned, m.pendingRevoke, m.state = kept, revoke, cgUnrevoked
		gen := m.epoch
		g.s.stopTimer(m.rebalanceTimer)
		m.rebalanceTimer = g.s.schedule(m.rebalanceTimeout(), func() {
			if cg.members[m.id] == m && m.state == cgUnrevoked && m.epoch == gen {
				g.s.c.log.Info("consumer group member did not revoke in time", "group", g.id, "member", m.id)
				var recs []record
				g.removeConsumer(m, &recs)
				g.s.write(recs, func(int16) {})
			}
		})
		return
	}
	unreleased := false
	next := kept.clone()
	for id, ps := range target {
		for _, p := range ps {
			if kept.has(id, p) {
				continue
			}
			if g.ownedByOther(m, id, p) {
				unreleased = true
				continue
			}
			next.add(id, p)
		}
	}
	m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
	m.assigned = next
	m.state = cgStable
	if unreleased {
		m.state = cgUnreleased
	}
}

func (g *group) ownedByOther(m *cgMember, id [16]byte, p int32) bool {
	for _, o := range g.cg.members {
		if o != m && (o.assigned.has(id, p) || o.pendingRevoke.has(id, p)) {
			return true
		}
	}
	return false
}

// removeConsumer drops m from the group (left, fenced or expired).
func (g *group) removeConsumer(m *cgMember, recs *[]record) {
	cg := g.cg
	g.s.stopTimer(m.sessionTimer)
	g.s.stopTimer(m.rebalanceTimer)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	id := m.id
	*recs = append(*recs,
		record{key: cgKey(keyConsumerGroupCurrentAssigment, g.id, &id)},
		record{key: cgKey(keyConsumerGroupTargetMember, g.id, &id)},
		record{key: cgKey(keyConsumerGroupMemberMetadata, g.id, &id)},
	)
	g.bumpEpoch(recs)
	if len(cg.members) == 0 {
		g.stateTime = g.s.now() // offsets retention counts from here
	}
}

// replaceStaticConsumer hands a static member's place (and assignment) to a
// new member ID.
func (g *group) replaceStaticConsumer(old *cgMember, newID string, recs *[]record) *cgMember {
	cg := g.cg
	if newID == "" {
		newID = randomMemberID()
	}
	m := &cgMember{
		id: newID, meta: old.meta, epoch: old.prevEpoch, prevEpoch: old.prevEpoch, state: old.state,
		assigned: old.assigned, pendingRevoke: old.pendingRevoke, assignedAt: old.assignedAt,
	}
	target := cg.target[old.id]
	g.s.stopTimer(old.sessionTimer)
	g.s.stopTimer(old.rebalanceTimer)
	delete(cg.members, old.id)
	delete(cg.target, old.id)
	oldID := old.id
	*recs = append(*recs,
		record{key: cgKey(keyConsumerGroupCurrentAssigment, g.id, &oldID)},
		record{key: cgKey(keyConsumerGroupTargetMember, g.id, &oldID)},
		record{key: cgKey(keyConsumerGroupMemberMetadata, g.id, &oldID)},
	)
	cg.members[newID] = m
	if target != nil {
		cg.target[newID] = target
		*recs = append(*recs, record{key: cgKey(keyConsumerGroupTargetMember, g.id, &newID), value: cgTargetMemberValue(target)})
	}
	*recs = append(*recs, record{key: cgKey(keyConsumerGroupMemberMetadata, g.id, &newID), value: m.meta.encode()})
	return m
}

// scheduleConsumerSession (re)starts m's session timer
// (the group's consumer.session.timeout.ms, else group.consumer.session.timeout.ms).
func (g *group) scheduleConsumerSession(m *cgMember) {
	g.s.stopTimer(m.sessionTimer)
	m.sessionTimer = g.s.schedule(g.s.consumerSessionTimeout(g.id), func() {
		if g.cg == nil || g.cg.members[m.id] != m {
			return
		}
		g.s.c.log.Info("consumer group member session expired", "group", g.id, "member", m.id)
		var recs []record
		g.removeConsumer(m, &recs)
		g.s.write(recs, func(int16) {})
	})
}

// ConsumerGroupDescribe handles ConsumerGroupDescribe (key 69) v0–v1.
func (c *Coordinator) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	groups, err := describeEach(ctx, c, req.Groups,
		func(id string) kmsg.ConsumerGroupDescribeResponseGroup {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.AuthorizedOperations = id, math.MinInt32
			return dg
		},
		func(dg *kmsg.ConsumerGroupDescribeResponseGroup, code int16) { dg.ErrorCode = code },
		func(s *shard, dg kmsg.ConsumerGroupDescribeResponseGroup) kmsg.ConsumerGroupDescribeResponseGroup {
			return s.describeConsumerGroup(req.Version, dg)
		})
	if err != nil {
		return nil, err
	}
	resp.Groups = groups
	return resp, nil
}

func (s *shard) describeConsumerGroup(version int16, dg kmsg.ConsumerGroupDescribeResponseGroup) kmsg.ConsumerGroupDescribeResponseGroup {
	g := s.groups[dg.Group]
	if g == nil || g.cg == nil || g.state == groupDead {
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + dg.Group + " not found."
		if g != nil && g.cg == nil {
			msg = "Group " + dg.Group + " is not a consumer group."
		}
		dg.ErrorMessage = &msg
		return dg
	}
	cg := g.cg
	dg.State = cg.stateName()
	dg.Epoch = cg.epoch
	dg.AssignmentEpoch = cg.assignmentEpoch
	dg.AssignorName = cg.assignor
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.meta.instanceID
		dm.RackID = m.meta.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.meta.clientID
		dm.ClientHost = m.meta.clientHost
		dm.SubscribedTopics = slices.Clone(m.meta.subscribedTopics)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.SubscribedTopicRegex = m.meta.regex
		dm.Assignment = s.describeAssignment(m.assigned)
		dm.TargetAssignment = s.describeAssignment(cg.target[m.id])
		dm.MemberType = 1 // consumer protocol
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

func (s *shard) describeAssignment(tp topicPartitions) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range tp.sortedIDs() {
		atp := kmsg.AssignmentTopicPartition{TopicID: id, Partitions: slices.Clone(tp[id])}
		if s.cfg.Topics != nil {
			atp.Topic, _, _ = s.cfg.Topics.TopicByID(id)
		}
		a.TopicPartitions = append(a.TopicPartitions, atp)
	}
	return a
}

// applyConsumerRecord replays a KIP-848 record.
func (s *shard) applyConsumerRecord(key, value []byte) error {
	kind, groupID, memberID, err := decodeCGKey(key)
	if err != nil {
		return err
	}
	if kind > keyConsumerGroupCurrentAssigment {
		return nil // other group types (share, streams): not served here
	}
	g := s.groups[groupID]
	if g == nil {
		if value == nil {
			return nil
		}
		g = s.newGroup(groupID)
	}
	if g.cg == nil {
		g.resetToSimple()
		g.cg = newConsumerGroup()
		g.protocolType = "consumer"
	}
	cg := g.cg
	member := func() *cgMember {
		m := cg.members[memberID]
		if m == nil {
			m = &cgMember{id: memberID, assigned: make(topicPartitions), pendingRevoke: make(topicPartitions)}
			cg.members[memberID] = m
		}
		return m
	}
	switch kind {
	case keyConsumerGroupMetadata:
		if value == nil {
			// The group is deleted; offsets (if any) stay with a simple group.
			g.cg = nil
			g.resetToSimple()
			s.maybeDropLoadedGroup(g)
			return nil
		}
		cg.epoch, cg.metadataHash, err = decodeCGEpochValue(value)
	case keyConsumerGroupPartitionMeta:
	case keyConsumerGroupMemberMetadata:
		if value == nil {
			delete(cg.members, memberID)
			return nil
		}
		member().meta, err = decodeCGMemberMeta(value)
	case keyConsumerGroupTargetMetadata:
		if value != nil {
			cg.assignmentEpoch, _, err = decodeCGEpochValue(value)
		}
	case keyConsumerGroupTargetMember:
		if value == nil {
			delete(cg.target, memberID)
			return nil
		}
		cg.target[memberID], err = decodeCGTargetMember(value)
	case keyConsumerGroupCurrentAssigment:
		if value == nil {
			if m := cg.members[memberID]; m != nil {
				m.assigned, m.pendingRevoke = make(topicPartitions), make(topicPartitions)
				m.stampAssignment()
			}
			return nil
		}
		var cur cgCurrent
		if cur, err = decodeCGCurrent(value); err == nil {
			m := member()
			m.epoch, m.prevEpoch, m.state = cur.memberEpoch, cur.previousEpoch, cgMemberState(cur.state)
			m.assigned, m.pendingRevoke = cur.assigned, cur.pendingRevoke
			m.stampAssignment()
		}
	}
	return err
}
