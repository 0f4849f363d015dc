package controller

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// memNetwork is an in-process transport between controllers of one test quorum. Delivery is
// non-blocking: a full inbound queue drops the message, as a real transport may.
type memNetwork struct {
	mu    sync.Mutex
	nodes map[uint64]*Controller // by raft ID; nil while a node is down
}

type memTransport struct {
	net *memNetwork
}

func (t memTransport) Send(msgs []*raftpb.Message) {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	for _, m := range msgs {
		to := t.net.nodes[m.GetTo()]
		if to == nil {
			continue
		}
		select {
		case to.inbound <- proto.Clone(m).(*raftpb.Message): // as if serialized on the wire
		default:
		}
	}
}

type testQuorum struct {
	t     *testing.T
	net   *memNetwork
	cfgs  map[int32]Config
	ticks map[int32]chan time.Time
}

func newTestQuorum(t *testing.T, ids ...int32) *testQuorum {
	return newTestQuorumWith(t, func(*Config) {}, ids...)
}

// newTestQuorumWith is newTestQuorum with each node's config passed through adjust.
func newTestQuorumWith(t *testing.T, adjust func(*Config), ids ...int32) *testQuorum {
	q := &testQuorum{t: t, net: &memNetwork{nodes: map[uint64]*Controller{}}, cfgs: map[int32]Config{}, ticks: map[int32]chan time.Time{}}
	for _, id := range ids {
		cfg := testConfig(t.TempDir())
		cfg.NodeID = id
		cfg.Voters = ids
		cfg.SnapshotEvery = 3
		cfg.Transport = memTransport{q.net}
		adjust(&cfg)
		q.cfgs[id] = cfg
		q.start(id)
	}
	t.Cleanup(func() {
		for _, id := range ids {
			q.stop(id)
		}
	})
	return q
}

func (q *testQuorum) start(id int32) *Controller {
	cfg := q.cfgs[id]
	ticks := make(chan time.Time)
	cfg.ticks = ticks
	c, err := open(cfg)
	if err != nil {
		q.t.Fatal(err)
	}
	q.net.mu.Lock()
	q.net.nodes[raftID(id)] = c
	q.ticks[id] = ticks
	q.net.mu.Unlock()
	return c
}

func (q *testQuorum) stop(id int32) {
	q.net.mu.Lock()
	c := q.net.nodes[raftID(id)]
	q.net.nodes[raftID(id)] = nil
	q.net.mu.Unlock()
	if c != nil {
		if err := c.Close(); err != nil {
			q.t.Errorf("close %d: %v", id, err)
		}
	}
}

func (q *testQuorum) node(id int32) *Controller {
	q.net.mu.Lock()
	defer q.net.mu.Unlock()
	return q.net.nodes[raftID(id)]
}

// tick advances every running node's clock by one tick.
func (q *testQuorum) tick() {
	q.net.mu.Lock()
	var chans []chan time.Time
	for id, ch := range q.ticks {
		if q.net.nodes[raftID(id)] != nil {
			chans = append(chans, ch)
		}
	}
	q.net.mu.Unlock()
	for _, ch := range chans {
		ch <- time.Time{}
	}
}

// leader ticks until every running voter agrees on one leader, and returns it. Observers
// (nodes not among their Config.Voters) are not asked: one may not follow the log yet.
func (q *testQuorum) leader() *Controller {
	q.t.Helper()
	for i := 0; i < 1000; i++ {
		var lead int32 = -1
		agree := true
		q.net.mu.Lock()
		for _, c := range q.net.nodes {
			if c == nil || !slices.Contains(c.cfg.Voters, c.cfg.NodeID) {
				continue
			}
			id := c.Image().ControllerID
			if id == -1 || lead != -1 && id != lead {
				agree = false
			}
			lead = id
		}
		q.net.mu.Unlock()
		if agree && lead != -1 {
			return q.node(lead)
		}
		q.tick()
	}
	q.t.Fatal("no leader after 1000 ticks")
	return nil
}

// propose retries fn on the current leader until it is not refused with NOT_CONTROLLER (a new
// leader accepts proposals only once it has applied an entry of its term).
func (q *testQuorum) propose(fn func(c *Controller) error) {
	q.t.Helper()
	for i := 0; i < 100; i++ {
		err := fn(q.leader())
		if err == nil {
			return
		}
		if !errors.Is(err, kerr.NotController) {
			q.t.Fatal(err)
		}
		q.tick()
	}
	q.t.Fatal("proposal refused 100 times")
}

// waitFor waits, without sleeping, until cond holds for node id's image.
func (q *testQuorum) waitFor(id int32, what string, cond func(*Image) bool) {
	q.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		im := q.node(id).Image()
		if cond(im) {
			return
		}
		select {
		case <-im.Changed():
		case <-deadline:
			q.t.Fatalf("node %d: timed out waiting for %s:\n%s", id, what, formatImage(im))
		}
	}
}

// TestThreeVoterQuorum runs the driver with real raft message exchange: election, replication
// to followers, NOT_CONTROLLER on followers, and a restarted follower catching up through a
// snapshot because the leader compacted its log meanwhile.
func TestThreeVoterQuorum(t *testing.T) {
	q := newTestQuorum(t, 1, 2, 3)
	lead := q.leader()
	q.propose(func(c *Controller) error { return c.register() })
	q.propose(func(c *Controller) error {
		res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "replicated", NumPartitions: 2, ReplicationFactor: 1}}, false)
		if err != nil {
			return err
		}
		if res[0].Err == kerr.NotController {
			return kerr.NotController
		}
		if res[0].Err != nil {
			return fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return nil
	})
	lead = q.leader()
	for id := int32(1); id <= 3; id++ {
		q.waitFor(id, "topic replicated", func(im *Image) bool { return im.Topics["replicated"] != nil && im.ClusterID != "" })
	}
	want := replicatedState(lead.Image())
	for id := int32(1); id <= 3; id++ {
		if got := replicatedState(q.node(id).Image()); got != want {
			t.Fatalf("node %d diverges:\n%s\nwant:\n%s", id, got, want)
		}
	}

	// A follower refuses proposals.
	var follower int32
	for id := int32(1); id <= 3; id++ {
		if q.node(id) != lead {
			follower = id
		}
	}
	res, err := q.node(follower).CreateTopics(testCtx(t), []CreateTopic{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if err != nil || res[0].Err != kerr.NotController {
		t.Fatalf("follower CreateTopics: %v %+v", err, res)
	}

	// Stop the follower, commit enough for the leader to snapshot and compact, restart it.
	q.stop(follower)
	for i := 0; i < 8; i++ {
		q.propose(func(c *Controller) error {
			_, err := c.AllocateProducerIDs(testCtx(t), lead.cfg.NodeID, 100)
			return err
		})
	}
	q.start(follower)
	for i := 0; i < 200 && q.node(follower).Image().NextProducerID != 800; i++ {
		q.tick() // heartbeats make the leader notice the follower and send it the snapshot
	}
	q.waitFor(follower, "producer IDs caught up", func(im *Image) bool { return im.NextProducerID == 800 })
	if got, want := replicatedState(q.node(follower).Image()), replicatedState(q.leader().Image()); got != want {
		t.Fatalf("restarted follower diverges:\n%s\nwant:\n%s", got, want)
	}
}
