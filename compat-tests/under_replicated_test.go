package compattests

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const topicCommand = "org.apache.kafka.tools.TopicCommand"

// urpPartitions are the partitions of topic that kafka-topics --describe with flag lists.
func urpPartitions(t *testing.T, boot, topic, flag string) []string {
	t.Helper()
	out, _ := javaTool(t, "", topicCommand, "--bootstrap-server", boot, "--describe", "--topic", topic, flag)
	var parts []string
	for _, m := range regexp.MustCompile(`Topic: `+regexp.QuoteMeta(topic)+`\s+Partition: (\d+)`).FindAllStringSubmatch(out, -1) {
		parts = append(parts, m[1])
	}
	slices.Sort(parts)
	return parts
}

// TestUnderReplicatedPartitions: on three real processes, kafka-topics --describe
// --under-replicated-partitions and --under-min-isr-partitions list nothing while every
// replica is in sync, list every partition of a replication factor 3 topic once a follower
// is paused with SIGSTOP (its leaders drop it from the ISR after replica.lag.time.max.ms),
// and nothing again once it is resumed and has caught up. kafka-topics --alter --partitions
// places the new partitions on all three brokers with full ISRs, and kafka-log-dirs reports
// every replica with its size on every broker.
func TestUnderReplicatedPartitions(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	c := StartCluster(t, 3, "broker.heartbeat.interval.ms=500", "replica.lag.time.max.ms=2000")
	ctx, cancel := context.WithTimeout(context.Background(), 4*clusterDeadline)
	defer cancel()
	adm, cl := clusterAdmin(t, c.Bootstrap()...)
	boot := strings.Join(c.Bootstrap(), ",")
	// The node to pause is a follower of the topic's first partitions and not the active
	// controller, so pausing it leaves every partition led, the quorum serving, and its ISRs
	// shrinking (pausing the active controller would test a controller failover instead).
	pausedID := int32(3)
	if c.quorumLeader(t) == pausedID {
		pausedID = 1
	}
	var liveIDs []int32
	var liveAddrs []string
	for id := int32(1); id <= 3; id++ {
		if id != pausedID {
			liveIDs = append(liveIDs, id)
			liveAddrs = append(liveAddrs, c.Nodes[id-1].Addr)
		}
	}
	liveBoot := strings.Join(liveAddrs, ",")
	a, b := liveIDs[0], liveIDs[1]
	if err := createWithAssignment(ctx, cl, "urp", map[int32][]int32{0: {a, b, pausedID}, 1: {b, a, pausedID}}); err != nil {
		t.Fatal(err)
	}
	minISR := "3"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: &minISR}}, "urp"); err != nil {
		t.Fatal(err)
	}
	javaTool(t, "", topicCommand, "--bootstrap-server", boot, "--alter", "--topic", "urp", "--partitions", "4")

	out, _ := javaTool(t, "", topicCommand, "--bootstrap-server", boot, "--describe", "--topic", "urp")
	line := regexp.MustCompile(`Partition: (\d+)\s+Leader: (\d+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]+)`)
	rows := line.FindAllStringSubmatch(out, -1)
	if len(rows) != 4 {
		t.Fatalf("--describe shows %d partitions, want 4:\n%s", len(rows), out)
	}
	for _, r := range rows[2:] {
		replicas := strings.Split(r[3], ",")
		slices.Sort(replicas)
		if !slices.Equal(replicas, []string{"1", "2", "3"}) {
			t.Fatalf("new partition %s placed on %s, want all three brokers:\n%s", r[1], r[3], out)
		}
	}
	waitFor(t, clusterDeadline, "no under-replicated partitions", func() error {
		if got := urpPartitions(t, boot, "urp", "--under-replicated-partitions"); len(got) != 0 {
			return fmt.Errorf("listed %v", got)
		}
		return nil
	})
	if got := urpPartitions(t, boot, "urp", "--under-min-isr-partitions"); len(got) != 0 {
		t.Fatalf("--under-min-isr-partitions lists %v with every replica in sync", got)
	}

	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic("urp"), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	for i := range 40 {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%03d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// kafka-log-dirs: every broker reports every replica, with its bytes.
	waitFor(t, clusterDeadline, "kafka-log-dirs to report every replica with data", func() error {
		out, _ := javaTool(t, "", "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", boot, "--describe",
			"--broker-list", "1,2,3", "--topic-list", "urp")
		sizes := regexp.MustCompile(`"partition":"urp-(\d)","size":(\d+),"offsetLag":(\d+)`).FindAllStringSubmatch(out, -1)
		if len(sizes) != 12 {
			return fmt.Errorf("%d replicas reported, want 12:\n%s", len(sizes), out)
		}
		for _, s := range sizes {
			if s[2] == "0" {
				return fmt.Errorf("replica of urp-%s reported empty:\n%s", s[1], out)
			}
		}
		return nil
	})

	paused := c.Nodes[pausedID-1]
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = paused.Resume() })
	for i := range 8 { // traffic makes the paused follower fall behind
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "w%03d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"0", "1", "2", "3"}
	waitFor(t, clusterDeadline, "every partition under-replicated", func() error {
		if got := urpPartitions(t, liveBoot, "urp", "--under-replicated-partitions"); !slices.Equal(got, all) {
			return fmt.Errorf("listed %v", got)
		}
		return nil
	})
	if got := urpPartitions(t, liveBoot, "urp", "--under-min-isr-partitions"); !slices.Equal(got, all) {
		t.Fatalf("--under-min-isr-partitions lists %v with an ISR of 2 under min.insync.replicas=3, want %v", got, all)
	}

	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, clusterDeadline, "no under-replicated partitions after the resume", func() error {
		if got := urpPartitions(t, boot, "urp", "--under-replicated-partitions"); len(got) != 0 {
			return fmt.Errorf("listed %v", got)
		}
		return nil
	})
	if got := urpPartitions(t, boot, "urp", "--under-min-isr-partitions"); len(got) != 0 {
		t.Fatalf("--under-min-isr-partitions lists %v after the resume", got)
	}
}
