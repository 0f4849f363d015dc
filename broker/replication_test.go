package broker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

// fakeMetadata is a broker.Metadata serving an image the test sets (one per node, so a test
// can show nodes different images, as a lagging metadata log would). Topic administration is
// refused; AlterPartition calls are recorded and answered by alterAnswer (default: refused,
// as the placeholder controller does).
type fakeMetadata struct {
	im     atomic.Pointer[controller.Image]
	alters chan controller.AlterPartition // every AlterPartition item, in order
	// accept makes AlterPartition commit instead of refusing.
	accept atomic.Bool
	// answer, when set, is every item's error instead (accept is then ignored); callErr, when
	// set, fails the whole call.
	answer  atomic.Pointer[kerr.Error]
	callErr atomic.Pointer[error]
	nextID  atomic.Int64
}

var errFake = errors.New("fake metadata: not served")

func newFakeMetadata(im *controller.Image) *fakeMetadata {
	f := &fakeMetadata{alters: make(chan controller.AlterPartition, 1024)}
	f.im.Store(im)
	f.nextID.Store(1000)
	return f
}

func (f *fakeMetadata) Image() *controller.Image { return f.im.Load() }
func (f *fakeMetadata) CreateTopics(context.Context, []controller.CreateTopic, bool) ([]controller.CreateTopicResult, error) {
	return nil, errFake
}
func (f *fakeMetadata) DeleteTopics(context.Context, []string, []controller.TopicID) ([]controller.DeleteTopicResult, error) {
	return nil, errFake
}
func (f *fakeMetadata) CreatePartitions(context.Context, []controller.CreatePartitions, bool) ([]controller.CreatePartitionsResult, error) {
	return nil, errFake
}
func (f *fakeMetadata) AlterConfigs(context.Context, []controller.AlterConfigs, bool) ([]controller.AlterConfigsResult, error) {
	return nil, errFake
}
func (f *fakeMetadata) AllocateProducerIDs(_ context.Context, _ int32, count int32) (int64, error) {
	return f.nextID.Add(int64(count)) - int64(count), nil
}
func (f *fakeMetadata) AlterPartition(_ context.Context, reqs []controller.AlterPartition) ([]controller.AlterPartitionResult, error) {
	out := make([]controller.AlterPartitionResult, len(reqs))
	for i, r := range reqs {
		select {
		case f.alters <- r:
		default:
		}
		if e := f.callErr.Load(); e != nil {
			return nil, *e
		}
		if e := f.answer.Load(); e != nil {
			out[i].Err, out[i].Message = e, "answered by the test"
			continue
		}
		if f.accept.Load() {
			out[i].Partition = &controller.PartitionInfo{Partition: r.Partition, ISR: r.NewISR, Leader: r.LeaderID, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch + 1}
			continue
		}
		out[i].Err, out[i].Message = kerr.UnsupportedVersion, "AlterPartition is not implemented yet"
	}
	return out, nil
}

// replNode is one broker of a replication test.
type replNode struct {
	id     int32
	addr   string
	host   string
	port   int32
	meta   *fakeMetadata
	broker *Broker
	client *kgo.Client
	// cfg and handler restart the node on the same log directory and listener.
	cfg     Config
	handler *lateHandler
}

// replCluster is a few brokers, each with its own fakeMetadata, that replicate to each other.
type replCluster struct {
	t     testing.TB
	nodes map[int32]*replNode
	topic string
	id    controller.TopicID
}

// startReplCluster starts brokers ids (listeners first, so every image names every endpoint).
// props are extra server.properties keys for every node; clocks, when set, give a node an
// injected clock.
func startReplCluster(t testing.TB, ids []int32, props map[string]string, clocks map[int32]replica.Clock) *replCluster {
	t.Helper()
	c := &replCluster{t: t, nodes: map[int32]*replNode{}, topic: "rep", id: controller.TopicID{1, 2, 3, 4}}
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("SLUICE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	handlers := map[int32]*lateHandler{}
	for _, id := range ids {
		h := &lateHandler{}
		srv, err := wire.Listen(wire.Config{Addr: "127.0.0.1:0", ListenerName: "PLAINTEXT", Versions: Versions, Logger: logger}, h)
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), testWait)
			defer cancel()
			_ = srv.Shutdown(ctx)
		})
		addr := srv.Addr().String()
		host, portText, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portText)
		c.nodes[id] = &replNode{id: id, addr: addr, host: host, port: int32(port)}
		handlers[id] = h
	}
	base := c.image(0, nil)
	for _, id := range ids {
		n := c.nodes[id]
		dir := t.TempDir()
		all := map[string]string{
			"node.id": strconv.Itoa(int(id)), "log.dirs": filepath.Join(dir, "data"), "listeners": "PLAINTEXT://" + n.addr,
			"replica.fetch.backoff.ms": "20",
		}
		for k, v := range props {
			all[k] = v
		}
		static, err := config.ParseBroker(all)
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		if err := os.MkdirAll(static.LogDirs[0], 0o755); err != nil {
			t.Fatal(err)
		}
		n.meta = newFakeMetadata(base)
		n.cfg, n.handler = Config{Static: static, LogDir: static.LogDirs[0], Logger: logger, Clock: clocks[id]}, handlers[id]
		c.startNode(n)
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		n.client = cl
		t.Cleanup(cl.Close)
	}
	return c
}

// startNode starts n's broker on its log directory, with the image n.meta serves.
func (c *replCluster) startNode(n *replNode) {
	c.t.Helper()
	b, err := New(n.cfg, n.meta)
	if err != nil {
		c.t.Fatalf("broker %d: %v", n.id, err)
	}
	n.broker = b
	n.handler.b.Store(b)
	c.t.Cleanup(func() {
		if n.broker == b { // a restarted node's old broker was closed by restart
			_ = b.Close()
		}
	})
}

// image is a metadata image naming every node, with the test topic's one partition when
// part is set.
func (c *replCluster) image(offset int64, part *controller.PartitionInfo) *controller.Image {
	im := &controller.Image{
		Offset: offset, ClusterID: "repl-test", ControllerID: 1,
		Brokers: map[int32]*controller.BrokerInfo{}, Topics: map[string]*controller.TopicInfo{},
		TopicsByID: map[controller.TopicID]*controller.TopicInfo{},
	}
	for id, n := range c.nodes {
		im.Brokers[id] = &controller.BrokerInfo{ID: id, Epoch: 1, Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: n.host, Port: n.port}}}
	}
	if part != nil {
		topic := &controller.TopicInfo{Name: c.topic, ID: c.id, Partitions: []controller.PartitionInfo{*part}}
		im.Topics[c.topic], im.TopicsByID[c.id] = topic, topic
	}
	return im
}

// publish shows the nodes the partition as part says (every node when none is named), as the
// metadata log would.
func (c *replCluster) publish(offset int64, part controller.PartitionInfo, to ...int32) {
	c.t.Helper()
	if len(to) == 0 {
		for id := range c.nodes {
			to = append(to, id)
		}
		slices.Sort(to)
	}
	im := c.image(offset, &part)
	for _, id := range to {
		n := c.nodes[id]
		n.meta.im.Store(im)
		if err := n.broker.reconcile(im); err != nil {
			c.t.Fatalf("reconcile on %d: %v", id, err)
		}
	}
}

// part is node id's replica of the test partition (nil if not hosted).
func (c *replCluster) part(id int32) *Partition { return c.nodes[id].broker.partition(c.topic, 0) }

// waitFor waits until cond holds, failing the test with what after testWait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling a condition, not waiting for it to "settle"
	}
}

// produce writes values to the partition through node id with acks (kgo.AllISRAcks or
// kgo.LeaderAck), synchronously.
func (c *replCluster) produce(id int32, acks kgo.Acks, values ...string) {
	c.t.Helper()
	n := c.nodes[id]
	cl := n.client
	if acks != kgo.AllISRAcks() {
		var err error
		cl, err = kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
		if err != nil {
			c.t.Fatal(err)
		}
		defer cl.Close()
	}
	ctx := testContext(c.t)
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: c.topic, Value: []byte(v)}).FirstErr(); err != nil {
			c.t.Fatalf("produce %q through %d: %v", v, id, err)
		}
	}
}

// logBytes is every byte of node id's log of the partition.
func (c *replCluster) logBytes(id int32) []byte {
	c.t.Helper()
	p := c.part(id)
	read, err := p.log.Read(p.log.LogStartOffset(), 1<<30, p.log.LogEndOffset(), true)
	if err != nil {
		c.t.Fatalf("read node %d: %v", id, err)
	}
	var buf bytes.Buffer
	for _, s := range read.Slices {
		if _, err := io.Copy(&buf, io.NewSectionReader(s.File, s.Position, s.Length)); err != nil {
			c.t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestReplicationAcksAllCompletesWhenFollowerFetches(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	// acks=all with the follower in the ISR: answered only once the follower has the records.
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c")
	leader, follower := c.part(1).replica.Snapshot(), c.part(2).replica.Snapshot()
	if leader.HighWatermark != 3 || leader.LogEnd != 3 {
		t.Fatalf("leader after acks=all: %+v", leader)
	}
	if follower.LogEnd < 3 {
		t.Fatalf("acks=all answered before the follower had the records: follower %+v", follower)
	}
	// The follower takes the leader's HW with its next fetch.
	waitFor(t, "the follower's HW to reach 3", func() bool { return c.part(2).replica.Snapshot().HighWatermark == 3 })
	if isr, _ := c.part(1).replica.ISR(); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("committed ISR %v", isr)
	}
}

func TestReplicationFollowerLogIsByteIdentical(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4})
	c.produce(1, kgo.AllISRAcks(), "x", "y") // idempotent: producer ID and sequences in the batches
	c.produce(1, kgo.LeaderAck(), "z")
	waitFor(t, "the follower to reach the leader's log end", func() bool {
		return c.part(2).replica.Snapshot().LogEnd == c.part(1).replica.Snapshot().LogEnd
	})
	if !bytes.Equal(c.logBytes(1), c.logBytes(2)) {
		t.Fatalf("follower's log differs from the leader's:\nleader   %x\nfollower %x", c.logBytes(1), c.logBytes(2))
	}
	if e := c.part(2).log.LatestEpoch(); e != 4 {
		t.Fatalf("follower's latest epoch %d, want the leader's 4", e)
	}
}

func TestReplicationLeaderChangeTruncatesDivergentTail(t *testing.T) {
	for _, truncateOnFetch := range []bool{true, false} {
		name := "OffsetForLeaderEpoch"
		if truncateOnFetch {
			name = "DivergingEpoch"
		}
		t.Run(name, func(t *testing.T) { testLeaderChangeTruncates(t, truncateOnFetch) })
	}
}

// testLeaderChangeTruncates: the old leader's tail of an epoch the new leader never saw is cut,
// found with a fetch's DivergingEpoch or with OffsetForLeaderEpoch.
func testLeaderChangeTruncates(t *testing.T, truncateOnFetch bool) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	for _, n := range c.nodes {
		n.broker.fetchers.truncateOnFetch = truncateOnFetch // before any partition is followed
	}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c")
	// Node 1 alone learns of epoch 1: node 2 keeps fetching at epoch 0 and is fenced, so what
	// node 1 writes at epoch 1 never reaches it.
	c.publish(2, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1}, 1)
	c.produce(1, kgo.LeaderAck(), "lost-1", "lost-2")
	if got := c.part(1).replica.Snapshot().LogEnd; got != 5 {
		t.Fatalf("old leader's log end %d, want 5", got)
	}
	if got := c.part(2).replica.Snapshot().LogEnd; got != 3 {
		t.Fatalf("follower got records of an epoch it was fenced from: log end %d", got)
	}
	// Node 2 becomes leader at epoch 2 and writes; node 1 follows it and must drop its tail.
	c.publish(3, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2, LeaderEpoch: 2})
	c.produce(2, kgo.LeaderAck(), "new")
	waitFor(t, "the old leader to truncate and catch up", func() bool {
		return c.part(1).replica.Snapshot().LogEnd == 4 && c.part(2).replica.Snapshot().LogEnd == 4
	})
	if !bytes.Equal(c.logBytes(1), c.logBytes(2)) {
		t.Fatalf("logs differ after the leader change")
	}
	if e, end := c.part(1).log.EndOffsetForEpoch(1); e == 1 {
		t.Fatalf("old leader still holds epoch 1 (ends at %d)", end)
	}
	if role, epoch, leader := c.part(1).replica.Role(); role != replica.RoleFollower || epoch != 2 || leader != 2 {
		t.Fatalf("old leader's role %v epoch %d leader %d", role, epoch, leader)
	}
	if l, ok := c.nodes[1].broker.fetchers.followed(topicPartition{c.topic, 0}); !ok || l != 2 {
		t.Fatalf("node 1 fetches from %d (%v), want 2", l, ok)
	}
	if _, ok := c.nodes[2].broker.fetchers.followed(topicPartition{c.topic, 0}); ok {
		t.Fatalf("the new leader still fetches")
	}
}

// followerFetch is a Fetch from replica 2 for the test partition.
func followerFetch(c *replCluster, version int16, replicaID int32, fetchOffset int64, lastFetchedEpoch int32) *kmsg.FetchResponse {
	return followerFetchAt(c, version, replicaID, 1, fetchOffset, lastFetchedEpoch)
}

// followerFetchAt is followerFetch with the follower's broker epoch (v15+).
func followerFetchAt(c *replCluster, version int16, replicaID int32, brokerEpoch int64, fetchOffset int64, lastFetchedEpoch int32) *kmsg.FetchResponse {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	if version >= 15 {
		req.ReplicaID = -1
		req.ReplicaState.ID, req.ReplicaState.Epoch = replicaID, brokerEpoch
	} else {
		req.ReplicaID = replicaID
	}
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = c.topic, c.id
	p := kmsg.NewFetchRequestTopicPartition()
	p.FetchOffset, p.LastFetchedEpoch, p.PartitionMaxBytes, p.CurrentLeaderEpoch = fetchOffset, lastFetchedEpoch, 1<<20, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := (&testBroker{Broker: c.nodes[1].broker}).direct(c.t, req).(*splicedFetchResponse)
	// The records are spliced from the segment files; count them into RecordBatches' place.
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			var n int64
			for _, s := range resp.records[ti][pi] {
				n += s.Length
			}
			if n > 0 {
				resp.Topics[ti].Partitions[pi].RecordBatches = make([]byte, n)
			}
		}
	}
	return resp.FetchResponse
}

func TestReplicationDivergingEpochForStaleLastFetchedEpoch(t *testing.T) {
	// Node 2 exists in the image but does not run: the test fetches as it.
	c := startReplCluster(t, []int32{1}, nil, nil)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, 1)
	c.produce(1, kgo.LeaderAck(), "e0-a", "e0-b", "e0-c") // epoch 0: offsets 0..2
	c.publish(2, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3}, 1)
	c.produce(1, kgo.LeaderAck(), "e3-a", "e3-b") // epoch 3: offsets 3..4

	for _, v := range []int16{12, 15, 17} {
		// A follower that has epoch 1 up to offset 5: the leader never had epoch 1, its
		// epochs up to 1 end at 3, so the follower must truncate to 3.
		resp := followerFetch(c, v, 2, 5, 1)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 3 || len(p.RecordBatches) != 0 {
			t.Fatalf("v%d: stale epoch answered %+v (diverging %+v, %d record bytes)", v, p.ErrorCode, p.DivergingEpoch, len(p.RecordBatches))
		}
		// Epoch 0 up to offset 4: epoch 0 ends at 3 on the leader.
		p = followerFetch(c, v, 2, 4, 0).Topics[0].Partitions[0]
		if p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 3 {
			t.Fatalf("v%d: fetch past the end of epoch 0 answered diverging %+v", v, p.DivergingEpoch)
		}
		// In agreement: records, no divergence, and the leader's HW and log start.
		p = followerFetch(c, v, 2, 3, 0).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.DivergingEpoch.EndOffset != -1 || len(p.RecordBatches) == 0 || p.HighWatermark != 3 {
			t.Fatalf("v%d: agreeing fetch answered code %d diverging %+v, %d bytes, HW %d", v, p.ErrorCode, p.DivergingEpoch, len(p.RecordBatches), p.HighWatermark)
		}
	}
	// A diverging fetch (from 5 or 4) did not count as the follower's position: the HW is
	// still where the agreeing fetch from 3 put it.
	if hw := c.part(1).replica.Snapshot().HighWatermark; hw != 3 {
		t.Fatalf("HW %d after diverging fetches", hw)
	}
	// A replica outside the assignment is refused.
	if p := followerFetch(c, 17, 9, 0, -1).Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch from a non-replica answered %d", p.ErrorCode)
	}
}

func TestReplicationFollowerFetchReadsPastHighWatermark(t *testing.T) {
	c := startReplCluster(t, []int32{1}, nil, nil)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, 1)
	c.produce(1, kgo.LeaderAck(), "a", "b")
	if hw := c.part(1).replica.Snapshot().HighWatermark; hw != 0 {
		t.Fatalf("HW %d with a follower that never fetched", hw)
	}
	p := followerFetch(c, 17, 2, 0, -1).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 0 {
		t.Fatalf("follower fetch below the HW: code %d, %d bytes, HW %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	// A fetch from an older incarnation of node 2 (broker epoch 0; the image registers 1) is
	// served but does not vouch for the records.
	p = followerFetchAt(c, 17, 2, 0, 2, 0).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 0 {
		t.Fatalf("fetch at a stale broker epoch: code %d, HW %d", p.ErrorCode, p.HighWatermark)
	}
	// Fetching from 2 says the follower has both records: the HW moves.
	p = followerFetch(c, 17, 2, 2, 0).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 2 {
		t.Fatalf("follower fetch at the log end: code %d, HW %d", p.ErrorCode, p.HighWatermark)
	}
}

func TestReplicationLaggingFollowerProposedOutOfISR(t *testing.T) {
	clock := replica.NewManualClock(time.Unix(1_700_000_000, 0))
	props := map[string]string{"replica.lag.time.max.ms": "1000", "replica.fetch.wait.max.ms": "50"}
	c := startReplCluster(t, []int32{1, 2}, props, map[int32]replica.Clock{1: clock})
	part := controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}
	c.publish(1, part)
	c.produce(1, kgo.LeaderAck(), "a")
	waitFor(t, "the HW to reach 1", func() bool { return c.part(1).replica.Snapshot().HighWatermark == 1 })

	// Node 2 stops fetching: its image names no leader.
	stopped := part
	stopped.Leader, stopped.LeaderEpoch = -1, 1
	c.publish(2, stopped, 2)
	waitFor(t, "node 2's fetcher to stop", func() bool {
		_, ok := c.nodes[2].broker.fetchers.followed(topicPartition{c.topic, 0})
		return !ok
	})
	c.produce(1, kgo.LeaderAck(), "b")
	select {
	case a := <-c.nodes[1].meta.alters:
		t.Fatalf("ISR change proposed before replica.lag.time.max.ms passed: %+v", a)
	default:
	}

	// Past replica.lag.time.max.ms on the leader's clock: the expiration check proposes ISR [1].
	clock.Advance(1500 * time.Millisecond)
	var got controller.AlterPartition
	select {
	case got = <-c.nodes[1].meta.alters:
	case <-time.After(testWait):
		t.Fatal("no ISR shrink proposed")
	}
	if got.LeaderID != 1 || got.LeaderEpoch != 0 || !slices.Equal(got.NewISR, []int32{1}) || got.TopicID != c.id {
		t.Fatalf("proposal %+v", got)
	}
	// Refused (the placeholder controller): the committed ISR stands, and so does the HW: the
	// record node 2 does not have is not committed.
	waitFor(t, "the refusal to clear the pending change", func() bool {
		_, pending := c.part(1).replica.ISR()
		return pending == nil
	})
	if isr, _ := c.part(1).replica.ISR(); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v after a refused shrink", isr)
	}
	if hw := c.part(1).replica.Snapshot().HighWatermark; hw != 1 {
		t.Fatalf("HW %d moved past what the committed ISR holds", hw)
	}
	// Committed: the image brings ISR [1] and the HW moves to the log end.
	shrunk := part
	shrunk.ISR, shrunk.PartitionEpoch = []int32{1}, 1
	c.publish(3, shrunk, 1)
	waitFor(t, "the HW to move after the shrink", func() bool { return c.part(1).replica.Snapshot().HighWatermark == 2 })
}

// TestReplicationRefusedExpansionKeepsWorking: with a controller that refuses every ISR
// change, a follower outside the ISR still replicates, and the leader's HW is its own log end
// (the committed ISR is only itself).
func TestReplicationRefusedExpansionKeepsWorking(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b")
	waitFor(t, "the follower to replicate", func() bool { return c.part(2).replica.Snapshot().LogEnd == 2 })
	var got controller.AlterPartition
	select {
	case got = <-c.nodes[1].meta.alters:
	case <-time.After(testWait):
		t.Fatal("no ISR expansion proposed for a caught-up follower")
	}
	if !slices.Equal(got.NewISR, []int32{1, 2}) {
		t.Fatalf("expansion proposal %+v", got)
	}
	if isr, _ := c.part(1).replica.ISR(); !slices.Equal(isr, []int32{1}) {
		t.Fatalf("ISR %v after refused expansions", isr)
	}
	if hw := c.part(1).replica.Snapshot().HighWatermark; hw != 2 {
		t.Fatalf("HW %d", hw)
	}
}

// TestReplicationNewLeaderAnswersItsEpochBeforeWriting: a leader that has not appended in its
// new epoch yet answers OffsetForLeaderEpoch (and the divergence check of a fetch) as if the
// epoch started at its log end, as Kafka's leader (which writes the epoch's start at election)
// does; before, it said "unknown epoch" and a follower fell back to its high watermark.
func TestReplicationNewLeaderAnswersItsEpochBeforeWriting(t *testing.T) {
	c := startReplCluster(t, []int32{1}, nil, nil)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1}, 1)
	c.produce(1, kgo.LeaderAck(), "a", "b", "c") // epoch 0: offsets 0..2
	c.publish(2, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 5}, 1)

	tb := &testBroker{Broker: c.nodes[1].broker}
	for _, tc := range []struct {
		asked     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{0, 0, 3},   // the log's latest epoch ends where epoch 5 starts
		{3, 0, 3},   // an epoch the leader never had: the one below it
		{5, 5, 3},   // the current epoch: the log end
		{6, -1, -1}, // newer than the leader's: unknown
	} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = 4, 2
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = c.topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, tc.asked
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := tb.direct(t, req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderEpoch != tc.wantEpoch || p.EndOffset != tc.wantEnd {
			t.Errorf("OffsetForLeaderEpoch(%d) = code %d, epoch %d, end %d; want epoch %d, end %d",
				tc.asked, p.ErrorCode, p.LeaderEpoch, p.EndOffset, tc.wantEpoch, tc.wantEnd)
		}
	}
	// A follower that has epoch 3 up to offset 4 is told to truncate to 3.
	p := followerFetch(c, 17, 2, 4, 3).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 3 {
		t.Fatalf("fetch with an epoch the leader never had: code %d, diverging %+v", p.ErrorCode, p.DivergingEpoch)
	}
}

// TestReplicationFollowerRestartCatchesUp: a follower shut down and started again on its log
// directory resumes following (truncation check first) and catches up with what the leader
// wrote meanwhile; the leader's HW waits for it while it is in the ISR.
func TestReplicationFollowerRestartCatchesUp(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 2})
	c.produce(1, kgo.AllISRAcks(), "a", "b")
	c.nodes[2].handler.b.Store(nil)
	if err := c.nodes[2].broker.Close(); err != nil {
		t.Fatal(err)
	}
	c.produce(1, kgo.LeaderAck(), "c", "d", "e") // node 2 is down
	if hw := c.part(1).replica.Snapshot().HighWatermark; hw != 2 {
		t.Fatalf("HW %d while an ISR member is down, want 2", hw)
	}
	c.startNode(c.nodes[2]) // its fake still serves the image: it follows node 1 at epoch 2
	waitFor(t, "the restarted follower to catch up", func() bool {
		return c.part(2).replica.Snapshot().LogEnd == 5 && c.part(1).replica.Snapshot().HighWatermark == 5
	})
	if !bytes.Equal(c.logBytes(1), c.logBytes(2)) {
		t.Fatal("logs differ after the restart")
	}
}

// TestReplicationFollowerBehindLeaderLogStartStartsOver: a follower whose log ends below the
// leader's log start (records deleted on the leader while it was down) restarts its log empty
// at the leader's log start and fetches from there, as Kafka's fetcher does.
func TestReplicationFollowerBehindLeaderLogStartStartsOver(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1})
	c.produce(1, kgo.LeaderAck(), "a", "b")
	waitFor(t, "the follower to replicate", func() bool { return c.part(2).replica.Snapshot().LogEnd == 2 })
	c.nodes[2].handler.b.Store(nil)
	if err := c.nodes[2].broker.Close(); err != nil {
		t.Fatal(err)
	}
	c.produce(1, kgo.LeaderAck(), "c", "d", "e")
	if start, err := c.part(1).replica.DeleteRecordsBefore(4); err != nil || start != 4 {
		t.Fatalf("DeleteRecordsBefore(4) = %d, %v", start, err)
	}
	c.startNode(c.nodes[2])
	waitFor(t, "the follower to start over at the leader's log start", func() bool {
		s := c.part(2).replica.Snapshot()
		return s.LogStart == 4 && s.LogEnd == 5
	})
	if !bytes.Equal(c.logBytes(1), c.logBytes(2)) {
		t.Fatal("logs differ")
	}
}

// TestReplicationFollowerFollowsLeaderLogStart: records deleted on the leader (DeleteRecords)
// are deleted on the follower too, so they cannot come back when the follower leads.
func TestReplicationFollowerFollowsLeaderLogStart(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a", "b", "c")
	if start, err := c.part(1).replica.DeleteRecordsBefore(2); err != nil || start != 2 {
		t.Fatalf("DeleteRecordsBefore(2) = %d, %v", start, err)
	}
	c.produce(1, kgo.AllISRAcks(), "d") // a fetch response after the delete carries log start 2
	waitFor(t, "the follower's log start to follow the leader's", func() bool {
		return c.part(2).replica.Snapshot().LogStart == 2
	})
}

// TestFetcherIndexSpreadsPartitions: num.replica.fetchers fetchers per leader share its
// partitions; with one, all go to it.
func TestFetcherIndexSpreadsPartitions(t *testing.T) {
	used := map[int]bool{}
	for p := range int32(64) {
		tp := topicPartition{"t", p}
		if i := fetcherIndex(tp, 1); i != 0 {
			t.Fatalf("one fetcher: %v went to %d", tp, i)
		}
		i := fetcherIndex(tp, 4)
		if i < 0 || i >= 4 {
			t.Fatalf("four fetchers: %v went to %d", tp, i)
		}
		if i != fetcherIndex(tp, 4) {
			t.Fatalf("%v not placed the same way twice", tp)
		}
		used[i] = true
	}
	if len(used) != 4 {
		t.Fatalf("64 partitions used fetchers %v of 4", used)
	}
}
