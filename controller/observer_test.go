package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// startObserver starts node id as an observer of q (process.roles=broker): not a voter, it
// registers as a broker through the leader, and only then dials the voters.
func (q *netQuorum) startObserver(ctx context.Context, id int32, dir string) *netNode {
	q.t.Helper()
	tr, err := NewNetTransport(NetTransportConfig{NodeID: id, Peers: q.addrs, Observer: true, Logger: testLogger()})
	if err != nil {
		q.t.Fatal(err)
	}
	cfg := testConfig(dir)
	cfg.NodeID = id
	cfg.Voters = q.ids
	cfg.SnapshotEvery = q.snapshotEvery
	cfg.Transport = tr
	cfg.ticks = nil
	cfg.TickInterval = q.tick
	c, err := open(cfg)
	if err != nil {
		tr.Close()
		q.t.Fatal(err)
	}
	n := &netNode{id: id, tr: tr, c: c}
	q.t.Cleanup(func() { tr.Close(); c.Close() })
	q.propose(func(lead *Controller) error {
		_, err := lead.RegisterBroker(ctx, BrokerRegistration{BrokerID: id, ClusterID: lead.Image().ClusterID, IncarnationID: [16]byte{byte(id)}})
		return err
	})
	tr.Connect()
	return n
}

// TestNetObserver: a node that is not a voter follows the metadata log as a raft learner,
// added by the active controller when it registers. It catches up from a compacted log (by
// snapshot), follows new entries, never leads, survives a leader change, and the leader's
// DescribeQuorum lists it as an observer at the log end.
func TestNetObserver(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 3, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	for _, name := range []string{"a", "b", "c", "d"} {
		q.propose(createTopic(ctx, name)) // past SnapshotEvery: the leader has compacted
	}
	obs := q.startObserver(ctx, 7, t.TempDir())
	waitConverged(t, append(q.running(), obs), "d")
	eventually(t, "the observer to see its own registration", func() bool { return obs.c.Image().Brokers[7] != nil })

	q.propose(createTopic(ctx, "after"))
	waitConverged(t, append(q.running(), obs), "after")

	var d QuorumDescription
	eventually(t, "the leader to describe the observer at its log end", func() bool {
		var err error
		if d, err = q.leader().c.DescribeQuorum(ctx); err != nil {
			t.Fatal(err)
		}
		return len(d.Observers) == 1 && d.Observers[0].NodeID == 7 && d.Observers[0].MatchIndex == int64(d.HighWatermark)
	})
	if len(d.Voters) != 3 {
		t.Fatalf("voters %+v, want 1, 2 and 3", d.Voters)
	}
	if od, err := obs.c.DescribeQuorum(ctx); err != nil || od.IsLeader {
		t.Fatalf("observer's own view: %+v, %v", od, err)
	}
	// Proposals on the observer are refused: it never leads.
	if _, err := obs.c.AllocateProducerIDs(ctx, 7, 10); !errors.Is(err, kerr.NotController) {
		t.Fatalf("AllocateProducerIDs on the observer: %v, want NOT_CONTROLLER", err)
	}

	// The leader dies: the two remaining voters elect another, and the observer follows it.
	old := q.leader()
	q.stop(old.id)
	q.propose(createTopic(ctx, "later"))
	waitConverged(t, append(q.running(), obs), "later")
	eventually(t, "the observer to know the new leader", func() bool {
		return obs.c.Image().ControllerID == q.leader().id
	})
}

// TestNetRefusesUnregisteredObserver: a node that is neither a voter nor a registered broker
// is refused at the handshake (unknown node), counted and logged, and a registered broker is
// accepted.
func TestNetRefusesUnregisteredObserver(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 1024, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	lead := q.leader()
	clusterID := lead.c.Image().ClusterID
	before := lead.tr.Stats().Refused
	conn := rawConn(t, q.addrs[lead.id])
	if _, err := conn.Write(appendHello(nil, hello{from: 42, to: lead.id, clusterID: clusterID})); err != nil {
		t.Fatal(err)
	}
	if got := expectClosed(t, conn, "unregistered observer"); len(got) < ackLen || got[ackLen-1] != helloUnknownNode {
		t.Fatalf("answer %q, want status %d", got, helloUnknownNode)
	}
	if lead.tr.Stats().Refused <= before {
		t.Fatal("refusal not counted")
	}
	obs := q.startObserver(ctx, 42, t.TempDir())
	q.propose(createTopic(ctx, "seen"))
	waitConverged(t, append(q.running(), obs), "seen")
}

// TestObserversJoinThroughRegistration, on the in-memory network with an injected clock: two
// brokers that are not voters register at once; etcd-raft takes one configuration change at
// a time, so the second learner change is proposed again on a later heartbeat. Both
// end as learners (never voters), follow the log, keep following after the leader is
// stopped, and never lead.
func TestObserversJoinThroughRegistration(t *testing.T) {
	q := newMembershipQuorum(t)
	lead := q.leader()
	q.waitFor(lead.cfg.NodeID, "a cluster ID", func(im *Image) bool { return im.ClusterID != "" })
	// Both learner changes proposed in one driver step, as two registrations arriving
	// together would: raft keeps the first and turns the second into an empty entry.
	q.call(func(c *Controller) error {
		return c.submit(testCtx(t), &request{plan: func(*Image) []Record {
			c.ensureLearner(4)
			c.ensureLearner(5)
			return nil
		}})
	})
	epochs := map[int32]int64{4: q.register(4, 1), 5: q.register(5, 1)}
	for _, id := range []int32{4, 5} {
		cfg := q.cfgs[1]
		cfg.NodeID = id
		cfg.Dir = t.TempDir()
		q.cfgs[id] = cfg
		q.start(id)
	}
	t.Cleanup(func() { q.stop(4); q.stop(5) })
	learners := func() []int32 {
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
				if o.MatchIndex == int64(d.HighWatermark) {
					ids = append(ids, o.NodeID)
				}
			}
			if len(d.Voters) != 3 {
				t.Fatalf("voters %+v, want 1, 2, 3", d.Voters)
			}
			return nil
		})
		return ids
	}
	for i := 0; ; i++ {
		if got := learners(); len(got) == 2 && got[0] == 4 && got[1] == 5 {
			break
		}
		if i == 200 {
			t.Fatalf("after %d ticks observers at the log end: %v, want [4 5]", i, learners())
		}
		q.tick()
		for id, epoch := range epochs {
			q.heartbeat(BrokerHeartbeat{BrokerID: id, BrokerEpoch: epoch})
		}
	}
	q.call(func(c *Controller) error {
		_, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "seen", NumPartitions: 1, ReplicationFactor: 1}}, false)
		return err
	})
	for _, id := range []int32{4, 5} {
		q.waitFor(id, "the topic on observer "+fmt.Sprint(id), func(im *Image) bool { return im.Topics["seen"] != nil })
	}

	// Stop the leader: the two remaining voters elect one of themselves.
	old := q.leader().cfg.NodeID
	q.stop(old)
	var next int32
	for i := 0; ; i++ {
		// Until the election, the others agree on the stopped leader (leader returns nil).
		if l := q.leader(); l != nil {
			next = l.cfg.NodeID
			break
		}
		if i == 1000 {
			t.Fatal("no new leader after 1000 ticks")
		}
		q.tick()
	}
	if next == 4 || next == 5 || next == old {
		t.Fatalf("new leader %d", next)
	}
	q.call(func(c *Controller) error {
		_, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "later", NumPartitions: 1, ReplicationFactor: 1}}, false)
		return err
	})
	for _, id := range []int32{4, 5} {
		q.waitFor(id, "the later topic on observer "+fmt.Sprint(id), func(im *Image) bool {
			return im.Topics["later"] != nil && im.ControllerID == next
		})
	}
}

// TestNetObserverReconnectKeepsConnection: an observer that dials again (after a restart, or
// with its old connection half-open) replaces its connection; the teardown of the old one
// must not mark the new one disconnected, or the voter would drop everything for the
// observer until it reconnected once more.
func TestNetObserverReconnectKeepsConnection(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 1024, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	lead := q.leader()
	clusterID := lead.c.Image().ClusterID
	if _, err := lead.c.RegisterBroker(ctx, BrokerRegistration{BrokerID: 9, ClusterID: clusterID, IncarnationID: [16]byte{9}}); err != nil {
		t.Fatal(err)
	}
	dial := func() net.Conn {
		conn := rawConn(t, q.addrs[lead.id])
		if _, err := conn.Write(appendHello(nil, hello{from: 9, to: lead.id, clusterID: clusterID})); err != nil {
			t.Fatal(err)
		}
		status, err := readAck(conn)
		if err != nil || status != helloOK {
			t.Fatalf("hello as observer 9: status %d, %v", status, err)
		}
		return conn
	}
	first := dial()
	eventually(t, "observer 9 connected", func() bool { return lead.tr.Stats().Connected[9] })
	dial()
	// The voter closes the first connection and finishes with it.
	expectClosed(t, first, "the replaced connection")
	eventually(t, "the replaced connection torn down", func() bool {
		lead.tr.mu.Lock()
		defer lead.tr.mu.Unlock()
		return len(lead.tr.mu.conns) == 1+len(q.ids)-1 // the second observer connection and the other voters'
	})
	if !lead.tr.Stats().Connected[9] {
		t.Fatal("after the reconnect the voter holds observer 9 disconnected")
	}
}
