package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// TestOffsetForLeaderEpochWaitsForTheClientsLeaderEpoch: a consumer sent here by the old
// leader's KIP-951 hint names the new leader epoch before this broker applied the metadata
// that makes it the leader. Before, it was answered NOT_LEADER_OR_FOLLOWER at once, and
// franz-go waited a whole second before asking again (the longest pause of a consumer when a
// node of three got SIGTERM); now the request waits for the image and is answered from it.
func TestOffsetForLeaderEpochWaitsForTheClientsLeaderEpoch(t *testing.T) {
	defer func(d time.Duration) { leaderCatchUpWait = d }(leaderCatchUpWait)
	leaderCatchUpWait = testWait // the test publishes when it likes; the bound is not what it checks

	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c")

	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = 4, -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = c.topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = 1, 0 // the hint said: leader 2, epoch 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	tb := &testBroker{Broker: c.nodes[2].broker}
	parkedBefore := leaderEpochWaits.Load()
	answer := make(chan kmsg.Response, 1)
	go func() { answer <- <-tb.serveDirect(testContext(t), t, req) }() // a sync handler answers in Handle
	// Wait until the request is parked (the broker waits on its applied image).
	waitFor(t, "the request to wait for the image", func() bool {
		select {
		case resp := <-answer:
			t.Fatalf("answered before this broker knew the leader epoch the client named: %+v", resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0])
		default:
		}
		return leaderEpochWaits.Load() > parkedBefore
	})
	waitFor(t, "node 2 to follow to the log end", func() bool { return c.part(2).replica.Snapshot().LogEnd == 3 })
	c.publish(2, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1}, 2)
	p := (<-answer).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderEpoch != 0 || p.EndOffset != 3 {
		t.Fatalf("after the image: code %v, epoch %d, end %d; want epoch 0 ending at 3", kerr.ErrorForCode(p.ErrorCode), p.LeaderEpoch, p.EndOffset)
	}

	// A client naming an epoch this broker never learns is answered after the bound, as before.
	leaderCatchUpWait = 0
	rp.CurrentLeaderEpoch = 7
	req.Topics[0].Partitions[0] = rp
	p = tb.direct(t, req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("an epoch from the future: %v, want UNKNOWN_LEADER_EPOCH", kerr.ErrorForCode(p.ErrorCode))
	}
}
