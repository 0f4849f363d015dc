package compattests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterDeadline bounds each wait in the cluster tests; it is never the thing asserted.
const clusterDeadline = 60 * time.Second

// clusterSettings shorten the broker session so fencing happens within a test's patience.
var clusterSettings = []string{"broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=500"}

func clusterAdmin(t *testing.T, seeds ...string) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl), cl
}

// TestClusterThreeNodes runs three real sluice processes as one cluster: one cluster ID and
// controller seen from every node, partitions spread over the brokers, a topic created through
// any node, records produced through one node and read through another, a consumer group
// committing through a third; then the active controller is killed and the quorum elects
// another, the dead broker is fenced, and after a restart it leads its partitions again with
// every record intact.
func TestClusterThreeNodes(t *testing.T) {
	c := StartCluster(t, 3, clusterSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*clusterDeadline)
	defer cancel()

	// Every node describes the same cluster. (Metadata's controller ID is, in KRaft, any live
	// broker; the active controller is the quorum's leader.)
	var clusterID string
	for i, b := range c.Nodes {
		adm, _ := clusterAdmin(t, b.Addr)
		waitFor(t, clusterDeadline, "node sees three brokers", func() error {
			m, err := adm.BrokerMetadata(ctx)
			if err != nil {
				return err
			}
			if len(m.Brokers) != 3 {
				return fmt.Errorf("%d brokers", len(m.Brokers))
			}
			if i == 0 {
				clusterID = m.Cluster
			} else if m.Cluster != clusterID {
				return fmt.Errorf("node %d: cluster %s, node 1: %s", i+1, m.Cluster, clusterID)
			}
			return nil
		})
	}

	// A topic created through the last node is spread over all three.
	adm, _ := clusterAdmin(t, c.Nodes[2].Addr)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "spread"); err != nil {
		t.Fatalf("create through node 3: %v", err)
	}
	leaders := map[int32]bool{}
	td, err := adm.ListTopics(ctx, "spread")
	if err != nil || td["spread"].Err != nil {
		t.Fatalf("describe: %v %v", err, td["spread"].Err)
	}
	for _, p := range td["spread"].Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("6 partitions led by %v, want all three brokers", leaders)
	}
	// More replicas than brokers are refused, as in Kafka.
	if resp, _ := adm.CreateTopic(ctx, 1, 4, nil, "rf4"); !errors.Is(resp.Err, kerr.InvalidReplicationFactor) {
		t.Fatalf("RF 4 on three brokers: %v %q", resp.Err, resp.ErrMessage)
	}

	// Produce through node 1 only (the client follows leaders on the others).
	_, producer := clusterAdmin(t, c.Nodes[0].Addr)
	const records = 600
	for i := range records {
		r := &kgo.Record{Topic: "spread", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	readAll := func(seed string) map[string]bool {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics("spread"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[string]bool{}
		rctx, rcancel := context.WithTimeout(ctx, clusterDeadline)
		defer rcancel()
		for len(seen) < records {
			fs := cl.PollFetches(rctx)
			if rctx.Err() != nil {
				t.Fatalf("read %d of %d records through %s: %v", len(seen), records, seed, fs.Errors())
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
		return seen
	}
	readAll(c.Nodes[1].Addr)

	// A consumer group through node 2 commits; the commit is read back through node 3.
	group, err := kgo.NewClient(kgo.SeedBrokers(c.Nodes[1].Addr), kgo.ConsumerGroup("cluster-group"), kgo.ConsumeTopics("spread"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	gctx, gcancel := context.WithTimeout(ctx, clusterDeadline)
	for got < records && gctx.Err() == nil {
		fs := group.PollFetches(gctx)
		got += fs.NumRecords()
	}
	gcancel()
	if got < records {
		t.Fatalf("group read %d of %d", got, records)
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	group.Close()
	offsets, err := adm.FetchOffsets(ctx, "cluster-group")
	if err != nil {
		t.Fatalf("fetch offsets through node 3: %v", err)
	}
	var committed int64
	offsets.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != records {
		t.Fatalf("committed offsets add up to %d, want %d", committed, records)
	}

	// Kill the active controller: the others elect a new one and create topics again.
	controllerID := c.quorumLeader(t)
	dead := c.Nodes[controllerID-1]
	killed := time.Now()
	dead.Kill()
	var survivor *Broker
	for _, b := range c.Nodes {
		if b != dead {
			survivor = b
			break
		}
	}
	sadm, _ := clusterAdmin(t, survivor.Addr)
	waitFor(t, clusterDeadline, "a topic created after the controller died", func() error {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		resp, err := sadm.CreateTopic(cctx, 2, 1, nil, "after-failover")
		if err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return err
		}
		return nil
	})
	t.Logf("controller %d killed; topic creation worked again after %v", controllerID, time.Since(killed).Round(time.Millisecond))

	// After the session timeout the dead broker is fenced and its partitions have no leader.
	waitFor(t, clusterDeadline, "the dead broker fenced", func() error {
		ids, err := liveBrokers(survivor.Addr)
		if err != nil {
			return err
		}
		if slices.Contains(ids, controllerID) {
			return fmt.Errorf("broker %d still listed in %v", controllerID, ids)
		}
		return nil
	})

	// Restarted, it rejoins and leads its partitions again; nothing was lost.
	dead.Restart()
	waitFor(t, clusterDeadline, "every partition led again", func() error {
		td, err := sadm.ListTopics(ctx, "spread")
		if err != nil {
			return err
		}
		for _, p := range td["spread"].Partitions {
			if p.Leader < 0 || p.Err != nil {
				return fmt.Errorf("partition %d leader %d (%v)", p.Partition, p.Leader, p.Err)
			}
		}
		return nil
	})
	if seen := readAll(dead.Addr); len(seen) != records {
		t.Fatalf("after the restart %d of %d records", len(seen), records)
	}
}

// TestClusterToolsSeeTheQuorum: Apache Kafka's kafka-metadata-quorum and kafka-topics describe
// the three-node cluster as they would a Kafka one.
func TestClusterToolsSeeTheQuorum(t *testing.T) {
	c := StartCluster(t, 3, clusterSettings...)
	stdout, _ := javaTool(t, "", "org.apache.kafka.tools.MetadataQuorumCommand",
		"--bootstrap-controller", strings.Join(c.ControllerAddrs, ","), "describe", "--status")
	for _, want := range []string{"ClusterId:", "LeaderId:", "CurrentVoters:"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("kafka-metadata-quorum describe --status lacks %q:\n%s", want, stdout)
		}
	}
	javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", c.Nodes[1].Addr,
		"--create", "--topic", "tools", "--partitions", "3")
	stdout, _ = javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", c.Nodes[0].Addr,
		"--describe", "--topic", "tools")
	leaders := map[string]bool{}
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == "Leader:" {
			leaders[f[5]] = true
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("kafka-topics --describe: leaders %v, want three brokers:\n%s", leaders, stdout)
	}
}

// liveBrokers asks addr for Metadata on a fresh connection (no client-side cache) and returns
// the brokers it lists, which are the unfenced ones.
func liveBrokers(addr string) ([]int32, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if err := roundTrip(conn, req, resp, 1); err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	return ids, nil
}
