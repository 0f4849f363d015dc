package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareClient drives the share APIs for one member, tracking its share session epoch.
type shareClient struct {
	t      *testing.T
	tb     *testBroker
	group  string
	member string
	epoch  int32 // next share session epoch
}

func (c *shareClient) heartbeat(epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = c.group, c.member, epoch
	req.SubscribedTopicNames = topics
	return c.tb.direct(c.t, req).(*kmsg.ShareGroupHeartbeatResponse)
}

type ackRange struct {
	first, last int64
	typ         int8
}

func (c *shareClient) fetchReq(topicID [16]byte, maxRecords int32, maxWait int32, acks ...ackRange) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &c.group, &c.member, c.epoch
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = maxWait, 1<<20, maxRecords, maxRecords
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = topicID
	p := kmsg.NewShareFetchRequestTopicPartition()
	for _, a := range acks {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, []int8{a.typ}
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// fetch sends a ShareFetch and returns the partition's acquired ranges and ack code.
func (c *shareClient) fetch(topicID [16]byte, maxRecords int32, acks ...ackRange) ([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, int16) {
	c.t.Helper()
	resp := c.tb.direct(c.t, c.fetchReq(topicID, maxRecords, 0, acks...)).(*kmsg.ShareFetchResponse)
	return c.fetchResult(resp)
}

func (c *shareClient) fetchResult(resp *kmsg.ShareFetchResponse) ([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, int16) {
	c.t.Helper()
	if resp.ErrorCode != 0 {
		c.t.Fatalf("%s: ShareFetch: %v", c.member, kerr.ErrorForCode(resp.ErrorCode))
	}
	c.epoch++
	var acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	var ackCode int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				c.t.Fatalf("%s: ShareFetch partition %d: %v", c.member, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			if p.Records == nil {
				// Encoded as a null, which Kafka's Java client refuses ("non-nullable field
				// records was serialized as null").
				c.t.Errorf("%s: partition %d answered with null records", c.member, p.Partition)
			}
			acquired = append(acquired, p.AcquiredRecords...)
			ackCode = p.AcknowledgeErrorCode
			if len(p.AcquiredRecords) > 0 && len(p.Records) == 0 {
				c.t.Errorf("%s: acquired %v without records", c.member, p.AcquiredRecords)
			}
		}
	}
	return acquired, ackCode
}

// ack sends a ShareAcknowledge at epoch and returns the top-level and the partition code.
func (c *shareClient) ack(topicID [16]byte, epoch int32, acks ...ackRange) (int16, int16) {
	c.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &c.group, &c.member, epoch
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID = topicID
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range acks {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, []int8{a.typ}
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := c.tb.direct(c.t, req).(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode, 0
	}
	if resp.ErrorCode == 0 && epoch > 0 {
		c.epoch++
	}
	return 0, resp.Topics[0].Partitions[0].ErrorCode
}

func ranges(rs []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) [][3]int64 {
	out := make([][3]int64, 0, len(rs))
	for _, r := range rs {
		out = append(out, [3]int64{r.FirstOffset, r.LastOffset, int64(r.DeliveryCount)})
	}
	return out
}

func wantRanges(t *testing.T, who string, got []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, want ...[3]int64) {
	t.Helper()
	g := ranges(got)
	if len(g) != len(want) {
		t.Fatalf("%s acquired %v, want %v", who, g, want)
	}
	for i := range g {
		if g[i] != want[i] {
			t.Fatalf("%s acquired %v, want %v", who, g, want)
		}
	}
}

// TestShareGroupOneNode drives two share group members through the share APIs on one broker:
// the simple assignor gives both the partition, each record is acquired by one member at a
// time, acknowledgements of another member's records, with a stale or missing session, are
// refused with Kafka's codes and change nothing, a release redelivers with a higher delivery
// count, and a share fetch with nothing to acquire waits until a record is produced.
func TestShareGroupOneNode(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "shared", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["shared"].ID)
	a := &shareClient{t: t, tb: tb, group: "sg", member: "member-a"}
	b := &shareClient{t: t, tb: tb, group: "sg", member: "member-b"}

	hb := a.heartbeat(0, "shared")
	if hb.ErrorCode != 0 || hb.MemberEpoch <= 0 || hb.Assignment == nil || len(hb.Assignment.TopicPartitions) != 1 ||
		hb.Assignment.TopicPartitions[0].TopicID != topicID || len(hb.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	if hb := b.heartbeat(0, "shared"); hb.ErrorCode != 0 || hb.Assignment == nil {
		t.Fatalf("heartbeat b: %+v", hb)
	}
	if hb := a.heartbeat(hb.MemberEpoch+5, "shared"); hb.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("heartbeat at a wrong epoch: %v, want FENCED_MEMBER_EPOCH", kerr.ErrorForCode(hb.ErrorCode))
	}

	// The first fetch starts the share partition at the high watermark (latest).
	got, _ := a.fetch(topicID, 4)
	wantRanges(t, "a", got)
	tb.produce(t, "shared", 0, 10)
	got, _ = a.fetch(topicID, 4)
	wantRanges(t, "a", got, [3]int64{0, 3, 1})
	got, _ = b.fetch(topicID, 100)
	wantRanges(t, "b", got, [3]int64{4, 9, 1})

	// b acknowledging a's records; a with a stale epoch, epoch 0, a missing session.
	if top, code := b.ack(topicID, b.epoch, ackRange{0, 3, 1}); top != 0 || code != kerr.InvalidRecordState.Code {
		t.Fatalf("b acks a's records: %v/%v, want INVALID_RECORD_STATE", kerr.ErrorForCode(top), kerr.ErrorForCode(code))
	}
	if top, _ := a.ack(topicID, a.epoch+3, ackRange{0, 3, 1}); top != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("stale epoch: %v, want INVALID_SHARE_SESSION_EPOCH", kerr.ErrorForCode(top))
	}
	if top, _ := a.ack(topicID, 0, ackRange{0, 3, 1}); top != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 0: %v, want INVALID_SHARE_SESSION_EPOCH", kerr.ErrorForCode(top))
	}
	nobody := &shareClient{t: t, tb: tb, group: "sg", member: "nobody"}
	if top, _ := nobody.ack(topicID, 1, ackRange{0, 3, 1}); top != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %v, want SHARE_SESSION_NOT_FOUND", kerr.ErrorForCode(top))
	}
	if top, code := a.ack(topicID, a.epoch, ackRange{0, 3, 1}); top != 0 || code != 0 {
		t.Fatalf("a accepts its records: %v/%v", kerr.ErrorForCode(top), kerr.ErrorForCode(code))
	}
	// b releases its records (piggybacked on a fetch that may acquire them again): the next
	// acquisition is the second delivery.
	got, code := b.fetch(topicID, 0, ackRange{4, 9, 2})
	if code != 0 {
		t.Fatalf("b releases: %v", kerr.ErrorForCode(code))
	}
	wantRanges(t, "b (max 0 records is the default)", got, [3]int64{4, 9, 2})
	if top, code := b.ack(topicID, b.epoch, ackRange{4, 9, 1}); top != 0 || code != 0 {
		t.Fatalf("b accepts: %v/%v", kerr.ErrorForCode(top), kerr.ErrorForCode(code))
	}

	// Nothing to acquire: the fetch waits until a record arrives.
	waiting := tb.serveDirect(testContext(t), t, a.fetchReq(topicID, 10, 20_000))
	tb.produce(t, "shared", 0, 1)
	select {
	case resp := <-waiting:
		got, _ := a.fetchResult(resp.(*kmsg.ShareFetchResponse))
		wantRanges(t, "a after the wait", got, [3]int64{10, 10, 1})
	case <-time.After(testWait):
		t.Fatal("the waiting share fetch never answered")
	}

	d := tb.direct(t, &kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{"sg", "missing"}}).(*kmsg.ShareGroupDescribeResponse)
	if len(d.Groups) != 2 || d.Groups[0].ErrorCode != 0 || d.Groups[0].GroupState != "Stable" || len(d.Groups[0].Members) != 2 ||
		d.Groups[0].Assignor != "simple" || d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe: %+v", d.Groups)
	}
	// The SPSO is 10 (0-9 accepted; 10 acquired by a, not yet acknowledged), the HW 11: a lag
	// of 1.
	offs := tb.direct(t, &kmsg.DescribeShareGroupOffsetsRequest{Version: 1, Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}}).(*kmsg.DescribeShareGroupOffsetsResponse)
	if len(offs.Groups) != 1 || len(offs.Groups[0].Topics) != 1 || len(offs.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeShareGroupOffsets: %+v", offs)
	}
	if p := offs.Groups[0].Topics[0].Partitions[0]; p.StartOffset != 10 || p.Lag != 1 || p.ErrorCode != 0 {
		t.Fatalf("DescribeShareGroupOffsets partition: %+v, want start offset 10, lag 1", p)
	}
	list := func(types ...string) []kmsg.ListGroupsResponseGroup {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.TypesFilter = 5, types
		return tb.direct(t, req).(*kmsg.ListGroupsResponse).Groups
	}
	if gs := list("share"); len(gs) != 1 || gs[0].Group != "sg" || gs[0].GroupType != "share" || gs[0].GroupState != "Stable" {
		t.Fatalf("ListGroups types=share: %+v", gs)
	}
	if gs := list("consumer"); len(gs) != 0 {
		t.Fatalf("ListGroups types=consumer lists %+v", gs)
	}
	deleteGroup := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = 2, []string{"sg"}
		return tb.direct(t, req).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
	}
	if code := deleteGroup(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups of a group with members: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(code))
	}
	if hb := a.heartbeat(-1); hb.ErrorCode != 0 || hb.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", hb)
	}
	if hb := b.heartbeat(-1); hb.ErrorCode != 0 || hb.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", hb)
	}
	if gs := list("share"); len(gs) != 1 || gs[0].GroupState != "Empty" {
		t.Fatalf("ListGroups after both left: %+v", gs)
	}
	if code := deleteGroup(); code != 0 {
		t.Fatalf("DeleteGroups of the empty share group: %v", kerr.ErrorForCode(code))
	}
	if gs := list(); len(gs) != 0 {
		t.Fatalf("ListGroups after the delete: %+v", gs)
	}
}

// TestShareGroupAlterOffsets sets a new share group's start offset before its first consumer
// (records produced earlier are then delivered, unlike with the default "latest" start),
// refuses to alter or delete the offsets of a group with members, and deletes them once empty.
func TestShareGroupAlterOffsets(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "early", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["early"].ID)
	tb.produce(t, "early", 0, 5)
	alter := func(offset int64) *kmsg.AlterShareGroupOffsetsResponse {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = "g2"
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "early", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: offset}}}}
		return tb.direct(t, req).(*kmsg.AlterShareGroupOffsetsResponse)
	}
	deleteOffsets := func() int16 {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID, req.Topics = "g2", []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "early"}}
		return tb.direct(t, req).(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode
	}
	startOffset := func() int64 {
		req := &kmsg.DescribeShareGroupOffsetsRequest{Version: 1, Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g2",
			Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "early", Partitions: []int32{0}}}}}}
		return tb.direct(t, req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics[0].Partitions[0].StartOffset
	}
	if r := alter(1); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if got := startOffset(); got != 1 {
		t.Fatalf("start offset %d after the alter, want 1", got)
	}
	c := &shareClient{t: t, tb: tb, group: "g2", member: "m"}
	if hb := c.heartbeat(0, "early"); hb.ErrorCode != 0 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	got, _ := c.fetch(topicID, 100)
	wantRanges(t, "m", got, [3]int64{1, 4, 1})
	if r := alter(0); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(r.ErrorCode))
	}
	if code := deleteOffsets(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete offsets with a member: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(code))
	}
	if hb := c.heartbeat(-1); hb.ErrorCode != 0 {
		t.Fatalf("leave: %+v", hb)
	}
	if code := deleteOffsets(); code != 0 {
		t.Fatalf("delete offsets: %v", kerr.ErrorForCode(code))
	}
	if got := startOffset(); got != -1 {
		t.Fatalf("start offset %d after the delete, want -1", got)
	}
}

// TestShareGroupLockTimeoutWakesFetch: a member's records whose acquisition lock times out
// are handed to another member's share fetch that was already waiting for records, with a
// delivery count of 2 (the broker's lock timer wakes the parked fetch).
func TestShareGroupLockTimeoutWakesFetch(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"group.share.record.lock.duration.ms": "1000"})
	tb.createTopic(t, "locks", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["locks"].ID)
	a := &shareClient{t: t, tb: tb, group: "lg", member: "a"}
	b := &shareClient{t: t, tb: tb, group: "lg", member: "b"}
	a.heartbeat(0, "locks")
	b.heartbeat(0, "locks")
	a.fetch(topicID, 10) // starts the share partition at the high watermark, 0
	tb.produce(t, "locks", 0, 3)
	got, _ := a.fetch(topicID, 10)
	wantRanges(t, "a", got, [3]int64{0, 2, 1})
	b.fetch(topicID, 10) // opens b's session; nothing to acquire
	waiting := tb.serveDirect(testContext(t), t, b.fetchReq(topicID, 10, 25_000))
	select {
	case resp := <-waiting:
		got, _ := b.fetchResult(resp.(*kmsg.ShareFetchResponse))
		wantRanges(t, "b after a's locks timed out", got, [3]int64{0, 2, 2})
	case <-time.After(testWait):
		t.Fatal("the waiting share fetch never answered")
	}
}

// TestShareLeaveThenFinalAck: a member that leaves its share group (ShareGroupHeartbeat epoch
// -1) keeps its share session and acquired records, as in Kafka 4.4, so the final-epoch
// ShareAcknowledge librdkafka's share consumer sends after leaving applies its acceptances and
// closes the session (sluice used to close the session at the leave: the final acknowledgement
// got SHARE_SESSION_NOT_FOUND and the accepted records came back).
func TestShareLeaveThenFinalAck(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "lv", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["lv"].ID)
	m := &shareClient{t: t, tb: tb, group: "lvg", member: "m"}
	other := &shareClient{t: t, tb: tb, group: "lvg", member: "o"}
	m.heartbeat(0, "lv")
	other.heartbeat(0, "lv")
	m.fetch(topicID, 10) // starts the share partition at the high watermark, 0
	tb.produce(t, "lv", 0, 3)
	got, _ := m.fetch(topicID, 10)
	wantRanges(t, "m", got, [3]int64{0, 2, 1})
	if hb := m.heartbeat(-1); hb.ErrorCode != 0 || hb.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", hb)
	}
	// The records stay m's until its session ends: the other member gets none of them.
	if got, _ := other.fetch(topicID, 10); len(got) != 0 {
		t.Fatalf("o acquired %v after m left holding them", ranges(got))
	}
	if code, pcode := m.ack(topicID, -1, ackRange{0, 2, 1}); code != 0 || pcode != 0 {
		t.Fatalf("final-epoch ShareAcknowledge after the leave: %v / %v, want no error", kerr.ErrorForCode(code), kerr.ErrorForCode(pcode))
	}
	req := &kmsg.DescribeShareGroupOffsetsRequest{Version: 1, Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "lvg",
		Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "lv", Partitions: []int32{0}}}}}}
	if p := tb.direct(t, req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics[0].Partitions[0]; p.StartOffset != 3 || p.Lag != 0 {
		t.Fatalf("after the final acknowledgement: start offset %d lag %d, want 3 and 0 (all accepted)", p.StartOffset, p.Lag)
	}
	// The session is closed: another final-epoch request finds none.
	if code, _ := m.ack(topicID, -1); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("second close: %v, want SHARE_SESSION_NOT_FOUND", kerr.ErrorForCode(code))
	}
}
