package compattests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
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

const reassignCommand = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"

// reassignmentJSON is kafka-reassign-partitions' reassignment file.
type reassignmentJSON struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs,omitempty"`
	} `json:"partitions"`
}

// TestReassignPartitionsTool moves replicas between the brokers of a three-node cluster with
// Apache Kafka's kafka-reassign-partitions (--generate, --execute, --verify) while an
// idempotent acks=all producer writes: a replication factor 2 topic moves each partition off
// one of its brokers (partition 0 off its leader, so leadership moves too), and a replication
// factor 1 topic moves its only replica to another broker. Every acknowledged record is read
// back exactly once afterwards, the brokers that lost a replica removed its directory, and no
// reassignment is left listed. (A fourth broker cannot join yet: every node is a voter until
// broker-only nodes exist, so the moves stay within the three.)
func TestReassignPartitionsTool(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	c := StartCluster(t, 3, clusterSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*clusterDeadline)
	defer cancel()
	adm, cl := clusterAdmin(t, c.Bootstrap()...)
	boot := strings.Join(c.Bootstrap(), ",")

	for name, assignment := range map[string]map[int32][]int32{
		"moving": {0: {1, 2}, 1: {2, 3}},
		"single": {0: {1}},
	} {
		if err := createWithAssignment(ctx, cl, name, assignment); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}

	// An idempotent acks=all producer writes to every partition until told to stop.
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(1000), kgo.RetryTimeout(clusterDeadline), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var mu sync.Mutex
	acked := map[string]map[string]bool{"moving": {}, "single": {}}
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
			var wg sync.WaitGroup
			var firstErr error
			for _, topic := range []string{"moving", "single"} {
				v := fmt.Sprintf("%s-%06d", topic, i)
				wg.Add(1)
				producer.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						if firstErr == nil {
							firstErr = fmt.Errorf("produce %s: %w", v, err)
						}
						return
					}
					acked[topic][v] = true
				})
			}
			wg.Wait()
			if firstErr != nil {
				produced <- firstErr
				return
			}
		}
	}()
	waitAcked := func(n int) {
		t.Helper()
		waitFor(t, clusterDeadline, fmt.Sprintf("%d more acknowledged records", n), func() error {
			mu.Lock()
			defer mu.Unlock()
			if got := len(acked["moving"]); got < n {
				return fmt.Errorf("%d acknowledged", got)
			}
			return nil
		})
	}
	waitAcked(200)

	dir := t.TempDir()
	topicsFile := filepath.Join(dir, "topics.json")
	if err := os.WriteFile(topicsFile, []byte(`{"version":1,"topics":[{"topic":"moving"},{"topic":"single"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// --generate proposes a placement on the brokers given, from the current one it prints.
	out, _ := javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--generate",
		"--topics-to-move-json-file", topicsFile, "--broker-list", "2,3")
	current, proposed := generatedAssignments(t, out)
	if len(current.Partitions) != 3 || len(proposed.Partitions) != 3 {
		t.Fatalf("--generate printed %d current and %d proposed partitions, want 3 each:\n%s", len(current.Partitions), len(proposed.Partitions), out)
	}
	for _, p := range proposed.Partitions {
		for _, r := range p.Replicas {
			if r != 2 && r != 3 {
				t.Fatalf("--generate placed %s-%d on broker %d, not in --broker-list 2,3:\n%s", p.Topic, p.Partition, r, out)
			}
		}
	}

	// Our own plan: moving-0 1,2 -> 3,2 (its leader 1 leaves), moving-1 2,3 -> 3,1, single-0 1 -> 2.
	targets := map[string][]int32{"moving-0": {3, 2}, "moving-1": {3, 1}, "single-0": {2}}
	plan := `{"version":1,"partitions":[` +
		`{"topic":"moving","partition":0,"replicas":[3,2]},` +
		`{"topic":"moving","partition":1,"replicas":[3,1]},` +
		`{"topic":"single","partition":0,"replicas":[2]}]}`
	planFile := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	// --throttle sets the throttle rates on every broker and the throttled replicas on the
	// topics (high enough not to slow this test; broker/throttle_test.go shows them bite).
	out, _ = javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--execute", "--reassignment-json-file", planFile,
		"--throttle", "50000000")
	for _, want := range []string{"The inter-broker throttle limit was set to 50000000 B/s",
		"Successfully started partition reassignments for moving-0,moving-1,single-0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("--execute --throttle lacks %q:\n%s", want, out)
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "moving")
	if err != nil {
		t.Fatal(err)
	}
	throttledReplicas := map[string]string{}
	for _, c := range rc[0].Configs {
		if strings.HasSuffix(c.Key, ".replication.throttled.replicas") {
			throttledReplicas[c.Key] = c.MaybeValue()
		}
	}
	if throttledReplicas["follower.replication.throttled.replicas"] == "" || throttledReplicas["leader.replication.throttled.replicas"] == "" {
		t.Fatalf("--execute --throttle left the topic's throttled replicas %v", throttledReplicas)
	}
	t.Logf("moving's throttled replicas during the reassignment: %v", throttledReplicas)
	brokerThrottle := func() map[string]string {
		t.Helper()
		rc, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil || len(rc) != 1 {
			t.Fatalf("describe broker 1: %v %v", rc, err)
		}
		got := map[string]string{}
		for _, c := range rc[0].Configs {
			if strings.HasSuffix(c.Key, ".replication.throttled.rate") {
				got[c.Key] = c.MaybeValue() + " " + c.Source.String()
			}
		}
		return got
	}
	if got := brokerThrottle(); got["leader.replication.throttled.rate"] != "50000000 DYNAMIC_BROKER_CONFIG" ||
		got["follower.replication.throttled.rate"] != "50000000 DYNAMIC_BROKER_CONFIG" {
		t.Fatalf("broker 1's throttle rates during the reassignment: %v", got)
	}
	waitFor(t, 2*clusterDeadline, "--verify to report every reassignment complete and clear the throttles", func() error {
		out, _ := javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--verify", "--reassignment-json-file", planFile)
		for tp := range targets {
			if !strings.Contains(out, "Reassignment of partition "+tp+" is completed.") {
				return fmt.Errorf("--verify printed:\n%s", out)
			}
		}
		if !strings.Contains(out, "Clearing broker-level throttles") || !strings.Contains(out, "Clearing topic-level throttles") {
			return fmt.Errorf("--verify did not clear the throttles:\n%s", out)
		}
		return nil
	})
	if got := brokerThrottle(); len(got) != 0 {
		t.Fatalf("broker 1 keeps throttle rates after --verify: %v", got)
	}
	rc, err = adm.DescribeTopicConfigs(ctx, "moving", "single")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rc {
		for _, c := range r.Configs {
			if strings.HasSuffix(c.Key, ".replication.throttled.replicas") && c.MaybeValue() != "" {
				t.Fatalf("%s keeps %s=%s after --verify", r.Name, c.Key, c.MaybeValue())
			}
		}
	}
	mu.Lock()
	before := len(acked["moving"])
	mu.Unlock()
	waitAcked(before + 200) // the producer carries on under the new leaders
	close(stop)
	if err := <-produced; err != nil {
		t.Fatalf("the producer failed during the reassignment: %v", err)
	}

	td, err := adm.ListTopics(ctx, "moving", "single")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"moving", "single"} {
		for _, p := range td[topic].Partitions {
			want := targets[fmt.Sprintf("%s-%d", topic, p.Partition)]
			if !slices.Equal(p.Replicas, want) || !slices.Contains(want, p.Leader) {
				t.Fatalf("%s-%d: replicas %v leader %d ISR %v, want replicas %v", topic, p.Partition, p.Replicas, p.Leader, p.ISR, want)
			}
		}
	}
	if listed := listReassignments(ctx, t, cl); len(listed) != 0 {
		t.Fatalf("reassignments still listed: %+v", listed)
	}
	// The brokers that lost a replica removed its directory.
	for tp, gone := range map[string]int{"moving-0": 1, "moving-1": 2, "single-0": 1} {
		path := filepath.Join(c.Nodes[gone-1].Dir, tp)
		waitFor(t, clusterDeadline, path+" removed", func() error {
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("stat: %v", err)
			}
			return nil
		})
	}

	// Every acknowledged record, exactly once.
	for _, topic := range []string{"moving", "single"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		rctx, rcancel := context.WithTimeout(ctx, clusterDeadline)
		for n := 0; n < len(acked[topic]) && rctx.Err() == nil; {
			cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
		}
		rcancel()
		cl.Close()
		for v := range acked[topic] {
			if seen[v] != 1 {
				t.Fatalf("acknowledged record %s read %d times (%d acknowledged in %s)", v, seen[v], len(acked[topic]), topic)
			}
		}
		t.Logf("%s: %d acknowledged records, each read back once", topic, len(acked[topic]))
	}
}

// createWithAssignment creates topic name with an explicit replica assignment.
func createWithAssignment(ctx context.Context, cl *kgo.Client, name string, assignment map[int32][]int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("%d topics answered", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("%w: %s", err, deref(resp.Topics[0].ErrorMessage))
	}
	return nil
}

// generatedAssignments parses --generate's two JSON documents (current, then proposed).
func generatedAssignments(t *testing.T, out string) (current, proposed reassignmentJSON) {
	t.Helper()
	var docs []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			docs = append(docs, line)
		}
	}
	if len(docs) != 2 {
		t.Fatalf("--generate printed %d JSON documents, want 2:\n%s", len(docs), out)
	}
	if err := json.Unmarshal([]byte(docs[0]), &current); err != nil {
		t.Fatalf("current assignment %q: %v", docs[0], err)
	}
	if err := json.Unmarshal([]byte(docs[1]), &proposed); err != nil {
		t.Fatalf("proposed assignment %q: %v", docs[1], err)
	}
	return current, proposed
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestReassignCancelUnderThrottle: a replica move throttled to 1 B/s with
// kafka-reassign-partitions --throttle stays in progress (the new replica gets one fetch of
// replica.fetch.max.bytes, then no more while the leader's and the follower's quotas are
// exceeded), --verify says so and ListPartitionReassignments lists it; --cancel reverts it:
// the partition is back on its original broker alone, the half-copied replica's directory is
// removed, and the throttles are cleared.
func TestReassignCancelUnderThrottle(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	c := StartCluster(t, 3, clusterSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*clusterDeadline)
	defer cancel()
	adm, cl := clusterAdmin(t, c.Bootstrap()...)
	boot := strings.Join(c.Bootstrap(), ",")
	if err := createWithAssignment(ctx, cl, "slow", map[int32][]int32{0: {1}}); err != nil {
		t.Fatal(err)
	}
	// Uncompressed and random, so the log really is 3 MB: three times what one replica fetch
	// carries for a partition (replica.fetch.max.bytes).
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic("slow"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var records []*kgo.Record
	for range 3000 {
		value := make([]byte, 1000)
		for i := range value {
			value[i] = byte(rng.Uint32())
		}
		records = append(records, &kgo.Record{Value: value})
	}
	if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"slow","partition":0,"replicas":[2]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--execute", "--reassignment-json-file", plan, "--throttle", "1")
	if !strings.Contains(out, "The inter-broker throttle limit was set to 1 B/s") {
		t.Fatalf("--execute --throttle 1 printed:\n%s", out)
	}
	newDir := filepath.Join(c.Nodes[1].Dir, "slow-0")
	waitFor(t, clusterDeadline, "broker 2 to hold part of the log", func() error {
		if _, err := os.Stat(newDir); err != nil {
			return err
		}
		return nil
	})
	out, _ = javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--verify", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Reassignment of partition slow-0 is still in progress.") {
		t.Fatalf("--verify of a throttled move printed:\n%s", out)
	}
	listed := listReassignments(ctx, t, cl)
	if len(listed) != 1 || listed[0].Topic != "slow" || len(listed[0].Partitions) != 1 {
		t.Fatalf("listed %+v, want the one move", listed)
	}
	if r := listed[0].Partitions[0]; !slices.Equal(r.Replicas, []int32{2, 1}) || !slices.Equal(r.AddingReplicas, []int32{2}) ||
		!slices.Equal(r.RemovingReplicas, []int32{1}) {
		t.Fatalf("listed %+v", r)
	}

	out, _ = javaTool(t, "", reassignCommand, "--bootstrap-server", boot, "--cancel", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Successfully cancelled partition reassignment") {
		t.Fatalf("--cancel printed:\n%s", out)
	}
	td, err := adm.ListTopics(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if p := td["slow"].Partitions[0]; !slices.Equal(p.Replicas, []int32{1}) || p.Leader != 1 {
		t.Fatalf("after --cancel: replicas %v leader %d, want back on 1", p.Replicas, p.Leader)
	}
	waitFor(t, clusterDeadline, "broker 2's partial replica removed", func() error {
		if _, err := os.Stat(newDir); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stat %s: %v", newDir, err)
		}
		return nil
	})
	rc, err := adm.DescribeTopicConfigs(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if strings.HasSuffix(c.Key, ".replication.throttled.replicas") && c.MaybeValue() != "" {
			t.Fatalf("--cancel left %s=%s", c.Key, c.MaybeValue())
		}
	}
	if listed := listReassignments(ctx, t, cl); len(listed) != 0 {
		t.Fatalf("still listed after --cancel: %+v", listed)
	}
}

// listReassignments asks ListPartitionReassignments for every reassignment (a null topic
// list; kadm answers an empty set without asking).
func listReassignments(ctx context.Context, t *testing.T, cl *kgo.Client) []kmsg.ListPartitionReassignmentsResponseTopic {
	t.Helper()
	resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ListPartitionReassignments: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.Topics
}
