package broker

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// produceV sends an empty produce at version to node 1 and returns its partition's answer
// and the response's node endpoints.
func produceV(c *replCluster, version int16) (*kmsg.ProduceResponseTopicPartition, []kmsg.ProduceResponseBroker) {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = c.topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = []byte{} // refused before its records are read
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := (&testBroker{Broker: c.nodes[1].broker}).direct(c.t, req).(*kmsg.ProduceResponse)
	c.t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("produce v%d: %+v", version, resp)
	}
	return &resp.Topics[0].Partitions[0], resp.Brokers
}

func consumerFetch(c *replCluster, version int16, currentLeaderEpoch int32) *kmsg.FetchResponse {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = version, -1, 1<<20, -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = c.topic, c.id
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes, p.CurrentLeaderEpoch = 1<<20, currentLeaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return (&testBroker{Broker: c.nodes[1].broker}).direct(c.t, req).(*splicedFetchResponse).FetchResponse
}

// TestLeaderHints (KIP-951): produce v10+ and fetch v12+ answered NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH name the partition's current leader and epoch, and (produce v10+, fetch
// v16+) that leader's endpoint; older versions carry neither.
func TestLeaderHints(t *testing.T) {
	c := startReplCluster(t, []int32{1}, nil, nil)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: 1}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2, LeaderEpoch: 4}, 1)

	p, b := produceV(c, 10)
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 4 {
		t.Fatalf("produce v10 to a follower: code %d, current leader %+v", p.ErrorCode, p.CurrentLeader)
	}
	if len(b) != 1 || b[0].NodeID != 2 || b[0].Host != "127.0.0.1" || b[0].Port != 1 {
		t.Fatalf("produce v10 node endpoints %+v, want node 2 at 127.0.0.1:1", b)
	}
	if p, b := produceV(c, 9); p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != -1 || len(b) != 0 {
		t.Fatalf("produce v9: code %d, current leader %+v, endpoints %+v; want no hint", p.ErrorCode, p.CurrentLeader, b)
	}

	// A consumer's fetch of v11+ is served by a follower (KIP-392, follower_reads.go), so
	// the hint comes with a fetch at an epoch older than the follower's.
	r := consumerFetch(c, 16, 3)
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != kerr.FencedLeaderEpoch.Code || p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 4 {
		t.Fatalf("fetch v16 from a follower at an old epoch: code %d, current leader %+v", p.ErrorCode, p.CurrentLeader)
	}
	if len(r.Brokers) != 1 || r.Brokers[0].NodeID != 2 || r.Brokers[0].Port != 1 {
		t.Fatalf("fetch v16 node endpoints %+v", r.Brokers)
	}
	if p := consumerFetch(c, 16, -1).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.CurrentLeader.LeaderID != -1 {
		t.Fatalf("fetch v16 from a follower: code %d, current leader %+v; want it served, as Kafka serves v11+", p.ErrorCode, p.CurrentLeader)
	}
	r = consumerFetch(c, 12, 3)
	if p := r.Topics[0].Partitions[0]; p.CurrentLeader.LeaderID != 2 || len(r.Brokers) != 0 {
		t.Fatalf("fetch v12: current leader %+v, endpoints %+v; want the leader, no endpoints", p.CurrentLeader, r.Brokers)
	}

	// This node leads at epoch 5; a consumer still at epoch 4 is fenced and told epoch 5.
	c.publish(2, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 5}, 1)
	r = consumerFetch(c, 17, 4)
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != kerr.FencedLeaderEpoch.Code || p.CurrentLeader.LeaderID != 1 || p.CurrentLeader.LeaderEpoch != 5 {
		t.Fatalf("fetch with a stale epoch: code %d, current leader %+v", p.ErrorCode, p.CurrentLeader)
	}
	if len(r.Brokers) != 1 || r.Brokers[0].NodeID != 1 || r.Brokers[0].Port != c.nodes[1].port {
		t.Fatalf("fenced fetch node endpoints %+v", r.Brokers)
	}
	if p := consumerFetch(c, 17, 5).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.CurrentLeader.LeaderID != -1 {
		t.Fatalf("fetch at the current epoch: code %d, current leader %+v; want no error and no hint", p.ErrorCode, p.CurrentLeader)
	}
}

// TestMetadataWaitsForCertainFailover: a Metadata answer that would name a suspect leader
// whose listener refuses connections is built from the image in which it is fenced; a suspect
// whose listener accepts is answered at once.
func TestMetadataWaitsForCertainFailover(t *testing.T) {
	c := startReplCluster(t, []int32{1}, nil, nil)
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, portText, _ := net.SplitHostPort(refusing.Addr().String())
	port, _ := strconv.Atoi(portText)
	refusing.Close() // nothing listens there now: connections are refused
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: int32(port)}
	c.publish(1, controller.PartitionInfo{Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 1}, 1)
	b := c.nodes[1].broker
	b.suspectLeader(2)

	before := c.nodes[1].meta.Image()
	got := make(chan *controller.Image, 1)
	go func() { got <- b.awaitLeaderFailover(context.Background(), before) }()
	// The controller fences 2 and elects 1.
	after := c.image(2, &controller.PartitionInfo{Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 2})
	after.Brokers[2].Fenced = true
	c.nodes[1].meta.im.Store(after)
	if err := b.reconcile(after); err != nil {
		t.Fatal(err)
	}
	select {
	case im := <-got:
		if im != after {
			t.Fatalf("answered from image at offset %d, want the one with broker 2 fenced", im.Offset)
		}
	case <-time.After(testWait):
		t.Fatal("no answer")
	}

	// A suspect whose listener accepts is not waited for.
	live, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	_, portText, _ = net.SplitHostPort(live.Addr().String())
	port, _ = strconv.Atoi(portText)
	c.nodes[2].port = int32(port)
	c.publish(3, controller.PartitionInfo{Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 3}, 1)
	b.suspectLeader(2)
	im := c.nodes[1].meta.Image()
	if out := b.awaitLeaderFailover(context.Background(), im); out != im {
		t.Fatal("waited for a suspect whose listener accepts")
	}
}

// TestPartitionRetryDelayAfterLeaderChange: a follower refused by a new leader that has not
// applied its leadership yet retries within milliseconds (SIGTERM of a leader under acks=all
// load paused produces for the whole replica.fetch.backoff.ms, 1 s, before); other partition
// errors wait the configured backoff.
func TestPartitionRetryDelayAfterLeaderChange(t *testing.T) {
	backoff := time.Second
	for _, tc := range []struct {
		err  error
		want time.Duration
	}{
		{kerr.NotLeaderForPartition, leaderCatchUpRetry},
		{kerr.UnknownLeaderEpoch, leaderCatchUpRetry},
		{kerr.FencedLeaderEpoch, leaderCatchUpRetry},
		{kerr.KafkaStorageError, backoff},
		{kerr.UnknownTopicOrPartition, backoff},
		{nil, backoff},
	} {
		if got := partitionRetryDelay(tc.err, backoff); got != tc.want {
			t.Errorf("after %v: retry in %v, want %v", tc.err, got, tc.want)
		}
	}
	if got := partitionRetryDelay(kerr.UnknownLeaderEpoch, 5*time.Millisecond); got != 5*time.Millisecond {
		t.Errorf("a backoff below the catch-up retry is kept: %v", got)
	}
}

// TestPeerWatchSuspectsALeaderWhoseConnectionEnds: a follower holds a connection to its
// leader's listener, and the leader is suspect the moment that connection ends.
func TestPeerWatchSuspectsALeaderWhoseConnectionEnds(t *testing.T) {
	// The fetcher also connects; it is left waiting for an answer to its first request (a
	// failed fetch would make the leader suspect by itself).
	c := startReplCluster(t, []int32{1}, map[string]string{"replica.fetch.backoff.ms": "60000"}, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, portText, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(portText)
	c.nodes[2] = &replNode{id: 2, host: "127.0.0.1", port: int32(port)}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	c.publish(1, controller.PartitionInfo{Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 1}, 1)
	b := c.nodes[1].broker
	var watch net.Conn
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for watch == nil {
		select {
		case conn := <-accepted:
			// The fetcher's connection writes its first request at once; the watch never
			// writes.
			_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			var buf [1]byte
			if _, err := conn.Read(buf[:]); err != nil {
				watch = conn
			} else {
				held = append(held, conn)
			}
		case <-time.After(testWait):
			t.Fatal("no watch connection to the leader")
		}
	}
	if slices.Contains(b.leaderSuspects.recent(), 2) {
		t.Fatal("leader suspect before its connection ended")
	}
	watch.Close()
	waitFor(t, "the leader suspect", func() bool { return slices.Contains(b.leaderSuspects.recent(), 2) })
}
