package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// registerErr is register that returns the refusal instead of failing the test.
func (q *testQuorum) registerErr(id int32, incarnation byte) (int64, error) {
	q.t.Helper()
	var epoch int64
	var refused error
	q.call(func(c *Controller) error {
		var err error
		epoch, err = c.RegisterBroker(testCtx(q.t), BrokerRegistration{BrokerID: id, ClusterID: c.Image().ClusterID,
			IncarnationID: [16]byte{0: incarnation, 1: byte(id)}, Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id}}})
		if errors.Is(err, kerr.NotController) {
			return err
		}
		refused = err
		return nil
	})
	return epoch, refused
}

func (q *testQuorum) unregister(id int32) error {
	q.t.Helper()
	var refused error
	q.call(func(c *Controller) error {
		err := c.UnregisterBroker(testCtx(q.t), id)
		if errors.Is(err, kerr.NotController) {
			return err
		}
		refused = err
		return nil
	})
	return refused
}

// TestDuplicateBrokerRegistration: as Kafka's ClusterControlManager, a registration with a new
// incarnation ID for a broker whose session is live is refused with
// DUPLICATE_BROKER_REGISTRATION and changes nothing; the same incarnation's retry is
// answered; once the live one's session expired (the clock is the injected ticks) or it is
// fenced, a new incarnation registers with a new epoch.
func TestDuplicateBrokerRegistration(t *testing.T) {
	q := newMembershipQuorum(t)
	lead := q.leader()
	q.waitFor(lead.cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	for id := int32(1); id <= 2; id++ {
		q.register(id, 1)
		if res := q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: 1}); res.IsFenced {
			t.Fatalf("broker %d not unfenced: %+v", id, res)
		}
	}
	before := q.leader().Image().Brokers[1]

	if _, err := q.registerErr(1, 2); !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("second incarnation of live broker 1: %v, want DUPLICATE_BROKER_REGISTRATION", err)
	}
	if now := q.leader().Image().Brokers[1]; now.Epoch != before.Epoch || now.IncarnationID != before.IncarnationID || now.Fenced {
		t.Fatalf("the refused registration changed broker 1: %+v, was %+v", now, before)
	}
	if epoch, err := q.registerErr(1, 1); err != nil || epoch != 1 {
		t.Fatalf("the live incarnation's retry: epoch %d, %v", epoch, err)
	}

	// 1 goes silent; until its session expired the other incarnation stays refused.
	for i := 0; i < sessionTestTicks-2; i++ {
		q.tick()
		q.heartbeat(BrokerHeartbeat{BrokerID: 2, BrokerEpoch: 1})
	}
	if _, err := q.registerErr(1, 2); !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("before broker 1's session expired: %v, want DUPLICATE_BROKER_REGISTRATION", err)
	}
	for i := 0; i < 4; i++ {
		q.tick()
		q.heartbeat(BrokerHeartbeat{BrokerID: 2, BrokerEpoch: 1})
	}
	epoch, err := q.registerErr(1, 2)
	if err != nil || epoch != 2 {
		t.Fatalf("a new incarnation after the session expired: epoch %d, %v", epoch, err)
	}
	if b := q.leader().Image().Brokers[1]; b.IncarnationID[0] != 2 || !b.Fenced {
		t.Fatalf("broker 1 after the restart: %+v", b)
	}

	// A broker that was fenced (here: it asked to be) can be replaced at once.
	q.call(func(c *Controller) error {
		_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 2, BrokerEpoch: 1, WantFence: true})
		return err
	})
	if epoch, err := q.registerErr(2, 2); err != nil || epoch != 2 {
		t.Fatalf("a new incarnation of fenced broker 2: epoch %d, %v", epoch, err)
	}
}

// TestUnregisterBroker: as Kafka's ReplicationControlManager.unregisterBroker, unregistering
// takes the broker out of leadership and of the ISRs (the rules of fencing) and removes the
// registration; its heartbeats are then refused as unregistered, a second unregistration
// is BROKER_ID_NOT_REGISTERED, and it can register again. Unregistering a broker-only node
// removes its raft learner (its observer in DescribeQuorum); a voter's broker leaves the
// voters alone.
func TestUnregisterBroker(t *testing.T) {
	q := newMembershipQuorum(t)
	lead := q.leader()
	q.waitFor(lead.cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	// 4 is a broker-only node: an observer of the quorum.
	cfg := q.cfgs[1]
	cfg.NodeID, cfg.Dir = 4, t.TempDir()
	q.cfgs[4] = cfg
	q.start(4)
	t.Cleanup(func() { q.stop(4) })
	for id := int32(1); id <= 4; id++ {
		q.register(id, 1)
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: 1})
	}
	observers := func() []int32 {
		var ids []int32
		q.call(func(c *Controller) error {
			d, err := c.DescribeQuorum(testCtx(t))
			if err != nil {
				return err
			}
			if !d.IsLeader {
				return kerr.NotController
			}
			ids = ids[:0]
			for _, o := range d.Observers {
				ids = append(ids, o.NodeID)
			}
			if len(d.Voters) != 3 {
				t.Fatalf("voters %+v, want 1, 2, 3", d.Voters)
			}
			return nil
		})
		return ids
	}
	for i := 0; !slices.Equal(observers(), []int32{4}); i++ {
		if i == 200 {
			t.Fatalf("observers %v, want [4]", observers())
		}
		q.tick()
		for id := int32(1); id <= 4; id++ {
			q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: 1})
		}
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", Assignments: map[int32][]int32{0: {4, 1, 2}, 1: {1, 4, 2}},
			NumPartitions: -1, ReplicationFactor: -1}}, false)
		if err == nil && res[0].Err != nil {
			err = res[0].Err
		}
		return err
	})

	if err := q.unregister(4); err != nil {
		t.Fatalf("unregister 4: %v", err)
	}
	im := q.leader().Image()
	if im.Brokers[4] != nil {
		t.Fatalf("broker 4 still registered: %+v", im.Brokers[4])
	}
	ps := im.Topics["t"].Partitions
	if ps[0].Leader != 1 || !slices.Equal(ps[0].ISR, []int32{1, 2}) || ps[0].LeaderEpoch != 1 {
		t.Fatalf("partition 0 led by 4: %+v", ps[0])
	}
	if ps[1].Leader != 1 || !slices.Equal(ps[1].ISR, []int32{1, 2}) || ps[1].LeaderEpoch != 0 {
		t.Fatalf("partition 1 followed by 4: %+v", ps[1])
	}
	q.call(func(c *Controller) error {
		_, err := c.Heartbeat(testCtx(t), BrokerHeartbeat{BrokerID: 4, BrokerEpoch: 1})
		if errors.Is(err, kerr.NotController) {
			return err
		}
		if !errors.Is(err, kerr.BrokerIDNotRegistered) {
			t.Errorf("heartbeat of unregistered broker 4: %v, want BROKER_ID_NOT_REGISTERED", err)
		}
		return nil
	})
	if err := q.unregister(4); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregister 4 again: %v, want BROKER_ID_NOT_REGISTERED", err)
	}
	for i := 0; len(observers()) != 0; i++ {
		if i == 200 {
			t.Fatalf("after unregistering 4 the observers are %v, want none", observers())
		}
		q.tick()
	}

	// A voter's broker: unregistered, the quorum keeps its voters (observers checks 3).
	if err := q.unregister(2); err != nil {
		t.Fatalf("unregister 2: %v", err)
	}
	for i := 0; i < 2*learnerRetryTicks; i++ {
		q.tick()
	}
	if got := observers(); len(got) != 0 {
		t.Fatalf("observers %v after unregistering voter 2's broker", got)
	}
	// Both can register again; 4 becomes an observer again.
	q.register(2, 2)
	q.register(4, 2)
	for i := 0; !slices.Equal(observers(), []int32{4}); i++ {
		if i == 200 {
			t.Fatalf("after 4 registered again the observers are %v, want [4]", observers())
		}
		q.tick()
	}
	// Every node applied the same records.
	want := formatImage(q.leader().Image())
	for id := int32(1); id <= 3; id++ {
		q.waitFor(id, "converged", func(im *Image) bool { return im.Offset == q.leader().Image().Offset })
		if got := formatImage(q.node(id).Image()); got != want {
			t.Fatalf("node %d diverges:\n%s\nwant:\n%s", id, got, want)
		}
	}
}

// TestOwnNodeRestartReplacesAtOnce: a combined node killed and restarted, whose controller is
// the active one again, registers its broker at once: the registration of this very process's
// broker (SetLocalIncarnation) replaces the previous incarnation of the same node ID without
// waiting out its session, which Kafka waits. Any other new incarnation of a live broker, of
// this node ID or another, is still refused.
func TestOwnNodeRestartReplacesAtOnce(t *testing.T) {
	q := newMembershipQuorum(t)
	lead := q.leader()
	own := lead.cfg.NodeID
	other := own%3 + 1
	q.waitFor(own, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	for _, id := range []int32{own, other} {
		q.register(id, 1)
		if res := q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: 1}); res.IsFenced {
			t.Fatalf("broker %d not unfenced: %+v", id, res)
		}
	}
	lead.SetLocalIncarnation([16]byte{0: 2, 1: byte(own)})

	// Another node's new incarnation, and an incarnation of this node ID that is not this
	// process's broker, are refused while the live one's session lasts.
	if _, err := q.registerErr(other, 2); !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("a new incarnation of live broker %d: %v, want DUPLICATE_BROKER_REGISTRATION", other, err)
	}
	if _, err := q.registerErr(own, 3); !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("a foreign incarnation of this node's ID %d: %v, want DUPLICATE_BROKER_REGISTRATION", own, err)
	}
	// This process's own broker replaces its previous incarnation at once.
	epoch, err := q.registerErr(own, 2)
	if err != nil || epoch != 2 {
		t.Fatalf("this process's broker over its previous incarnation: epoch %d, %v", epoch, err)
	}
	if b := q.leader().Image().Brokers[own]; b.IncarnationID[0] != 2 || !b.Fenced || b.Epoch != 2 {
		t.Fatalf("broker %d after its restart: %+v", own, b)
	}
}
