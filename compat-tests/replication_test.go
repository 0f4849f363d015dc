package compattests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReplicationSurvivesLeaderKill: on three real processes, a topic with replication factor
// 3 and min.insync.replicas=2 keeps every acknowledged record when the leader of its
// partitions is killed with SIGKILL: an idempotent acks=all producer carries on against the new
// leaders, every acknowledged record is read back exactly once, and the killed broker, once
// restarted, catches up and rejoins the ISR.
func TestReplicationSurvivesLeaderKill(t *testing.T) {
	c := StartCluster(t, 3, clusterSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*clusterDeadline)
	defer cancel()
	adm, _ := clusterAdmin(t, c.Bootstrap()...)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "replicated"); err != nil {
		t.Fatalf("create RF 3: %v", err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic("replicated"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RetryTimeout(clusterDeadline))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	acked := map[string]bool{}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			v := fmt.Sprintf("r%05d", i)
			if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked[v] = true
		}
	}
	produce(0, 600)

	td, err := adm.ListTopics(ctx, "replicated")
	if err != nil || td["replicated"].Err != nil {
		t.Fatalf("describe: %v", err)
	}
	leader := td["replicated"].Partitions[0].Leader
	for _, p := range td["replicated"].Partitions {
		if len(p.ISR) != 3 {
			t.Fatalf("partition %d ISR %v before the kill, want all three", p.Partition, p.ISR)
		}
	}
	victim := c.Nodes[leader-1]
	killed := time.Now()
	victim.Kill()
	produce(600, 1200) // the producer finds the new leaders by itself
	t.Logf("leader %d killed; 600 more acks=all records acknowledged %v later", leader, time.Since(killed).Round(time.Millisecond))

	readAll := func(seed string) []string {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var values []string
		rctx, rcancel := context.WithTimeout(ctx, clusterDeadline)
		defer rcancel()
		for len(values) < len(acked) && rctx.Err() == nil {
			cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
		}
		return values
	}
	var alive string
	for _, b := range c.Nodes {
		if b != victim {
			alive = b.Addr
		}
	}
	values := readAll(alive)
	seen := map[string]int{}
	for _, v := range values {
		seen[v]++
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acknowledged record %s read %d times (read %d records, %d acknowledged)", v, seen[v], len(values), len(acked))
		}
	}

	victim.Restart()
	waitFor(t, clusterDeadline, "the restarted broker back in every ISR", func() error {
		td, err := adm.ListTopics(ctx, "replicated")
		if err != nil {
			return err
		}
		for _, p := range td["replicated"].Partitions {
			if !slices.Contains(p.ISR, leader) {
				return fmt.Errorf("partition %d ISR %v", p.Partition, p.ISR)
			}
		}
		return nil
	})
}
