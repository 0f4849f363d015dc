package broker

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/broker/replica"
	"sluice/controller"
)

func TestThrottledReplica(t *testing.T) {
	cases := []struct {
		list            string
		partition, node int32
		want            bool
	}{
		{"", 0, 1, false},
		{"*", 7, 3, true},
		{"0:1,1:2", 0, 1, true},
		{"0:1,1:2", 1, 2, true},
		{"0:1,1:2", 0, 2, false},
		{" 0:1 , 2:3 ", 2, 3, true},
		{"0:1", 1, 1, false},
	}
	for _, tc := range cases {
		if got := throttledReplica(tc.list, tc.partition, tc.node); got != tc.want {
			t.Errorf("throttledReplica(%q, %d, %d) = %v, want %v", tc.list, tc.partition, tc.node, got, tc.want)
		}
	}
}

// TestRateMeter: Kafka's Rate over 11 one-second samples measures over at least 10 s, so
// 1000 bytes at once are 100 B/s; samples older than the kept span no longer count.
func TestRateMeter(t *testing.T) {
	clock := replica.NewManualClock(time.Unix(1000, 0))
	m := newRateMeter(clock, 11, time.Second)
	if m.exceeded(0) {
		t.Fatal("an empty meter exceeds 0 B/s")
	}
	m.record(1000)
	if !m.exceeded(99) || m.exceeded(100) {
		t.Fatal("1000 bytes should measure 100 B/s")
	}
	if m.exceeded(math.MaxInt64) {
		t.Fatal("an unlimited bound is exceeded")
	}
	clock.Advance(5 * time.Second)
	m.record(1000) // 2000 bytes over the minimum 10 s span
	if !m.exceeded(199) || m.exceeded(200) {
		t.Fatal("2000 bytes within 10 s should measure 200 B/s")
	}
	clock.Advance(20 * time.Second)
	m.record(1) // the old samples are gone
	if !m.exceeded(0) || m.exceeded(1) {
		t.Fatal("old samples still counted")
	}
}

// publishImage shows every node im.
func (c *replCluster) publishImage(im *controller.Image) {
	c.t.Helper()
	for id, n := range c.nodes {
		n.meta.im.Store(im)
		if err := n.broker.reconcile(im); err != nil {
			c.t.Fatalf("reconcile on %d: %v", id, err)
		}
	}
}

// TestReplicationThrottles: a replica being added to a partition (out of the ISR) and named in
// the topic's follower (or leader) throttled replicas stops getting records once the
// follower's (or leader's) quota is exceeded, here 1 B/s, while records wait on the leader;
// without the throttle it catches up.
func TestReplicationThrottles(t *testing.T) {
	for _, side := range []string{"follower", "leader"} {
		t.Run(side, func(t *testing.T) {
			c := startReplCluster(t, []int32{1, 2}, map[string]string{"replica.fetch.max.bytes": "1"}, nil)
			c.publish(1, controller.PartitionInfo{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
			var values []string
			for i := range 50 {
				values = append(values, fmt.Sprintf("record-%03d", i))
			}
			c.produce(1, kgo.LeaderAck(), values...)

			throttled := controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, PartitionEpoch: 1,
				AddingReplicas: []int32{2}}
			im := c.image(2, &throttled)
			skips := &c.nodes[2].broker.throttles.followerSkips
			if side == "follower" {
				im.Topics[c.topic].Configs = map[string]string{followerThrottledReplicasKey: "0:2"}
				im.BrokerConfigs = map[string]map[string]string{"2": {followerThrottledRateKey: "1"}}
			} else {
				im.Topics[c.topic].Configs = map[string]string{leaderThrottledReplicasKey: "0:1"}
				im.BrokerConfigs = map[string]map[string]string{"1": {leaderThrottledRateKey: "1"}}
				skips = &c.nodes[1].broker.throttles.leaderSkips
			}
			c.publishImage(im)
			waitFor(t, "the throttle to hold the new replica back several times", func() bool { return skips.Load() >= 5 })
			if got := c.part(2).replica.Snapshot().LogEnd; got >= 50 {
				t.Fatalf("throttled replica reached log end %d of 50 at 1 B/s", got)
			}

			c.publishImage(c.image(3, &throttled)) // the throttle removed
			waitFor(t, "the replica to catch up without the throttle", func() bool { return c.part(2).replica.Snapshot().LogEnd == 50 })
		})
	}
}
