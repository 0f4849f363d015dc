package coordinator

import (
	"bytes"
	"context"
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

// KIP-1071 streams groups: a Kafka Streams application's members send their
// topology once (when they join); the coordinator derives the tasks from it
// (one per partition of each subtopology's input), asks the broker to create
// the internal topics (repartition and changelog) that are missing, assigns
// active and standby tasks with a sticky assignor, and moves every member
// from its current to its target tasks as KIP-848 does for partitions: a
// task is revoked first, and given to its new owner only once the old one no
// longer reports it.

// sgMemberState is Kafka's streams MemberState, as the
// StreamsGroupCurrentMemberAssignment record stores it.
type sgMemberState int8

const (
	sgStable     sgMemberState = 1 // owns exactly its target tasks at the assignment epoch
	sgUnrevoked  sgMemberState = 2 // must give up pendingRevoke before it moves on
	sgUnreleased sgMemberState = 3 // at the assignment epoch, waiting for tasks others still own
)

// Status codes of StreamsGroupHeartbeatResponse.Status.
const (
	sgStatusStaleTopology         = 0
	sgStatusMissingSourceTopics   = 1
	sgStatusIncorrectlyPartitions = 2
	sgStatusMissingInternalTopics = 3
	sgStatusShutdownApplication   = 4
	sgStatusAssignmentDelayed     = 5
)

// Defaults Kafka 4.4 answers with for the group-level streams configs sluice
// does not make configurable yet (group.streams.* dynamic group configs).
const (
	sgAcceptableRecoveryLag = 10000
	sgTaskOffsetInterval    = 60000 // ms
	sgAssignorName          = "sticky"
)

// StreamsInternalTopic is an internal topic a streams group's topology needs
// and that does not exist: the broker creates it, as Kafka's KafkaApis does
// with the topics a StreamsGroupHeartbeat reports missing.
type StreamsInternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // 0: the broker's default.replication.factor
	Configs           map[string]string
}

type sgMember struct {
	id   string
	meta sgMemberMeta
	// epoch is the epoch the member must send; prevEpoch is accepted too
	// while the tasks it reports are a subset of its assignment (the
	// response that advanced it may have been lost).
	epoch, prevEpoch int32
	state            sgMemberState
	assigned         streamsTasks // tasks the member owns
	pendingRevoke    streamsTasks // tasks it must give up (still owned)
	// reported is what the member last said it owns (a heartbeat leaves a
	// list out when it did not change); nil before the first report.
	reported *streamsTasks

	sessionTimer   *shardTimer
	rebalanceTimer *shardTimer // runs while the member must revoke
}

func (m *sgMember) rebalanceTimeout() time.Duration {
	if m.meta.rebalanceTimeout <= 0 {
		return 5 * time.Minute
	}
	return time.Duration(m.meta.rebalanceTimeout) * time.Millisecond
}

// streamsGroup is the KIP-1071 state of a group (group.sg).
type streamsGroup struct {
	epoch           int32 // group epoch: bumped by membership, topology and topic changes
	assignmentEpoch int32 // epoch of target; target is current iff assignmentEpoch == epoch
	metadataHash    int64 // hash of the topology's topics as last seen
	topology        *sgTopology
	members         map[string]*sgMember
	target          map[string]streamsTasks
	// shutdown is set once a member asked the whole application to shut
	// down; every member is told so until the group is empty. Not persisted.
	shutdown bool
	// assignDelayUntil is the end of group.streams.initial.rebalance.delay.ms
	// started by a member that joined the group empty: no target is computed
	// before it, so that the application's other members (its other threads)
	// join first and are assigned with it, instead of the first one being
	// given every task and having to give most of them back. Not persisted:
	// after a load the next heartbeat computes the target.
	assignDelayUntil time.Time
	// endpointEpoch counts changes of the members' interactive-query
	// endpoints and of the tasks of members that have one; a heartbeat
	// carrying another epoch is sent PartitionsByUserEndpoint. Not persisted:
	// after a load it restarts at 0, and every member with another epoch gets
	// the map again.
	endpointEpoch int32
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{members: make(map[string]*sgMember), target: make(map[string]streamsTasks)}
}

func (sg *streamsGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (sg *streamsGroup) staticMember(instanceID string) *sgMember {
	for _, m := range sg.members {
		if m.meta.instanceID != nil && *m.meta.instanceID == instanceID {
			return m
		}
	}
	return nil
}

// stateName is the group state as StreamsGroupDescribe and ListGroups show
// it; ready says whether the topology's topics are all in place.
func (sg *streamsGroup) stateName(ready bool) string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case sg.topology == nil || !ready:
		return "NotReady"
	case sg.assignmentEpoch < sg.epoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignmentEpoch || m.state != sgStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// StreamsGroupHeartbeat handles StreamsGroupHeartbeat (key 88) v0–v1. The
// returned topics are internal topics the group needs that do not exist;
// the caller creates them (the response already reports them missing, and a
// later heartbeat finds them). client is as for JoinGroup.
func (c *Coordinator) StreamsGroupHeartbeat(ctx context.Context, client JoinClient, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic, error) {
	errResp := func(code int16, msg string) *kmsg.StreamsGroupHeartbeatResponse {
		r := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		r.ErrorCode = code
		r.MemberID = req.MemberID
		if msg != "" {
			r.ErrorMessage = &msg
		}
		return r
	}
	if code, msg := validateStreamsHeartbeat(req); code != 0 {
		return errResp(code, msg), nil, nil
	}
	s, code := c.lookup(req.Group)
	if code != 0 {
		return errResp(code, ""), nil, nil
	}
	type result struct {
		resp   *kmsg.StreamsGroupHeartbeatResponse
		create []StreamsInternalTopic
	}
	r, err := await(ctx, s, func(reply func(result)) {
		s.streamsHeartbeat(client, req, func(resp *kmsg.StreamsGroupHeartbeatResponse, create []StreamsInternalTopic) {
			reply(result{resp, create})
		})
	}, func() result { return result{resp: errResp(errNotCoordinator, "")} })
	if err != nil {
		return nil, nil, err
	}
	return r.resp, r.create, nil
}

// validateStreamsHeartbeat checks the request as Kafka's
// throwIfStreamsGroupHeartbeatRequestIsInvalid.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (int16, string) {
	invalid := kerr.InvalidRequest.Code
	if req.Group == "" {
		return invalid, "GroupId can't be empty."
	}
	if req.MemberID == "" {
		return invalid, "MemberId can't be empty."
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		return invalid, "InstanceId can't be empty."
	}
	if req.RackID != nil && *req.RackID == "" {
		return invalid, "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == epochJoin:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid, "RebalanceTimeoutMs must be provided in first request."
		}
		if len(req.ActiveTasks) != 0 || len(req.StandbyTasks) != 0 || len(req.WarmupTasks) != 0 {
			return invalid, "ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining."
		}
		if req.Topology == nil {
			return invalid, "Topology must be non-null when (re-)joining."
		}
		if req.ProcessID == nil {
			return invalid, "ProcessId can't be null."
		}
		if code, msg := validateStreamsTopology(req.Topology); code != 0 {
			return code, msg
		}
	case req.MemberEpoch > 0 || req.MemberEpoch == epochLeave:
	case req.MemberEpoch == epochStaticLeave:
		if req.InstanceID == nil {
			return invalid, "InstanceId can't be null when MemberEpoch is -2."
		}
	default:
		return invalid, fmt.Sprintf("MemberEpoch %d is invalid.", req.MemberEpoch)
	}
	return 0, ""
}

// validateStreamsTopology refuses a topology Kafka's StreamsTopology checks
// refuse: subtopologies without an ID or without input, duplicate IDs, bad
// regexes, copartition indexes out of range.
func validateStreamsTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) (int16, string) {
	bad := kerr.StreamsInvalidTopology.Code
	seen := map[string]bool{}
	for _, st := range t.Subtopologies {
		if st.SubtopologyID == "" {
			return bad, "Subtopology ID can't be empty."
		}
		if seen[st.SubtopologyID] {
			return bad, "Duplicate subtopology ID " + st.SubtopologyID + "."
		}
		seen[st.SubtopologyID] = true
		if len(st.SourceTopics) == 0 && len(st.SourceTopicRegex) == 0 && len(st.RepartitionSourceTopics) == 0 {
			return bad, "Subtopology " + st.SubtopologyID + " has no source topics."
		}
		for _, re := range st.SourceTopicRegex {
			if _, err := regexp.Compile(re); err != nil {
				return bad, "Invalid source topic regex " + re + ": " + err.Error()
			}
		}
		for _, g := range st.CopartitionGroups {
			for _, i := range g.SourceTopics {
				if int(i) < 0 || int(i) >= len(st.SourceTopics) {
					return bad, "Copartition group of subtopology " + st.SubtopologyID + " names a source topic out of range."
				}
			}
			for _, i := range g.SourceTopicRegex {
				if int(i) < 0 || int(i) >= len(st.SourceTopicRegex) {
					return bad, "Copartition group of subtopology " + st.SubtopologyID + " names a source regex out of range."
				}
			}
			for _, i := range g.RepartitionSourceTopics {
				if int(i) < 0 || int(i) >= len(st.RepartitionSourceTopics) {
					return bad, "Copartition group of subtopology " + st.SubtopologyID + " names a repartition topic out of range."
				}
			}
		}
	}
	return 0, ""
}

// topologyFromRequest converts the request's topology, subtopologies sorted
// by ID and topic configs by key.
func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) *sgTopology {
	infos := func(ts []kmsg.TopicInfo) []sgTopicInfo {
		out := make([]sgTopicInfo, 0, len(ts))
		for _, ti := range ts {
			info := sgTopicInfo{name: ti.Topic, partitions: ti.NumPartitions, replicationFactor: ti.ReplicationFactor}
			for _, kv := range ti.Configs {
				info.configs = append(info.configs, sgKeyValue{kv.Key, kv.Value})
			}
			// Sorted, so that the same topology compares equal whatever order a client's
			// config map gave.
			sort.Slice(info.configs, func(i, j int) bool { return info.configs[i].key < info.configs[j].key })
			out = append(out, info)
		}
		return out
	}
	out := &sgTopology{epoch: t.Epoch}
	for _, st := range t.Subtopologies {
		s := sgSubtopology{
			id:                      st.SubtopologyID,
			sourceTopics:            slices.Clone(st.SourceTopics),
			sourceTopicRegex:        slices.Clone(st.SourceTopicRegex),
			stateChangelogTopics:    infos(st.StateChangelogTopics),
			repartitionSinkTopics:   slices.Clone(st.RepartitionSinkTopics),
			repartitionSourceTopics: infos(st.RepartitionSourceTopics),
		}
		for _, g := range st.CopartitionGroups {
			s.copartitionGroups = append(s.copartitionGroups, sgCopartitionGroup{
				sourceTopics: slices.Clone(g.SourceTopics), sourceTopicRegex: slices.Clone(g.SourceTopicRegex),
				repartitionSourceTopics: slices.Clone(g.RepartitionSourceTopics),
			})
		}
		out.subtopologies = append(out.subtopologies, s)
	}
	sort.Slice(out.subtopologies, func(i, j int) bool { return out.subtopologies[i].id < out.subtopologies[j].id })
	return out
}

// sgConfigured is a topology resolved against the topics that exist, as
// Kafka's ConfiguredTopology: the number of tasks of each subtopology and the
// problems that keep the group from being assigned tasks.
type sgConfigured struct {
	tasks           map[string]int32 // subtopology ID → number of tasks
	internal        map[string]int32 // internal topic → the partitions it must have
	missingSource   []string
	incorrect       []string
	missingInternal []StreamsInternalTopic
	unresolved      bool // repartition topic partition counts could not be derived
}

// ready reports whether tasks can be assigned.
func (c *sgConfigured) ready() bool {
	return c != nil && len(c.missingSource) == 0 && len(c.incorrect) == 0 && len(c.missingInternal) == 0 && !c.unresolved
}

// configureTopology derives the tasks of t from the topics that exist, as
// Kafka's InternalTopicManager.configureTopics: a subtopology has as many
// tasks as its largest input topic has partitions; a repartition topic
// without a fixed count gets the largest task count of the subtopologies
// writing to it; copartitioned topics share one count; a changelog topic has
// one partition per task of its subtopology.
func (s *shard) configureTopology(t *sgTopology) *sgConfigured {
	out := &sgConfigured{tasks: map[string]int32{}, internal: map[string]int32{}}
	tm := s.cfg.Topics
	existing := func(name string) (int32, bool) {
		if tm == nil {
			return 0, false
		}
		_, parts, ok := tm.TopicByName(name)
		return parts, ok
	}
	var names []string
	if tm != nil {
		names = tm.TopicNames()
		sort.Strings(names)
	}
	// Source topics (names and regexes) per subtopology.
	sources := map[string][]int32{}
	for _, st := range t.subtopologies {
		for _, name := range st.sourceTopics {
			if n, ok := existing(name); ok {
				sources[st.id] = append(sources[st.id], n)
			} else {
				out.missingSource = append(out.missingSource, name)
			}
		}
		for _, re := range st.sourceTopicRegex {
			rx, err := regexp.Compile(re)
			if err != nil {
				out.missingSource = append(out.missingSource, re)
				continue
			}
			matched := false
			for _, name := range names {
				if rx.MatchString(name) && !strings.HasPrefix(name, "__") {
					n, _ := existing(name)
					sources[st.id] = append(sources[st.id], n)
					matched = true
				}
			}
			if !matched {
				out.missingSource = append(out.missingSource, re)
			}
		}
	}
	// Repartition topics: fixed counts first, then derived from the
	// subtopologies that write them, until nothing changes.
	repartition := map[string]int32{}
	for _, st := range t.subtopologies {
		for _, ti := range st.repartitionSourceTopics {
			if ti.partitions > 0 {
				repartition[ti.name] = ti.partitions
			}
		}
	}
	taskCount := func(st *sgSubtopology) (int32, bool) {
		n := int32(0)
		for _, p := range sources[st.id] {
			n = max(n, p)
		}
		for _, ti := range st.repartitionSourceTopics {
			p, ok := repartition[ti.name]
			if !ok {
				return 0, false
			}
			n = max(n, p)
		}
		return n, true
	}
	for range len(t.subtopologies) + 1 {
		changed := false
		for i := range t.subtopologies {
			st := &t.subtopologies[i]
			n, ok := taskCount(st)
			if !ok || n == 0 {
				continue
			}
			for _, sink := range st.repartitionSinkTopics {
				if cur, ok := repartition[sink]; !ok || (cur < n && !fixedRepartition(t, sink)) {
					repartition[sink] = n
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	// Copartition groups share one partition count.
	for _, st := range t.subtopologies {
		for _, g := range st.copartitionGroups {
			var fixed []int32
			for _, i := range g.sourceTopics {
				if n, ok := existing(st.sourceTopics[i]); ok {
					fixed = append(fixed, n)
				}
			}
			for _, i := range g.repartitionSourceTopics {
				if ti := st.repartitionSourceTopics[i]; ti.partitions > 0 {
					fixed = append(fixed, ti.partitions)
				}
			}
			want := int32(0)
			for _, n := range fixed {
				if want != 0 && n != want {
					out.incorrect = append(out.incorrect, fmt.Sprintf("copartitioned topics of subtopology %s differ in partitions", st.id))
				}
				want = max(want, n)
			}
			if want == 0 {
				for _, i := range g.repartitionSourceTopics {
					want = max(want, repartition[st.repartitionSourceTopics[i].name])
				}
			}
			for _, i := range g.repartitionSourceTopics {
				if ti := st.repartitionSourceTopics[i]; ti.partitions == 0 && want > 0 {
					repartition[ti.name] = want
				}
			}
		}
	}
	for i := range t.subtopologies {
		st := &t.subtopologies[i]
		n, ok := taskCount(st)
		if !ok {
			out.unresolved = true
			continue
		}
		out.tasks[st.id] = n
		for _, ti := range st.repartitionSourceTopics {
			out.internal[ti.name] = repartition[ti.name]
			s.checkInternalTopic(out, ti, repartition[ti.name])
		}
		for _, ti := range st.stateChangelogTopics {
			out.internal[ti.name] = n
			s.checkInternalTopic(out, ti, n)
		}
	}
	slices.Sort(out.missingSource)
	out.missingSource = slices.Compact(out.missingSource)
	return out
}

// inputTopics are the topics the topology's tasks read and commit offsets
// for: source topics and repartition topics (regex sources are not
// expanded). A running streams group's offsets of these cannot be deleted.
func (t *sgTopology) inputTopics() map[string]bool {
	out := map[string]bool{}
	for _, st := range t.subtopologies {
		for _, n := range st.sourceTopics {
			out[n] = true
		}
		for _, ti := range st.repartitionSourceTopics {
			out[ti.name] = true
		}
	}
	return out
}

// fixedRepartition reports whether the topology fixes name's partition count.
func fixedRepartition(t *sgTopology, name string) bool {
	for _, st := range t.subtopologies {
		for _, ti := range st.repartitionSourceTopics {
			if ti.name == name && ti.partitions > 0 {
				return true
			}
		}
	}
	return false
}

// checkInternalTopic records ti as missing (to be created with partitions)
// or as incorrectly partitioned.
func (s *shard) checkInternalTopic(out *sgConfigured, ti sgTopicInfo, partitions int32) {
	if partitions <= 0 {
		return
	}
	var have int32
	ok := false
	if s.cfg.Topics != nil {
		_, have, ok = s.cfg.Topics.TopicByName(ti.name)
	}
	if ok {
		if have != partitions {
			out.incorrect = append(out.incorrect, fmt.Sprintf("internal topic %s has %d partitions, not %d", ti.name, have, partitions))
		}
		return
	}
	for _, m := range out.missingInternal {
		if m.Name == ti.name {
			return
		}
	}
	configs := make(map[string]string, len(ti.configs))
	for _, kv := range ti.configs {
		configs[kv.key] = kv.value
	}
	out.missingInternal = append(out.missingInternal, StreamsInternalTopic{
		Name: ti.name, Partitions: partitions, ReplicationFactor: ti.replicationFactor, Configs: configs,
	})
}

// topologyMetadataHash summarizes the topics the topology reads and writes
// (names, IDs, partition counts; a missing topic counts too), so that a
// topic created, deleted or grown starts a new group epoch.
func (s *shard) topologyMetadataHash(t *sgTopology) int64 {
	if t == nil {
		return 0
	}
	set := map[string]bool{}
	for _, st := range t.subtopologies {
		for _, n := range st.sourceTopics {
			set[n] = true
		}
		for _, ti := range st.repartitionSourceTopics {
			set[ti.name] = true
		}
		for _, ti := range st.stateChangelogTopics {
			set[ti.name] = true
		}
		if len(st.sourceTopicRegex) > 0 && s.cfg.Topics != nil {
			for _, name := range s.cfg.Topics.TopicNames() {
				for _, re := range st.sourceTopicRegex {
					if rx, err := regexp.Compile(re); err == nil && rx.MatchString(name) {
						set[name] = true
					}
				}
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, n := range names {
		if s.cfg.Topics != nil {
			if id, parts, ok := s.cfg.Topics.TopicByName(n); ok {
				fmt.Fprintf(h, "%s/%x/%d,", n, id, parts)
				continue
			}
		}
		fmt.Fprintf(h, "%s/-,", n)
	}
	return int64(h.Sum64())
}

// streamsHeartbeat is the KIP-1071 heartbeat. REQUIRES: shard event.
func (s *shard) streamsHeartbeat(client JoinClient, req *kmsg.StreamsGroupHeartbeatRequest, reply func(*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic)) {
	fail := func(code int16, msg string) {
		r := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		r.ErrorCode = code
		r.MemberID = req.MemberID
		if msg != "" {
			r.ErrorMessage = &msg
		}
		reply(r, nil)
	}
	g := s.groups[req.Group]
	var recs []record
	if g != nil && g.sg == nil {
		if g.cg != nil && len(g.cg.members) > 0 || len(g.members) > 0 || g.state != groupEmpty {
			fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a streams group.")
			return
		}
		// An empty classic or consumer group (or one holding only offsets)
		// becomes a streams group, keeping its offsets.
		if g.cg != nil || g.protocolType != "" || g.generation != 0 {
			recs = append(recs, g.deletionRecords()...)
		}
		g.cg = nil
		g.resetToSimple()
		g.sg = newStreamsGroup()
		g.protocolType = "streams"
	}
	if g == nil {
		if req.MemberEpoch != epochJoin {
			fail(errUnknownMember, "Group "+req.Group+" not found.")
			return
		}
		g = s.newGroup(req.Group)
		g.sg = newStreamsGroup()
		g.protocolType = "streams"
	}
	if g.state == groupDead {
		fail(errCoordNotAvailable, "")
		return
	}
	sg := g.sg
	owned := reportedTasks(req)
	// A joining member's topology must be the group's, as Kafka 4.4 has it: an older epoch is
	// reported stale (the member keeps working with the group's), a different one refused.
	var statuses []kmsg.StreamsGroupHeartbeatResponseStatus
	if req.Topology != nil && sg.topology != nil {
		switch t := topologyFromRequest(req.Topology); {
		case t.epoch < sg.topology.epoch:
			statuses = append(statuses, sgStatus(sgStatusStaleTopology, fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", t.epoch, sg.topology.epoch)))
		case !bytes.Equal(t.encode(), sg.topology.encode()):
			fail(kerr.InvalidRequest.Code, "Topology updates are not supported yet.")
			return
		}
	}

	var m *sgMember
	bump, startDelay := false, false
	switch req.MemberEpoch {
	case epochJoin:
		if req.InstanceID != nil {
			if old := sg.staticMember(*req.InstanceID); old != nil && old.id != req.MemberID {
				if old.epoch != epochStaticLeave {
					fail(kerr.UnreleasedInstanceID.Code, "Static member with instance id "+*req.InstanceID+" is still in use.")
					return
				}
				m = g.replaceStaticStreamsMember(old, req.MemberID, &recs)
			}
		}
		if m == nil {
			m = sg.members[req.MemberID]
			if m == nil {
				if len(sg.members) >= s.cfg.StreamsGroupMaxSize {
					fail(kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The streams group has reached its maximum capacity of %d members.", s.cfg.StreamsGroupMaxSize))
					return
				}
				if len(sg.members) == 0 && s.streamsInitialRebalanceDelay(g.id) > 0 {
					startDelay = true
				}
				m = &sgMember{id: req.MemberID, assigned: newStreamsTasks(), pendingRevoke: newStreamsTasks()}
				sg.members[m.id] = m
				bump = true
			} else {
				// A known member rejoining has lost its tasks.
				s.stopTimer(m.rebalanceTimer)
				m.epoch, m.prevEpoch, m.state = 0, 0, sgStable
				m.assigned, m.pendingRevoke = newStreamsTasks(), newStreamsTasks()
			}
		}
	case epochLeave, epochStaticLeave:
		m = sg.members[req.MemberID]
		if m == nil {
			fail(errUnknownMember, "")
			return
		}
		r := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		r.MemberID = m.id
		r.MemberEpoch = req.MemberEpoch
		if req.MemberEpoch == epochStaticLeave && m.meta.instanceID != nil {
			// A static member keeps its tasks until its session ends or its
			// instance rejoins.
			m.prevEpoch, m.epoch = m.epoch, epochStaticLeave
			recs = append(recs, g.sgCurrentRecord(m))
		} else {
			g.removeStreamsMember(m, &recs)
		}
		s.write(recs, func(code int16) {
			r.ErrorCode = code
			reply(r, nil)
		})
		return
	default:
		m = sg.members[req.MemberID]
		if m == nil {
			fail(errUnknownMember, "")
			return
		}
		if req.InstanceID != nil && (m.meta.instanceID == nil || *m.meta.instanceID != *req.InstanceID) {
			fail(errFencedInstance, "")
			return
		}
		if req.MemberEpoch != m.epoch {
			// As Kafka's throwIfStreamsGroupMemberEpochIsInvalid: an older
			// epoch stands only if it is the previous one and the member owns
			// nothing outside its assignment.
			if req.MemberEpoch > m.epoch || req.MemberEpoch != m.prevEpoch || owned == nil || !owned.subsetOf(m.assigned) {
				fail(kerr.FencedMemberEpoch.Code, fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch))
				return
			}
		}
	}
	if owned != nil {
		merged := owned.merge(m.reported)
		m.reported = &merged
	}
	if req.ShutdownApplication {
		sg.shutdown = true
	}

	// The first member's topology becomes the group's.
	if req.Topology != nil && sg.topology == nil {
		sg.topology = topologyFromRequest(req.Topology)
		recs = append(recs, record{key: streamsKey(keyStreamsGroupTopology, g.id, nil), value: sg.topology.encode()})
		bump = true
	}

	// The member's metadata.
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
	if req.Topology != nil {
		meta.topologyEpoch = req.Topology.Epoch
	}
	if req.ProcessID != nil {
		meta.processID = *req.ProcessID
	}
	if req.UserEndpoint != nil {
		meta.userEndpoint = &sgEndpoint{host: req.UserEndpoint.Host, port: req.UserEndpoint.Port}
	}
	if req.ClientTags != nil {
		meta.clientTags = meta.clientTags[:0:0]
		for _, kv := range req.ClientTags {
			meta.clientTags = append(meta.clientTags, sgKeyValue{kv.Key, kv.Value})
		}
		sort.Slice(meta.clientTags, func(i, j int) bool { return meta.clientTags[i].key < meta.clientTags[j].key })
	}
	endpointChanged := false
	if !meta.equal(&m.meta) {
		endpointChanged = (meta.userEndpoint == nil) != (m.meta.userEndpoint == nil) ||
			(meta.userEndpoint != nil && *meta.userEndpoint != *m.meta.userEndpoint)
		assignmentInputs := meta.processID != m.meta.processID || !strPtrEqual(meta.rackID, m.meta.rackID) ||
			!slices.Equal(meta.clientTags, m.meta.clientTags) || meta.topologyEpoch != m.meta.topologyEpoch ||
			!strPtrEqual(meta.instanceID, m.meta.instanceID)
		m.meta = meta
		recs = append(recs, record{key: streamsKey(keyStreamsGroupMemberMetadata, g.id, &m.id), value: meta.encode()})
		if assignmentInputs {
			bump = true
		}
	}

	// Topic changes start a new group epoch too.
	if h := s.topologyMetadataHash(sg.topology); h != sg.metadataHash {
		sg.metadataHash = h
		bump = true
	}
	if bump {
		g.bumpStreamsEpoch(&recs)
	}
	if startDelay {
		sg.assignDelayUntil = s.now().Add(s.streamsInitialRebalanceDelay(g.id))
		if sg.assignmentEpoch == 0 {
			// As Kafka: a new group's members wait at epoch 1 with no tasks
			// (an epoch of 0 would tell them to join again); the first
			// assignment is epoch 2's.
			g.bumpStreamsEpoch(&recs)
			sg.assignmentEpoch = sg.epoch - 1
			recs = append(recs, record{key: streamsKey(keyStreamsGroupTargetMetadata, g.id, nil), value: streamsTargetMetadataValue(sg.assignmentEpoch)})
		}
	}
	var configured *sgConfigured
	if sg.topology != nil {
		configured = s.configureTopology(sg.topology)
	}
	delayed := sg.assignmentEpoch < sg.epoch && s.now().Before(sg.assignDelayUntil)
	if sg.assignmentEpoch < sg.epoch && !delayed {
		g.computeStreamsTarget(configured, &recs)
	}
	before := m.assigned.clone()
	beforeEpoch, beforeState := m.epoch, m.state
	g.reconcileStreams(m)
	changed := m.epoch != beforeEpoch || m.state != beforeState || !m.assigned.equal(before)
	if changed {
		recs = append(recs, g.sgCurrentRecord(m))
	}
	if (changed && m.meta.userEndpoint != nil) || endpointChanged {
		sg.endpointEpoch++
	}
	g.scheduleStreamsSession(m)

	r := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	r.MemberID = m.id
	r.MemberEpoch = m.epoch
	r.HeartbeatIntervalMillis = int32(s.streamsHeartbeatInterval(g.id) / time.Millisecond)
	r.AcceptableRecoveryLagLegacy = sgAcceptableRecoveryLag
	r.AcceptableRecoveryLag = sgAcceptableRecoveryLag
	r.TaskOffsetIntervalMillis = sgTaskOffsetInterval
	r.EndpointInformationEpoch = sg.endpointEpoch
	if req.EndpointInformationEpoch != sg.endpointEpoch {
		r.PartitionsByUserEndpoint = g.partitionsByUserEndpoint()
	}
	var create []StreamsInternalTopic
	if configured != nil {
		if len(configured.missingSource) > 0 {
			statuses = append(statuses, sgStatus(sgStatusMissingSourceTopics, "Source topics "+strings.Join(configured.missingSource, ", ")+" are missing."))
		}
		if len(configured.incorrect) > 0 || configured.unresolved {
			detail := strings.Join(configured.incorrect, "; ")
			if configured.unresolved {
				detail = strings.TrimPrefix(detail+"; the partition counts of the repartition topics cannot be derived", "; ")
			}
			statuses = append(statuses, sgStatus(sgStatusIncorrectlyPartitions, detail))
		}
		if len(configured.missingInternal) > 0 && len(configured.missingSource) == 0 {
			var names []string
			for _, t := range configured.missingInternal {
				names = append(names, t.Name)
			}
			statuses = append(statuses, sgStatus(sgStatusMissingInternalTopics, "Internal topics are missing: ["+strings.Join(names, ", ")+"]"))
			create = configured.missingInternal
		}
	}
	if sg.shutdown {
		statuses = append(statuses, sgStatus(sgStatusShutdownApplication, "A member of the group requested to shut down the application."))
	}
	if delayed {
		statuses = append(statuses, sgStatus(sgStatusAssignmentDelayed, "Assignment delayed due to the configured initial rebalance delay."))
	}
	r.Status = statuses
	if changed || req.MemberEpoch == epochJoin || m.reported == nil || !m.reported.equal(m.assigned) {
		r.ActiveTasks = m.assigned.active.taskIDs()
		r.StandbyTasks = m.assigned.standby.taskIDs()
		r.WarmupTasks = m.assigned.warmup.taskIDs()
	}
	s.write(recs, func(code int16) {
		if code != 0 {
			fail(code, "")
			return
		}
		reply(r, create)
	})
}

func sgStatus(code int8, detail string) kmsg.StreamsGroupHeartbeatResponseStatus {
	st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	st.StatusCode, st.StatusDetail = code, detail
	return st
}

// reportedTasks is what the request says the member owns; nil when it left
// all three lists out (unchanged since its last heartbeat).
func reportedTasks(req *kmsg.StreamsGroupHeartbeatRequest) *streamsTasks {
	if req.ActiveTasks == nil && req.StandbyTasks == nil && req.WarmupTasks == nil {
		return nil
	}
	t := streamsTasks{}
	conv := func(ids []kmsg.TaskIDs) taskSet {
		if ids == nil {
			return nil // unchanged
		}
		out := taskSet{}
		for _, id := range ids {
			for _, p := range id.Partitions {
				out.add(id.SubtopologyID, p)
			}
		}
		return out
	}
	t.active, t.standby, t.warmup = conv(req.ActiveTasks), conv(req.StandbyTasks), conv(req.WarmupTasks)
	return &t
}

// merge fills the lists t left out (nil) from prev.
func (t streamsTasks) merge(prev *streamsTasks) streamsTasks {
	out := t
	if prev == nil {
		prev = &streamsTasks{}
	}
	if out.active == nil {
		out.active = prev.active
	}
	if out.standby == nil {
		out.standby = prev.standby
	}
	if out.warmup == nil {
		out.warmup = prev.warmup
	}
	if out.active == nil {
		out.active = taskSet{}
	}
	if out.standby == nil {
		out.standby = taskSet{}
	}
	if out.warmup == nil {
		out.warmup = taskSet{}
	}
	return out
}

// subsetOf reports whether every task t reports is in o (nil lists count as
// empty).
func (t *streamsTasks) subsetOf(o streamsTasks) bool {
	return t.active.subsetOf(o.active) && t.standby.subsetOf(o.standby) && t.warmup.subsetOf(o.warmup)
}

func (ts taskSet) taskIDs() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, s := range ts.sortedSubtopologies() {
		id := kmsg.NewTaskIDs()
		id.SubtopologyID, id.Partitions = s, slices.Clone(ts[s])
		out = append(out, id)
	}
	return out
}

func (g *group) bumpStreamsEpoch(recs *[]record) {
	g.sg.epoch++
	*recs = append(*recs, record{key: streamsKey(keyStreamsGroupMetadata, g.id, nil), value: streamsMetadataValue(g.sg.epoch, g.sg.metadataHash)})
}

func (g *group) sgCurrentRecord(m *sgMember) record {
	c := sgCurrent{memberEpoch: m.epoch, previousEpoch: m.prevEpoch, state: int8(m.state), assigned: m.assigned, pendingRevoke: m.pendingRevoke}
	return record{key: streamsKey(keyStreamsGroupCurrentAssigment, g.id, &m.id), value: c.encode()}
}

// computeStreamsTarget runs the sticky assignor for the current group epoch
// and records the target assignment. A topology that is not ready (topics
// missing or wrongly partitioned) has no tasks to give.
func (g *group) computeStreamsTarget(configured *sgConfigured, recs *[]record) {
	sg := g.sg
	tasks := map[string]int32{}
	if configured.ready() {
		tasks = configured.tasks
	}
	var members []sgAssignMember
	for _, id := range sg.sortedMemberIDs() {
		m := sg.members[id]
		prev, ok := sg.target[id]
		if !ok {
			prev = m.assigned
		}
		members = append(members, sgAssignMember{id: id, process: m.meta.processID, prev: prev})
	}
	next := assignStreamsTasks(members, tasks, g.s.streamsNumStandbyReplicas(g.id))
	for _, id := range sg.sortedMemberIDs() {
		if old, ok := sg.target[id]; !ok || !old.equal(next[id]) {
			*recs = append(*recs, record{key: streamsKey(keyStreamsGroupTargetMember, g.id, &id), value: streamsTargetMemberValue(next[id])})
		}
	}
	sg.target = next
	sg.assignmentEpoch = sg.epoch
	*recs = append(*recs, record{key: streamsKey(keyStreamsGroupTargetMetadata, g.id, nil), value: streamsTargetMetadataValue(sg.assignmentEpoch)})
}

// sgAssignMember is one member as the assignor sees it.
type sgAssignMember struct {
	id, process string
	prev        streamsTasks // its previous target (or current tasks)
}

// sgTask names one task.
type sgTask struct {
	subtopology string
	partition   int32
}

// assignStreamsTasks is a sticky, balanced assignor in the spirit of
// Kafka's StickyTaskAssignor: every task is active on exactly one member;
// members keep the active tasks they had as long as that keeps the counts
// within one of each other; the rest go to the least loaded member. Then up
// to standbys standby replicas of each task go to members of other
// processes (never the process running it active), preferring previous
// holders, then the least loaded. Deterministic for the same input.
func assignStreamsTasks(members []sgAssignMember, tasks map[string]int32, standbys int) map[string]streamsTasks {
	out := make(map[string]streamsTasks, len(members))
	for _, m := range members {
		out[m.id] = newStreamsTasks()
	}
	if len(members) == 0 {
		return out
	}
	var all []sgTask
	for _, s := range sortedStreamsKeys(tasks) {
		for p := int32(0); p < tasks[s]; p++ {
			all = append(all, sgTask{s, p})
		}
	}
	ceil := (len(all) + len(members) - 1) / len(members)
	owner := map[sgTask]string{}
	load := map[string]int{}
	for _, m := range members {
		for _, t := range all {
			if _, taken := owner[t]; !taken && m.prev.active.has(t.subtopology, t.partition) && load[m.id] < ceil {
				owner[t] = m.id
				load[m.id]++
			}
		}
	}
	leastLoaded := func(skip func(id string) bool) string {
		best := ""
		for _, m := range members {
			if skip != nil && skip(m.id) {
				continue
			}
			if best == "" || load[m.id] < load[best] {
				best = m.id
			}
		}
		return best
	}
	for _, t := range all {
		if _, ok := owner[t]; !ok {
			id := leastLoaded(nil)
			owner[t] = id
			load[id]++
		}
	}
	// Even out what stickiness left uneven: move tasks from the most to the
	// least loaded member until they are within one.
	for range len(all) {
		most, least := members[0].id, members[0].id
		for _, m := range members {
			if load[m.id] > load[most] {
				most = m.id
			}
			if load[m.id] < load[least] {
				least = m.id
			}
		}
		if load[most]-load[least] <= 1 {
			break
		}
		for i := len(all) - 1; i >= 0; i-- {
			if owner[all[i]] == most {
				owner[all[i]] = least
				load[most]--
				load[least]++
				break
			}
		}
	}
	process := map[string]string{}
	prevStandby := map[string]taskSet{}
	for _, m := range members {
		process[m.id] = m.process
		prevStandby[m.id] = m.prev.standby
	}
	for _, t := range all {
		out[owner[t]].active.add(t.subtopology, t.partition)
	}
	for r := 0; r < standbys; r++ {
		for _, t := range all {
			active := owner[t]
			holds := func(id string) bool {
				return process[id] == process[active] || out[id].standby.has(t.subtopology, t.partition)
			}
			chosen := ""
			for _, m := range members {
				if !holds(m.id) && prevStandby[m.id].has(t.subtopology, t.partition) {
					chosen = m.id
					break
				}
			}
			if chosen == "" {
				chosen = leastLoaded(holds)
			}
			if chosen == "" {
				continue // no other process can hold it
			}
			out[chosen].standby.add(t.subtopology, t.partition)
			load[chosen]++
		}
	}
	return out
}

func sortedStreamsKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// reconcileStreams moves m toward its target, as Kafka's streams
// CurrentAssignmentBuilder: tasks to give up are revoked first (the member
// keeps its epoch until it reports them gone); then the member advances to
// the assignment epoch and gets the target's tasks, except those that are
// not released yet (it is then "unreleased" and gets them on a later
// heartbeat, once they are free): an active task another member still owns
// as active, or that another member of m's process still holds as a standby
// or warm-up; a standby or warm-up task another member of m's process still
// holds in any role. One process keeps one state directory per task, so two
// of its threads must not hold the same task at once.
func (g *group) reconcileStreams(m *sgMember) {
	sg := g.sg
	if m.epoch == epochStaticLeave {
		return
	}
	if m.state == sgUnrevoked {
		if m.reported == nil || m.reported.active.intersects(m.pendingRevoke.active) ||
			m.reported.standby.intersects(m.pendingRevoke.standby) || m.reported.warmup.intersects(m.pendingRevoke.warmup) {
			return // still revoking
		}
		m.pendingRevoke = newStreamsTasks()
		g.s.stopTimer(m.rebalanceTimer)
		m.state = sgStable
	}
	if m.epoch == sg.assignmentEpoch && m.state == sgStable {
		return
	}
	target, ok := sg.target[m.id]
	if !ok {
		target = newStreamsTasks()
	}
	kept, revoke := newStreamsTasks(), newStreamsTasks()
	split := func(cur, tgt, keep, rev taskSet) {
		for s, ps := range cur {
			for _, p := range ps {
				if tgt.has(s, p) {
					keep.add(s, p)
				} else {
					rev.add(s, p)
				}
			}
		}
	}
	split(m.assigned.active, target.active, kept.active, revoke.active)
	split(m.assigned.standby, target.standby, kept.standby, revoke.standby)
	split(m.assigned.warmup, target.warmup, kept.warmup, revoke.warmup)
	if revoke.count() > 0 {
		m.assigned, m.pendingRevoke, m.state = kept, revoke, sgUnrevoked
		epoch := m.epoch
		g.s.stopTimer(m.rebalanceTimer)
		m.rebalanceTimer = g.s.schedule(m.rebalanceTimeout(), func() {
			if sg.members[m.id] == m && m.state == sgUnrevoked && m.epoch == epoch {
				g.s.c.log.Info("streams group member did not revoke its tasks in time", "group", g.id, "member", m.id)
				var recs []record
				g.removeStreamsMember(m, &recs)
				g.s.write(recs, func(int16) {})
			}
		})
		return
	}
	unreleased := false
	next := kept.clone()
	give := func(tgt, cur taskSet, released func(s string, p int32) bool) {
		for s, ps := range tgt {
			for _, p := range ps {
				if cur.has(s, p) {
					continue
				}
				if !released(s, p) {
					unreleased = true
					continue
				}
				cur.add(s, p)
			}
		}
	}
	give(target.active, next.active, func(s string, p int32) bool {
		return !g.activeOwnedByOther(m, s, p) && !g.heldInProcess(m, s, p, false)
	})
	give(target.standby, next.standby, func(s string, p int32) bool { return !g.heldInProcess(m, s, p, true) })
	give(target.warmup, next.warmup, func(s string, p int32) bool { return !g.heldInProcess(m, s, p, true) })
	m.prevEpoch, m.epoch = m.epoch, sg.assignmentEpoch
	m.assigned = next
	m.state = sgStable
	if unreleased {
		m.state = sgUnreleased
	}
}

func (g *group) activeOwnedByOther(m *sgMember, subtopology string, p int32) bool {
	for _, o := range g.sg.members {
		if o != m && (o.assigned.active.has(subtopology, p) || o.pendingRevoke.active.has(subtopology, p)) {
			return true
		}
	}
	return false
}

// heldInProcess reports whether another member of m's process still holds
// the task (assigned or pending revocation) as a standby or warm-up, or, with
// active, as an active task too.
func (g *group) heldInProcess(m *sgMember, subtopology string, p int32, active bool) bool {
	holds := func(t streamsTasks) bool {
		return t.standby.has(subtopology, p) || t.warmup.has(subtopology, p) || (active && t.active.has(subtopology, p))
	}
	for _, o := range g.sg.members {
		if o != m && o.meta.processID == m.meta.processID && (holds(o.assigned) || holds(o.pendingRevoke)) {
			return true
		}
	}
	return false
}

// partitionsByUserEndpoint is the interactive-queries map of the group: for
// each member with an endpoint, the input partitions (source and repartition
// topics) of its active tasks and of its standby and warm-up tasks. nil when
// no member has an endpoint.
func (g *group) partitionsByUserEndpoint() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	sg := g.sg
	if sg.topology == nil {
		return nil
	}
	subs := make(map[string]*sgSubtopology, len(sg.topology.subtopologies))
	for i := range sg.topology.subtopologies {
		subs[sg.topology.subtopologies[i].id] = &sg.topology.subtopologies[i]
	}
	// partitions lists, per topic in name order, the partitions of tasks.
	partitions := func(sets ...taskSet) map[string][]int32 {
		out := map[string][]int32{}
		for _, ts := range sets {
			for sub, ps := range ts {
				st := subs[sub]
				if st == nil {
					continue
				}
				var topics []string
				topics = append(topics, st.sourceTopics...)
				for _, ti := range st.repartitionSourceTopics {
					topics = append(topics, ti.name)
				}
				for _, topic := range topics {
					n := int32(-1)
					if g.s.cfg.Topics != nil {
						if _, parts, ok := g.s.cfg.Topics.TopicByName(topic); ok {
							n = parts
						}
					}
					for _, p := range ps {
						if p < n {
							if i, found := slices.BinarySearch(out[topic], p); !found {
								out[topic] = slices.Insert(out[topic], i, p)
							}
						}
					}
				}
			}
		}
		return out
	}
	var out []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint
	for _, id := range sg.sortedMemberIDs() {
		m := sg.members[id]
		if m.meta.userEndpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.meta.userEndpoint.host, m.meta.userEndpoint.port
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		active := partitions(m.assigned.active)
		for _, topic := range sortedStreamsKeys(active) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: topic, Partitions: active[topic]})
		}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		standby := partitions(m.assigned.standby, m.assigned.warmup)
		for _, topic := range sortedStreamsKeys(standby) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: topic, Partitions: standby[topic]})
		}
		out = append(out, e)
	}
	return out
}

// removeStreamsMember drops m from the group (left, fenced or expired).
func (g *group) removeStreamsMember(m *sgMember, recs *[]record) {
	sg := g.sg
	if m.meta.userEndpoint != nil {
		sg.endpointEpoch++
	}
	g.s.stopTimer(m.sessionTimer)
	g.s.stopTimer(m.rebalanceTimer)
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	id := m.id
	*recs = append(*recs,
		record{key: streamsKey(keyStreamsGroupCurrentAssigment, g.id, &id)},
		record{key: streamsKey(keyStreamsGroupTargetMember, g.id, &id)},
		record{key: streamsKey(keyStreamsGroupMemberMetadata, g.id, &id)},
	)
	g.bumpStreamsEpoch(recs)
	if len(sg.members) == 0 {
		sg.shutdown = false
		g.stateTime = g.s.now() // offsets retention counts from here
	}
}

// replaceStaticStreamsMember hands a static member's place and tasks to a
// new member ID.
func (g *group) replaceStaticStreamsMember(old *sgMember, newID string, recs *[]record) *sgMember {
	sg := g.sg
	m := &sgMember{
		id: newID, meta: old.meta, epoch: old.prevEpoch, prevEpoch: old.prevEpoch, state: old.state,
		assigned: old.assigned, pendingRevoke: old.pendingRevoke,
	}
	target, hadTarget := sg.target[old.id]
	g.s.stopTimer(old.sessionTimer)
	g.s.stopTimer(old.rebalanceTimer)
	delete(sg.members, old.id)
	delete(sg.target, old.id)
	oldID := old.id
	*recs = append(*recs,
		record{key: streamsKey(keyStreamsGroupCurrentAssigment, g.id, &oldID)},
		record{key: streamsKey(keyStreamsGroupTargetMember, g.id, &oldID)},
		record{key: streamsKey(keyStreamsGroupMemberMetadata, g.id, &oldID)},
	)
	sg.members[newID] = m
	if hadTarget {
		sg.target[newID] = target
		*recs = append(*recs, record{key: streamsKey(keyStreamsGroupTargetMember, g.id, &newID), value: streamsTargetMemberValue(target)})
	}
	*recs = append(*recs, record{key: streamsKey(keyStreamsGroupMemberMetadata, g.id, &newID), value: m.meta.encode()},
		g.sgCurrentRecord(m))
	return m
}

// scheduleStreamsSession (re)starts m's session timer
// (the group's streams.session.timeout.ms, else group.streams.session.timeout.ms).
func (g *group) scheduleStreamsSession(m *sgMember) {
	g.s.stopTimer(m.sessionTimer)
	m.sessionTimer = g.s.schedule(g.s.streamsSessionTimeout(g.id), func() {
		if g.sg == nil || g.sg.members[m.id] != m {
			return
		}
		g.s.c.log.Info("streams group member session expired", "group", g.id, "member", m.id)
		var recs []record
		g.removeStreamsMember(m, &recs)
		g.s.write(recs, func(int16) {})
	})
}

// validateStreamsOffsetCommit is Kafka's StreamsGroup.validateOffsetCommit:
// the member epoch stands in for the generation and must be the member's.
func (g *group) validateStreamsOffsetCommit(memberID string, epoch int32, version int16) int16 {
	if epoch < 0 && len(g.sg.members) == 0 {
		return 0 // an admin commit to an empty group
	}
	m := g.sg.members[memberID]
	if m == nil {
		return errUnknownMember
	}
	if epoch != m.epoch {
		if version < 9 {
			return errIllegalGeneration
		}
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// StreamsGroupDescribe handles StreamsGroupDescribe (key 89) v0–v1.
func (c *Coordinator) StreamsGroupDescribe(ctx context.Context, req *kmsg.StreamsGroupDescribeRequest) (*kmsg.StreamsGroupDescribeResponse, error) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	groups, err := describeEach(ctx, c, req.Groups,
		func(id string) kmsg.StreamsGroupDescribeResponseGroup {
			dg := kmsg.NewStreamsGroupDescribeResponseGroup()
			dg.Group, dg.AuthorizedOperations = id, math.MinInt32
			return dg
		},
		func(dg *kmsg.StreamsGroupDescribeResponseGroup, code int16) { dg.ErrorCode = code },
		func(s *shard, dg kmsg.StreamsGroupDescribeResponseGroup) kmsg.StreamsGroupDescribeResponseGroup {
			return s.describeStreamsGroup(req.Version, dg)
		})
	if err != nil {
		return nil, err
	}
	resp.Groups = groups
	return resp, nil
}

func (s *shard) describeStreamsGroup(version int16, dg kmsg.StreamsGroupDescribeResponseGroup) kmsg.StreamsGroupDescribeResponseGroup {
	g := s.groups[dg.Group]
	if g == nil || g.sg == nil || g.state == groupDead {
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + dg.Group + " not found."
		if g != nil && g.sg == nil {
			msg = "Group " + dg.Group + " is not a streams group."
		}
		dg.ErrorMessage = &msg
		return dg
	}
	sg := g.sg
	var configured *sgConfigured
	if sg.topology != nil {
		configured = s.configureTopology(sg.topology)
	}
	dg.State = sg.stateName(configured.ready())
	dg.Epoch = sg.epoch
	dg.AssignmentEpoch = sg.assignmentEpoch
	if version >= 1 {
		name := sgAssignorName
		dg.AssignorName = &name
	}
	if t := sg.topology; t != nil {
		dt := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		dt.Epoch = t.epoch
		dt.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
		infos := func(ts []sgTopicInfo) []kmsg.TopicInfo {
			out := []kmsg.TopicInfo{}
			for _, ti := range ts {
				d := kmsg.NewTopicInfo()
				d.Topic, d.NumPartitions, d.ReplicationFactor = ti.name, ti.partitions, ti.replicationFactor
				if n := configured.internal[ti.name]; n > 0 {
					d.NumPartitions = n
				}
				d.Configs = []kmsg.TopicInfoConfig{}
				for _, kv := range ti.configs {
					c := kmsg.NewTopicInfoConfig()
					c.Key, c.Value = kv.key, kv.value
					d.Configs = append(d.Configs, c)
				}
				out = append(out, d)
			}
			return out
		}
		for _, st := range t.subtopologies {
			ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
			ds.SubtopologyID = st.id
			ds.SourceTopics = append([]string{}, st.sourceTopics...)
			ds.RepartitionSinkTopics = append([]string{}, st.repartitionSinkTopics...)
			ds.StateChangelogTopics = infos(st.stateChangelogTopics)
			ds.RepartitionSourceTopics = infos(st.repartitionSourceTopics)
			dt.Subtopologies = append(dt.Subtopologies, ds)
		}
		dg.Topology = &dt
	}
	assignment := func(t streamsTasks) kmsg.StreamsAssignment {
		a := kmsg.NewStreamsAssignment()
		a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = t.active.taskIDs(), t.standby.taskIDs(), t.warmup.taskIDs()
		return a
	}
	for _, id := range sg.sortedMemberIDs() {
		m := sg.members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.MemberEpoch = m.epoch
		dm.InstanceID = m.meta.instanceID
		dm.RackID = m.meta.rackID
		dm.ClientID = m.meta.clientID
		dm.ClientHost = m.meta.clientHost
		dm.TopologyEpoch = m.meta.topologyEpoch
		dm.ProcessID = m.meta.processID
		if e := m.meta.userEndpoint; e != nil {
			ep := kmsg.NewStreamsGroupDescribeResponseGroupMemberUserEndpoint()
			ep.Host, ep.Port = e.host, e.port
			dm.UserEndpoint = &ep
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, kv := range m.meta.clientTags {
			tag := kmsg.NewStreamsGroupDescribeResponseGroupMemberClientTag()
			tag.Key, tag.Value = kv.key, kv.value
			dm.ClientTags = append(dm.ClientTags, tag)
		}
		dm.TaskOffsets = []kmsg.TaskOffset{}
		dm.TaskEndOffsets = []kmsg.TaskOffset{}
		dm.Assignment = assignment(m.assigned)
		target, ok := sg.target[m.id]
		if !ok {
			target = newStreamsTasks()
		}
		dm.TargetAssignment = assignment(target)
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// streamsStateName is the state ListGroups shows for a streams group.
func (s *shard) streamsStateName(g *group) string {
	if g.state == groupDead {
		return "Dead"
	}
	var configured *sgConfigured
	if g.sg.topology != nil {
		configured = s.configureTopology(g.sg.topology)
	}
	return g.sg.stateName(configured.ready())
}

// applyStreamsRecord replays a KIP-1071 record. REQUIRES: replay.
func (s *shard) applyStreamsRecord(key, value []byte) error {
	kind, groupID, memberID, err := decodeStreamsKey(key)
	if err != nil {
		return err
	}
	if kind == keyStreamsGroupPartitionMeta {
		return nil
	}
	g := s.groups[groupID]
	if g == nil {
		if value == nil {
			return nil
		}
		g = s.newGroup(groupID)
	}
	if g.sg == nil {
		g.cg = nil
		g.resetToSimple()
		g.sg = newStreamsGroup()
		g.protocolType = "streams"
	}
	sg := g.sg
	member := func() *sgMember {
		m := sg.members[memberID]
		if m == nil {
			m = &sgMember{id: memberID, assigned: newStreamsTasks(), pendingRevoke: newStreamsTasks()}
			sg.members[memberID] = m
		}
		return m
	}
	switch kind {
	case keyStreamsGroupMetadata:
		if value == nil {
			// The group is deleted; offsets (if any) stay with a simple group.
			g.sg = nil
			g.resetToSimple()
			s.maybeDropLoadedGroup(g)
			return nil
		}
		sg.epoch, sg.metadataHash, err = decodeStreamsMetadataValue(value)
	case keyStreamsGroupTopology:
		if value == nil {
			sg.topology = nil
			return nil
		}
		sg.topology, err = decodeSGTopology(value)
	case keyStreamsGroupMemberMetadata:
		if value == nil {
			delete(sg.members, memberID)
			return nil
		}
		member().meta, err = decodeSGMemberMeta(value)
	case keyStreamsGroupTargetMetadata:
		if value != nil {
			sg.assignmentEpoch, err = decodeStreamsTargetMetadataValue(value)
		}
	case keyStreamsGroupTargetMember:
		if value == nil {
			delete(sg.target, memberID)
			return nil
		}
		sg.target[memberID], err = decodeStreamsTargetMember(value)
	case keyStreamsGroupCurrentAssigment:
		if value == nil {
			if m := sg.members[memberID]; m != nil {
				m.assigned, m.pendingRevoke = newStreamsTasks(), newStreamsTasks()
			}
			return nil
		}
		var cur sgCurrent
		if cur, err = decodeSGCurrent(value); err == nil {
			m := member()
			m.epoch, m.prevEpoch, m.state = cur.memberEpoch, cur.previousEpoch, sgMemberState(cur.state)
			m.assigned, m.pendingRevoke = cur.assigned, cur.pendingRevoke
		}
	}
	return err
}

// streamsDeletionRecords are the tombstones that delete a streams group's
// membership state (not its offsets).
func (g *group) streamsDeletionRecords() []record {
	return []record{
		{key: streamsKey(keyStreamsGroupTargetMetadata, g.id, nil)},
		{key: streamsKey(keyStreamsGroupTopology, g.id, nil)},
		{key: streamsKey(keyStreamsGroupMetadata, g.id, nil)},
	}
}
