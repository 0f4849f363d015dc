package compattests

// Fetching from the closest replica (KIP-392) on real processes: three nodes in racks a, b and
// c with replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector, a
// partition led by node 1 (rack a) and replicated to nodes 2 (b) and 3 (c), and consumers
// with client.rack=b: franz-go (kgo.Rack) and Apache Kafka's Java consumer (ConsoleConsumer
// with --command-property client.rack=b), and librdkafka (kcat -X client.rack=b).

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startRackCluster starts three combined nodes, node i+1 in rack racks[i], each with an HTTP
// endpoint for /metrics; it returns the cluster and the endpoints' base URLs.
func startRackCluster(t *testing.T, racks []string, settings ...string) (*Cluster, []string) {
	t.Helper()
	n := len(racks)
	c := &Cluster{}
	all := freePorts(t, 3*n)
	var voters, bases []string
	for i := range n {
		ctl := net.JoinHostPort("127.0.0.1", strconv.Itoa(all[n+i]))
		c.ControllerAddrs = append(c.ControllerAddrs, ctl)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ctl))
	}
	for i := range n {
		own := append([]string{
			fmt.Sprintf("node.id=%d", i+1),
			"broker.rack=" + racks[i],
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://%s", all[i], c.ControllerAddrs[i]),
			"controller.listener.names=CONTROLLER",
			"controller.quorum.voters=" + strings.Join(voters, ","),
		}, settings...)
		httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(all[2*n+i]))
		c.Nodes = append(c.Nodes, newBroker(t, BrokerOptions{Port: all[i], Flags: []string{"--http-addr", httpAddr}}, own...))
		bases = append(bases, "http://"+httpAddr)
	}
	for i, b := range c.Nodes {
		if err := b.Launch(); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = b.WaitReady(startDeadline) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	return c, bases
}

// fetchCountHook counts the Fetch requests a franz-go client sent, by node.
type fetchCountHook struct {
	mu     sync.Mutex
	byNode map[int32]int
}

func (h *fetchCountHook) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != 1 || e2e.WriteErr != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byNode[meta.NodeID]++
}

func (h *fetchCountHook) counts() map[int32]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int32]int{}
	for k, v := range h.byNode {
		out[k] = v
	}
	return out
}

// TestFollowerFetchRackAware: a consumer in rack b reads every record of a partition led in
// rack a from the follower in rack b. The leader's Fetch answers name node 2 as the preferred
// read replica; node 2, which leads nothing (so only consumers fetch from it), serves Fetch
// requests, and node 3 (rack c) none. With node 3 paused the leader's high watermark stops
// while node 2 keeps copying acks=1 records past it: the consumer reading from node 2 gets
// everything below the HW and nothing at or past it; once node 3 resumes it gets the rest.
// Every record is read exactly once, in order, and each one the consumer gets is below the
// leader's HW asked afterwards (ListOffsets, from the leader). Then Apache Kafka's Java
// consumer with client.rack=b reads every record, its fetches served by node 2, none by
// node 3, and so does kcat. (The request counters are sluice_request_duration_seconds_count{api="Fetch"} from
// each node's /metrics.)
func TestFollowerFetchRackAware(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	// A long session and lag time: pausing node 3 must hold the HW for the length of the
	// check, not get node 3 fenced or dropped from the ISR.
	c, bases := startRackCluster(t, []string{"a", "b", "c"},
		"replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
		"broker.session.timeout.ms=60000", "broker.heartbeat.interval.ms=500", "replica.lag.time.max.ms=60000",
		// The Java consumer's generated group creates the offsets topic; unreplicated, it adds
		// no follower fetches to the counts below.
		"offsets.topic.replication.factor=1")
	ctx, cancel := context.WithTimeout(context.Background(), 6*clusterDeadline)
	defer cancel()
	_, cl := clusterAdmin(t, c.Bootstrap()...)
	const topic = "near"
	if err := createWithAssignment(ctx, cl, topic, map[int32][]int32{0: {1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, clusterDeadline, "partition 0 led by node 1 with a full ISR", func() error {
		l, isr, err := metadataPartition(c.Nodes[0].Addr, topic, 0)
		if err != nil || l != 1 || len(isr) != 3 {
			return fmt.Errorf("leader %d ISR %v (%v)", l, isr, err)
		}
		return nil
	})
	fetches := func(node int) float64 {
		v, _ := series(scrape(t, bases[node-1]), "sluice_request_duration_seconds", map[string]string{"api": "Fetch"})
		return v
	}
	leaderHW := func() int64 {
		t.Helper()
		hw, err := latestOffset(c.Nodes[0].Addr, topic, 0)
		if err != nil {
			t.Fatalf("ListOffsets from the leader: %v", err)
		}
		return hw
	}

	// 300 records with acks=all.
	var produced []string
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		v := fmt.Sprintf("near-%04d", i)
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		produced = append(produced, v)
	}
	producer.Close()

	before := [4]float64{0, fetches(1), fetches(2), fetches(3)}
	hook := &fetchCountHook{byNode: map[int32]int{}}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.Rack("b"), kgo.WithHooks(hook),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []string
	next := int64(0)
	// poll takes one poll's records, checking order, and that each is below the leader's HW
	// (which only grows: asked after the poll, it bounds the HW the records were read under).
	poll := func(pctx context.Context) {
		t.Helper()
		fs := consumer.PollFetches(pctx)
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		for _, e := range fs.Errors() {
			if e.Err != context.DeadlineExceeded && e.Err != context.Canceled {
				t.Fatalf("fetch error on %s-%d: %v", e.Topic, e.Partition, e.Err)
			}
		}
		if len(recs) == 0 {
			return
		}
		hw := leaderHW()
		for _, r := range recs {
			if r.Offset != next {
				t.Fatalf("record at offset %d, want %d", r.Offset, next)
			}
			if r.Offset >= hw {
				t.Fatalf("the consumer got offset %d at or past the leader's HW %d", r.Offset, hw)
			}
			next++
			got = append(got, string(r.Value))
		}
	}
	readUpTo := func(n int) {
		t.Helper()
		waitFor(t, clusterDeadline, fmt.Sprintf("%d records consumed", n), func() error {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			defer pcancel()
			poll(pctx)
			if len(got) < n {
				return fmt.Errorf("%d consumed", len(got))
			}
			return nil
		})
	}
	readUpTo(len(produced))

	// Node 3 paused: the HW holds while node 2 copies acks=1 records past it.
	stalledHW := leaderHW()
	if err := c.Nodes[2].Pause(); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			_ = c.Nodes[2].Resume()
		}
	}()
	leaderOnly, err := kgo.NewClient(kgo.SeedBrokers(c.Nodes[0].Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		v := fmt.Sprintf("near-%04d", 300+i)
		if err := leaderOnly.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s with acks=1: %v", v, err)
		}
		produced = append(produced, v)
	}
	leaderOnly.Close()
	partitionLabels := map[string]string{"topic": topic, "partition": "0"}
	waitFor(t, clusterDeadline, "node 2 to hold records past its high watermark", func() error {
		m := scrape(t, bases[1])
		leo, _ := series(m, "sluice_partition_log_end_offset", partitionLabels)
		hw, _ := series(m, "sluice_partition_high_watermark", partitionLabels)
		if int64(leo) != int64(len(produced)) || int64(hw) != stalledHW {
			return fmt.Errorf("node 2: log end %v, HW %v (want %d and %d)", leo, hw, len(produced), stalledHW)
		}
		return nil
	})
	// Several fetch rounds (MaxWait 500 ms) at the HW: nothing comes.
	for range 4 {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		poll(pctx)
		pcancel()
	}
	if hw := leaderHW(); hw != stalledHW {
		t.Fatalf("the leader's HW moved from %d to %d with node 3 paused", stalledHW, hw)
	}
	if int64(len(got)) != stalledHW {
		t.Fatalf("consumed %d records while the HW was %d", len(got), stalledHW)
	}
	if err := c.Nodes[2].Resume(); err != nil {
		t.Fatal(err)
	}
	paused = false
	readUpTo(len(produced))
	if !slices.Equal(got, produced) {
		t.Fatalf("consumed %d records, produced %d, not the same sequence", len(got), len(produced))
	}
	counts := hook.counts()
	after := [4]float64{0, fetches(1), fetches(2), fetches(3)}
	t.Logf("franz-go's fetches by node: %v; Fetch requests served: node 1 +%v, node 2 +%v, node 3 +%v",
		counts, after[1]-before[1], after[2]-before[2], after[3]-before[3])
	if counts[2] == 0 || counts[3] != 0 || counts[2] <= counts[1] {
		t.Fatalf("franz-go in rack b fetched by node %v, want mostly from node 2 and never from node 3", counts)
	}
	if after[2] <= before[2] || after[3] != before[3] {
		t.Fatalf("Fetch requests served: node 2 %v -> %v, node 3 %v -> %v; want node 2's to grow, node 3's not",
			before[2], after[2], before[3], after[3])
	}

	// The Java consumer in rack b.
	javaBefore := [4]float64{0, fetches(1), fetches(2), fetches(3)}
	out, stderr := javaTool(t, "", consoleConsumerClass, "--bootstrap-server", strings.Join(c.Bootstrap(), ","),
		"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", strconv.Itoa(len(produced)),
		"--timeout-ms", "60000", "--command-property", "client.rack=b")
	if !strings.Contains(stderr, fmt.Sprintf("Processed a total of %d messages", len(produced))) {
		t.Fatalf("ConsoleConsumer with client.rack=b:\n%s", clip(stderr))
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(lines, produced) {
		t.Fatalf("ConsoleConsumer read %d lines, not the %d records in order", len(lines), len(produced))
	}
	javaAfter := [4]float64{0, fetches(1), fetches(2), fetches(3)}
	t.Logf("Java consumer: Fetch requests served: node 1 +%v, node 2 +%v, node 3 +%v",
		javaAfter[1]-javaBefore[1], javaAfter[2]-javaBefore[2], javaAfter[3]-javaBefore[3])
	if javaAfter[2] <= javaBefore[2] || javaAfter[3] != javaBefore[3] {
		t.Fatalf("the Java consumer in rack b: node 2 served %v fetches, node 3 %v; want node 2 > 0, node 3 none",
			javaAfter[2]-javaBefore[2], javaAfter[3]-javaBefore[3])
	}

	// librdkafka (kcat) with client.rack=b, to the end of the partition.
	kcatBefore := [4]float64{0, fetches(1), fetches(2), fetches(3)}
	out = runCmd(t, 2*kcatTimeout, "", lookPath(t, "kcat"), "-b", strings.Join(c.Bootstrap(), ","), "-X", "client.rack=b",
		"-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(lines, produced) {
		t.Fatalf("kcat read %d lines, not the %d records in order", len(lines), len(produced))
	}
	kcatAfter := [4]float64{0, fetches(1), fetches(2), fetches(3)}
	t.Logf("kcat: Fetch requests served: node 1 +%v, node 2 +%v, node 3 +%v",
		kcatAfter[1]-kcatBefore[1], kcatAfter[2]-kcatBefore[2], kcatAfter[3]-kcatBefore[3])
	if kcatAfter[2] <= kcatBefore[2] || kcatAfter[3] != kcatBefore[3] {
		t.Fatalf("kcat in rack b: node 2 served %v fetches, node 3 %v; want node 2 > 0, node 3 none",
			kcatAfter[2]-kcatBefore[2], kcatAfter[3]-kcatBefore[3])
	}
}

// latestOffset asks the broker at addr itself (ListOffsets v7, latest, read_uncommitted: the
// high watermark) for partition's end, on a connection of its own, so that no other node is
// involved.
func latestOffset(addr, topic string, partition int32) (int64, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 7, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	if err := roundTrip(conn, req, resp, 1); err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("%s answered ListOffsets with %d topics", addr, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, kerr.ErrorForCode(p.ErrorCode)
}
