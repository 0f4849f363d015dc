package share

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupConfig is the broker's share group limits (group.share.*).
type GroupConfig struct {
	// SessionTimeout is group.share.session.timeout.ms: a member that has
	// not heartbeated for this long is removed.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// MaxSize is group.share.max.size, the most members a group may have.
	MaxSize int
}

// TopicPartitions is one topic's partitions in an assignment.
type TopicPartitions struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32
}

// Topics is what the group needs of the cluster metadata: a topic's ID and
// partition count by name.
type Topics interface {
	TopicByName(name string) (id [16]byte, partitions int32, ok bool)
}

// Member is one share group member.
type Member struct {
	ID, ClientID, ClientHost string
	RackID                   *string
	// Epoch is the member epoch: the group epoch of its last assignment.
	Epoch      int32
	Subscribed []string
	// Assignment is what the member was last given, sorted by topic name.
	Assignment []TopicPartitions
	// deadline is when the member is removed without a heartbeat.
	deadline time.Time
}

// Group is one share group.
type Group struct {
	ID string
	// Epoch grows with every change of membership, subscriptions or the
	// subscribed topics' partitions. Invariant: every member's Epoch <= Epoch.
	Epoch int32
	// members is bounded by GroupConfig.MaxSize.
	members map[string]*Member
}

// Members lists the group's members sorted by ID.
func (g *Group) Members() []*Member {
	out := make([]*Member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// State is the group state Kafka reports: Empty or Stable (the simple
// assignor never needs a rebalance).
func (g *Group) State() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// Groups is the share groups this coordinator owns. Not safe for
// concurrent use.
type Groups struct {
	cfg    GroupConfig
	groups map[string]*Group
}

// NewGroups makes an empty set of share groups.
func NewGroups(cfg GroupConfig) *Groups {
	return &Groups{cfg: cfg, groups: make(map[string]*Group)}
}

// Get returns group id, or nil.
func (gs *Groups) Get(id string) *Group { return gs.groups[id] }

// List returns every group sorted by ID.
func (gs *Groups) List() []*Group {
	out := make([]*Group, 0, len(gs.groups))
	for _, g := range gs.groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Ensure returns group id, creating it empty if it does not exist (an
// AlterShareGroupOffsets for a new group, as Kafka creates one).
func (gs *Groups) Ensure(id string) *Group {
	g := gs.groups[id]
	if g == nil {
		g = &Group{ID: id, members: make(map[string]*Member)}
		gs.groups[id] = g
	}
	return g
}

// Delete removes an empty group: 0, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP.
func (gs *Groups) Delete(id string) int16 {
	g := gs.groups[id]
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	if len(g.members) > 0 {
		return kerr.NonEmptyGroup.Code
	}
	delete(gs.groups, id)
	return 0
}

// HeartbeatRequest is a ShareGroupHeartbeat request's content.
type HeartbeatRequest struct {
	Group, Member string
	MemberEpoch   int32
	RackID        *string
	// Subscribed is nil when unchanged since the last heartbeat.
	Subscribed           []string
	ClientID, ClientHost string
	// SessionTimeout is the group's share.session.timeout.ms, already within the broker's
	// bounds; 0 is GroupConfig.SessionTimeout.
	SessionTimeout time.Duration
}

// HeartbeatResult is the answer to a heartbeat.
type HeartbeatResult struct {
	Code        int16
	Message     string
	MemberEpoch int32
	// Assignment is set when the member must (re)learn its assignment.
	Assignment   []TopicPartitions
	SendAssigned bool
	// Left is the member that left the group (MemberEpoch -1), for the
	// caller to release its records and close its share session.
	Left string
}

// Heartbeat serves ShareGroupHeartbeat (v1, where the client names its own
// member ID), as Kafka's GroupMetadataManager.shareGroupHeartbeat does with
// the simple assignor: every member gets every partition of the topics it
// subscribes to.
func (gs *Groups) Heartbeat(now time.Time, topics Topics, req HeartbeatRequest) HeartbeatResult {
	switch {
	case req.Group == "":
		return HeartbeatResult{Code: kerr.InvalidRequest.Code, Message: "GroupId can't be empty."}
	case req.Member == "":
		return HeartbeatResult{Code: kerr.InvalidRequest.Code, Message: "MemberId can't be empty."}
	case req.MemberEpoch < -1:
		return HeartbeatResult{Code: kerr.InvalidRequest.Code, Message: "MemberEpoch is invalid."}
	case req.MemberEpoch == 0 && len(req.Subscribed) == 0:
		return HeartbeatResult{Code: kerr.InvalidRequest.Code, Message: "SubscribedTopicNames must be set in first request."}
	}
	g := gs.groups[req.Group]
	if req.MemberEpoch == -1 {
		if g == nil || g.members[req.Member] == nil {
			return HeartbeatResult{Code: kerr.UnknownMemberID.Code}
		}
		delete(g.members, req.Member)
		g.Epoch++
		return HeartbeatResult{MemberEpoch: -1, Left: req.Member}
	}
	var m *Member
	if g != nil {
		m = g.members[req.Member]
	}
	if req.MemberEpoch > 0 {
		if m == nil {
			return HeartbeatResult{Code: kerr.UnknownMemberID.Code}
		}
		if req.MemberEpoch != m.Epoch {
			return HeartbeatResult{Code: kerr.FencedMemberEpoch.Code}
		}
	}
	if g == nil {
		g = &Group{ID: req.Group, members: make(map[string]*Member)}
		gs.groups[req.Group] = g
	}
	if m == nil {
		if gs.cfg.MaxSize > 0 && len(g.members) >= gs.cfg.MaxSize {
			return HeartbeatResult{Code: kerr.GroupMaxSizeReached.Code,
				Message: "The share group has reached its maximum capacity of " + strconv.Itoa(gs.cfg.MaxSize) + " members."}
		}
		m = &Member{ID: req.Member}
		g.members[req.Member] = m
		g.Epoch++
	}
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	if req.RackID != nil {
		rack := *req.RackID
		m.RackID = &rack
	}
	if req.Subscribed != nil {
		subscribed := slices.Clone(req.Subscribed)
		sort.Strings(subscribed)
		subscribed = slices.Compact(subscribed)
		if !slices.Equal(subscribed, m.Subscribed) {
			m.Subscribed = subscribed
			g.Epoch++
		}
	}
	timeout := gs.cfg.SessionTimeout
	if req.SessionTimeout > 0 {
		timeout = req.SessionTimeout
	}
	m.deadline = now.Add(timeout)
	target := assignAll(topics, m.Subscribed)
	if !assignmentEqual(target, m.Assignment) {
		// A subscribed topic appeared or grew: a new assignment epoch.
		if m.Epoch == g.Epoch {
			g.Epoch++
		}
		m.Assignment = target
	}
	res := HeartbeatResult{MemberEpoch: g.Epoch}
	if req.MemberEpoch == 0 || m.Epoch != g.Epoch {
		res.Assignment, res.SendAssigned = m.Assignment, true
	}
	m.Epoch = g.Epoch
	return res
}

// Expired is a member removed for missing its heartbeats.
type Expired struct{ Group, Member string }

// Expire removes every member whose session timed out by now.
func (gs *Groups) Expire(now time.Time) []Expired {
	var out []Expired
	for _, g := range gs.List() {
		for _, m := range g.Members() {
			if !m.deadline.After(now) {
				delete(g.members, m.ID)
				g.Epoch++
				out = append(out, Expired{g.ID, m.ID})
			}
		}
	}
	return out
}

// NextExpiry is the earliest member session deadline, false with no members.
func (gs *Groups) NextExpiry() (time.Time, bool) {
	var next time.Time
	found := false
	for _, g := range gs.groups {
		for _, m := range g.members {
			if !found || m.deadline.Before(next) {
				next, found = m.deadline, true
			}
		}
	}
	return next, found
}

// assignAll is the simple assignor's answer for one member when every member
// may have every partition: all partitions of its subscribed topics that exist.
func assignAll(topics Topics, subscribed []string) []TopicPartitions {
	var out []TopicPartitions
	for _, name := range subscribed {
		id, n, ok := topics.TopicByName(name)
		if !ok || n <= 0 {
			continue
		}
		tp := TopicPartitions{TopicID: id, Topic: name, Partitions: make([]int32, n)}
		for i := range tp.Partitions {
			tp.Partitions[i] = int32(i)
		}
		out = append(out, tp)
	}
	return out
}

func assignmentEqual(a, b []TopicPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y TopicPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}
