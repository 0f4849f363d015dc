package cluster

import (
	"context"
	"errors"
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
	"github.com/twmb/franz-go/pkg/kversion"

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
		SessionTimeout: tc.cfg.session, Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + id}}, Logger: quietLogger()})
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

// rawRequestAt is rawRequest at exactly version (the client otherwise picks the highest both
// sides speak).
func (tc *testCluster) rawRequestAt(ctx context.Context, id int32, req kmsg.Request, version int16) kmsg.Response {
	tc.t.Helper()
	versions := kversion.Tip()
	versions.SetMaxKeyVersion(req.Key(), version)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.kafka[id]), kgo.MaxVersions(versions), kgo.MinVersions(versions))
	if err != nil {
		tc.t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		tc.t.Fatal(err)
	}
	if resp.GetVersion() != version {
		tc.t.Fatalf("sent at version %d, not %d", resp.GetVersion(), version)
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
// moves leadership before the broker is told to stop; a second process with a live broker's
// node ID is refused (DUPLICATE_BROKER_REGISTRATION) and changes nothing.
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

	// A second process with the node ID of a live broker that leads (the session is a minute
	// long): its registration is refused with DUPLICATE_BROKER_REGISTRATION until it gives up
	// (its own session timeout, short here), and the live one keeps its epoch and leadership.
	im = tc.leader().ctrl.Image()
	var other *testNode
	for _, l := range leaderOf(im, "orders") {
		if l != victim.id {
			other = tc.nodes[l]
		}
	}
	oldEpoch := im.Brokers[other.id].Epoch
	dup, err := NewLink(LinkConfig{NodeID: other.id, Voters: tc.kafka, Controller: other.ctrl, HeartbeatInterval: tc.cfg.heartbeat,
		SessionTimeout: 200 * time.Millisecond, Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9100 + other.id}},
		Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := dup.Register(ctx); !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("a second process as broker %d: %v, want DUPLICATE_BROKER_REGISTRATION", other.id, err)
	}
	dup.Close()
	im = tc.leader().ctrl.Image()
	if b := im.Brokers[other.id]; b.Epoch != oldEpoch || b.Fenced || b.Endpoints[0].Port != 9000+other.id || !slices.Contains(leaderOf(im, "orders"), other.id) {
		t.Fatalf("after a duplicate of %d was refused: %+v, leaders %v", other.id, b, leaderOf(im, "orders"))
	}
}

// TestClusterRestartWithinTheSession: a broker that crashed (its Link stops heartbeating) and
// comes back at once as a new incarnation, while the old session is still live, is refused
// with DUPLICATE_BROKER_REGISTRATION at first; its Link tries again, and it registers with a
// new epoch once the old session expired, without an error to the caller.
func TestClusterRestartWithinTheSession(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: 300 * time.Millisecond, heartbeat: 30 * time.Millisecond})
	tc.registerAll(ctx)
	f := tc.follower()
	old := tc.leader().ctrl.Image().Brokers[f.id]
	f.link.Close() // the crash: no more heartbeats, no controlled shutdown
	f.link = tc.newLink(f.id)
	if err := f.link.Register(ctx); err != nil {
		t.Fatalf("the restarted broker %d: %v", f.id, err)
	}
	b := tc.leader().ctrl.Image().Brokers[f.id]
	if b.Epoch != old.Epoch+1 || b.IncarnationID == old.IncarnationID || b.Fenced {
		t.Fatalf("after the restart: %+v, before %+v", b, old)
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

// TestClusterAlterPartition: a follower's Link sends AlterPartition for a partition its broker
// leads; the active controller commits it and the Link answers once its own image has it. A
// proposal based on the partition epoch it replaced is refused with INVALID_UPDATE_VERSION;
// the expansion back (v3, with the members' broker epochs) is accepted. On the wire: a stale
// broker epoch is the response's top-level STALE_BROKER_EPOCH, a v0 request names its topic,
// and a follower's listener answers NOT_CONTROLLER.
func TestClusterAlterPartition(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: time.Minute, heartbeat: 50 * time.Millisecond})
	tc.registerAll(ctx)
	lead := tc.leader()
	if res, err := lead.link.CreateTopics(ctx, []controller.CreateTopic{{Name: "orders", NumPartitions: 3, ReplicationFactor: 3}}, false); err != nil || res[0].Err != nil {
		t.Fatalf("%v %+v", err, res)
	}
	f := tc.follower()
	eventually(t, "the follower's image has the topic", func() bool { return f.ctrl.Image().Topics["orders"] != nil })
	topic := f.ctrl.Image().Topics["orders"]
	var part controller.PartitionInfo
	for _, p := range topic.Partitions {
		if p.Leader == f.id {
			part = p
		}
	}
	if part.Leader != f.id {
		t.Fatalf("follower %d leads none of %+v", f.id, topic.Partitions)
	}
	var dropped int32 = -1
	shrunk := []int32{f.id}
	for _, r := range part.Replicas {
		if r != f.id && dropped == -1 {
			dropped = r
		} else if r != f.id {
			shrunk = append(shrunk, r)
		}
	}

	shrink := controller.AlterPartition{TopicID: topic.ID, Partition: part.Partition, LeaderID: f.id, BrokerEpoch: f.link.Epoch(),
		LeaderEpoch: part.LeaderEpoch, PartitionEpoch: part.PartitionEpoch, NewISR: shrunk}
	res, err := f.link.AlterPartition(ctx, []controller.AlterPartition{shrink})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterPartition through follower %d: %v %+v", f.id, err, res)
	}
	got := res[0].Partition
	if got == nil || got.Leader != f.id || got.LeaderEpoch != part.LeaderEpoch || got.PartitionEpoch != part.PartitionEpoch+1 ||
		!slices.Equal(got.ISR, shrunk) || !slices.Equal(got.Replicas, part.Replicas) {
		t.Fatalf("committed %+v, want ISR %v at partition epoch %d from %+v", got, shrunk, part.PartitionEpoch+1, part)
	}
	if p := f.ctrl.Image().Topics["orders"].Partitions[part.Partition]; p.PartitionEpoch != got.PartitionEpoch || !slices.Equal(p.ISR, shrunk) {
		t.Fatalf("the follower's image lacks the change its Link committed: %+v", p)
	}

	res, err = f.link.AlterPartition(ctx, []controller.AlterPartition{shrink})
	if err != nil || res[0].Err != kerr.InvalidUpdateVersion {
		t.Fatalf("stale partition epoch: %v %+v", err, res)
	}

	expand := shrink
	expand.PartitionEpoch = got.PartitionEpoch
	expand.NewISR = part.Replicas
	for _, id := range part.Replicas {
		expand.NewISREpochs = append(expand.NewISREpochs, tc.nodes[id].link.Epoch())
	}
	res, err = f.link.AlterPartition(ctx, []controller.AlterPartition{expand})
	if err != nil || res[0].Err != nil || res[0].Partition.PartitionEpoch != part.PartitionEpoch+2 || !slices.Equal(res[0].Partition.ISR, part.Replicas) {
		t.Fatalf("expansion: %v %+v", err, res)
	}

	// On the wire.
	lead = tc.leader()
	raw := func(epoch int64, isr []int32) *kmsg.AlterPartitionRequest {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.BrokerID, req.BrokerEpoch = f.id, epoch
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.Topic, rt.TopicID = "orders", topic.ID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = part.Partition, part.LeaderEpoch, part.PartitionEpoch+2, isr
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	if r := tc.rawRequestAt(ctx, lead.id, raw(f.link.Epoch()+5, shrunk), 2).(*kmsg.AlterPartitionResponse); r.ErrorCode != kerr.StaleBrokerEpoch.Code || len(r.Topics) != 0 {
		t.Errorf("stale broker epoch: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	if r := tc.rawRequestAt(ctx, tc.follower().id, raw(f.link.Epoch(), shrunk), 2).(*kmsg.AlterPartitionResponse); r.ErrorCode != kerr.NotController.Code {
		t.Errorf("to a follower: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r := tc.rawRequestAt(ctx, lead.id, raw(f.link.Epoch(), shrunk), 0).(*kmsg.AlterPartitionResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Topic != "orders" || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("v0 by name: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	if rp := r.Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.LeaderID != f.id || rp.PartitionEpoch != part.PartitionEpoch+3 || !slices.Equal(rp.ISR, shrunk) {
		t.Fatalf("v0 by name: %v %+v", kerr.ErrorForCode(rp.ErrorCode), rp)
	}
}
