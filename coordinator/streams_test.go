package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The word count's topology, as Kafka Streams sends it: subtopology 0 reads "in" and writes
// the repartition topic; subtopology 1 reads it and keeps a store with a changelog.
func wordCountTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = 0
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID = "0"
	s0.SourceTopics = []string{"in"}
	s0.RepartitionSinkTopics = []string{"app-rep"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rep := kmsg.NewTopicInfo()
	rep.Topic = "app-rep"
	rep.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{rep}
	cl := kmsg.NewTopicInfo()
	cl.Topic = "app-log"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{cl}
	cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
	cg.RepartitionSourceTopics = []int16{0}
	s1.CopartitionGroups = append(s1.CopartitionGroups, cg)
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s1, s0}
	return &t
}

type sgReq struct {
	member, process string
	epoch           int32
	active          map[string][]int32 // nil: not sent
	standby         map[string][]int32 // nil: not sent
	shutdown        bool
	endpoint        string // host of an interactive-query endpoint (port 8080), joins only
	endpointEpoch   int32
}

func (h *harness) sgHeartbeat(r sgReq) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
	h.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group = "sg"
	req.MemberID = r.member
	req.MemberEpoch = r.epoch
	req.ShutdownApplication = r.shutdown
	req.EndpointInformationEpoch = r.endpointEpoch
	if r.endpoint != "" {
		req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: r.endpoint, Port: 8080}
	}
	if r.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = wordCountTopology()
		process := r.process
		if process == "" {
			process = "p1"
		}
		req.ProcessID = &process
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		ids := func(m map[string][]int32) []kmsg.TaskIDs {
			if m == nil {
				return nil
			}
			out := []kmsg.TaskIDs{}
			for _, s := range sortedStreamsKeys(m) {
				out = append(out, kmsg.TaskIDs{SubtopologyID: s, Partitions: m[s]})
			}
			return out
		}
		req.ActiveTasks, req.StandbyTasks = ids(r.active), ids(r.standby)
	}
	resp, create, err := h.c.StreamsGroupHeartbeat(ctx, JoinClient{ClientID: "sc", ClientHost: "/10.0.0.2"}, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, create
}

// tasksOf renders TaskIDs as "0:[0 1] 1:[2]" (nil: "-").
func tasksOf(ids []kmsg.TaskIDs) string {
	if ids == nil {
		return "-"
	}
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%s:%v", id.SubtopologyID, id.Partitions))
	}
	return strings.Join(parts, " ")
}

func tasksMap(ids []kmsg.TaskIDs) map[string][]int32 {
	out := map[string][]int32{}
	for _, id := range ids {
		out[id.SubtopologyID] = id.Partitions
	}
	return out
}

func (h *harness) sgDescribe() kmsg.StreamsGroupDescribeResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{"sg"}
	resp, err := h.c.StreamsGroupDescribe(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Groups[0]
}

func statusCodes(r *kmsg.StreamsGroupHeartbeatResponse) []int8 {
	var out []int8
	for _, s := range r.Status {
		out = append(out, s.StatusCode)
	}
	return out
}

// A streams group from the first member to a balanced two-member group: the missing internal
// topics are named for creation (partitions derived from the input), tasks are assigned once
// they exist, a task moves only after its old owner reported it revoked, the state survives a
// coordinator restart, offset commits are checked against the member epoch, and an expired
// member's tasks go back to the other.
func TestStreamsGroupLifecycle(t *testing.T) {
	topics := fakeTopics{"in": {id: [16]byte{1}, parts: 3}}
	h := newHarness(t, func(c *Config) { c.Topics = topics; c.StreamsGroupInitialRebalanceDelay = 0 })
	h.load("sg")

	r, create := h.sgHeartbeat(sgReq{member: "A", epoch: 0})
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || tasksOf(r.ActiveTasks) != "" || !slices.Equal(statusCodes(r), []int8{sgStatusMissingInternalTopics}) {
		t.Fatalf("first join: code %d epoch %d tasks %q status %+v", r.ErrorCode, r.MemberEpoch, tasksOf(r.ActiveTasks), r.Status)
	}
	sort.Slice(create, func(i, j int) bool { return create[i].Name < create[j].Name })
	if got := fmt.Sprint(create); got != "[{app-log 3 0 map[cleanup.policy:compact]} {app-rep 3 0 map[cleanup.policy:delete]}]" {
		t.Fatalf("topics to create: %s", got)
	}
	if d := h.sgDescribe(); d.State != "NotReady" {
		t.Fatalf("state before the internal topics exist: %s", d.State)
	}
	topics["app-rep"] = struct {
		id    [16]byte
		parts int32
	}{[16]byte{2}, 3}
	topics["app-log"] = struct {
		id    [16]byte
		parts int32
	}{[16]byte{3}, 3}

	r, create = h.sgHeartbeat(sgReq{member: "A", epoch: 1})
	if r.MemberEpoch != 2 || tasksOf(r.ActiveTasks) != "0:[0 1 2] 1:[0 1 2]" || len(r.Status) != 0 || create != nil {
		t.Fatalf("after the topics exist: epoch %d tasks %q status %+v create %v", r.MemberEpoch, tasksOf(r.ActiveTasks), r.Status, create)
	}
	all := map[string][]int32{"0": {0, 1, 2}, "1": {0, 1, 2}}

	// B joins: it may not take A's tasks before A gives them up.
	r, _ = h.sgHeartbeat(sgReq{member: "B", epoch: 0, process: "p2"})
	if r.MemberEpoch != 3 || tasksOf(r.ActiveTasks) != "" {
		t.Fatalf("B joins: epoch %d tasks %q", r.MemberEpoch, tasksOf(r.ActiveTasks))
	}
	r, _ = h.sgHeartbeat(sgReq{member: "A", epoch: 2, active: all})
	if r.MemberEpoch != 2 || tasksOf(r.ActiveTasks) == "0:[0 1 2] 1:[0 1 2]" {
		t.Fatalf("A must revoke at epoch 2: epoch %d tasks %q", r.MemberEpoch, tasksOf(r.ActiveTasks))
	}
	kept := tasksMap(r.ActiveTasks)
	r, _ = h.sgHeartbeat(sgReq{member: "B", epoch: 3})
	if tasksOf(r.ActiveTasks) != "" && tasksOf(r.ActiveTasks) != "-" {
		t.Fatalf("B got tasks A still owns: %q", tasksOf(r.ActiveTasks))
	}
	r, _ = h.sgHeartbeat(sgReq{member: "A", epoch: 2, active: kept})
	if r.MemberEpoch != 3 {
		t.Fatalf("A after revoking: epoch %d", r.MemberEpoch)
	}
	r, _ = h.sgHeartbeat(sgReq{member: "B", epoch: 3})
	bTasks := tasksMap(r.ActiveTasks)
	var union []string
	for _, m := range []map[string][]int32{kept, bTasks} {
		for s, ps := range m {
			for _, p := range ps {
				union = append(union, fmt.Sprintf("%s_%d", s, p))
			}
		}
	}
	sort.Strings(union)
	if fmt.Sprint(union) != "[0_0 0_1 0_2 1_0 1_1 1_2]" || len(kept) == 0 || len(bTasks) == 0 {
		t.Fatalf("A %v and B %v do not split the six tasks", kept, bTasks)
	}
	h.sgHeartbeat(sgReq{member: "B", epoch: 3, active: bTasks})
	d := h.sgDescribe()
	if d.State != "Stable" || d.Epoch != 3 || d.AssignmentEpoch != 3 || len(d.Members) != 2 || d.Topology == nil || len(d.Topology.Subtopologies) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if n := d.Topology.Subtopologies[1].StateChangelogTopics[0].NumPartitions; n != 3 {
		t.Fatalf("describe shows the changelog with %d partitions", n)
	}

	// A restart replays the StreamsGroup* records into the same group.
	h.restart()
	if d2 := h.sgDescribe(); d2.State != "Stable" || d2.Epoch != 3 || len(d2.Members) != 2 ||
		tasksOf(d2.Members[0].Assignment.ActiveTasks) != tasksOf(d.Members[0].Assignment.ActiveTasks) ||
		d2.Members[1].ProcessID != "p2" {
		t.Fatalf("after a restart: %+v\nbefore: %+v", d2, d)
	}
	if r, _ := h.sgHeartbeat(sgReq{member: "A", epoch: 3}); r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Fatalf("A's heartbeat after the restart: code %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}

	// Offset commits carry the member epoch.
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = "sg", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "in"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := h.c.OffsetCommit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit("A", 3); code != 0 {
		t.Fatalf("commit at the member epoch: %s", errName(code))
	}
	if code := commit("A", 2); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at an old epoch: %s", errName(code))
	}
	if code := commit("Z", 3); code != errUnknownMember {
		t.Fatalf("commit of an unknown member: %s", errName(code))
	}

	// The offsets of the tasks' input cannot be deleted while the group runs; others can.
	del := func(topic string) int16 {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = "sg"
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		resp, err := h.c.OffsetDelete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			return resp.ErrorCode
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := del("in"); code != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("deleting the input's offsets of a running group: %s", errName(code))
	}
	if code := del("app-log"); code != 0 {
		t.Fatalf("deleting offsets of a topic the group does not read: %s", errName(code))
	}

	// B goes silent: after its session it is removed and A gets everything back.
	for range 3 {
		h.advance(h.cfg.StreamsGroupSessionTimeout / 3)
		h.sgHeartbeat(sgReq{member: "A", epoch: 3})
	}
	h.advance(time.Second)
	r, _ = h.sgHeartbeat(sgReq{member: "A", epoch: 3, active: kept})
	if r.MemberEpoch <= 3 {
		r, _ = h.sgHeartbeat(sgReq{member: "A", epoch: r.MemberEpoch, active: kept})
	}
	if tasksOf(r.ActiveTasks) != "0:[0 1 2] 1:[0 1 2]" {
		t.Fatalf("after B expired A has %q (epoch %d)", tasksOf(r.ActiveTasks), r.MemberEpoch)
	}
	if d := h.sgDescribe(); len(d.Members) != 1 {
		t.Fatalf("B still described after its session: %d members", len(d.Members))
	}

	// A member asking to shut the application down: every member is told so.
	r, _ = h.sgHeartbeat(sgReq{member: "A", epoch: r.MemberEpoch, shutdown: true})
	if !slices.Equal(statusCodes(r), []int8{sgStatusShutdownApplication}) {
		t.Fatalf("shutdown request: status %+v", r.Status)
	}
	r, _ = h.sgHeartbeat(sgReq{member: "A", epoch: r.MemberEpoch})
	if !slices.Equal(statusCodes(r), []int8{sgStatusShutdownApplication}) {
		t.Fatalf("after a shutdown request: status %+v", r.Status)
	}

	// A leaves: the group is empty.
	r, _ = h.sgHeartbeat(sgReq{member: "A", epoch: -1})
	if r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: code %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	if d := h.sgDescribe(); d.State != "Empty" {
		t.Fatalf("state after the last member left: %s", d.State)
	}
}

// Bad heartbeats are answered with Kafka's codes and change nothing; groups of the other
// protocols are not streams groups and the other way round.
func TestStreamsGroupBadInput(t *testing.T) {
	topics := fakeTopics{"in": {id: [16]byte{1}, parts: 3}, "a": {id: topicA, parts: 4}}
	h := newHarness(t, func(c *Config) { c.Topics = topics; c.StreamsGroupInitialRebalanceDelay = 0 })
	h.load("sg")
	h.load("cg")
	send := func(mutate func(*kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "sg", "M", 30000
		req.Topology = wordCountTopology()
		p := "p"
		req.ProcessID = &p
		mutate(req)
		r, _, err := h.c.StreamsGroupHeartbeat(ctx, JoinClient{}, req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		mutate func(*kmsg.StreamsGroupHeartbeatRequest)
		code   int16
	}{
		{"empty member ID", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{"join without topology", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }, kerr.InvalidRequest.Code},
		{"join without process", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.ProcessID = nil }, kerr.InvalidRequest.Code},
		{"join owning tasks", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
		}, kerr.InvalidRequest.Code},
		{"bad epoch", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code},
		{"subtopology without input", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[0].SourceTopics, r.Topology.Subtopologies[0].RepartitionSourceTopics = nil, nil
		}, kerr.StreamsInvalidTopology.Code},
		{"copartition index out of range", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[0].CopartitionGroups[0].RepartitionSourceTopics = []int16{7}
		}, kerr.StreamsInvalidTopology.Code},
		{"unknown member of a missing group", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = 4; r.Topology = nil }, errUnknownMember},
	} {
		if r := send(tc.mutate); r.ErrorCode != tc.code {
			t.Errorf("%s: %s, want %s", tc.name, errName(r.ErrorCode), errName(tc.code))
		}
	}
	if d := h.sgDescribe(); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("bad heartbeats created the group: %+v", d)
	}

	if r := send(func(*kmsg.StreamsGroupHeartbeatRequest) {}); r.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(r.ErrorCode))
	}
	// Another topology for the group: Kafka 4.4 does not take topology updates; an older
	// epoch's member is told its topology is stale.
	if r := send(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "N"; r.Topology.Epoch = 1 }); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a new topology epoch: %s", errName(r.ErrorCode))
	}
	if r := send(func(r *kmsg.StreamsGroupHeartbeatRequest) {
		r.MemberID = "N"
		r.Topology.Subtopologies[0].SourceTopics = []string{"a"}
	}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a different topology of the same epoch: %s", errName(r.ErrorCode))
	}
	if d := h.sgDescribe(); len(d.Members) != 1 {
		t.Fatalf("refused joins added members: %d", len(d.Members))
	}
	if r := send(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = 7; r.Topology = nil }); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("a future epoch: %s", errName(r.ErrorCode))
	}
	// A consumer heartbeat to the streams group, and a streams heartbeat to a consumer group.
	cr := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cr.Version, cr.Group, cr.MemberID, cr.RebalanceTimeoutMillis = 1, "sg", "C", 30000
	cr.SubscribedTopicNames, cr.Topics = []string{"a"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r, err := h.c.ConsumerGroupHeartbeat(ctx, JoinClient{}, cr); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a streams group: %v %s", err, errName(r.ErrorCode))
	}
	cr.Group = "cg"
	if r, err := h.c.ConsumerGroupHeartbeat(ctx, JoinClient{}, cr); err != nil || r.ErrorCode != 0 {
		t.Fatalf("consumer join: %v %s", err, errName(r.ErrorCode))
	}
	if r := send(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "cg" }); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("streams heartbeat to a consumer group: %s", errName(r.ErrorCode))
	}
}

// The assignor balances, keeps tasks where they were, and puts standbys on other processes.
func TestAssignStreamsTasks(t *testing.T) {
	tasks := map[string]int32{"0": 3, "1": 3}
	render := func(out map[string]streamsTasks) string {
		var parts []string
		for _, id := range sortedStreamsKeys(out) {
			parts = append(parts, fmt.Sprintf("%s=%s/%s", id, tasksOf(out[id].active.taskIDs()), tasksOf(out[id].standby.taskIDs())))
		}
		return strings.Join(parts, " ")
	}
	one := assignStreamsTasks([]sgAssignMember{{id: "a", process: "p1", prev: newStreamsTasks()}}, tasks, 0)
	if got := render(one); got != "a=0:[0 1 2] 1:[0 1 2]/" {
		t.Fatalf("one member: %s", got)
	}
	two := assignStreamsTasks([]sgAssignMember{
		{id: "a", process: "p1", prev: one["a"]},
		{id: "b", process: "p2", prev: newStreamsTasks()},
	}, tasks, 0)
	if two["a"].active.count() != 3 || two["b"].active.count() != 3 || !two["a"].active.subsetOf(one["a"].active) {
		t.Fatalf("two members: %s", render(two))
	}
	// Sticky: the same input gives the same answer, and a third member takes from both.
	again := assignStreamsTasks([]sgAssignMember{{id: "a", process: "p1", prev: two["a"]}, {id: "b", process: "p2", prev: two["b"]}}, tasks, 0)
	if render(again) != render(two) {
		t.Fatalf("not sticky: %s then %s", render(two), render(again))
	}
	three := assignStreamsTasks([]sgAssignMember{
		{id: "a", process: "p1", prev: two["a"]}, {id: "b", process: "p2", prev: two["b"]}, {id: "c", process: "p3", prev: newStreamsTasks()},
	}, tasks, 0)
	for _, id := range []string{"a", "b", "c"} {
		if three[id].active.count() != 2 {
			t.Fatalf("three members: %s", render(three))
		}
	}
	if !three["a"].active.subsetOf(two["a"].active) || !three["b"].active.subsetOf(two["b"].active) {
		t.Fatalf("three members moved more than needed: %s", render(three))
	}
	// One standby per task, never in the active task's process.
	sb := assignStreamsTasks([]sgAssignMember{
		{id: "a", process: "p1", prev: newStreamsTasks()}, {id: "a2", process: "p1", prev: newStreamsTasks()},
		{id: "b", process: "p2", prev: newStreamsTasks()},
	}, tasks, 1)
	proc := map[string]string{"a": "p1", "a2": "p1", "b": "p2"}
	for s, n := range tasks {
		for p := int32(0); p < n; p++ {
			var active, standby []string
			for id, ts := range sb {
				if ts.active.has(s, p) {
					active = append(active, id)
				}
				if ts.standby.has(s, p) {
					standby = append(standby, id)
				}
			}
			if len(active) != 1 || len(standby) != 1 || proc[active[0]] == proc[standby[0]] {
				t.Fatalf("task %s_%d: active %v standby %v (%s)", s, p, active, standby, render(sb))
			}
		}
	}
}

// Every StreamsGroup* value decodes to what was encoded, and a truncated one is refused.
func TestStreamsRecordsRoundTrip(t *testing.T) {
	inst, rack := "i1", "r1"
	meta := sgMemberMeta{instanceID: &inst, rackID: &rack, clientID: "c", clientHost: "/h", rebalanceTimeout: 300000,
		topologyEpoch: 2, processID: "p", userEndpoint: &sgEndpoint{"host", 8080}, clientTags: []sgKeyValue{{"az", "1"}}}
	got, err := decodeSGMemberMeta(meta.encode())
	if err != nil || !got.equal(&meta) {
		t.Fatalf("member metadata: %+v %v", got, err)
	}
	tasks := streamsTasks{active: taskSet{"0": {0, 2}}, standby: taskSet{"1": {1}}, warmup: taskSet{}}
	cur := sgCurrent{memberEpoch: 5, previousEpoch: 4, state: int8(sgUnrevoked), assigned: tasks, pendingRevoke: streamsTasks{active: taskSet{"1": {0}}, standby: taskSet{}, warmup: taskSet{}}}
	c2, err := decodeSGCurrent(cur.encode())
	if err != nil || c2.memberEpoch != 5 || c2.previousEpoch != 4 || c2.state != cur.state || !c2.assigned.equal(tasks) || !c2.pendingRevoke.equal(cur.pendingRevoke) {
		t.Fatalf("current assignment: %+v %v", c2, err)
	}
	tm, err := decodeStreamsTargetMember(streamsTargetMemberValue(tasks))
	if err != nil || !tm.equal(tasks) {
		t.Fatalf("target member: %+v %v", tm, err)
	}
	e, h, err := decodeStreamsMetadataValue(streamsMetadataValue(7, -99))
	if err != nil || e != 7 || h != -99 {
		t.Fatalf("group metadata: %d %d %v", e, h, err)
	}
	topo := topologyFromRequest(wordCountTopology())
	t2, err := decodeSGTopology(topo.encode())
	if err != nil || fmt.Sprintf("%+v", *t2) != fmt.Sprintf("%+v", *topo) {
		t.Fatalf("topology: %+v %v\nwant %+v", t2, err, topo)
	}
	for _, v := range [][]byte{meta.encode(), cur.encode(), topo.encode()} {
		for n := 0; n < len(v)-1; n += 3 {
			// Truncations must fail cleanly, never panic (a cut at a tag boundary may decode).
			_, _ = decodeSGMemberMeta(v[:n])
			_, _ = decodeSGCurrent(v[:n])
			_, _ = decodeSGTopology(v[:n])
		}
	}
	if _, err := decodeSGCurrent(cur.encode()[:9]); err == nil {
		t.Fatal("a truncated current assignment decoded")
	}
}

// The StreamsGroup* decoders take any bytes without panicking.
func FuzzStreamsRecords(f *testing.F) {
	meta := sgMemberMeta{clientID: "c", processID: "p", userEndpoint: &sgEndpoint{"h", 1}, clientTags: []sgKeyValue{{"k", "v"}}}
	cur := sgCurrent{assigned: streamsTasks{active: taskSet{"0": {1}}, standby: taskSet{}, warmup: taskSet{}}, pendingRevoke: newStreamsTasks()}
	for _, seed := range [][]byte{meta.encode(), cur.encode(), topologyFromRequest(wordCountTopology()).encode(),
		streamsMetadataValue(1, 2), streamsTargetMemberValue(cur.assigned), streamsKey(keyStreamsGroupCurrentAssigment, "g", &meta.clientID)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeSGMemberMeta(b)
		_, _ = decodeSGCurrent(b)
		_, _ = decodeSGTopology(b)
		_, _ = decodeStreamsTargetMember(b)
		_, _, _ = decodeStreamsMetadataValue(b)
		_, _ = decodeStreamsTargetMetadataValue(b)
		_, _, _, _ = decodeStreamsKey(b)
	})
}

// A member with an interactive-query endpoint is sent every endpoint's partitions (its
// tasks' input partitions) whenever its endpoint epoch is behind the group's.
func TestStreamsGroupEndpoints(t *testing.T) {
	topics := fakeTopics{"in": {id: [16]byte{1}, parts: 3}, "app-rep": {id: [16]byte{2}, parts: 3}, "app-log": {id: [16]byte{3}, parts: 3}}
	h := newHarness(t, func(c *Config) { c.Topics = topics; c.StreamsGroupInitialRebalanceDelay = 0 })
	h.load("sg")
	r, _ := h.sgHeartbeat(sgReq{member: "A", epoch: 0, endpoint: "host-a"})
	if r.EndpointInformationEpoch == 0 || len(r.PartitionsByUserEndpoint) != 1 {
		t.Fatalf("join: endpoint epoch %d, map %+v", r.EndpointInformationEpoch, r.PartitionsByUserEndpoint)
	}
	e := r.PartitionsByUserEndpoint[0]
	var active []string
	for _, tp := range e.ActivePartitions {
		active = append(active, fmt.Sprintf("%s%v", tp.Topic, tp.Partitions))
	}
	if e.UserEndpoint.Host != "host-a" || e.UserEndpoint.Port != 8080 || fmt.Sprint(active) != "[app-rep[0 1 2] in[0 1 2]]" || len(e.StandbyPartitions) != 0 {
		t.Fatalf("endpoint map: %+v", e)
	}
	r2, _ := h.sgHeartbeat(sgReq{member: "A", epoch: r.MemberEpoch, endpointEpoch: r.EndpointInformationEpoch})
	if r2.PartitionsByUserEndpoint != nil || r2.EndpointInformationEpoch != r.EndpointInformationEpoch {
		t.Fatalf("an up-to-date member was sent the map again: %+v (epoch %d)", r2.PartitionsByUserEndpoint, r2.EndpointInformationEpoch)
	}
}

// A task that moves to a member as active waits until no other member of that member's process
// holds it any more, as a standby either: one Kafka Streams process keeps one state directory
// per task, which two of its threads cannot hold at once (Kafka's CurrentAssignmentBuilder
// treats such a task as unreleased). Here A and B are two threads of process p1 and C is
// process p2, with one standby replica per task; when B joins, a task active on C and standby
// on A moves to B as active. B gets it only after A reported its standby copy gone, not
// already when C gave up the active one.
func TestStreamsGroupActiveTaskWaitsForStandbyInSameProcess(t *testing.T) {
	topics := fakeTopics{"in": {id: [16]byte{1}, parts: 3}, "app-rep": {id: [16]byte{2}, parts: 3}, "app-log": {id: [16]byte{3}, parts: 3}}
	h := newHarness(t, func(c *Config) {
		c.Topics, c.StreamsGroupNumStandbyReplicas, c.StreamsGroupInitialRebalanceDelay = topics, 1, 0
	})
	h.load("sg")

	// Each member acts as a client: it reports the tasks it was last given.
	type client struct {
		process         string
		epoch           int32
		active, standby map[string][]int32
	}
	cs := map[string]*client{"A": {process: "p1"}, "B": {process: "p1"}, "C": {process: "p2"}}
	beat := func(id string) *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		c := cs[id]
		r, _ := h.sgHeartbeat(sgReq{member: id, epoch: c.epoch, process: c.process, active: c.active, standby: c.standby})
		if r.ErrorCode != 0 {
			t.Fatalf("%s: heartbeat error %s", id, errName(r.ErrorCode))
		}
		c.epoch = r.MemberEpoch
		if r.ActiveTasks != nil {
			c.active, c.standby = tasksMap(r.ActiveTasks), tasksMap(r.StandbyTasks)
		}
		return r
	}
	has := func(m map[string][]int32, task sgTask) bool {
		return slices.Contains(m[task.subtopology], task.partition)
	}
	member := func(d kmsg.StreamsGroupDescribeResponseGroup, id string) kmsg.StreamsGroupDescribeResponseGroupMember {
		for _, m := range d.Members {
			if m.MemberID == id {
				return m
			}
		}
		t.Fatalf("no member %s in %+v", id, d)
		return kmsg.StreamsGroupDescribeResponseGroupMember{}
	}

	// A and C settle: each runs half the tasks and keeps standbys of the other half.
	beat("A")
	beat("A")
	beat("C")
	for range 2 {
		beat("A")
		beat("C")
	}
	if d := h.sgDescribe(); d.State != "Stable" || len(member(d, "A").Assignment.StandbyTasks) == 0 {
		t.Fatalf("A and C did not settle with standbys: %+v", d)
	}

	// B joins. Find a task B is to run that C runs now and A keeps a standby of.
	beat("B")
	d := h.sgDescribe()
	var moved *sgTask
	for _, id := range member(d, "B").TargetAssignment.ActiveTasks {
		for _, p := range id.Partitions {
			task := sgTask{id.SubtopologyID, p}
			if has(tasksMap(member(d, "C").Assignment.ActiveTasks), task) && has(tasksMap(member(d, "A").Assignment.StandbyTasks), task) {
				moved = &task
			}
		}
	}
	if moved == nil {
		t.Fatalf("no task moves from C (active) and A (standby) to B: %+v", d)
	}
	// C gives it up; A has not heartbeated yet, so it still holds its standby copy.
	beat("C")
	beat("C")
	if has(cs["C"].active, *moved) {
		t.Fatalf("C still runs %v", *moved)
	}
	beat("B")
	if has(cs["B"].active, *moved) {
		t.Fatalf("B was given %v while A, of B's process, still holds it as a standby", *moved)
	}
	if d := h.sgDescribe(); d.State == "Stable" {
		t.Fatalf("Stable while B waits for %v: %+v", *moved, d)
	}
	// A drops its standby copy (the move leaves it no standby of that task); then B gets it.
	beat("A")
	beat("A")
	if has(cs["A"].standby, *moved) || has(cs["A"].active, *moved) {
		t.Fatalf("A still holds %v", *moved)
	}
	beat("B")
	if !has(cs["B"].active, *moved) {
		t.Fatalf("B did not get %v once A gave it up: active %v", *moved, cs["B"].active)
	}
	if d := h.sgDescribe(); d.State != "Stable" {
		t.Fatalf("not Stable at the end: %+v", d)
	}
}

// group.streams.initial.rebalance.delay.ms: a member joining an empty group starts the delay,
// during which members get an epoch, no tasks and ASSIGNMENT_DELAYED; the first target comes
// after it and includes every member that joined meanwhile, so the first member is not given
// every task only to give half of them back when the application's second thread joins a
// moment later. A group that became empty again delays its next assignment the same way.
func TestStreamsGroupInitialRebalanceDelay(t *testing.T) {
	topics := fakeTopics{"in": {id: [16]byte{1}, parts: 3}, "app-rep": {id: [16]byte{2}, parts: 3}, "app-log": {id: [16]byte{3}, parts: 3}}
	h := newHarness(t, func(c *Config) { c.Topics, c.StreamsGroupInitialRebalanceDelay = topics, 3*time.Second })
	h.load("sg")
	delayed := func(who string, r *kmsg.StreamsGroupHeartbeatResponse) {
		t.Helper()
		if tasks := tasksOf(r.ActiveTasks); r.ErrorCode != 0 || r.MemberEpoch <= 0 || (tasks != "" && tasks != "-") || !slices.Equal(statusCodes(r), []int8{sgStatusAssignmentDelayed}) {
			t.Fatalf("%s during the delay: code %d epoch %d tasks %q status %+v", who, r.ErrorCode, r.MemberEpoch, tasksOf(r.ActiveTasks), r.Status)
		}
	}
	ra, _ := h.sgHeartbeat(sgReq{member: "A", epoch: 0})
	delayed("A", ra)
	h.advance(time.Second)
	rb, _ := h.sgHeartbeat(sgReq{member: "B", epoch: 0})
	delayed("B", rb)
	h.advance(time.Second)
	ra, _ = h.sgHeartbeat(sgReq{member: "A", epoch: ra.MemberEpoch, active: map[string][]int32{}})
	delayed("A", ra)

	// After the delay both are assigned at once, half each; nothing is revoked.
	h.advance(time.Second)
	ra, _ = h.sgHeartbeat(sgReq{member: "A", epoch: ra.MemberEpoch, active: map[string][]int32{}})
	rb, _ = h.sgHeartbeat(sgReq{member: "B", epoch: rb.MemberEpoch, active: map[string][]int32{}})
	a, b := tasksMap(ra.ActiveTasks), tasksMap(rb.ActiveTasks)
	n := func(m map[string][]int32) int { return len(m["0"]) + len(m["1"]) }
	if n(a) != 3 || n(b) != 3 || len(ra.Status) != 0 || len(rb.Status) != 0 {
		t.Fatalf("after the delay: A %q %+v, B %q %+v", tasksOf(ra.ActiveTasks), ra.Status, tasksOf(rb.ActiveTasks), rb.Status)
	}
	h.sgHeartbeat(sgReq{member: "A", epoch: ra.MemberEpoch, active: a})
	h.sgHeartbeat(sgReq{member: "B", epoch: rb.MemberEpoch, active: b})
	if d := h.sgDescribe(); d.State != "Stable" {
		t.Fatalf("state after the first assignment: %s", d.State)
	}

	// Both leave; C joins the empty group and waits again.
	h.sgHeartbeat(sgReq{member: "A", epoch: -1})
	h.sgHeartbeat(sgReq{member: "B", epoch: -1})
	rc, _ := h.sgHeartbeat(sgReq{member: "C", epoch: 0})
	delayed("C", rc)
	h.advance(3 * time.Second)
	rc, _ = h.sgHeartbeat(sgReq{member: "C", epoch: rc.MemberEpoch, active: map[string][]int32{}})
	if tasksOf(rc.ActiveTasks) != "0:[0 1 2] 1:[0 1 2]" || len(rc.Status) != 0 {
		t.Fatalf("C after the delay: tasks %q status %+v", tasksOf(rc.ActiveTasks), rc.Status)
	}
}
