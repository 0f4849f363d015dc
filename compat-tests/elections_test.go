package compattests

// Preferred leadership on real processes: kafka-leader-election (Apache Kafka's
// LeaderElectionCommand) moves a partition back to its preferred replica once that replica is
// in the ISR again, and auto.leader.rebalance.enable does the same by itself.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// killAndRejoin kills the preferred leader of topic's partition 0, waits until another
// replica leads it, restarts the victim and waits until it is back in the ISR. It returns the
// victim's node ID.
func killAndRejoin(t *testing.T, c *Cluster, topic string) int32 {
	t.Helper()
	var preferred int32
	waitFor(t, clusterDeadline, "partition 0 led by its preferred replica with a full ISR", func() error {
		l, isr, err := metadataPartition(c.Nodes[0].Addr, topic, 0)
		if err != nil {
			return err
		}
		if len(isr) != 3 {
			return fmt.Errorf("leader %d, ISR %v", l, isr)
		}
		preferred = l
		return nil
	})
	victim := c.Nodes[preferred-1]
	survivor := c.Nodes[preferred%3]
	victim.Kill()
	waitFor(t, clusterDeadline, "a new leader", func() error {
		l, _, err := metadataPartition(survivor.Addr, topic, 0)
		if err != nil || l == preferred || l < 0 {
			return fmt.Errorf("leader %d (%v)", l, err)
		}
		return nil
	})
	victim.Restart()
	waitFor(t, clusterDeadline, "the restarted node back in the ISR", func() error {
		_, isr, err := metadataPartition(survivor.Addr, topic, 0)
		if err != nil || !slices.Contains(isr, preferred) {
			return fmt.Errorf("ISR %v (%v)", isr, err)
		}
		return nil
	})
	return preferred
}

func produceSome(t *testing.T, seeds []string, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// TestLeaderElectionToolPreferred: with auto rebalance off, a restarted preferred replica does
// not lead again by itself; kafka-leader-election --election-type preferred
// --all-topic-partitions moves it back and says so, and a second run finds nothing to do.
func TestLeaderElectionToolPreferred(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	c := StartCluster(t, 3, "auto.leader.rebalance.enable=false")
	adm, _ := clusterAdmin(t, c.Bootstrap()...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*clusterDeadline)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "pref"); err != nil {
		t.Fatal(err)
	}
	produceSome(t, c.Bootstrap(), "pref")
	preferred := killAndRejoin(t, c, "pref")
	if l, _, err := metadataPartition(c.Nodes[0].Addr, "pref", 0); err != nil || l == preferred {
		t.Fatalf("leader %d (%v) right after the rejoin: auto rebalance is off", l, err)
	}
	out, _ := javaTool(t, "", "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", strings.Join(c.Bootstrap(), ","),
		"--election-type", "preferred", "--all-topic-partitions")
	if !strings.Contains(out, "Successfully completed leader election (PREFERRED) for partitions") || !strings.Contains(out, "pref-0") {
		t.Fatalf("kafka-leader-election said:\n%s", out)
	}
	if l, _, err := metadataPartition(c.Nodes[1].Addr, "pref", 0); err != nil || l != preferred {
		t.Fatalf("after the election partition 0 is led by %d (%v), want its preferred replica %d", l, err, preferred)
	}
	out, _ = javaTool(t, "", "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", c.Nodes[2].Addr,
		"--election-type", "preferred", "--topic", "pref", "--partition", "0")
	if !strings.Contains(out, "Valid replica already elected for partitions pref-0") {
		t.Fatalf("a second election said:\n%s", out)
	}
	produceSome(t, c.Bootstrap(), "pref")
}

// TestPreferredLeaderReturnsAfterRestart: with Kafka's default auto.leader.rebalance.enable and
// a one-second leader.imbalance.check.interval.seconds, a killed preferred leader that is
// restarted and rejoins the ISR leads its partition again without anyone asking.
func TestPreferredLeaderReturnsAfterRestart(t *testing.T) {
	c := StartCluster(t, 3, "leader.imbalance.check.interval.seconds=1")
	adm, _ := clusterAdmin(t, c.Bootstrap()...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*clusterDeadline)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "auto"); err != nil {
		t.Fatal(err)
	}
	produceSome(t, c.Bootstrap(), "auto")
	preferred := killAndRejoin(t, c, "auto")
	waitFor(t, clusterDeadline, "the preferred replica leading again", func() error {
		l, _, err := metadataPartition(c.Nodes[0].Addr, "auto", 0)
		if err != nil || l != preferred {
			return fmt.Errorf("leader %d (%v)", l, err)
		}
		return nil
	})
	produceSome(t, c.Bootstrap(), "auto")
}
