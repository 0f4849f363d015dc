package compattests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScaleOutFourthBroker adds a fourth broker to a running three-node cluster and moves
// partitions onto it, as an operator scales Kafka out: three combined nodes serve an RF 3,
// min.insync.replicas=2 topic under an idempotent acks=all producer and a consumer group; a
// fourth node with process.roles=broker (a raft learner of the metadata log) starts, registers
// and is listed by Metadata, DescribeCluster and kafka-broker-api-versions, and by
// kafka-metadata-quorum as an observer;
// kafka-reassign-partitions --generate with --broker-list 1,2,3,4 proposes a placement on it,
// --execute applies it and --verify reports it complete; after kafka-leader-election
// --election-type preferred the new broker leads the partitions it is first in. Every
// acknowledged record is read back exactly once, and the group's consumer keeps consuming
// records produced after the move.
func TestScaleOutFourthBroker(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	// Auto rebalance off: the preferred election below is what moves leadership to node 4.
	settings := append(slices.Clone(clusterSettings), "auto.leader.rebalance.enable=false")
	c := StartCluster(t, 3, settings...)
	ctx, cancel := context.WithTimeout(context.Background(), 6*clusterDeadline)
	defer cancel()
	adm, cl := clusterAdmin(t, c.Bootstrap()...)
	const topic = "grow"
	const partitions = 6
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}

	// An idempotent acks=all producer (franz-go's default) writes until told to stop.
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RetryTimeout(clusterDeadline),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				produced <- nil
				return
			default:
			}
			v := fmt.Sprintf("grow-%06d", i)
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				produced <- fmt.Errorf("produce %s: %w", v, err)
				return
			}
			mu.Lock()
			acked[v] = true
			mu.Unlock()
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitAcked := func(n int) {
		t.Helper()
		waitFor(t, clusterDeadline, fmt.Sprintf("%d acknowledged records", n), func() error {
			if got := ackedCount(); got < n {
				return fmt.Errorf("%d acknowledged", got)
			}
			return nil
		})
	}

	// A consumer group member reads the topic throughout, committing as it goes.
	group, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup("grow-readers"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	var groupMu sync.Mutex
	groupSeen := map[string]bool{}
	groupCtx, groupCancel := context.WithCancel(ctx)
	groupDone := make(chan struct{})
	go func() {
		defer close(groupDone)
		for groupCtx.Err() == nil {
			fs := group.PollFetches(groupCtx)
			groupMu.Lock()
			fs.EachRecord(func(r *kgo.Record) { groupSeen[string(r.Value)] = true })
			groupMu.Unlock()
		}
	}()
	defer func() { groupCancel(); <-groupDone }()
	waitAcked(200)

	// The fourth node: broker only, following the three voters' metadata log.
	var voters []string
	for i, addr := range c.ControllerAddrs {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addr))
	}
	port := freePort(t)
	fourth := newBroker(t, BrokerOptions{Port: port}, append([]string{
		"node.id=4",
		"process.roles=broker",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port),
		"controller.listener.names=CONTROLLER",
		"controller.quorum.voters=" + strings.Join(voters, ","),
	}, settings...)...)
	fourth.start()
	c.Nodes = append(c.Nodes, fourth)
	c.ControllerAddrs = append(c.ControllerAddrs, "")
	boot := strings.Join(c.Bootstrap(), ",")

	waitFor(t, clusterDeadline, "four brokers in Metadata and DescribeCluster", func() error {
		for _, b := range c.Nodes {
			ids, err := liveBrokers(b.Addr)
			if err != nil {
				return err
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []int32{1, 2, 3, 4}) {
				return fmt.Errorf("%s lists brokers %v", b.Addr, ids)
			}
		}
		resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		var ids []int32
		for _, b := range resp.Brokers {
			ids = append(ids, b.NodeID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{1, 2, 3, 4}) {
			return fmt.Errorf("DescribeCluster lists brokers %v", ids)
		}
		return nil
	})
	// The metadata quorum has it as an observer (a raft learner), not a voter.
	bootstrapController := strings.Join(c.voterAddrs(), ",")
	waitFor(t, clusterDeadline, "kafka-metadata-quorum to list node 4 as an observer", func() error {
		replication, _ := javaTool(t, "", "org.apache.kafka.tools.MetadataQuorumCommand",
			"--bootstrap-controller", bootstrapController, "describe", "--replication")
		for _, line := range strings.Split(replication, "\n") {
			// NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status
			if f := strings.Fields(line); len(f) >= 6 && f[0] == "4" {
				if f[len(f)-1] != "Observer" {
					return fmt.Errorf("node 4's row %v:\n%s", f, replication)
				}
				return nil
			}
		}
		return fmt.Errorf("--replication does not list node 4:\n%s", replication)
	})
	stdout, _ := javaTool(t, "", "org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", c.Nodes[0].Addr)
	if !strings.Contains(stdout, fourth.Addr+" (id: 4 ") {
		t.Fatalf("kafka-broker-api-versions does not list the new broker %s:\n%s", fourth.Addr, clip(stdout))
	}

	// --generate over the four brokers, then --execute and --verify that plan.
	dir := t.TempDir()
	topicsFile := filepath.Join(dir, "topics.json")
	if err := os.WriteFile(topicsFile, []byte(`{"version":1,"topics":[{"topic":"grow"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--generate",
		"--topics-to-move-json-file", topicsFile, "--broker-list", "1,2,3,4")
	_, proposed := generatedAssignments(t, out)
	if len(proposed.Partitions) != partitions {
		t.Fatalf("--generate proposed %d partitions, want %d:\n%s", len(proposed.Partitions), partitions, out)
	}
	target := map[int32][]int32{}
	var firstOnFourth []int32 // partitions whose preferred replica is the new broker
	for _, p := range proposed.Partitions {
		target[p.Partition] = p.Replicas
		if len(p.Replicas) > 0 && p.Replicas[0] == 4 {
			firstOnFourth = append(firstOnFourth, p.Partition)
		}
	}
	if len(firstOnFourth) == 0 {
		t.Fatalf("--generate over brokers 1-4 made broker 4 the preferred replica of no partition:\n%s", out)
	}
	plan, err := jsonPlan(proposed)
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planFile, plan, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--execute", "--reassignment-json-file", planFile)
	if !strings.Contains(out, "Successfully started partition reassignment") {
		t.Fatalf("--execute printed:\n%s", out)
	}
	waitFor(t, 2*clusterDeadline, "--verify to report every reassignment complete", func() error {
		out, _ := javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--verify", "--reassignment-json-file", planFile)
		for p := range target {
			if !strings.Contains(out, fmt.Sprintf("Reassignment of partition %s-%d is completed.", topic, p)) {
				return fmt.Errorf("--verify printed:\n%s", out)
			}
		}
		return nil
	})
	if listed := listReassignments(ctx, t, cl); len(listed) != 0 {
		t.Fatalf("reassignments still listed: %+v", listed)
	}

	// A preferred election hands the new broker the partitions it is first in.
	out, _ = javaTool(t, "", "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", boot,
		"--election-type", "preferred", "--all-topic-partitions")
	// With --all-topic-partitions the answer lists only the partitions it elected, so it may
	// be empty when the reassignment already moved every removed leader's partition to its
	// first target replica (as Kafka's controller answers; a failure exits non-zero).
	t.Logf("kafka-leader-election --election-type preferred --all-topic-partitions said: %q", strings.TrimSpace(out))
	if strings.Contains(out, "Error completing leader election") {
		t.Fatalf("kafka-leader-election said:\n%s", out)
	}
	waitFor(t, clusterDeadline, "the new broker leading the partitions it is preferred for, with full ISRs", func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		for _, p := range td[topic].Partitions {
			want := target[p.Partition]
			if !slices.Equal(p.Replicas, want) {
				return fmt.Errorf("%s-%d replicas %v, want %v", topic, p.Partition, p.Replicas, want)
			}
			if p.Leader != want[0] || len(p.ISR) != len(want) {
				return fmt.Errorf("%s-%d leader %d ISR %v, want leader %d and all of %v", topic, p.Partition, p.Leader, p.ISR, want[0], want)
			}
		}
		return nil
	})
	for _, p := range firstOnFourth {
		if _, err := os.Stat(filepath.Join(fourth.Dir, fmt.Sprintf("%s-%d", topic, p))); err != nil {
			t.Fatalf("the new broker leads %s-%d but has no log for it: %v", topic, p, err)
		}
	}
	t.Logf("broker 4 holds %d partitions' replicas and leads %v", countOn(target, 4), firstOnFourth)

	// The producer and the group carry on under the new placement.
	waitAcked(ackedCount() + 300)
	close(stop)
	if err := <-produced; err != nil {
		t.Fatalf("the producer failed during the scale-out: %v", err)
	}
	final := map[string]bool{}
	mu.Lock()
	for v := range acked {
		final[v] = true
	}
	mu.Unlock()
	waitFor(t, clusterDeadline, "the group's consumer to have read every acknowledged record", func() error {
		groupMu.Lock()
		defer groupMu.Unlock()
		missing := 0
		for v := range final {
			if !groupSeen[v] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d acknowledged records not yet consumed by the group", missing, len(final))
		}
		return nil
	})

	// Every acknowledged record, exactly once, from a fresh reader.
	reader, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	seen := map[string]int{}
	rctx, rcancel := context.WithTimeout(ctx, clusterDeadline)
	defer rcancel()
	for n := 0; n < len(final) && rctx.Err() == nil; {
		reader.PollFetches(rctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
	}
	for v := range final {
		if seen[v] != 1 {
			t.Fatalf("acknowledged record %s read %d times (%d acknowledged)", v, seen[v], len(final))
		}
	}
	t.Logf("%d acknowledged records, each read back once; the group read them all", len(final))
}

// jsonPlan is a reassignment file for kafka-reassign-partitions --execute.
func jsonPlan(r reassignmentJSON) ([]byte, error) {
	var parts []string
	for _, p := range r.Partitions {
		var replicas []string
		for _, id := range p.Replicas {
			replicas = append(replicas, fmt.Sprint(id))
		}
		parts = append(parts, fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":[%s]}`, p.Topic, p.Partition, strings.Join(replicas, ",")))
	}
	return []byte(`{"version":1,"partitions":[` + strings.Join(parts, ",") + `]}`), nil
}

// countOn is how many partitions of target have a replica on broker id.
func countOn(target map[int32][]int32, id int32) int {
	n := 0
	for _, replicas := range target {
		if slices.Contains(replicas, id) {
			n++
		}
	}
	return n
}
