package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// activeLeader ticks until a running node leads and has applied an entry of its term, and
// returns it. Unlike testQuorum.leader it also asks nodes whose Config.Voters does not name
// them (controllers that joined through AddVoter).
func (q *testQuorum) activeLeader() *Controller {
	q.t.Helper()
	for i := 0; i < 2000; i++ {
		q.net.mu.Lock()
		var nodes []*Controller
		for _, c := range q.net.nodes {
			if c != nil {
				nodes = append(nodes, c)
			}
		}
		q.net.mu.Unlock()
		for _, c := range nodes {
			ready := false
			if err := c.query(testCtx(q.t), func() { ready = c.leaderReady }); err != nil {
				q.t.Fatal(err)
			}
			if ready {
				return c
			}
		}
		q.tick()
	}
	q.t.Fatal("no active leader after 2000 ticks")
	return nil
}

// voterChange runs fn against the active leader while the clock ticks (a learner's catch-up is
// checked on ticks), retrying on NOT_CONTROLLER, and returns fn's final error.
func (q *testQuorum) voterChange(fn func(c *Controller) error) error {
	q.t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		lead := q.activeLeader()
		done := make(chan error, 1)
		go func() { done <- fn(lead) }()
		for i := 0; ; i++ {
			select {
			case err := <-done:
				if errors.Is(err, kerr.NotController) {
					goto retry
				}
				return err
			default:
			}
			if i == 5000 {
				q.t.Fatal("voter change did not finish after 5000 ticks")
			}
			q.tick()
		}
	retry:
	}
	q.t.Fatal("voter change refused with NOT_CONTROLLER 20 times")
	return nil
}

// tickUntil ticks until cond holds, at most 2000 ticks.
func (q *testQuorum) tickUntil(what string, cond func() bool) {
	q.t.Helper()
	for i := 0; !cond(); i++ {
		if i == 2000 {
			q.t.Fatalf("after 2000 ticks still waiting for %s", what)
		}
		q.tick()
	}
}

// describe returns node id's DescribeQuorum.
func (q *testQuorum) describe(id int32) QuorumDescription {
	q.t.Helper()
	d, err := q.node(id).DescribeQuorum(testCtx(q.t))
	if err != nil {
		q.t.Fatal(err)
	}
	return d
}

func voterIDs(vs []VoterDescription) []int32 {
	var out []int32
	for _, v := range vs {
		out = append(out, v.NodeID)
	}
	return out
}

func testEndpoint(id int32) VoterEndpoint {
	return VoterEndpoint{NodeID: id, DirectoryID: [16]byte{byte(id)}, Listener: "CONTROLLER", Host: "127.0.0.1", Port: 19000 + id}
}

// TestDynamicQuorumFromStandalone: a node formatted standalone (BootstrapVoters with itself
// only) leads at once with the formatted cluster ID; two controllers that start with an empty
// log, told only of node 1 (as controller.quorum.bootstrap.servers would), are added with
// AddVoter — each becomes a learner, catches up (by snapshot: the voter change compacted the
// log) and is promoted. A second voter change while one is in flight is refused with
// REQUEST_TIMED_OUT. With three voters the original one can stop and the others elect a
// leader and commit; the voter set survives restarts (it is in the snapshot's ConfState);
// RemoveVoter demotes a voter to an observer, and a demoted leader steps down.
func TestDynamicQuorumFromStandalone(t *testing.T) {
	q := newTestQuorumWith(t, func(cfg *Config) {
		cfg.SessionTimeout = -1 // broker 1 stays unfenced while node 1 is stopped
		if err := BootstrapVoters(cfg.Dir, "formatted-cluster-id", []VoterEndpoint{testEndpoint(cfg.NodeID)}); err != nil {
			t.Fatal(err)
		}
	}, 1)
	lead := q.activeLeader()
	if got := lead.Image().ClusterID; got != "formatted-cluster-id" {
		t.Fatalf("cluster ID %q, want the formatted one", got)
	}
	createTopic := func(name string) {
		t.Helper()
		for i := 0; ; i++ {
			res, err := q.activeLeader().CreateTopics(testCtx(t), []CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false)
			if err == nil && res[0].Err != nil {
				err = res[0].Err
			}
			if err == nil {
				return
			}
			if !errors.Is(err, kerr.NotController) || i == 100 {
				t.Fatalf("creating %s: %v", name, err)
			}
			q.tick()
		}
	}
	q.propose(func(c *Controller) error { return c.register() }) // a broker to place replicas on
	createTopic("before")

	join := func(id int32) {
		cfg := q.cfgs[1]
		cfg.NodeID = id
		cfg.Dir = t.TempDir()
		cfg.Voters = []int32{1} // what a bootstrap server answers
		q.cfgs[id] = cfg
		q.start(id)
		t.Cleanup(func() { q.stop(id) })
	}
	join(2)
	if d := q.describe(2); d.IsLeader || slices.Contains(voterIDs(d.Voters), 2) {
		t.Fatalf("joiner's own view before AddVoter: %+v", d)
	}
	if err := q.voterChange(func(c *Controller) error { return c.AddVoter(testCtx(t), testEndpoint(2)) }); err != nil {
		t.Fatalf("AddVoter(2): %v", err)
	}
	if got := voterIDs(q.describe(1).Voters); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("voters after adding 2: %v", got)
	}
	q.tickUntil("the joiner to follow the log", func() bool {
		im := q.node(2).Image()
		return im.Topics["before"] != nil && im.VoterEndpoints[2] == testEndpoint(2)
	})

	// UpdateVoter re-records a voter's endpoint on every node; a stranger is VOTER_NOT_FOUND.
	moved := testEndpoint(2)
	moved.Port = 29002
	if err := q.voterChange(func(c *Controller) error { return c.UpdateVoter(testCtx(t), moved) }); err != nil {
		t.Fatalf("UpdateVoter(2): %v", err)
	}
	q.tickUntil("the new endpoint of 2 on node 2", func() bool { return q.node(2).Image().VoterEndpoints[2] == moved })
	if got := q.activeLeader().VoterAddrs()[2]; got != moved.Addr() {
		t.Fatalf("the leader's address of voter 2: %q, want %q", got, moved.Addr())
	}
	if err := q.activeLeader().UpdateVoter(testCtx(t), testEndpoint(8)); !errors.Is(err, kerr.VoterNotFound) {
		t.Fatalf("UpdateVoter of a stranger: %v, want VOTER_NOT_FOUND", err)
	}

	// One voter change at a time.
	join(3)
	lead = q.activeLeader()
	first := make(chan error, 1)
	go func() { first <- lead.AddVoter(testCtx(t), testEndpoint(3)) }()
	for started := false; !started; {
		if err := lead.query(testCtx(t), func() { started = lead.voterOp != nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := lead.RemoveVoter(testCtx(t), 2, [16]byte{}); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("RemoveVoter during AddVoter: %v, want REQUEST_TIMED_OUT", err)
	}
	for i := 0; ; i++ {
		select {
		case err := <-first:
			if err != nil {
				t.Fatalf("AddVoter(3): %v", err)
			}
		default:
			if i == 5000 {
				t.Fatal("AddVoter(3) did not finish")
			}
			q.tick()
			continue
		}
		break
	}
	if got := voterIDs(q.describe(lead.cfg.NodeID).Voters); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("voters after adding 3: %v", got)
	}
	if err := lead.AddVoter(testCtx(t), testEndpoint(2)); !errors.Is(err, kerr.DuplicateVoter) {
		t.Fatalf("AddVoter of a voter: %v, want DUPLICATE_VOTER", err)
	}
	if err := lead.RemoveVoter(testCtx(t), 9, [16]byte{}); !errors.Is(err, kerr.VoterNotFound) {
		t.Fatalf("RemoveVoter of a stranger: %v, want VOTER_NOT_FOUND", err)
	}
	if err := lead.RemoveVoter(testCtx(t), 3, [16]byte{7}); !errors.Is(err, kerr.VoterNotFound) {
		t.Fatalf("RemoveVoter with another directory ID: %v, want VOTER_NOT_FOUND", err)
	}

	// The formatted node stops: 2 and 3 are a majority of three.
	q.stop(1)
	createTopic("without-1")
	if l := q.activeLeader().cfg.NodeID; l == 1 {
		t.Fatalf("leader %d", l)
	}

	// Restarts keep the voter set: it is in the log and snapshots, not in the config.
	q.stop(2)
	q.start(2)
	q.start(1)
	for _, id := range []int32{1, 2} {
		if got := voterIDs(q.describe(id).Voters); !slices.Equal(got, []int32{1, 2, 3}) {
			t.Fatalf("node %d after restart: voters %v", id, got)
		}
	}
	createTopic("after-restart")
	for _, id := range []int32{1, 2, 3} {
		q.tickUntil(fmt.Sprint("node ", id, " to apply after-restart"), func() bool { return q.node(id).Image().Topics["after-restart"] != nil })
	}

	// Demote the leader itself: it applies the change, steps down, and goes on as an observer.
	lead = q.activeLeader()
	old := lead.cfg.NodeID
	if err := q.voterChange(func(c *Controller) error { return c.RemoveVoter(testCtx(t), old, testEndpoint(old).DirectoryID) }); err != nil {
		t.Fatalf("RemoveVoter(%d): %v", old, err)
	}
	next := q.activeLeader()
	if next.cfg.NodeID == old {
		t.Fatalf("the demoted leader %d still leads", old)
	}
	d := q.describe(next.cfg.NodeID)
	if slices.Contains(voterIDs(d.Voters), old) || !slices.Contains(voterIDs(d.Observers), old) || len(d.Voters) != 2 {
		t.Fatalf("after demoting %d: voters %v observers %v", old, voterIDs(d.Voters), voterIDs(d.Observers))
	}
	createTopic("after-demotion")
	q.tickUntil("the demoted voter to keep following", func() bool { return q.node(old).Image().Topics["after-demotion"] != nil })
	for i := 0; i < 50; i++ {
		q.tick()
	}
	var state string
	if err := q.node(old).query(testCtx(t), func() { state = q.node(old).node.BasicStatus().RaftState.String() }); err != nil {
		t.Fatal(err)
	}
	if state != "StateFollower" {
		t.Fatalf("demoted node %d is %s", old, state)
	}
}

// TestFormattedInitialVoters: three nodes formatted with the same initial voters (`sluice
// format --initial-controllers`) form one quorum with the formatted cluster ID and the
// recorded endpoints and directory IDs, without any voter change.
func TestFormattedInitialVoters(t *testing.T) {
	eps := []VoterEndpoint{testEndpoint(1), testEndpoint(2), testEndpoint(3)}
	q := newTestQuorumWith(t, func(cfg *Config) {
		cfg.Voters = nil // the formatted snapshot, not the config, names the voters
		if err := BootstrapVoters(cfg.Dir, "three-formatted", eps); err != nil {
			t.Fatal(err)
		}
	}, 1, 2, 3)
	lead := q.activeLeader()
	d := q.describe(lead.cfg.NodeID)
	if got := voterIDs(d.Voters); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("voters %v", got)
	}
	for id := int32(1); id <= 3; id++ {
		im := q.node(id).Image()
		if im.ClusterID != "three-formatted" || im.VoterEndpoints[id] != testEndpoint(id) {
			t.Fatalf("node %d: cluster %q endpoints %v", id, im.ClusterID, im.VoterEndpoints)
		}
	}
	if err := BootstrapVoters(q.cfgs[1].Dir, "again", eps); err == nil {
		t.Fatal("formatting a directory with metadata again succeeded")
	}
}

// TestNetDemotedVoterFollows, over TCP: a voter demoted by RemoveVoter keeps following the log
// as an observer. The voters drop it from their peers and close the connection it dialled
// while it was a voter, so it dials again and is served as an observer; without that the
// leader had no connection to send to it on and the demoted node fell behind for good.
func TestNetDemotedVoterFollows(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 1024, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	lead := q.leader()
	var demoted *netNode
	for _, n := range q.running() {
		if n != lead {
			demoted = n
			break
		}
	}
	if err := lead.c.RemoveVoter(ctx, demoted.id, [16]byte{}); err != nil {
		t.Fatalf("RemoveVoter(%d): %v", demoted.id, err)
	}
	var voters []*netNode
	for _, n := range q.running() {
		if n != demoted {
			voters = append(voters, n)
		}
	}
	q.proposeAmong(voters, createTopic(ctx, "after-demotion"))
	waitConverged(t, q.running(), "after-demotion")
	d, err := q.leaderAmong(voters).c.DescribeQuorum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Voters) != 2 || len(d.Observers) != 1 || d.Observers[0].NodeID != demoted.id {
		t.Fatalf("after demoting %d: voters %v observers %v", demoted.id, voterIDs(d.Voters), voterIDs(d.Observers))
	}
}

// TestAddVoterToStaticQuorum: a node added to a static quorum (controller.quorum.voters on the
// others) gets the static voters' addresses in its own log with the voter change, so after a
// restart — with no configuration naming them — it still knows where every voter listens.
func TestAddVoterToStaticQuorum(t *testing.T) {
	static := map[int32]string{1: "127.0.0.1:19101", 2: "127.0.0.1:19102", 3: "127.0.0.1:19103"}
	q := newTestQuorumWith(t, func(cfg *Config) { cfg.VoterAddrs = static }, 1, 2, 3)
	q.propose(func(c *Controller) error { return c.register() })
	cfg := q.cfgs[1]
	cfg.NodeID, cfg.Dir, cfg.VoterAddrs = 4, t.TempDir(), nil
	q.cfgs[4] = cfg
	q.start(4)
	t.Cleanup(func() { q.stop(4) })
	if err := q.voterChange(func(c *Controller) error { return c.AddVoter(testCtx(t), testEndpoint(4)) }); err != nil {
		t.Fatalf("AddVoter(4): %v", err)
	}
	q.stop(4)
	q.start(4)
	want := map[int32]string{1: static[1], 2: static[2], 3: static[3], 4: testEndpoint(4).Addr()}
	q.tickUntil("node 4 to know every voter's address", func() bool { return maps.Equal(q.node(4).VoterAddrs(), want) })
}
