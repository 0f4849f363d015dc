package coordinator

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newMemberID is Kafka's member ID form: clientID (group.instance.id for a
// static member) + "-" + a random UUID.
func (c *Coordinator) newMemberID(clientID string, instanceID *string) string {
	if instanceID != nil {
		clientID = *instanceID
	}
	if c.memberIDs != nil {
		return c.memberIDs(clientID)
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// JoinClient identifies the connection a JoinGroup came from; Kafka records
// both in the member (DescribeGroups shows them).
type JoinClient struct {
	ClientID   string
	ClientHost string // e.g. "/127.0.0.1", as Kafka formats it
}

// JoinGroup handles JoinGroup (key 11) v0–v9. It blocks until the member's
// join completes (the rebalance's join phase ends), it is answered with an
// error, or ctx ends (then the member stays until its session expires, as in
// Kafka when a client disconnects).
func (c *Coordinator) JoinGroup(ctx context.Context, client JoinClient, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	errResp := func(code int16) *kmsg.JoinGroupResponse {
		r := kmsg.NewPtrJoinGroupResponse()
		r.ErrorCode = code
		r.Generation = -1
		r.MemberID = req.MemberID
		return finishJoin(req.Version, r)
	}
	if req.Group == "" {
		return errResp(kerr.InvalidGroupID.Code), nil
	}
	st := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if st < c.cfg.GroupMinSessionTimeout || st > c.cfg.GroupMaxSessionTimeout {
		return errResp(kerr.InvalidSessionTimeout.Code), nil
	}
	s, code := c.lookup(req.Group)
	if code != 0 {
		return errResp(code), nil
	}
	return await(ctx, s, func(reply func(*kmsg.JoinGroupResponse)) {
		s.joinGroup(client, req, func(r *kmsg.JoinGroupResponse) { reply(finishJoin(req.Version, r)) })
	}, func() *kmsg.JoinGroupResponse { return errResp(errNotCoordinator) })
}

// finishJoin sets the version and fills fields that older versions cannot
// encode as null.
func finishJoin(version int16, r *kmsg.JoinGroupResponse) *kmsg.JoinGroupResponse {
	r.Version = version
	if r.Protocol == nil && version < 7 {
		empty := ""
		r.Protocol = &empty
	}
	return r
}

func joinProtocols(req *kmsg.JoinGroupRequest) []protocol {
	ps := make([]protocol, 0, len(req.Protocols))
	for _, p := range req.Protocols {
		ps = append(ps, protocol{name: p.Name, metadata: p.Metadata})
	}
	return ps
}

// joinGroup is Kafka's classic join: REQUIRES shard event. reply is called
// exactly once, now or when the join phase completes.
func (s *shard) joinGroup(client JoinClient, req *kmsg.JoinGroupRequest, reply func(*kmsg.JoinGroupResponse)) {
	g := s.groups[req.Group]
	created := false
	if g == nil {
		if req.MemberID != "" {
			reply(joinErrorResp(req.MemberID, errUnknownMember))
			return
		}
		g = s.newGroup(req.Group)
		created = true
	}
	if g.sg != nil {
		if len(g.sg.members) > 0 {
			reply(joinErrorResp(req.MemberID, kerr.InconsistentGroupProtocol.Code))
			return
		}
		// An empty streams group becomes a classic group.
		recs := g.deletionRecords()
		g.sg = nil
		g.resetToSimple()
		s.write(recs, func(int16) {})
	}
	if g.cg != nil {
		if len(g.cg.members) > 0 {
			// Kafka lets classic members join a consumer group (online
			// migration); sluice does not.
			reply(joinErrorResp(req.MemberID, kerr.InconsistentGroupProtocol.Code))
			return
		}
		// An empty consumer group becomes a classic group.
		recs := g.deletionRecords()
		g.cg = nil
		g.resetToSimple()
		s.write(recs, func(int16) {})
	}
	code := g.join(client, req, reply)
	if code != 0 {
		reply(joinErrorResp(req.MemberID, code))
		if created && len(g.members) == 0 && len(g.pending) == 0 && g.numOffsets() == 0 && s.groups[g.id] == g {
			delete(s.groups, g.id)
		}
	}
}

func joinErrorResp(memberID string, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode = code
	r.Generation = -1
	r.MemberID = memberID
	return r
}

// join returns a non-zero code to answer with immediately, or 0 when it has
// taken responsibility for reply.
func (g *group) join(client JoinClient, req *kmsg.JoinGroupRequest, reply func(*kmsg.JoinGroupResponse)) int16 {
	if g.state == groupDead {
		return errCoordNotAvailable
	}
	ps := joinProtocols(req)
	if !g.supportsProtocols(req.ProtocolType, ps) {
		return kerr.InconsistentGroupProtocol.Code
	}
	_, isMember := g.members[req.MemberID]
	_, isPending := g.pending[req.MemberID]
	if !isMember && !isPending && len(g.members)+len(g.pending) >= g.s.cfg.GroupMaxSize {
		return kerr.GroupMaxSizeReached.Code
	}
	if req.MemberID == "" {
		return g.joinUnknown(client, req, ps, reply)
	}
	if isPending {
		g.addMemberAndRebalance(client, req, ps, req.MemberID, reply)
		return 0
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	m := g.members[req.MemberID]
	switch g.state {
	case groupPreparingRebalance:
		g.updateMemberAndRebalance(m, req, ps, reply)
	case groupCompletingRebalance:
		if m.sameProtocols(ps) {
			// A duplicate join (e.g. a retried request): answer with the
			// current generation again.
			reply(g.joinResponse(m, m.id == g.leader, false))
		} else {
			g.updateMemberAndRebalance(m, req, ps, reply)
		}
	case groupStable:
		if m.id == g.leader || !m.sameProtocols(ps) {
			// The leader's rejoin means it wants a new assignment (e.g. its
			// metadata changed); so does any member with new protocols.
			g.updateMemberAndRebalance(m, req, ps, reply)
		} else {
			// A follower rejoining without change gets the current
			// generation and may SyncGroup.
			g.scheduleHeartbeatExpiry(m)
			reply(g.joinResponse(m, false, false))
		}
	default: // Empty: a member ID that is not in the group
		return errUnknownMember
	}
	return 0
}

func (g *group) joinUnknown(client JoinClient, req *kmsg.JoinGroupRequest, ps []protocol, reply func(*kmsg.JoinGroupResponse)) int16 {
	newID := g.s.c.newMemberID(client.ClientID, req.InstanceID)
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok {
			g.replaceStaticMember(g.members[old], newID, client, req, ps, reply)
			return 0
		}
		g.addMemberAndRebalance(client, req, ps, newID, reply)
		return 0
	}
	if req.Version >= 4 {
		// KIP-394: hand out the ID and wait for the member to join with it,
		// so a client that never gets the response leaves no ghost member.
		// The pending ID lives for one session timeout.
		sessionTimeout := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
		g.pending[newID] = g.s.schedule(sessionTimeout, func() {
			delete(g.pending, newID)
			if g.state == groupPreparingRebalance {
				g.tryCompleteJoin()
			}
		})
		reply(joinErrorResp(newID, kerr.MemberIDRequired.Code))
		return 0
	}
	g.addMemberAndRebalance(client, req, ps, newID, reply)
	return 0
}

func (g *group) addMemberAndRebalance(client JoinClient, req *kmsg.JoinGroupRequest, ps []protocol, id string, reply func(*kmsg.JoinGroupResponse)) {
	if t, ok := g.pending[id]; ok {
		g.s.stopTimer(t)
		delete(g.pending, id)
	}
	m := &member{
		id:               id,
		instanceID:       req.InstanceID,
		clientID:         client.ClientID,
		clientHost:       client.ClientHost,
		sessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		protocolType:     req.ProtocolType,
		protocols:        ps,
		joinReply:        reply,
	}
	if req.Version == 0 || m.rebalanceTimeout <= 0 {
		m.rebalanceTimeout = m.sessionTimeout // v0 has no rebalance timeout
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.addMemberRaw(m)
	if g.state == groupPreparingRebalance && g.initialDelay {
		g.newMemberAdded = true
	}
	g.scheduleHeartbeatExpiry(m)
	g.maybePrepareRebalance()
}

func (g *group) updateMemberAndRebalance(m *member, req *kmsg.JoinGroupRequest, ps []protocol, reply func(*kmsg.JoinGroupResponse)) {
	if m.joinReply != nil {
		// The member joins again while its previous join waits: the old
		// request is superseded.
		old := m.joinReply
		m.joinReply = nil
		old(joinErrorResp(m.id, errRebalanceInProgress))
	}
	m.protocols = ps
	m.sessionTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 || m.rebalanceTimeout <= 0 {
		m.rebalanceTimeout = m.sessionTimeout
	}
	m.joinReply = reply
	g.scheduleHeartbeatExpiry(m)
	g.maybePrepareRebalance()
}

// replaceStaticMember gives a static member's instance a new member ID
// (KIP-345): the old ID is fenced. In a Stable group whose protocol choice
// does not change, no rebalance happens: the group is persisted with the new
// ID and the member gets the current generation.
func (g *group) replaceStaticMember(old *member, newID string, client JoinClient, req *kmsg.JoinGroupRequest, ps []protocol, reply func(*kmsg.JoinGroupResponse)) {
	oldID := old.id
	oldLeader := g.leader
	oldProtocols := old.protocols
	oldSession, oldRebalance := old.sessionTimeout, old.rebalanceTimeout
	// Fence whatever the old member was waiting for.
	if old.joinReply != nil {
		r := old.joinReply
		old.joinReply = nil
		r(joinErrorResp(oldID, errFencedInstance))
	}
	if old.syncReply != nil {
		r := old.syncReply
		old.syncReply = nil
		r(errFencedInstance, nil)
	}
	g.renameMember(old, newID)
	old.clientID, old.clientHost = client.ClientID, client.ClientHost
	old.protocols = ps
	old.sessionTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	old.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if old.rebalanceTimeout <= 0 {
		old.rebalanceTimeout = old.sessionTimeout
	}
	g.scheduleHeartbeatExpiry(old)
	m := old
	switch g.state {
	case groupStable:
		if g.selectProtocol() != g.protocol {
			g.updateMemberAndRebalance(m, req, ps, reply)
			return
		}
		gen := g.generation
		g.s.write([]record{g.metadataRecord(nil)}, func(code int16) {
			if g.members[newID] != m {
				reply(joinErrorResp(newID, errUnknownMember))
				return
			}
			if code != 0 {
				// Revert, as Kafka does when the store fails.
				g.renameMember(m, oldID)
				m.protocols = oldProtocols
				m.sessionTimeout, m.rebalanceTimeout = oldSession, oldRebalance
				reply(joinErrorResp("", code))
				return
			}
			if g.generation != gen || g.state != groupStable {
				// A rebalance started meanwhile; the member joins it.
				g.updateMemberAndRebalance(m, req, ps, reply)
				return
			}
			if req.Version >= 9 {
				// KIP-814: a returning static leader gets the members but
				// keeps the current assignment instead of computing one.
				isLeader := m.id == g.leader
				reply(g.joinResponse(m, isLeader, isLeader))
				return
			}
			// Older clients are not told they lead, so that they do not
			// reassign; they SyncGroup and get their assignment back.
			r := g.joinResponse(m, false, false)
			r.LeaderID = oldLeader
			reply(r)
		})
	case groupCompletingRebalance:
		// The new instance needs the assignment being computed; rebalance.
		g.updateMemberAndRebalance(m, req, ps, reply)
	case groupPreparingRebalance:
		m.joinReply = reply
		g.tryCompleteJoin()
	default:
		reply(joinErrorResp(newID, errUnknownMember))
	}
}

// renameMember changes m's member ID in every index.
func (g *group) renameMember(m *member, newID string) {
	oldID := m.id
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	for i, id := range g.order {
		if id == oldID {
			g.order[i] = newID
		}
	}
	if m.instanceID != nil {
		g.static[*m.instanceID] = newID
	}
	if g.leader == oldID {
		g.leader = newID
	}
	if _, ok := g.pendingSync[oldID]; ok {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = struct{}{}
	}
}

// joinResponse is the successful JoinGroup answer for m in the current
// generation; the leader gets the members and their metadata.
func (g *group) joinResponse(m *member, withMembers, skipAssignment bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation = g.generation
	pt, p := g.protocolType, g.protocol
	r.ProtocolType = &pt
	r.Protocol = &p
	r.LeaderID = g.leader
	r.MemberID = m.id
	r.SkipAssignment = skipAssignment
	if withMembers {
		for _, id := range g.order {
			om := g.members[id]
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = om.id
			jm.InstanceID = om.instanceID
			jm.ProtocolMetadata = om.metadataFor(g.protocol)
			r.Members = append(r.Members, jm)
		}
	}
	return r
}

// maybePrepareRebalance starts a rebalance if the group can, or tries to
// finish the one under way.
func (g *group) maybePrepareRebalance() {
	switch g.state {
	case groupStable, groupCompletingRebalance, groupEmpty:
		g.prepareRebalance()
	case groupPreparingRebalance:
		g.tryCompleteJoin()
	}
}

// prepareRebalance enters PreparingRebalance: members must rejoin within the
// rebalance timeout. A group that was Empty waits
// group.initial.rebalance.delay.ms first (and longer while members keep
// arriving, up to the rebalance timeout), as Kafka's InitialDelayedJoin.
func (g *group) prepareRebalance() {
	if g.state == groupCompletingRebalance {
		// The assignment being computed is obsolete.
		for _, id := range g.order {
			m := g.members[id]
			m.assignment = nil
			if m.syncReply != nil {
				r := m.syncReply
				m.syncReply = nil
				r(errRebalanceInProgress, nil)
			}
		}
	}
	g.s.stopTimer(g.syncTimer)
	g.pendingSync = nil
	g.s.stopTimer(g.joinTimer)
	wasEmpty := g.state == groupEmpty
	g.transition(groupPreparingRebalance)
	delay := g.s.cfg.GroupInitialRebalanceDelay
	if wasEmpty && delay > 0 {
		g.initialDelay = true
		g.newMemberAdded = false
		remaining := max(g.rebalanceTimeout()-delay, 0)
		g.scheduleInitialJoin(delay, remaining)
		return
	}
	g.initialDelay = false
	g.joinTimer = g.s.schedule(g.rebalanceTimeout(), g.completeJoin)
	g.tryCompleteJoin()
}

func (g *group) scheduleInitialJoin(delay, remaining time.Duration) {
	g.joinTimer = g.s.schedule(delay, func() {
		g.joinTimer = nil
		if g.newMemberAdded && remaining > 0 {
			g.newMemberAdded = false
			next := min(delay, remaining)
			g.scheduleInitialJoin(next, max(remaining-delay, 0))
			return
		}
		g.completeJoin()
	})
}

// tryCompleteJoin completes the join phase once every member has rejoined
// and no handed-out member ID is pending, as Kafka's DelayedJoin.
func (g *group) tryCompleteJoin() {
	if g.state != groupPreparingRebalance || g.initialDelay {
		return
	}
	if len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinReply == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin ends the join phase: members that did not rejoin are dropped
// (static ones are kept, they may come back), the next generation starts and
// every waiting member gets its JoinGroup response.
func (g *group) completeJoin() {
	if g.state != groupPreparingRebalance {
		return
	}
	g.s.stopTimer(g.joinTimer)
	g.joinTimer = nil
	g.initialDelay = false
	g.newMemberAdded = false
	for _, id := range append([]string(nil), g.order...) {
		m := g.members[id]
		if m.joinReply == nil && m.instanceID == nil {
			g.removeMemberRaw(m, errUnknownMember)
		}
	}
	if len(g.members) > 0 {
		// The leader must be a member that rejoined.
		if l := g.members[g.leader]; l == nil || l.joinReply == nil {
			g.leader = ""
			for _, id := range g.order {
				if g.members[id].joinReply != nil {
					g.leader = id
					break
				}
			}
			if g.leader == "" {
				// Only static members that have not rejoined remain: wait
				// for them (or for their sessions to expire).
				g.leader = g.order[0]
				g.joinTimer = g.s.schedule(g.rebalanceTimeout(), g.completeJoin)
				return
			}
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.transition(groupEmpty)
		// Persist the empty generation, as Kafka does; nobody waits for it.
		g.s.write([]record{g.metadataRecord(nil)}, func(int16) {})
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(groupCompletingRebalance)
	g.pendingSync = make(map[string]struct{}, len(g.members))
	for _, id := range g.order {
		m := g.members[id]
		g.pendingSync[id] = struct{}{}
		if m.joinReply != nil {
			r := m.joinReply
			m.joinReply = nil
			r(g.joinResponse(m, id == g.leader, false))
		}
		g.scheduleHeartbeatExpiry(m)
	}
	gen := g.generation
	g.syncTimer = g.s.schedule(g.rebalanceTimeout(), func() { g.pendingSyncExpired(gen) })
}

// pendingSyncExpired removes the members that did not SyncGroup within the
// rebalance timeout after the join phase, and rebalances.
func (g *group) pendingSyncExpired(gen int32) {
	g.syncTimer = nil
	if g.generation != gen || (g.state != groupCompletingRebalance && g.state != groupStable) {
		return
	}
	var late []*member
	for _, id := range g.order {
		if _, ok := g.pendingSync[id]; ok {
			late = append(late, g.members[id])
		}
	}
	if len(late) == 0 {
		return
	}
	for _, m := range late {
		g.removeMemberRaw(m, errUnknownMember)
	}
	g.s.c.log.Info("removed members that did not sync", "group", g.id, "members", len(late))
	g.afterMembersRemoved()
}

// afterMembersRemoved reacts to members leaving: rebalance, or finish the
// current join phase.
func (g *group) afterMembersRemoved() {
	switch g.state {
	case groupStable, groupCompletingRebalance:
		g.prepareRebalance()
	case groupPreparingRebalance:
		g.tryCompleteJoin()
	}
}

// scheduleHeartbeatExpiry (re)starts m's session timer.
func (g *group) scheduleHeartbeatExpiry(m *member) {
	g.s.stopTimer(m.heartbeatTimer)
	m.heartbeatTimer = g.s.schedule(m.sessionTimeout, func() {
		m.heartbeatTimer = nil
		if g.members[m.id] != m {
			return
		}
		if m.joinReply != nil || m.syncReply != nil {
			// A member waiting in JoinGroup or SyncGroup is alive; the
			// rebalance timeouts bound those waits.
			g.scheduleHeartbeatExpiry(m)
			return
		}
		g.removeMemberRaw(m, errUnknownMember)
		g.s.c.log.Info("group member session expired", "group", g.id, "member", m.id)
		if len(g.members) == 0 && g.state != groupPreparingRebalance {
			g.prepareRebalance() // completes at once into Empty
			return
		}
		g.afterMembersRemoved()
	})
}

// SyncGroup handles SyncGroup (key 14) v0–v5. Followers block until the
// leader's assignment is committed.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	finish := func(code int16, assignment []byte, g *group) *kmsg.SyncGroupResponse {
		r := req.ResponseKind().(*kmsg.SyncGroupResponse)
		r.ErrorCode = code
		r.MemberAssignment = assignment
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		if code == 0 && g != nil {
			pt, p := g.protocolType, g.protocol
			r.ProtocolType, r.Protocol = &pt, &p
		}
		return r
	}
	if req.Group == "" {
		return finish(kerr.InvalidGroupID.Code, nil, nil), nil
	}
	s, code := c.lookup(req.Group)
	if code != 0 {
		return finish(code, nil, nil), nil
	}
	return await(ctx, s, func(reply func(*kmsg.SyncGroupResponse)) {
		g := s.groups[req.Group]
		s.syncGroup(req, func(code int16, a []byte) { reply(finish(code, a, g)) })
	}, func() *kmsg.SyncGroupResponse { return finish(errNotCoordinator, nil, nil) })
}

func (s *shard) syncGroup(req *kmsg.SyncGroupRequest, reply func(code int16, assignment []byte)) {
	g := s.groups[req.Group]
	if g == nil {
		reply(errUnknownMember, nil)
		return
	}
	if g.state == groupDead {
		reply(errCoordNotAvailable, nil)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		reply(code, nil)
		return
	}
	if req.Generation != g.generation {
		reply(errIllegalGeneration, nil)
		return
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol) {
		reply(kerr.InconsistentGroupProtocol.Code, nil)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case groupEmpty:
		reply(errUnknownMember, nil)
	case groupPreparingRebalance:
		reply(errRebalanceInProgress, nil)
	case groupCompletingRebalance:
		if m.syncReply != nil {
			old := m.syncReply
			m.syncReply = nil
			old(errRebalanceInProgress, nil)
		}
		m.syncReply = reply
		delete(g.pendingSync, m.id)
		g.scheduleHeartbeatExpiry(m)
		if m.id != g.leader {
			return
		}
		assign := make(map[string][]byte, len(g.members))
		for _, a := range req.GroupAssignment {
			if _, ok := g.members[a.MemberID]; ok {
				assign[a.MemberID] = a.MemberAssignment
			}
		}
		for id := range g.members {
			if assign[id] == nil {
				assign[id] = []byte{}
			}
		}
		gen := g.generation
		s.write([]record{g.metadataRecord(assign)}, func(code int16) {
			if g.generation != gen || g.state != groupCompletingRebalance || s.groups[g.id] != g {
				return // a newer rebalance already answered the waiters
			}
			if code != 0 {
				if code == kerr.InvalidCommitOffsetSize.Code {
					// Kafka answers a too-large group record this way.
					code = kerr.UnknownServerError.Code
				}
				for _, id := range g.order {
					gm := g.members[id]
					gm.assignment = nil
					if gm.syncReply != nil {
						r := gm.syncReply
						gm.syncReply = nil
						r(code, nil)
					}
				}
				g.prepareRebalance()
				return
			}
			for _, id := range g.order {
				gm := g.members[id]
				gm.assignment = assign[id]
				if gm.syncReply != nil {
					r := gm.syncReply
					gm.syncReply = nil
					r(0, gm.assignment)
				}
			}
			g.transition(groupStable)
		})
	case groupStable:
		delete(g.pendingSync, m.id)
		g.scheduleHeartbeatExpiry(m)
		reply(0, m.assignment)
	}
}

// Heartbeat handles Heartbeat (key 12) v0–v4.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	resp := func(code int16) *kmsg.HeartbeatResponse {
		r := req.ResponseKind().(*kmsg.HeartbeatResponse)
		r.ErrorCode = code
		return r
	}
	return onGroupShard(ctx, c, req.Group, resp, func(s *shard, reply func(*kmsg.HeartbeatResponse)) {
		reply(resp(s.heartbeat(req)))
	})
}

func (s *shard) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	g := s.groups[req.Group]
	if g == nil {
		return errUnknownMember
	}
	if g.state == groupDead {
		return errCoordNotAvailable
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case groupEmpty:
		return errUnknownMember
	case groupPreparingRebalance:
		// The member must rejoin; its session stays alive meanwhile.
		g.scheduleHeartbeatExpiry(m)
		return errRebalanceInProgress
	default:
		// Including CompletingRebalance: clients heartbeat between their
		// JoinGroup and SyncGroup responses, and Kafka answers NONE.
		g.scheduleHeartbeatExpiry(m)
		return 0
	}
}

// LeaveGroup handles LeaveGroup (key 13) v0–v5, including batched departures
// (v3+) of static members by group.instance.id.
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	errResp := func(code int16) *kmsg.LeaveGroupResponse {
		r := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		r.ErrorCode = code
		return r
	}
	return onGroupShard(ctx, c, req.Group, errResp, func(s *shard, reply func(*kmsg.LeaveGroupResponse)) {
		reply(s.leaveGroup(req))
	})
}

func (s *shard) leaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	g := s.groups[req.Group]
	if g == nil {
		resp.ErrorCode = errUnknownMember
		return resp
	}
	if g.state == groupDead {
		resp.ErrorCode = errCoordNotAvailable
		return resp
	}
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	removed := false
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		switch {
		case lm.InstanceID != nil:
			holder, ok := g.static[*lm.InstanceID]
			switch {
			case !ok:
				rm.ErrorCode = errUnknownMember
			case lm.MemberID != "" && lm.MemberID != holder:
				rm.ErrorCode = errFencedInstance
			default:
				g.removeMemberRaw(g.members[holder], errUnknownMember)
				removed = true
			}
		case g.pending[lm.MemberID] != nil:
			s.stopTimer(g.pending[lm.MemberID])
			delete(g.pending, lm.MemberID)
			removed = true
		case g.members[lm.MemberID] == nil:
			rm.ErrorCode = errUnknownMember
		default:
			g.removeMemberRaw(g.members[lm.MemberID], errUnknownMember)
			removed = true
		}
		resp.Members = append(resp.Members, rm)
	}
	if removed {
		if len(g.members) == 0 && g.state != groupPreparingRebalance && g.state != groupEmpty {
			g.prepareRebalance()
		} else {
			g.afterMembersRemoved()
		}
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp
}
