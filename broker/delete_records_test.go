package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// deleteRecordsThrough sends DeleteRecords for the test partition to node id and returns its
// one partition's answer.
func (c *replCluster) deleteRecordsThrough(id int32, offset int64, timeoutMillis int32) kmsg.DeleteRecordsResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = timeoutMillis
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = c.topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(c.t), c.nodes[id].client)
	if err != nil {
		c.t.Fatalf("DeleteRecords through %d: %v", id, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("DeleteRecords answer %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// stopNode closes node id's broker for good (its listener stays, answering nothing).
func (c *replCluster) stopNode(id int32) {
	c.t.Helper()
	n := c.nodes[id]
	n.handler.b.Store(nil)
	if err := n.broker.Close(); err != nil {
		c.t.Fatal(err)
	}
	n.broker = nil
}

// TestDeleteRecordsAnswersAfterFollowersMovedLogStart: DeleteRecords on an RF3 partition is
// answered only once both followers moved their log start to the offset (Kafka's
// DelayedDeleteRecords waits for the low watermark), so when the answer arrives every replica
// has deleted the records.
func TestDeleteRecordsAnswersAfterFollowersMovedLogStart(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2, 3}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c", "d", "e")
	got := c.deleteRecordsThrough(1, 3, 30_000)
	if got.ErrorCode != 0 || got.LowWatermark != 3 {
		t.Fatalf("DeleteRecords(3) = low watermark %d, %v; want 3, no error", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
	for _, id := range []int32{1, 2, 3} {
		if s := c.part(id).replica.Snapshot(); s.LogStart < 3 {
			t.Errorf("answered while node %d's log start is %d, want >= 3", id, s.LogStart)
		}
	}
	// -1 is the HW: every replica's log start reaches 5.
	if got := c.deleteRecordsThrough(1, -1, 30_000); got.ErrorCode != 0 || got.LowWatermark != 5 {
		t.Fatalf("DeleteRecords(-1) = low watermark %d, %v; want 5", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
	for _, id := range []int32{2, 3} {
		if s := c.part(id).replica.Snapshot(); s.LogStart != 5 {
			t.Errorf("node %d's log start %d after DeleteRecords(-1), want 5", id, s.LogStart)
		}
	}
}

// TestDeleteRecordsTimesOutWhileAFollowerCannotFollow: a follower on a live broker that does
// not fetch holds the low watermark; at the request's timeout the partition is answered
// REQUEST_TIMED_OUT with the low watermark of the leader's move (the follower's last reported
// log start), as Kafka's DelayedDeleteRecords expires. The leader's log start moved anyway.
func TestDeleteRecordsTimesOutWhileAFollowerCannotFollow(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c")
	waitFor(t, "the follower to report its log start", func() bool { low, _ := c.part(1).replica.LowWatermark(); return low == 0 })
	c.stopNode(2) // still registered and unfenced in the image
	got := c.deleteRecordsThrough(1, 2, 100)
	if got.ErrorCode != kerr.RequestTimedOut.Code || got.LowWatermark != 0 {
		t.Fatalf("DeleteRecords(2) with a silent follower = low watermark %d, %v; want 0, REQUEST_TIMED_OUT", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
	if s := c.part(1).replica.Snapshot(); s.LogStart != 2 {
		t.Fatalf("leader's log start %d, want 2", s.LogStart)
	}
}

// TestDeleteRecordsIgnoresFencedFollower: a follower whose broker is fenced does not count
// toward the low watermark (Kafka's hasAliveBroker), so DeleteRecords is answered at once.
func TestDeleteRecordsIgnoresFencedFollower(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1})
	c.produce(1, kgo.LeaderAck(), "a", "b", "c")
	c.stopNode(2)
	im := c.image(2, &controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1})
	im.Brokers[2].Fenced = true
	c.nodes[1].meta.im.Store(im)
	if err := c.nodes[1].broker.reconcile(im); err != nil {
		t.Fatal(err)
	}
	if got := c.deleteRecordsThrough(1, 2, 30_000); got.ErrorCode != 0 || got.LowWatermark != 2 {
		t.Fatalf("DeleteRecords(2) with the follower fenced = low watermark %d, %v; want 2", got.LowWatermark, kerr.ErrorForCode(got.ErrorCode))
	}
}

// TestFollowerBehindLeaderLogStartAnsweredAtOnce: a follower at the leader's log end whose
// reported log start is behind the leader's is answered at once, not held for MinBytes up to
// MaxWait, so it moves its log start (and the leader's DeleteRecords completes) without
// waiting out replica.fetch.wait.max.ms. Held otherwise, this fetch would outlast the test.
func TestFollowerBehindLeaderLogStartAnsweredAtOnce(t *testing.T) {
	// Node 2 exists in the image but does not run: the test fetches as it.
	c := startReplCluster(t, []int32{1}, nil, nil)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1}, 1)
	c.produce(1, kgo.LeaderAck(), "a", "b", "c")
	if start, err := c.part(1).replica.DeleteRecordsBefore(2); err != nil || start != 2 {
		t.Fatalf("DeleteRecordsBefore(2) = %d, %v", start, err)
	}
	fetch := func(logStart int64, maxWait int32) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 15
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, 2, 1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = maxWait, 1, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = c.id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.LogStartOffset, fp.LastFetchedEpoch, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 3, logStart, -1, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := (&testBroker{Broker: c.nodes[1].broker}).direct(t, req).(*splicedFetchResponse)
		return resp.Topics[0].Partitions[0]
	}
	p := fetch(0, 600_000)
	if p.ErrorCode != 0 || p.LogStartOffset != 2 {
		t.Fatalf("fetch with log start 0: error %d, log start %d; want none, 2", p.ErrorCode, p.LogStartOffset)
	}
	if low, _ := c.part(1).replica.LowWatermark(); low != 0 {
		t.Fatalf("low watermark %d after the follower reported 0, want 0", low)
	}
	p = fetch(2, 0) // the follower moved: its next fetch says so
	if p.ErrorCode != 0 {
		t.Fatalf("fetch with log start 2: error %d", p.ErrorCode)
	}
	if low, _ := c.part(1).replica.LowWatermark(); low != 2 {
		t.Fatalf("low watermark %d after the follower reported 2, want 2", low)
	}
}
