package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
)

// scriptedNet is the network the probers of a test quorum see: each endpoint (by port)
// answers as the test set it, and a held endpoint's answers wait until released.
type scriptedNet struct {
	mu      sync.Mutex
	answer  map[int32]ProbeOutcome // by port; missing = ProbeAccepted
	held    map[int32]bool
	pending []func()
	probes  map[int32]int // answers given, by port
}

func newScriptedNet() *scriptedNet {
	return &scriptedNet{answer: map[int32]ProbeOutcome{}, held: map[int32]bool{}, probes: map[int32]int{}}
}

func (n *scriptedNet) set(port int32, o ProbeOutcome) {
	n.mu.Lock()
	n.answer[port] = o
	n.mu.Unlock()
}

func (n *scriptedNet) hold(port int32) {
	n.mu.Lock()
	n.held[port] = true
	n.mu.Unlock()
}

// release answers every held probe.
func (n *scriptedNet) release() {
	n.mu.Lock()
	pending := n.pending
	n.pending, n.held = nil, map[int32]bool{}
	n.mu.Unlock()
	for _, f := range pending {
		f()
	}
}

func (n *scriptedNet) heldProbes() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.pending)
}

type scriptedProber struct{ net *scriptedNet }

func (p scriptedProber) Probe(eps []Endpoint, done func([]ProbeOutcome)) {
	n := p.net
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]ProbeOutcome, len(eps))
	hold := false
	for i, e := range eps {
		o, ok := n.answer[e.Port]
		if !ok {
			o = ProbeAccepted
		}
		out[i] = o
		n.probes[e.Port]++
		hold = hold || n.held[e.Port]
	}
	if hold {
		n.pending = append(n.pending, func() { done(out) })
		return
	}
	done(out) // Probe may answer at once: done only queues the result for the driver
}

// livenessOn returns node's view of broker id's listeners (a copy), read in its driver.
func (q *testQuorum) livenessOn(node, id int32) brokerLiveness {
	q.t.Helper()
	var out brokerLiveness
	if err := q.node(node).query(testCtx(q.t), func() {
		if l := q.node(node).liveness[id]; l != nil {
			out = *l
			out.reachable = slices.Clone(l.reachable)
		}
	}); err != nil {
		q.t.Fatal(err)
	}
	return out
}

// waitLiveness waits (ticking, since baselines are probed on ticks, and calling each after
// every tick) until cond holds for node's view of broker id.
func (q *testQuorum) waitLiveness(node, id int32, what string, cond func(brokerLiveness) bool, each func()) {
	q.t.Helper()
	for i := 0; i < 200; i++ {
		if cond(q.livenessOn(node, id)) {
			return
		}
		q.tick()
		each()
	}
	q.t.Fatalf("node %d's view of broker %d: not %s after 200 ticks: %+v", node, id, what, q.livenessOn(node, id))
}

// settled waits until node has no probe of broker id running and has seen at least probes
// answers given on port, so a test can assert that a finished probe changed nothing.
func (q *testQuorum) settled(net *scriptedNet, node, id int32, port int32, probes int) {
	q.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		net.mu.Lock()
		n := net.probes[port]
		net.mu.Unlock()
		if n >= probes && !q.livenessOn(node, id).probing {
			return
		}
		if time.Now().After(deadline) {
			q.t.Fatalf("probe of broker %d on node %d did not finish", id, node)
		}
		time.Sleep(time.Millisecond) // polling the driver; not a wait for something to settle
	}
}

// pollUntil polls cond (state of fakes, not of time) until it holds.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func portOf(id int32) int32 { return 9092 + id }

// TestFenceOnCertainEvidence: with a prober, the active controller fences a broker at once
// when the connection that carried its heartbeats closes and every listener this node saw
// accept for that incarnation now refuses; it never fences on anything less: a silent broker
// whose listener accepts, a probe that times out, a heartbeat arriving while the probe ran, a
// listener that was never seen open. A broker that was the active controller is fenced by the
// next one right after it is elected, not a session later.
func TestFenceOnCertainEvidence(t *testing.T) {
	net := newScriptedNet()
	q := newTestQuorumWith(t, func(cfg *Config) {
		cfg.SessionTimeout = sessionTestTicks * 100 * time.Millisecond
		cfg.Prober = scriptedProber{net}
	}, 1, 2, 3)
	lead := q.leader()
	leadID := lead.cfg.NodeID
	q.waitFor(leadID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = q.register(id, 1)
		q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	q.call(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "t", Assignments: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}},
			NumPartitions: -1, ReplicationFactor: -1}}, false)
		if err == nil && res[0].Err != nil {
			err = res[0].Err
		}
		return err
	})
	// victim is a broker other than the active controller's own.
	victim := int32(1)
	if victim == leadID {
		victim = 2
	}
	other := 6 - leadID - victim
	keepAlive := func(ids ...int32) {
		for _, id := range ids {
			q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epochs[id]})
		}
	}
	all := func() { keepAlive(1, 2, 3) }
	// Every node has a baseline for every other node's broker.
	for node := int32(1); node <= 3; node++ {
		for id := int32(1); id <= 3; id++ {
			if id != node {
				q.waitLiveness(node, id, "with a baseline", func(l brokerLiveness) bool { return slices.Contains(l.reachable, true) }, all)
			}
		}
	}
	notFenced := func(what string) {
		t.Helper()
		// The working image: a fence decided by a probe's outcome is proposed in the same
		// driver step that records the outcome, so it is there once the probe settled.
		var fenced bool
		if err := lead.query(testCtx(t), func() { fenced = lead.working.Brokers[victim].Fenced }); err != nil {
			t.Fatal(err)
		}
		if fenced {
			t.Fatalf("%s: broker %d fenced", what, victim)
		}
	}
	probes := func() int {
		net.mu.Lock()
		defer net.mu.Unlock()
		return net.probes[portOf(victim)]
	}

	// Slow, not dead: the victim stops heartbeating but its listener accepts. Probes (on
	// silence and on a closed connection) find it alive; it is not fenced before its session.
	for i := 0; i < sessionTestTicks-4; i++ {
		q.tick()
		keepAlive(leadID, other)
	}
	n := probes()
	lead.BrokerConnectionClosed(victim, epochs[victim])
	q.settled(net, leadID, victim, portOf(victim), n+1)
	notFenced("silent with an open listener")
	keepAlive(victim, leadID, other)

	// A probe that times out proves nothing.
	net.set(portOf(victim), ProbeInconclusive)
	n = probes()
	lead.BrokerConnectionClosed(victim, epochs[victim])
	q.settled(net, leadID, victim, portOf(victim), n+1)
	notFenced("probe inconclusive")

	// Refused, but a heartbeat arrived while the probe ran: alive after all.
	net.set(portOf(victim), ProbeRefused)
	net.hold(portOf(victim))
	lead.BrokerConnectionClosed(victim, epochs[victim])
	pollUntil(t, "the probe started", func() bool { return net.heldProbes() > 0 })
	keepAlive(victim)
	net.release()
	q.settled(net, leadID, victim, portOf(victim), 0)
	notFenced("heartbeat during the probe")

	// Certain: the heartbeat connection closed and the listener seen open now refuses. Fenced
	// without a single tick; its partitions elect new leaders from their ISRs.
	lead.BrokerConnectionClosed(victim, epochs[victim])
	q.waitFor(leadID, "the victim fenced", func(im *Image) bool { return im.Brokers[victim].Fenced })
	for _, p := range q.partitions("t") {
		if p.Leader == victim || slices.Contains(p.ISR, victim) {
			t.Fatalf("partition %d still has fenced broker %d: %+v", p.Partition, victim, p)
		}
	}

	// A new incarnation whose listener was never seen open (it opens after unfencing) is not
	// fenced for a refusal: no baseline.
	epochs[victim] = q.register(victim, 2)
	keepAlive(victim)
	if b := q.leader().Image().Brokers[victim]; b.Fenced {
		t.Fatalf("new incarnation not unfenced: %+v", b)
	}
	q.waitLiveness(leadID, victim, "probed for a baseline", func(l brokerLiveness) bool {
		return l.epoch == epochs[victim] && l.lastProbe != 0 && !l.probing
	}, func() { keepAlive(leadID, other) })
	lead.BrokerConnectionClosed(victim, epochs[victim])
	for i := 0; i < sessionTestTicks-4; i++ {
		q.tick()
		keepAlive(leadID, other)
	}
	notFenced("refused without a baseline")
	net.set(portOf(victim), ProbeAccepted)
	keepAlive(victim)
	q.waitLiveness(leadID, victim, "with a baseline", func(l brokerLiveness) bool { return slices.Contains(l.reachable, true) }, all)

	// The active controller's own broker dies with it: the next active controller probes
	// every broker when elected and fences it at once, without waiting a session.
	for node := int32(1); node <= 3; node++ {
		if node != leadID && node != victim {
			q.waitLiveness(node, victim, "with a baseline of the new incarnation", func(l brokerLiveness) bool {
				return l.epoch == epochs[victim] && slices.Contains(l.reachable, true)
			}, all)
		}
	}
	net.set(portOf(leadID), ProbeRefused)
	q.stop(leadID)
	var next *Controller
	for i := 0; next == nil; i++ {
		if i > 100 {
			t.Fatal("no new active controller after 100 ticks")
		}
		q.tick()
		for _, id := range []int32{victim, other} {
			if c := q.node(id); c.Image().ControllerID == id {
				next = c
			}
		}
	}
	// Once the new term's probes started (on a tick), no further tick is needed: the dead
	// controller's broker is fenced on the evidence, not on a session.
	nextID := next.cfg.NodeID
	q.waitLiveness(nextID, leadID, "probed in the new term", func(l brokerLiveness) bool {
		return nextTerm(next)
	}, func() {})
	q.waitFor(nextID, fmt.Sprintf("broker %d (the dead controller) fenced", leadID), func(im *Image) bool { return im.Brokers[leadID].Fenced })
	for _, p := range next.Image().Topics["t"].Partitions {
		if p.Leader == leadID {
			t.Fatalf("partition %d still led by the dead controller's broker: %+v", p.Partition, p)
		}
	}
}

// nextTerm reports whether c, as active controller, has suspected every broker in its term.
func nextTerm(c *Controller) bool {
	var ok bool
	_ = c.query(context.Background(), func() { ok = c.leaderReady && c.livenessTerm == c.leaderTerm })
	return ok
}

// raftState is node's raft role and leader, read in its driver.
func (q *testQuorum) raftState(node int32) (raft.StateType, int32) {
	q.t.Helper()
	c := q.node(node)
	var st raft.BasicStatus
	if err := c.query(testCtx(q.t), func() { st = c.node.BasicStatus() }); err != nil {
		q.t.Fatal(err)
	}
	return st.RaftState, kafkaID(st.Lead)
}

// TestElectionOnLeaderGone: when the transport reports that the leader's controller listener
// refuses connections it accepted before, the surviving voter with the lowest ID campaigns at
// once and wins without a single tick (the others grant the transfer-style vote inside their
// leader lease); the report about a voter that does not lead, or on a survivor that is not
// the lowest, starts nothing.
func TestElectionOnLeaderGone(t *testing.T) {
	q := newTestQuorum(t, 1, 2, 3)
	old := q.leader().cfg.NodeID
	var survivors []int32
	for id := int32(1); id <= 3; id++ {
		if id != old {
			survivors = append(survivors, id)
		}
	}
	first, second := survivors[0], survivors[1]

	// Not the leader: nothing happens.
	q.node(first).ReportPeerGone(second)
	if st, lead := q.raftState(first); st != raft.StateFollower || lead != old {
		t.Fatalf("a report about a follower moved node %d to %v (leader %d)", first, st, lead)
	}
	// The leader, reported only to the survivor that is not the lowest: it waits.
	q.node(second).ReportPeerGone(old)
	if st, lead := q.raftState(second); st != raft.StateFollower || lead != old {
		t.Fatalf("node %d (not the lowest survivor) campaigned: %v (leader %d)", second, st, lead)
	}

	// Both survivors hold the leader's whole log, so either may win the vote (a survivor with a
	// shorter log loses it and the election falls back to the timeout, as raft requires).
	lastIndex := func(id int32) (last uint64) {
		c := q.node(id)
		if err := c.query(testCtx(t), func() { last, _ = c.storage.mem.LastIndex() }); err != nil {
			t.Fatal(err)
		}
		return last
	}
	pollUntil(t, "the survivors caught up", func() bool {
		want := lastIndex(old)
		return lastIndex(first) == want && lastIndex(second) == want
	})
	q.stop(old)
	q.node(second).ReportPeerGone(old)
	q.node(first).ReportPeerGone(old)
	q.waitFor(second, "the lowest survivor elected without a tick", func(im *Image) bool { return im.ControllerID == first })
	if st, _ := q.raftState(first); st != raft.StateLeader {
		t.Fatalf("node %d: %v", first, st)
	}
}
