package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// netQuorum runs controllers that talk over real TCP on 127.0.0.1, each with its own
// NetTransport and its own ticker.
type netQuorum struct {
	t             testing.TB
	ids           []int32
	tick          time.Duration
	snapshotEvery int
	addrs         map[int32]string // raft listener of each voter; a restarted voter reuses it
	dirs          map[int32]string
	// configure, when set, adjusts each voter's transport config (authentication).
	configure func(*NetTransportConfig)

	mu    sync.Mutex
	nodes map[int32]*netNode // running nodes
}

type netNode struct {
	id int32
	tr *NetTransport
	c  *Controller
}

func newNetQuorum(t testing.TB, tick time.Duration, snapshotEvery int, ids ...int32) *netQuorum {
	return newNetQuorumWith(t, nil, tick, snapshotEvery, ids...)
}

func newNetQuorumWith(t testing.TB, configure func(*NetTransportConfig), tick time.Duration, snapshotEvery int, ids ...int32) *netQuorum {
	q := &netQuorum{t: t, ids: ids, tick: tick, snapshotEvery: snapshotEvery, configure: configure,
		addrs: map[int32]string{}, dirs: map[int32]string{}, nodes: map[int32]*netNode{}}
	listeners := map[int32]net.Listener{}
	for _, id := range ids {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[id] = l
		q.addrs[id] = l.Addr().String()
		q.dirs[id] = t.TempDir()
	}
	t.Cleanup(func() {
		for _, id := range ids {
			q.stop(id)
		}
	})
	for _, id := range ids {
		q.startOn(id, listeners[id])
	}
	return q
}

func (q *netQuorum) start(id int32) *netNode {
	l, err := net.Listen("tcp", q.addrs[id])
	if err != nil {
		q.t.Fatal(err)
	}
	return q.startOn(id, l)
}

func (q *netQuorum) startOn(id int32, l net.Listener) *netNode {
	tcfg := NetTransportConfig{NodeID: id, Peers: q.addrs, Logger: testLogger()}
	if q.configure != nil {
		q.configure(&tcfg)
	}
	tr, err := NewNetTransport(tcfg)
	if err != nil {
		q.t.Fatal(err)
	}
	go tr.Serve(l)
	cfg := testConfig(q.dirs[id])
	cfg.NodeID = id
	cfg.Voters = q.ids
	cfg.VoterAddrs = q.addrs
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
	q.mu.Lock()
	q.nodes[id] = n
	q.mu.Unlock()
	return n
}

// stop kills a voter: its listener and connections first, then its controller.
func (q *netQuorum) stop(id int32) {
	q.mu.Lock()
	n := q.nodes[id]
	delete(q.nodes, id)
	q.mu.Unlock()
	if n == nil {
		return
	}
	n.tr.Close()
	if err := n.c.Close(); err != nil {
		q.t.Errorf("close %d: %v", id, err)
	}
}

func (q *netQuorum) node(id int32) *netNode {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nodes[id]
}

func (q *netQuorum) running() []*netNode {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*netNode
	for _, n := range q.nodes {
		out = append(out, n)
	}
	return out
}

// eventually waits, polling, until cond holds, failing the test after a deadline.
func eventually(t testing.TB, what string, cond func() bool) {
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

// leaderAmong waits until every given node agrees on one leader that is among them.
func (q *netQuorum) leaderAmong(nodes []*netNode) *netNode {
	q.t.Helper()
	var lead *netNode
	eventually(q.t, "one agreed leader", func() bool {
		lead = nil
		id := nodes[0].c.Image().ControllerID
		for _, n := range nodes {
			if n.c.Image().ControllerID != id {
				return false
			}
			if n.id == id {
				lead = n
			}
		}
		return lead != nil
	})
	return lead
}

func (q *netQuorum) leader() *netNode { q.t.Helper(); return q.leaderAmong(q.running()) }

// propose retries fn on the leader of nodes until it is not refused with NOT_CONTROLLER.
func (q *netQuorum) proposeAmong(nodes []*netNode, fn func(c *Controller) error) {
	q.t.Helper()
	var last error
	eventually(q.t, "a proposal accepted", func() bool {
		last = fn(q.leaderAmong(nodes).c)
		if last != nil && !errors.Is(last, kerr.NotController) {
			q.t.Fatal(last)
		}
		return last == nil
	})
}

func (q *netQuorum) propose(fn func(c *Controller) error) {
	q.t.Helper()
	q.proposeAmong(q.running(), fn)
}

// registerLeader registers the leader as a broker (and mints the cluster ID); unlike
// Controller.register it fails with NOT_CONTROLLER on a node that does not lead.
func registerLeader(ctx context.Context, c *Controller) error {
	return c.submit(ctx, &request{plan: func(w *Image) []Record {
		var recs []Record
		if w.ClusterID == "" {
			recs = append(recs, &ClusterIDRecord{ClusterID: newClusterID()})
		}
		if w.Brokers[c.cfg.NodeID] != nil {
			return recs
		}
		return append(recs, &RegisterBrokerRecord{BrokerID: c.cfg.NodeID, BrokerEpoch: 1, Endpoints: c.cfg.Endpoints})
	}})
}

func createTopic(ctx context.Context, name string) func(c *Controller) error {
	return func(c *Controller) error {
		res, err := c.CreateTopics(ctx, []CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false)
		if err != nil {
			return err
		}
		if res[0].Err == kerr.NotController {
			return kerr.NotController
		}
		if res[0].Err != nil && res[0].Err != kerr.TopicAlreadyExists { // a retried proposal may have committed
			return fmt.Errorf("%v: %s", res[0].Err, res[0].Message)
		}
		return nil
	}
}

// allocateProducerIDs allocates 100 producer IDs for some registered broker.
func allocateProducerIDs(ctx context.Context) func(c *Controller) error {
	return func(c *Controller) error {
		for id := range c.Image().Brokers {
			_, err := c.AllocateProducerIDs(ctx, id, 100)
			return err
		}
		return errors.New("no broker registered")
	}
}

// waitConverged waits until every given node has the topic and the same replicated state.
func waitConverged(t testing.TB, nodes []*netNode, topic string) {
	t.Helper()
	var states []string
	eventually(t, "images converged with topic "+topic, func() bool {
		states = states[:0]
		for _, n := range nodes {
			im := n.c.Image()
			if im.Topics[topic] == nil {
				return false
			}
			states = append(states, replicatedState(im))
		}
		for _, s := range states[1:] {
			if s != states[0] {
				return false
			}
		}
		return true
	})
}

func others(nodes []*netNode, not *netNode) []*netNode {
	return slices.DeleteFunc(slices.Clone(nodes), func(n *netNode) bool { return n == not })
}

// TestNetQuorum: three voters over TCP elect a leader and replicate; a stopped follower does
// not stall the other two; restarted after the leader compacted its log, it catches up by
// snapshot. DescribeQuorum reports the leader's view.
func TestNetQuorum(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 3, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	q.propose(createTopic(ctx, "first"))
	waitConverged(t, q.running(), "first")

	lead := q.leader()
	eventually(t, "every voter's match index at the high watermark", func() bool {
		d, err := lead.c.DescribeQuorum(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.LeaderID != lead.id || !d.IsLeader || d.LeaderEpoch == 0 || len(d.Voters) != 3 {
			t.Fatalf("leader's DescribeQuorum: %+v", d)
		}
		for i, v := range d.Voters {
			if v.NodeID != int32(i+1) || v.LastContact.IsZero() {
				return false
			}
			if v.MatchIndex != int64(d.HighWatermark) {
				return false
			}
		}
		return true
	})
	var follower *netNode
	for _, n := range q.running() {
		if n != lead {
			follower = n
		}
	}
	d, err := follower.c.DescribeQuorum(ctx)
	if err != nil || d.LeaderID != lead.id || d.IsLeader || len(d.Voters) != 3 || d.Voters[0].MatchIndex != -1 {
		t.Fatalf("follower's DescribeQuorum: %+v %v", d, err)
	}
	res, err := follower.c.CreateTopics(ctx, []CreateTopic{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if err != nil || res[0].Err != kerr.NotController {
		t.Fatalf("follower CreateTopics: %v %+v", err, res)
	}

	// Stop the follower; the other two keep committing, enough for the leader to compact.
	stoppedAt := follower.c.Image().Offset
	q.stop(follower.id)
	for i := 0; i < 8; i++ {
		q.propose(allocateProducerIDs(ctx))
	}
	q.propose(createTopic(ctx, "while-down"))
	lead = q.leader()
	if first, _ := lead.c.storage.mem.FirstIndex(); first <= uint64(stoppedAt)+1 {
		t.Fatalf("leader did not compact past the stopped follower: first index %d, follower at %d", first, stoppedAt)
	}
	restarted := q.start(follower.id)
	waitConverged(t, q.running(), "while-down")
	if got := restarted.c.Image().NextProducerID; got != 800 {
		t.Fatalf("restarted follower has next producer ID %d, want 800", got)
	}
	if d := restarted.tr.Stats(); d.Refused != 0 {
		t.Fatalf("restarted follower refused connections: %+v", d)
	}
}

// TestNetLeaderFailover: killing the leader, the other two elect a new one that commits; the
// old leader, restarted, follows and catches up.
func TestNetLeaderFailover(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 1024, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	q.propose(createTopic(ctx, "before"))
	old := q.leader()
	q.stop(old.id)
	q.propose(createTopic(ctx, "after"))
	lead := q.leader()
	if lead.id == old.id {
		t.Fatal("killed leader still leads")
	}
	q.start(old.id)
	waitConverged(t, q.running(), "after")
	if got := q.leader(); got.id == old.id {
		// PreVote keeps a restarted voter from disrupting a healthy leader.
		t.Logf("restarted voter %d took leadership back", old.id)
	}
}

// TestNetPartition cuts the leader off from the other two: they elect a leader and keep
// committing; the cut-off node steps down and refuses proposals with NOT_CONTROLLER; once
// healed all converge and its uncommitted proposal is gone.
func TestNetPartition(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 1024, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	q.propose(createTopic(ctx, "before"))
	minority := q.leader()
	majority := others(q.running(), minority)
	var ids []int32
	for _, n := range majority {
		ids = append(ids, n.id)
		n.tr.setPartitioned(minority.id)
	}
	minority.tr.setPartitioned(ids...)

	q.proposeAmong(majority, createTopic(ctx, "majority"))
	if lead := q.leaderAmong(majority); lead == minority {
		t.Fatal("partitioned node leads the majority")
	}
	// The minority either refuses at once or, while it still believes it leads, accepts the
	// proposal into its log and fails it when CheckQuorum makes it step down.
	res, err := minority.c.CreateTopics(ctx, []CreateTopic{{Name: "minority", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if err != nil || res[0].Err != kerr.NotController {
		t.Fatalf("partitioned node CreateTopics: %v %+v", err, res)
	}
	eventually(t, "the partitioned node to know it does not lead", func() bool {
		return minority.c.Image().ControllerID != minority.id
	})
	res, err = minority.c.CreateTopics(ctx, []CreateTopic{{Name: "minority", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if err != nil || res[0].Err != kerr.NotController {
		t.Fatalf("partitioned follower CreateTopics: %v %+v", err, res)
	}
	if minority.c.Image().Topics["majority"] != nil {
		t.Fatal("partitioned node saw the majority's topic")
	}
	if s := minority.tr.Stats(); s.Dropped[ids[0]] == 0 && s.Dropped[ids[1]] == 0 {
		t.Fatalf("partition dropped nothing: %+v", s)
	}

	for _, n := range q.running() {
		n.tr.setPartitioned()
	}
	q.propose(createTopic(ctx, "healed"))
	waitConverged(t, q.running(), "healed")
	for _, n := range q.running() {
		if n.c.Image().Topics["majority"] == nil || n.c.Image().Topics["minority"] != nil {
			t.Fatalf("node %d after healing:\n%s", n.id, formatImage(n.c.Image()))
		}
	}
}

// rawConn dials a voter's raft port as an intruder would.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	return conn
}

// expectClosed reads until the server closes the connection and returns what it sent.
func expectClosed(t *testing.T, conn net.Conn, what string) []byte {
	t.Helper()
	got, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: connection not closed by the voter", what)
		}
	}
	return got
}

// TestNetRefusesBadPeers: garbage, an unknown node ID, a wrong cluster ID, a wrong target, a
// bad version, a bad frame after a valid handshake and a spoofed sender are all refused and
// their connections closed, while the quorum keeps committing.
func TestNetRefusesBadPeers(t *testing.T) {
	ctx := testCtx(t)
	q := newNetQuorum(t, 10*time.Millisecond, 1024, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	q.propose(createTopic(ctx, "before"))
	lead := q.leader()
	clusterID := lead.c.Image().ClusterID
	target := others(q.running(), lead)[0]
	eventually(t, "cluster ID known to "+fmt.Sprint(target.id), func() bool { return target.c.Image().ClusterID == clusterID })
	addr := q.addrs[target.id]

	goodFrame, err := encodeMessageFrame(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(raftID(lead.id)), To: proto.Uint64(raftID(target.id)), Term: proto.Uint64(1)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		send       []byte
		wantStatus int // ack status expected, -1 for none
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), -1},
		{"kafka request", []byte{0, 0, 0, 20, 0, 18, 0, 3, 0, 0, 0, 1, 0, 4, 'k', 'c', 'a', 't', 0, 0, 0, 0}, -1},
		{"bad version", []byte("SLCR\x09"), helloBadVersion},
		{"unknown node", appendHello(nil, hello{from: 99, to: target.id, clusterID: clusterID}), helloUnknownNode},
		{"self as sender", appendHello(nil, hello{from: target.id, to: target.id, clusterID: clusterID}), helloUnknownNode},
		{"wrong cluster", appendHello(nil, hello{from: lead.id, to: target.id, clusterID: "another-cluster"}), helloWrongCluster},
		{"wrong target", appendHello(nil, hello{from: lead.id, to: 7, clusterID: clusterID}), helloWrongTarget},
		{"oversized frame", append(appendHello(nil, hello{from: lead.id, to: target.id, clusterID: clusterID}), 0x7f, 0xff, 0xff, 0xff, frameMessage), helloOK},
		{"undecodable frame", append(appendHello(nil, hello{from: lead.id, to: target.id}), 0, 0, 0, 4, frameMessage, 0xff, 0xff, 0xff), helloOK},
		{"chunk without snapshot", append(appendHello(nil, hello{from: lead.id, to: target.id}), 0, 0, 0, 2, frameSnapshotChunk, 1), helloOK},
		{"spoofed sender", append(appendHello(nil, hello{from: q.others(lead, target).id, to: target.id}), goodFrame...), helloOK},
	}
	for _, tc := range cases {
		before := target.tr.Stats().Refused
		conn := rawConn(t, addr)
		if _, err := conn.Write(tc.send); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := expectClosed(t, conn, tc.name)
		if tc.wantStatus >= 0 {
			if len(got) < ackLen || got[ackLen-1] != byte(tc.wantStatus) {
				t.Fatalf("%s: answer %q, want status %d", tc.name, got, tc.wantStatus)
			}
		} else if len(got) != 0 {
			t.Fatalf("%s: answered %q", tc.name, got)
		}
		eventually(t, tc.name+" counted as refused", func() bool { return target.tr.Stats().Refused > before })
	}
	// A silent connection holds no more than the handshake timeout; meanwhile the quorum
	// is unaffected.
	rawConn(t, addr)
	q.propose(createTopic(ctx, "after"))
	waitConverged(t, q.running(), "after")
}

// others returns the running node that is neither a nor b.
func (q *netQuorum) others(a, b *netNode) *netNode {
	for _, n := range q.running() {
		if n != a && n != b {
			return n
		}
	}
	q.t.Fatal("no third node")
	return nil
}

// TestNetSendNeverBlocks: a peer that accepted the connection but stopped reading fills its
// queue; Send keeps returning, the excess is dropped and counted, and another peer receives
// everything sent to it.
func TestNetSendNeverBlocks(t *testing.T) {
	stuck := fakeVoter(t, 2, 1, false)
	healthy := fakeVoter(t, 3, 1, true)
	tr, err := NewNetTransport(NetTransportConfig{NodeID: 1, Peers: map[int32]string{2: stuck.addr, 3: healthy.addr},
		Logger: testLogger(), QueueMessages: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	entry := &pb.Entry{Index: proto.Uint64(1), Term: proto.Uint64(1), Data: make([]byte, 256<<10)}
	const rounds = 200
	for i := 1; i <= rounds; i++ {
		tr.Send([]*pb.Message{
			{Type: pb.MessageType_MsgApp.Enum(), From: proto.Uint64(2), To: proto.Uint64(3), Index: proto.Uint64(uint64(i)), Entries: []*pb.Entry{entry}},
			{Type: pb.MessageType_MsgApp.Enum(), From: proto.Uint64(2), To: proto.Uint64(4), Index: proto.Uint64(uint64(i)), Entries: []*pb.Entry{entry}},
		})
		eventually(t, fmt.Sprintf("healthy peer received message %d", i), func() bool { return healthy.received() == i })
	}
	s := tr.Stats()
	if s.Dropped[2] == 0 || s.Dropped[3] != 0 {
		t.Fatalf("drops: %+v", s.Dropped)
	}
}

// TestNetSnapshotReports: raft hears about every MsgSnap it handed to the transport — sent
// (finished), or dropped because one is already queued or because the peer is unreachable
// (failed) — or it would never send that follower anything again.
func TestNetSnapshotReports(t *testing.T) {
	// A controller whose driver is not running keeps the reports for the test to read.
	c := &Controller{}
	c.calls.signal = make(chan struct{}, 1)
	reported := func(id int32) raft.SnapshotStatus {
		c.calls.mu.Lock()
		defer c.calls.mu.Unlock()
		if p := c.calls.mu.reports[raftID(id)]; p != nil {
			return p.snapshot
		}
		return 0
	}
	snap := func(to int32) *pb.Message {
		return &pb.Message{Type: pb.MsgSnap.Enum(), From: proto.Uint64(raftID(1)), To: proto.Uint64(raftID(to)),
			Snapshot: &pb.Snapshot{Data: make([]byte, 3*snapshotChunkLen/2), Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(5)}}}
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there: every dial fails
	healthy := fakeVoter(t, 3, 1, true)
	tr, err := NewNetTransport(NetTransportConfig{NodeID: 1, ClusterID: "c", Logger: testLogger(),
		Peers: map[int32]string{2: deadAddr, 3: healthy.addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.Attach(c)

	tr.Send([]*pb.Message{snap(3)})
	eventually(t, "snapshot to the healthy peer reported finished", func() bool { return reported(3) == raft.SnapshotFinish })
	eventually(t, "the healthy peer to receive the snapshot", func() bool { return healthy.received() == 1 })
	tr.Send([]*pb.Message{snap(2)})
	eventually(t, "snapshot to the unreachable peer reported failed", func() bool { return reported(2) == raft.SnapshotFailure })
	c.calls.mu.Lock()
	unreachable := c.calls.mu.reports[raftID(2)].unreachable
	c.calls.mu.Unlock()
	if !unreachable {
		t.Fatal("unreachable peer not reported")
	}
}

// fakeVoterServer accepts raft connections as voter id, acks the handshake and then either
// decodes and counts messages (read) or never reads again.
type fakeVoterServer struct {
	addr string
	mu   sync.Mutex
	n    int
}

func (f *fakeVoterServer) received() int { f.mu.Lock(); defer f.mu.Unlock(); return f.n }

func fakeVoter(t *testing.T, id, peer int32, read bool) *fakeVoterServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeVoterServer{addr: l.Addr().String()}
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := bufio.NewReader(conn)
				if _, err := readHello(br); err != nil {
					return
				}
				conn.Write(appendAck(nil, helloOK))
				if !read {
					<-done // never read again
					return
				}
				fr := &frameReader{r: br, from: raftID(peer), to: raftID(id)}
				for {
					if _, err := fr.next(); err != nil {
						return
					}
					f.mu.Lock()
					f.n++
					f.mu.Unlock()
				}
			}()
		}
	}()
	return f
}

// TestFrameRoundTrip: what the sender encodes the receiver decodes, a snapshot larger than a
// chunk included.
func TestFrameRoundTrip(t *testing.T) {
	data := make([]byte, 2*snapshotChunkLen+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	msgs := []*pb.Message{
		{Type: pb.MessageType_MsgApp.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(3), Index: proto.Uint64(10), LogTerm: proto.Uint64(2), Commit: proto.Uint64(9),
			Entries: []*pb.Entry{{Index: proto.Uint64(11), Term: proto.Uint64(3), Data: []byte("x")}}},
		{Type: pb.MessageType_MsgSnap.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(3), Snapshot: &pb.Snapshot{Data: data,
			Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(100), Term: proto.Uint64(3), ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}}}},
		{Type: pb.MessageType_MsgSnap.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(3), Snapshot: &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(7)}}},
		{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Term: proto.Uint64(3)},
	}
	var stream []byte
	stream = appendHello(stream, hello{from: 1, to: 2, clusterID: "abc"})
	for _, m := range msgs {
		if m.GetType() != pb.MessageType_MsgSnap {
			f, err := encodeMessageFrame(m)
			if err != nil {
				t.Fatal(err)
			}
			stream = append(stream, f...)
			continue
		}
		f, d, err := encodeSnapshotHeader(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.GetSnapshot().GetData()) != len(d) {
			t.Fatal("encodeSnapshotHeader changed the message")
		}
		stream = append(stream, f...)
		for len(d) > 0 {
			n := min(len(d), snapshotChunkLen)
			h := chunkHeader(n)
			stream = append(append(stream, h[:]...), d[:n]...)
			d = d[n:]
		}
	}
	r := bytes.NewReader(stream)
	h, err := readHello(r)
	if err != nil || h != (hello{from: 1, to: 2, clusterID: "abc"}) {
		t.Fatalf("hello %+v %v", h, err)
	}
	fr := &frameReader{r: r, from: 2, to: 1}
	for i, want := range msgs {
		got, err := fr.next()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want.Snapshot != nil && want.Snapshot.Data == nil {
			want.Snapshot.Data = []byte{}
		}
		if !proto.Equal(got, want) {
			t.Fatalf("message %d: got %v", i, got)
		}
	}
	if _, err := fr.next(); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
}

// TestFrameReaderRefuses: the decoder refuses what a voter never sends, with ErrBadRaftFrame.
func TestFrameReaderRefuses(t *testing.T) {
	frame := func(m *pb.Message) []byte {
		f, err := encodeMessageFrame(m)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	snapHeader, _, _ := encodeSnapshotHeader(&pb.Message{Type: pb.MessageType_MsgSnap.Enum(), From: proto.Uint64(2), To: proto.Uint64(1), Snapshot: &pb.Snapshot{Data: []byte("abcd")}})
	cases := map[string][]byte{
		"zero length":          {0, 0, 0, 0, frameMessage},
		"length over bound":    {0x01, 0, 0, 1, frameMessage},
		"unknown type":         {0, 0, 0, 1, 9},
		"wrong sender":         frame(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(3), To: proto.Uint64(1)}),
		"wrong receiver":       frame(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(2)}),
		"local message":        frame(&pb.Message{Type: pb.MessageType_MsgHup.Enum(), From: proto.Uint64(2), To: proto.Uint64(1)}),
		"snapshot as message":  frame(&pb.Message{Type: pb.MessageType_MsgSnap.Enum(), From: proto.Uint64(2), To: proto.Uint64(1)}),
		"chunk first":          {0, 0, 0, 2, frameSnapshotChunk, 1},
		"chunks overflow":      append(append(slices.Clone(snapHeader), 0, 0, 0, 6, frameSnapshotChunk), "abcde"...),
		"message in snapshot":  append(slices.Clone(snapHeader), frame(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(1)})...),
		"snapshot over bound":  {0, 0, 0, 9, frameSnapshot, 0xff, 0, 0, 0, 0, 0, 0, 0},
		"short snapshot frame": {0, 0, 0, 3, frameSnapshot, 0, 0},
	}
	for name, in := range cases {
		fr := &frameReader{r: bytes.NewReader(in), from: 2, to: 1}
		if _, err := fr.next(); !errors.Is(err, ErrBadRaftFrame) {
			t.Errorf("%s: %v", name, err)
		}
	}
	fr := &frameReader{r: bytes.NewReader(snapHeader), from: 2, to: 1}
	if _, err := fr.next(); err != io.ErrUnexpectedEOF {
		t.Errorf("stream ending inside a snapshot: %v", err)
	}
}

// FuzzRaftStream feeds arbitrary bytes to the receiving side of a raft connection: the
// decoder never panics and never delivers a message that is not from the announced sender.
func FuzzRaftStream(f *testing.F) {
	hb, _ := encodeMessageFrame(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(3), Term: proto.Uint64(1)})
	snapHeader, data, _ := encodeSnapshotHeader(&pb.Message{Type: pb.MessageType_MsgSnap.Enum(), From: proto.Uint64(2), To: proto.Uint64(3),
		Snapshot: &pb.Snapshot{Data: []byte("snapshot"), Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(4)}}})
	h := chunkHeader(len(data))
	seed := appendHello(nil, hello{from: 1, to: 2, clusterID: "c"})
	seed = append(seed, hb...)
	seed = append(seed, snapHeader...)
	seed = append(append(seed, h[:]...), data...)
	f.Add(seed)
	f.Add(appendHello(nil, hello{from: 1, to: 2}))
	f.Add([]byte("SLCR\x01\x00\x00\x00\x01\x00\x00\x00\x02\xff"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bufio.NewReader(bytes.NewReader(in))
		h, err := readHello(r)
		if err != nil {
			return
		}
		fr := &frameReader{r: r, from: raftID(h.from), to: raftID(h.to)}
		for i := 0; i < 1000; i++ {
			m, err := fr.next()
			if err != nil {
				return
			}
			if m.GetFrom() != raftID(h.from) || m.GetTo() != raftID(h.to) {
				t.Fatalf("delivered %v on a connection from %d to %d", m, h.from, h.to)
			}
		}
	})
}

// BenchmarkNetFailover measures, with the default tick interval and election settings, the
// time from killing the leader of a three-voter TCP quorum to a new leader committing a
// proposal. Run: go test -run XXX -bench NetFailover -benchtime 5x ./controller/
func BenchmarkNetFailover(b *testing.B) {
	var total, lo, hi time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		q := newNetQuorum(b, 0, 1024, 1, 2, 3) // TickInterval 0 = the default 100ms
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
		q.propose(createTopic(ctx, "before"))
		old := q.leader()
		b.StartTimer()
		start := time.Now()
		q.stop(old.id)
		q.propose(createTopic(ctx, "after"))
		took := time.Since(start)
		b.StopTimer()
		total += took
		if i == 0 || took < lo {
			lo = took
		}
		hi = max(hi, took)
		b.Logf("failover %d: %v (new leader %d)", i, took.Round(time.Millisecond), q.leader().id)
		cancel()
		for _, id := range q.ids {
			q.stop(id)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
	b.ReportMetric(float64(lo.Milliseconds()), "min-ms")
	b.ReportMetric(float64(hi.Milliseconds()), "max-ms")
}
