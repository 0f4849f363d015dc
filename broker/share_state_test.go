package broker

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/coordinator"
)

// TestSharePersisterAPIs: the persister APIs a Kafka broker or tool could send (83-87) and
// FindCoordinator's SHARE key type, with the codes Kafka answers bad input with.
func TestSharePersisterAPIs(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"share.coordinator.state.topic.num.partitions": "2"})
	tb.createTopic(t, "st", 2, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["st"].ID)

	find := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 6, coordinatorShare, []string{key}
		return tb.direct(t, req).(*kmsg.FindCoordinatorResponse).Coordinators[0]
	}
	if c := find(coordinator.ShareCoordinatorKey("g", topicID, 1)); c.ErrorCode != 0 || c.NodeID != tb.Static.NodeID {
		t.Fatalf("FindCoordinator SHARE: %+v", c)
	}
	if c := find("g:not-a-topic-id:1"); c.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator SHARE with a bad key: %v, want INVALID_REQUEST", kerr.ErrorForCode(c.ErrorCode))
	}
	// Once the topic exists its shards load; wait for them.
	leaderEpoch := int32(0)
	read := func(group string, id [16]byte, partition int32) kmsg.ReadShareGroupStateResponseTopicPartition {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = group
		req.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: partition, LeaderEpoch: leaderEpoch}}}}
		return tb.direct(t, req).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
	}
	waitFor(t, "the share coordinator's shard loaded", func() bool { return read("g", topicID, 1).ErrorCode == 0 })
	if p := read("g", topicID, 1); p.StartOffset != -1 || p.StateEpoch != 0 || len(p.StateBatches) != 0 {
		t.Fatalf("no state: %+v", p)
	}

	write := func(group string, id [16]byte, partition int32, leaderEpoch int32, start int64, batches ...kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch) int16 {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = group
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.StartOffset, p.StateBatches = partition, leaderEpoch, start, batches
		req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
		return tb.direct(t, req).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
	}
	batch := func(first, last int64, state int8, count int16) kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
		return kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
	}
	for _, tc := range []struct {
		what string
		code int16
		want int16
	}{
		{"empty group", write("", topicID, 1, 1, 0), kerr.InvalidRequest.Code},
		{"negative partition", write("g", topicID, -1, 1, 0), kerr.InvalidRequest.Code},
		{"unknown topic", write("g", [16]byte{9}, 0, 1, 0), kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", write("g", topicID, 7, 1, 0), kerr.UnknownTopicOrPartition.Code},
		{"last before first", write("g", topicID, 1, 1, 0, batch(5, 4, 2, 1)), kerr.InvalidRequest.Code},
		{"bad delivery state", write("g", topicID, 1, 1, 0, batch(5, 5, 1, 1)), kerr.InvalidRequest.Code},
		{"valid", write("g", topicID, 1, 3, 10, batch(10, 11, 2, 1), batch(12, 12, 0, 2)), 0},
		{"older leader epoch", write("g", topicID, 1, 2, 13), kerr.FencedLeaderEpoch.Code},
	} {
		if tc.code != tc.want {
			t.Errorf("write, %s: %v, want %v", tc.what, kerr.ErrorForCode(tc.code), kerr.ErrorForCode(tc.want))
		}
	}
	if p := read("g", topicID, 1); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("read at an older leader epoch than the writer's: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(p.ErrorCode))
	}
	leaderEpoch = 3
	p := read("g", topicID, 1)
	if p.ErrorCode != 0 || p.StartOffset != 10 || len(p.StateBatches) != 2 || p.StateBatches[1].DeliveryCount != 2 {
		t.Fatalf("read back: %+v", p)
	}

	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.GroupID = "g"
	sum.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: topicID, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 1}}}}
	if sp := tb.direct(t, sum).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.StartOffset != 10 || sp.LeaderEpoch != 3 {
		t.Fatalf("summary: %+v", sp)
	}

	initialize := func(stateEpoch int32, start int64) int16 {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = "g"
		req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 1, StateEpoch: stateEpoch, StartOffset: start}}}}
		return tb.direct(t, req).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := initialize(0, 20); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("initialize at the current state epoch: %v, want FENCED_STATE_EPOCH", kerr.ErrorForCode(code))
	}
	if code := initialize(1, 20); code != 0 {
		t.Fatalf("initialize: %v", kerr.ErrorForCode(code))
	}
	if p := read("g", topicID, 1); p.StartOffset != 20 || p.StateEpoch != 1 || len(p.StateBatches) != 0 {
		t.Fatalf("after initialize: %+v", p)
	}

	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "g"
	del.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 1}, {Partition: -1}}}}
	dr := tb.direct(t, del).(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions
	if dr[0].ErrorCode != 0 || dr[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete: %+v", dr)
	}
	if p := read("g", topicID, 1); p.StartOffset != -1 {
		t.Fatalf("after delete: %+v", p)
	}
}

// TestShareSessionClosedWithConnection: records a member acquired through a share session are
// released when the session's connection closes (Kafka's share session cache listens to
// disconnects), not only when their acquisition locks time out, with their delivery counted.
func TestShareSessionClosedWithConnection(t *testing.T) {
	// Locks outlive testWait: only the close can release the records in time.
	tb := startTestBroker(t, map[string]string{"group.share.record.lock.duration.ms": "60000"})
	tb.createTopic(t, "cc", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["cc"].ID)
	a := &shareClient{t: t, tb: tb, group: "cg", member: "member-a"}
	b := &shareClient{t: t, tb: tb, group: "cg", member: "member-b"}
	if hb := a.heartbeat(0, "cc"); hb.ErrorCode != 0 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	if hb := b.heartbeat(0, "cc"); hb.ErrorCode != 0 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	got, _ := a.fetch(topicID, 10) // starts the share partition at the (empty) end
	wantRanges(t, "a", got)
	tb.produce(t, "cc", 0, 5)

	// a's next session is on a real connection.
	conn, err := net.Dial("tcp", tb.Addr)
	if err != nil {
		t.Fatal(err)
	}
	a.epoch = 0
	resp := &kmsg.ShareFetchResponse{Version: 1}
	rawRoundTrip(t, conn, a.fetchReq(topicID, 10, 0), resp)
	got, _ = a.fetchResult(resp)
	wantRanges(t, "a", got, [3]int64{0, 4, 1})
	if got, _ := b.fetch(topicID, 10); len(got) != 0 {
		t.Fatalf("b got %v while a holds them", got)
	}
	conn.Close()
	var got2 []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	waitFor(t, "a's records released after its connection closed", func() bool {
		got2, _ = b.fetch(topicID, 10)
		return len(got2) > 0
	})
	// They come back with a's delivery counted, as Kafka 4.4 releases a lost session's records
	// (a client that crashed on them must not get them forever).
	wantRanges(t, "b", got2, [3]int64{0, 4, 2})
}

// rawRoundTrip sends req on conn and decodes the answer into resp (of req's version).
func rawRoundTrip(t *testing.T, conn net.Conn, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, 1)
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(testWait))
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatal(err)
	}
	body = body[4:] // correlation ID
	if req.IsFlexible() {
		body = body[1:] // no tagged fields in the header
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
}

// TestShareStateDroppedWithTopic: deleting a topic drops its share partitions from memory and
// deletes their persisted state.
func TestShareStateDroppedWithTopic(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"share.coordinator.state.topic.num.partitions": "1"})
	tb.createTopic(t, "gone", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["gone"].ID)
	c := &shareClient{t: t, tb: tb, group: "dg", member: "m"}
	if hb := c.heartbeat(0, "gone"); hb.ErrorCode != 0 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	c.fetch(topicID, 10) // starts the share partition and persists its start
	key := sharePartitionKey{"dg", controller.TopicID(topicID), 0}
	sg := tb.Broker.shares
	inMemory := func() bool {
		sg.mu.Lock()
		defer sg.mu.Unlock()
		return sg.mu.partitions[key] != nil
	}
	if !inMemory() {
		t.Fatal("no share partition after the fetch")
	}
	if r := tb.Broker.shareCoord.Read(testContext(t), key.coordinatorKey(), -1, true); r.ErrorCode != 0 || r.StartOffset != 0 {
		t.Fatalf("persisted state after the fetch: %+v", r)
	}
	if _, err := tb.Admin.DeleteTopics(testContext(t), "gone"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the share partition gone from memory", func() bool { return !inMemory() })
	waitFor(t, "the persisted state deleted", func() bool {
		r := tb.Broker.shareCoord.Read(testContext(t), key.coordinatorKey(), -1, true)
		return r.ErrorCode == 0 && r.StartOffset == -1
	})
}

// TestSharePersisterAPIsNeedClusterAction: with an authorizer, a caller without CLUSTER_ACTION
// gets CLUSTER_AUTHORIZATION_FAILED on every partition of each persister API, as Kafka's
// KafkaApis answers, and its write changes no state.
func TestSharePersisterAPIsNeedClusterAction(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	id := [16]byte{7}
	parts := func(n int32) []int32 { return []int32{n, n + 1} }
	refused := kerr.ClusterAuthorizationFailed.Code
	check := func(api string, codes []int16) {
		t.Helper()
		if len(codes) != 2 || codes[0] != refused || codes[1] != refused {
			t.Errorf("%s: partition codes %v, want CLUSTER_AUTHORIZATION_FAILED on both", api, codes)
		}
	}

	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "g"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = id
	for _, p := range parts(0) {
		ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		ip.Partition = p
		it.Partitions = append(it.Partitions, ip)
	}
	init.Topics = append(init.Topics, it)
	var codes []int16
	for _, p := range tb.direct(t, init).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	check("InitializeShareGroupState", codes)

	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = id
	for _, p := range parts(0) {
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	read.Topics = append(read.Topics, rt)
	codes = nil
	for _, p := range tb.direct(t, read).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	check("ReadShareGroupState", codes)

	write := kmsg.NewPtrWriteShareGroupStateRequest()
	write.GroupID = "g"
	wt := kmsg.NewWriteShareGroupStateRequestTopic()
	wt.TopicID = id
	for _, p := range parts(0) {
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.Partition, wp.StartOffset = p, 5
		wt.Partitions = append(wt.Partitions, wp)
	}
	write.Topics = append(write.Topics, wt)
	codes = nil
	for _, p := range tb.direct(t, write).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	check("WriteShareGroupState", codes)

	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "g"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = id
	for _, p := range parts(0) {
		dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		dp.Partition = p
		dt.Partitions = append(dt.Partitions, dp)
	}
	del.Topics = append(del.Topics, dt)
	codes = nil
	for _, p := range tb.direct(t, del).(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	check("DeleteShareGroupState", codes)

	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.GroupID = "g"
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = id
	for _, p := range parts(0) {
		sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		sp.Partition = p
		st.Partitions = append(st.Partitions, sp)
	}
	sum.Topics = append(sum.Topics, st)
	codes = nil
	for _, p := range tb.direct(t, sum).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	check("ReadShareGroupStateSummary", codes)
}
