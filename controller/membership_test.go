package controller

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// sessionTestTicks is the session timeout of the membership tests, in ticks of the default
// 100 ms tick interval.
const sessionTestTicks = 20

func newMembershipQuorum(t *testing.T) *testQuorum {
	return newTestQuorumWith(t, func(cfg *Config) { cfg.SessionTimeout = sessionTestTicks * 100 * time.Millisecond }, 1, 2, 3)
}

// call retries fn on the leader while it answers NOT_CONTROLLER.
func (q *testQuorum) call(fn func(c *Controller) error) {
	q.t.Helper()
	q.propose(fn)
}

func (q *testQuorum) register(id int32, incarnation byte) int64 {
	q.t.Helper()
	var epoch int64
	q.call(func(c *Controller) error {
		var err error
		epoch, err = c.RegisterBroker(testCtx(q.t), BrokerRegistration{BrokerID: id, ClusterID: c.Image().ClusterID,
			IncarnationID: [16]byte{0: incarnation, 1: byte(id)}, Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id}}})
		return err
	})
	return epoch
}

func (q *testQuorum) heartbeat(hb BrokerHeartbeat) HeartbeatResult {
	q.t.Helper()
	var res HeartbeatResult
	q.call(func(c *Controller) error {
		if hb.MetadataOffset == 0 {
			hb.MetadataOffset = c.Image().Offset
		}
		var err error
		res, err = c.Heartbeat(testCtx(q.t), hb)
		return err
	})
	return res
}

func (q *testQuorum) partitions(topic string) []PartitionInfo {
	return q.leader().Image().Topics[topic].Partitions
}

// TestMembership walks brokers through Kafka's lifecycle on a three-voter quorum with an
// injected clock: register fenced, unfence once caught up, controlled shutdown moves
// leadership first and says shut down once the broker applied that, a stopped broker is fenced after the session timeout and its partitions
// elect new leaders from their ISRs, a new incarnation of a fenced broker replaces it, the last
// ISR member stays in the ISR of a leaderless partition and leads again once unfenced.
func TestMembership(t *testing.T) {
	q := newMembershipQuorum(t)
	lead := q.leader()
	q.waitFor(lead.cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	clusterID := lead.Image().ClusterID

	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = q.register(id, 1)
		if epochs[id] != 1 {
			t.Fatalf("broker %d epoch %d, want 1", id, epochs[id])
		}
		if again := q.register(id, 1); again != epochs[id] {
			t.Fatalf("a retried registration got epoch %d, want %d", again, epochs[id])
		}
	}
	if b := q.leader().Image().Brokers[2]; !b.Fenced || b.RegisteredOffset == 0 {
		t.Fatalf("a new registration is fenced with its offset: %+v", b)
	}

	// Refusals.
	q.call(func(c *Controller) error {
		_, err := c.RegisterBroker(testCtx(t), BrokerRegistration{BrokerID: 4, ClusterID: "someOtherClusterIdxxxx"})
		if errors.Is(err, kerr.NotController) {
			return err
		}
		if err != kerr.InconsistentClusterID {
			t.Errorf("registration for another cluster: %v, want INCONSISTENT_CLUSTER_ID", err)
		}
		if _, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 9, BrokerEpoch: 1}); err != kerr.BrokerIDNotRegistered {
			t.Errorf("unknown broker's heartbeat: %v, want BROKER_ID_NOT_REGISTERED", err)
		}
		if _, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 1, BrokerEpoch: 7}); err != kerr.StaleBrokerEpoch {
			t.Errorf("stale epoch: %v, want STALE_BROKER_EPOCH", err)
		}
		return nil
	})

	// Not caught up: stays fenced. Caught up: unfenced.
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: 1, MetadataOffset: -1}); !res.IsFenced || res.IsCaughtUp {
		t.Fatalf("behind: %+v", res)
	}
	for id := int32(1); id <= 3; id++ {
		if res := q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: 1}); res.IsFenced || !res.IsCaughtUp {
			t.Fatalf("broker %d caught up: %+v", id, res)
		}
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", Assignments: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}},
			NumPartitions: -1, ReplicationFactor: -1}}, false)
		if err == nil && res[0].Err != nil {
			err = res[0].Err
		}
		return err
	})
	_ = clusterID

	// Controlled shutdown of 1: partition 0 moves to 2, 1 leaves every ISR; the next heartbeat
	// fences it and says shut down.
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: 1, WantShutDown: true}); res.ShouldShutDown {
		t.Fatalf("shut down before leadership moved: %+v", res)
	}
	ps := q.partitions("t")
	if ps[0].Leader != 2 || ps[0].LeaderEpoch != 1 || ps[0].PartitionEpoch != 1 || slices.Contains(ps[2].ISR, 1) {
		t.Fatalf("after controlled shutdown: %+v", ps)
	}
	// Told to shut down only once it reports having applied the entry that moved its
	// leadership, so it has stopped leading and told its clients the new leaders.
	if b := q.leader().Image().Brokers[1]; b.Fenced || !b.InControlledShutdown {
		t.Fatalf("broker 1 after its leadership moved: %+v", b)
	}
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: 1, WantShutDown: true, MetadataOffset: 1}); res.ShouldShutDown || res.IsFenced {
		t.Fatalf("told to shut down before it applied the move: %+v", res)
	}
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: 1, WantShutDown: true}); !res.ShouldShutDown || !res.IsFenced {
		t.Fatalf("leads nothing: %+v", res)
	}

	// 1 comes back as a new incarnation, catches up, is unfenced (it joins no ISR by itself).
	epochs[1] = q.register(1, 2)
	if epochs[1] != 2 {
		t.Fatalf("new incarnation epoch %d", epochs[1])
	}
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: 2}); res.IsFenced {
		t.Fatalf("restarted 1: %+v", res)
	}

	// 3 stops heartbeating: fenced after the session timeout, its partition 2 moves to 2.
	for i := 0; i < sessionTestTicks-2; i++ {
		q.tick()
		q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
		q.heartbeat(BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epochs[2]})
	}
	if q.leader().Image().Brokers[3].Fenced {
		t.Fatal("broker 3 fenced before its session expired")
	}
	for i := 0; i < 4; i++ {
		q.tick()
		q.heartbeat(BrokerHeartbeat{BrokerID: 1, BrokerEpoch: epochs[1]})
		q.heartbeat(BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epochs[2]})
	}
	q.waitFor(q.leader().cfg.NodeID, "broker 3 fenced", func(im *Image) bool { return im.Brokers[3].Fenced })
	ps = q.partitions("t")
	for _, p := range ps {
		if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
			t.Fatalf("after 3 was fenced: %+v", ps)
		}
	}
	if ps[2].LeaderEpoch != 1 || ps[2].PartitionEpoch != 2 {
		t.Fatalf("partition 2 epochs: %+v", ps[2])
	}
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 3, BrokerEpoch: 1}); res.IsFenced {
		// A fenced broker that heartbeats again, caught up, is unfenced (it is in no ISR).
		t.Fatalf("3 heartbeating again: %+v", res)
	}

	// A new incarnation of 2 while 2 heartbeats is refused (TestDuplicateBrokerRegistration);
	// once 2 asked to be fenced it is taken: 2 is the last ISR member, so the ISRs keep it and
	// the partitions are leaderless.
	q.call(func(c *Controller) error {
		_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epochs[2], WantFence: true})
		return err
	})
	epochs[2] = q.register(2, 2)
	ps = q.partitions("t")
	for _, p := range ps {
		if p.Leader != -1 || !slices.Equal(p.ISR, []int32{2}) {
			t.Fatalf("after 2 re-registered: %+v", ps)
		}
	}
	// Unfenced, 2 leads them again with new leader epochs.
	if res := q.heartbeat(BrokerHeartbeat{BrokerID: 2, BrokerEpoch: epochs[2]}); res.IsFenced {
		t.Fatalf("2 after catching up: %+v", res)
	}
	for _, p := range q.partitions("t") {
		if p.Leader != 2 {
			t.Fatalf("after 2 was unfenced: %+v", q.partitions("t"))
		}
	}
	// Placement uses only active brokers.
	q.call(func(c *Controller) error {
		_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 3, BrokerEpoch: 1, WantFence: true})
		return err
	})
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "u", NumPartitions: 6, ReplicationFactor: 1}}, false)
		if err == nil && res[0].Err != nil {
			err = fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return err
	})
	for _, p := range q.partitions("u") {
		if p.Replicas[0] == 3 {
			t.Fatalf("a replica placed on fenced broker 3: %+v", q.partitions("u"))
		}
	}
	// Every node applied the same records.
	want := formatImage(q.leader().Image())
	for id := int32(1); id <= 3; id++ {
		q.waitFor(id, "converged", func(im *Image) bool { return im.Topics["u"] != nil && im.Offset == q.leader().Image().Offset })
		if got := formatImage(q.node(id).Image()); got != want {
			t.Fatalf("node %d diverges:\n%s\nwant:\n%s", id, got, want)
		}
	}
}

// TestOpenDoesNotWaitForLeader: Open returns on a voter whose peers are down; the Start of a
// multi-voter configuration does too.
func TestOpenDoesNotWaitForLeader(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Voters = []int32{1, 2, 3}
	cfg.Transport = &recordingTransport{}
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if im := c.Image(); im.ControllerID != -1 || len(im.Brokers) != 0 {
		t.Fatalf("image of a voter without a quorum: %+v", im)
	}
}
