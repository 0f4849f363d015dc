package cluster

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

// testCluster is three combined nodes over loopback TCP: each a controller with a
// NetTransport (raft listener), a Server on its own controller listener (wire.Listen), and
// a Link.
type testCluster struct {
	t     *testing.T
	nodes map[int32]*testNode
	kafka map[int32]string // controller listener (Kafka protocol) of each node
	cfg   clusterTestConfig
}

type clusterTestConfig struct {
	tick, session, heartbeat time.Duration
}

type testNode struct {
	id   int32
	tr   *controller.NetTransport
	ctrl *controller.Controller
	srv  *wire.Server
	link *Link
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestCluster(t *testing.T, cfg clusterTestConfig) *testCluster {
	ids := []int32{1, 2, 3}
	raftAddrs := map[int32]string{}
	raftLns := map[int32]net.Listener{}
	for _, id := range ids {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		raftLns[id], raftAddrs[id] = l, l.Addr().String()
	}
	tc := &testCluster{t: t, nodes: map[int32]*testNode{}, kafka: map[int32]string{}, cfg: cfg}
	for _, id := range ids {
		tr, err := controller.NewNetTransport(controller.NetTransportConfig{NodeID: id, Peers: raftAddrs, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		go tr.Serve(raftLns[id])
		c, err := controller.Open(controller.Config{NodeID: id, Dir: t.TempDir(), Voters: ids, Transport: tr,
			TickInterval: cfg.tick, SessionTimeout: cfg.session, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(ServerConfig{Controller: c, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := wire.Listen(wire.Config{Addr: "127.0.0.1:0", ListenerName: "CONTROLLER", Versions: ServerVersions, Logger: quietLogger()}, s)
		if err != nil {
			t.Fatal(err)
		}
		tc.kafka[id] = srv.Addr().String()
		tc.nodes[id] = &testNode{id: id, tr: tr, ctrl: c, srv: srv}
	}
	for _, n := range tc.nodes {
		n.srv.Shutdown(context.Background()) // re-listened below with Voters known
	}
	for _, id := range ids {
		n := tc.nodes[id]
		s, _ := NewServer(ServerConfig{Controller: n.ctrl, Voters: tc.kafka, Logger: quietLogger()})
		srv, err := wire.Listen(wire.Config{Addr: tc.kafka[id], ListenerName: "CONTROLLER", Versions: ServerVersions, Logger: quietLogger()}, s)
		if err != nil {
			t.Fatal(err)
		}
		n.srv = srv
		n.link = tc.newLink(id)
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			n.link.Close()
			n.srv.Shutdown(context.Background())
			n.tr.Close()
			n.ctrl.Close()
		}
	})
	return tc
}

func (tc *testCluster) newLink(id int32) *Link {
	n := tc.nodes[id]
	l, err := NewLink(LinkConfig{NodeID: id, Voters: tc.kafka, Controller: n.ctrl, HeartbeatInterval: tc.cfg.heartbeat,
		Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + id}}, Logger: quietLogger()})
	if err != nil {
		tc.t.Fatal(err)
	}
	return l
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// registerAll registers every node's link concurrently.
func (tc *testCluster) registerAll(ctx context.Context) {
	var wg sync.WaitGroup
	errs := make(chan error, len(tc.nodes))
	for _, n := range tc.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- n.link.Register(ctx) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			tc.t.Fatal(err)
		}
	}
}

// leader waits until the nodes agree on the active controller.
func (tc *testCluster) leader() *testNode {
	tc.t.Helper()
	var lead *testNode
	eventually(tc.t, "an agreed controller", func() bool {
		id := tc.nodes[1].ctrl.Image().ControllerID
		for _, n := range tc.nodes {
			if n.ctrl.Image().ControllerID != id {
				return false
			}
		}
		lead = tc.nodes[id]
		return lead != nil
	})
	return lead
}

func (tc *testCluster) follower() *testNode {
	lead := tc.leader()
	for _, id := range []int32{1, 2, 3} {
		if id != lead.id {
			return tc.nodes[id]
		}
	}
	return nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-poll.C
	}
}

// rawRequest sends one request to a node's controller listener with franz-go.
func (tc *testCluster) rawRequest(ctx context.Context, id int32, req kmsg.Request) kmsg.Response {
	tc.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.kafka[id]))
	if err != nil {
		tc.t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		tc.t.Fatal(err)
	}
	return resp
}

func leaderOf(im *controller.Image, topic string) []int32 {
	var out []int32
	for _, p := range im.Topics[topic].Partitions {
		out = append(out, p.Leader)
	}
	return out
}

// TestCluster: three nodes register through the active controller and are unfenced; a
// follower's Link forwards CreateTopics and AllocateProducerIds; the controller listener
// refuses a stale epoch, an unknown broker, another cluster and garbage; controlled shutdown
// moves leadership before the broker is told to stop; a new incarnation fences the old one in
// the same entry that registers it.
func TestCluster(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: time.Minute, heartbeat: 50 * time.Millisecond})
	tc.registerAll(ctx)
	lead := tc.leader()
	im := lead.ctrl.Image()
	for id := int32(1); id <= 3; id++ {
		if b := im.Brokers[id]; b == nil || b.Fenced || b.Epoch != 1 {
			t.Fatalf("broker %d after Register: %+v", id, b)
		}
	}

	// Forwarded through a follower.
	f := tc.follower()
	res, err := f.link.CreateTopics(ctx, []controller.CreateTopic{{Name: "orders", NumPartitions: 3, ReplicationFactor: 3}}, false)
	if err != nil || res[0].Err != nil || res[0].Topic == nil || len(res[0].Topic.Partitions) != 3 {
		t.Fatalf("CreateTopics through follower %d: %v %+v", f.id, err, res)
	}
	if f.ctrl.Image().Topics["orders"] == nil {
		t.Fatal("the follower's image lacks the topic its Link created")
	}
	res, err = f.link.CreateTopics(ctx, []controller.CreateTopic{{Name: "orders", NumPartitions: 3, ReplicationFactor: 3}}, false)
	if err != nil || res[0].Err != kerr.TopicAlreadyExists {
		t.Fatalf("second create: %v %+v", err, res)
	}
	first, err := f.link.AllocateProducerIDs(ctx, f.id, 1000)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.link.AllocateProducerIDs(ctx, f.id, 1000)
	if err != nil || second != first+1000 {
		t.Fatalf("producer IDs %d then %d, %v", first, second, err)
	}

	// Refusals on the controller listener.
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = 1, 99
	if r := tc.rawRequest(ctx, lead.id, hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale epoch heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	hb.BrokerID = 42
	if r := tc.rawRequest(ctx, lead.id, hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("unknown broker heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 7, "notThisClusterAtAll000"
	if r := tc.rawRequest(ctx, lead.id, reg).(*kmsg.BrokerRegistrationResponse); r.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Errorf("registration for another cluster: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := tc.rawRequest(ctx, f.id, hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != kerr.NotController.Code {
		t.Errorf("heartbeat to a follower: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = metadataTopic
	dt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	dq.Topics = append(dq.Topics, dt)
	if r := tc.rawRequest(ctx, lead.id, dq).(*kmsg.DescribeQuorumResponse); r.Topics[0].Partitions[0].LeaderID != lead.id || len(r.Topics[0].Partitions[0].CurrentVoters) != 3 {
		t.Errorf("DescribeQuorum: %+v", r.Topics[0].Partitions[0])
	}
	conn, err := net.Dial("tcp", tc.kafka[lead.id])
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("\x00\x00\x00\x10garbage-garbage!"))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := conn.Read(make([]byte, 64)); err == nil {
		t.Errorf("garbage on the controller port got %d bytes of answer", n)
	}
	conn.Close()
	if _, err := f.link.AllocateProducerIDs(ctx, f.id, 1000); err != nil {
		t.Fatalf("the quorum after garbage: %v", err)
	}

	// Controlled shutdown of the broker leading partition 0 (each leads one: RF 3 over 3).
	im = lead.ctrl.Image()
	victim := tc.nodes[im.Topics["orders"].Partitions[0].Leader]
	if err := victim.link.ControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	im = victim.ctrl.Image() // ShouldShutDown came after the moves were applied here
	if slices.Contains(leaderOf(im, "orders"), victim.id) || !im.Brokers[victim.id].Fenced {
		t.Fatalf("after controlled shutdown of %d: leaders %v, %+v", victim.id, leaderOf(im, "orders"), im.Brokers[victim.id])
	}
	victim.link.Close()
	victim.link = tc.newLink(victim.id)
	if err := victim.link.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if b := tc.leader().ctrl.Image().Brokers[victim.id]; b.Epoch != 2 || b.Fenced {
		t.Fatalf("restarted broker: %+v", b)
	}

	// A new incarnation of a broker that leads: the old one is fenced in the registration's
	// entry (the session is a minute long), so leadership moves without waiting.
	im = tc.leader().ctrl.Image()
	var other *testNode
	for _, l := range leaderOf(im, "orders") {
		if l != victim.id {
			other = tc.nodes[l]
		}
	}
	oldEpoch := im.Brokers[other.id].Epoch
	other.link.Close() // the old process is gone (it would re-register otherwise)
	other.link = tc.newLink(other.id)
	if err := other.link.Register(ctx); err != nil {
		t.Fatal(err)
	}
	im = tc.leader().ctrl.Image()
	if im.Brokers[other.id].Epoch != oldEpoch+1 || slices.Contains(leaderOf(im, "orders"), other.id) {
		t.Fatalf("after %d re-registered: %+v, leaders %v", other.id, im.Brokers[other.id], leaderOf(im, "orders"))
	}
}

// TestClusterSessionExpiry: a broker whose Link stops heartbeating is fenced after
// broker.session.timeout.ms and its partitions get leaders from their ISRs.
func TestClusterSessionExpiry(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: 300 * time.Millisecond, heartbeat: 30 * time.Millisecond})
	tc.registerAll(ctx)
	lead := tc.leader()
	f := tc.follower()
	if res, err := lead.link.CreateTopics(ctx, []controller.CreateTopic{{Name: "t", NumPartitions: 3, ReplicationFactor: 3}}, false); err != nil || res[0].Err != nil {
		t.Fatalf("%v %+v", err, res)
	}
	f.link.Close()
	eventually(t, "the silent broker fenced and its partitions moved", func() bool {
		im := tc.leader().ctrl.Image()
		b := im.Brokers[f.id]
		return b.Fenced && !slices.Contains(leaderOf(im, "t"), f.id) && !slices.Contains(leaderOf(im, "t"), -1)
	})
	for _, p := range tc.leader().ctrl.Image().Topics["t"].Partitions {
		if slices.Contains(p.ISR, f.id) {
			t.Fatalf("fenced broker still in the ISR: %+v", p)
		}
	}
}
