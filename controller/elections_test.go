package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// electionQuorum is a three-voter quorum (no session expiry) with brokers 1–3 unfenced and
// topic "t": partition 0 on replicas 1,2,3, partition 1 on 2,3,1; rebalance is the auto
// leader rebalance interval (0: off).
func electionQuorum(t *testing.T, rebalance time.Duration) (*testQuorum, map[int32]int64) {
	q := newTestQuorumWith(t, func(cfg *Config) { cfg.SessionTimeout, cfg.LeaderRebalanceInterval = -1, rebalance }, 1, 2, 3)
	q.waitFor(q.leader().cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = q.register(id, 1)
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	return q, epochs
}

func (q *testQuorum) elect(electionType int8, topics []ElectLeadersTopic) []ElectLeadersResult {
	q.t.Helper()
	var out []ElectLeadersResult
	q.call(func(c *Controller) error {
		var err error
		out, err = c.ElectLeaders(testCtx(q.t), electionType, topics)
		return err
	})
	return out
}

// restartAndRejoin takes broker 1 through controlled shutdown (partition 0 moves to 2, 1
// leaves the ISRs), registers a new incarnation, and has partition 0's leader take it back
// into the ISR, as a restarted broker that caught up would be.
func restartAndRejoin(t *testing.T, q *testQuorum, epochs map[int32]int64) {
	t.Helper()
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], WantShutDown: true})
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], WantShutDown: true})
	if p := q.partitions("t")[0]; p.Leader != 2 || slices.Contains(p.ISR, 1) {
		t.Fatalf("after 1's controlled shutdown: %+v", p)
	}
	epochs[1] = q.register(1, 2)
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
	if r := q.alter(proposal(q, epochs, 0, 2, 3, 1))[0]; r.Err != nil {
		t.Fatalf("ISR expansion: %v %s", r.Err, r.Message)
	}
}

// TestElectLeaders: Kafka's per-partition answers to preferred and unclean elections, and the
// preferred replica leading again once it is back in the ISR.
func TestElectLeaders(t *testing.T) {
	q, epochs := electionQuorum(t, 0)
	want := func(res []ElectLeadersResult, topic string, partition int32, code *kerr.Error) {
		t.Helper()
		for _, tr := range res {
			for _, pr := range tr.Partitions {
				if tr.Topic == topic && pr.Partition == partition {
					if pr.Err != nilIfNone(code) {
						t.Fatalf("%s-%d: %v (%s), want %v", topic, partition, pr.Err, pr.Message, code)
					}
					return
				}
			}
		}
		t.Fatalf("%s-%d missing from %+v", topic, partition, res)
	}
	// Every partition led by its preferred replica: nothing to elect, nothing listed.
	if res := q.elect(ElectPreferred, nil); len(res) != 1 || res[0].Topic != "t" || len(res[0].Partitions) != 0 {
		t.Fatalf("all-partitions election on a balanced cluster: %+v", res)
	}
	res := q.elect(ElectPreferred, []ElectLeadersTopic{{Topic: "t", Partitions: []int32{0, 1, 7}}, {Topic: "nope", Partitions: []int32{0}}})
	want(res, "t", 0, kerr.ElectionNotNeeded)
	want(res, "t", 7, kerr.UnknownTopicOrPartition)
	want(res, "nope", 0, kerr.UnknownTopicOrPartition)

	// Broker 1 shuts down: its preferred partition 0 cannot go back while 1 is out of the ISR.
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], WantShutDown: true})
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1], WantShutDown: true})
	want(q.elect(ElectPreferred, []ElectLeadersTopic{{Topic: "t", Partitions: []int32{0}}}), "t", 0, kerr.PreferredLeaderNotAvailable)
	epochs[1] = q.register(1, 2)
	q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
	want(q.elect(ElectPreferred, nil), "t", 0, kerr.PreferredLeaderNotAvailable) // unfenced, not in the ISR
	if r := q.alter(proposal(q, epochs, 0, 2, 3, 1))[0]; r.Err != nil {
		t.Fatalf("ISR expansion: %v %s", r.Err, r.Message)
	}
	before := q.partitions("t")[0]
	res = q.elect(ElectPreferred, nil)
	want(res, "t", 0, nil)
	if len(res[0].Partitions) != 1 {
		t.Fatalf("all-partitions election lists partitions that needed none: %+v", res)
	}
	after := q.partitions("t")[0]
	if after.Leader != 1 || after.LeaderEpoch != before.LeaderEpoch+1 || after.PartitionEpoch != before.PartitionEpoch+1 || !slices.Equal(after.ISR, before.ISR) {
		t.Fatalf("preferred election: %+v, was %+v", after, before)
	}

	// Unclean: a partition with a leader needs none; a leaderless one is refused, unclean
	// election being unsupported.
	want(q.elect(ElectUnclean, []ElectLeadersTopic{{Topic: "t", Partitions: []int32{0}}}), "t", 0, kerr.ElectionNotNeeded)
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "solo", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {3}}}}, false)
		if err == nil && res[0].Err != nil {
			err = res[0].Err
		}
		return err
	})
	q.call(func(c *Controller) error {
		_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 3, BrokerEpoch: epochs[3], WantFence: true})
		return err
	})
	if p := q.partitions("solo")[0]; p.Leader != -1 {
		t.Fatalf("solo after its only replica was fenced: %+v", p)
	}
	want(q.elect(ElectUnclean, []ElectLeadersTopic{{Topic: "solo", Partitions: []int32{0}}}), "solo", 0, kerr.EligibleLeadersNotAvailable)
	q.call(func(c *Controller) error {
		if _, err := c.ElectLeaders(testCtx(t), 7, nil); err != kerr.InvalidRequest && err != kerr.NotController {
			t.Errorf("election type 7: %v, want INVALID_REQUEST", err)
		}
		return nil
	})
}

func nilIfNone(code *kerr.Error) error {
	if code == nil {
		return nil
	}
	return code
}

// TestAutoLeaderRebalance: with auto leader rebalance on, leadership returns to the preferred
// replica once it is back in the ISR, after the check interval, without any request; with it
// off, it stays where the failover put it.
func TestAutoLeaderRebalance(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("enabled=%v", on), func(t *testing.T) {
			interval := time.Duration(0)
			if on {
				interval = 5 * 100 * time.Millisecond // 5 ticks
			}
			q, epochs := electionQuorum(t, interval)
			restartAndRejoin(t, q, epochs)
			lead := q.leader()
			for i := 0; i < 30 && q.partitions("t")[0].Leader != 1; i++ {
				q.tick()
			}
			if on {
				q.waitFor(lead.cfg.NodeID, "partition 0 led by its preferred replica again", func(im *Image) bool {
					return im.Topics["t"].Partitions[0].Leader == 1
				})
				return
			}
			if p := q.partitions("t")[0]; p.Leader != 2 {
				t.Fatalf("rebalance off, yet partition 0 moved: %+v", p)
			}
		})
	}
}
