package compattests

// Eligible leader replicas (KIP-966) and unclean leader election on real processes, seen
// through Apache Kafka's own kafka-topics --describe: three processes, node 1 the only voter
// (a combined node hosting none of the partitions, so brokers can die without the metadata
// quorum losing its majority and the tool still has a broker to ask), nodes 2 and 3 brokers
// holding the RF 2 partitions. The fields compared (Leader, Isr, Elr, LastKnownElr) are
// the ones a Kafka 4.4 cluster with its defaults (eligible.leader.replicas.version=1) shows
// for the same steps, by the rules of Kafka's PartitionChangeBuilder.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// describePartition runs kafka-topics --describe against addr and returns the fields of
// topic's partition 0 line ("Leader" → "2", "Isr" → "2,3", ...).
func describePartition(t *testing.T, addr, topic string) map[string]string {
	t.Helper()
	out, _ := javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", addr, "--describe", "--topic", topic)
	for _, line := range strings.Split(out, "\n") {
		fields := map[string]string{}
		for _, f := range strings.Split(line, "\t") {
			if k, v, ok := strings.Cut(f, ":"); ok {
				fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		if fields["Topic"] == topic && fields["Partition"] == "0" {
			return fields
		}
	}
	t.Fatalf("kafka-topics --describe --topic %s has no partition 0 line:\n%s", topic, out)
	return nil
}

// waitDescribe waits until kafka-topics shows want for topic's partition 0.
func waitDescribe(t *testing.T, addr, topic, what string, want map[string]string) {
	t.Helper()
	waitFor(t, clusterDeadline, what, func() error {
		got := describePartition(t, addr, topic)
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("%s: %s is %q, want %q (line %v)", topic, k, got[k], v, got)
			}
		}
		return nil
	})
}

func produceWithAcks(t *testing.T, addr, topic string, acks kgo.Acks, values ...string) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(acks)}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q to %s: %v", v, topic, err)
		}
	}
}

// readPartitionZero reads topic's partition 0 from the start up to its high watermark.
func readPartitionZero(t *testing.T, addr, topic string) []string {
	t.Helper()
	adm, cl := clusterAdmin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl.Close()
	var out []string
	if end.Offset == 0 {
		return out
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for int64(len(out)) < end.Offset {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v after %d of %d records", topic, err, len(out), end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// TestEligibleLeaderReplicasDescribe: with min.insync.replicas=2 on an RF 2 partition, the
// follower that stops leaves the ISR for the ELR; when the leader dies too the ISR is empty,
// both are eligible and the last leader is remembered; the first eligible replica to come
// back leads with every acknowledged record, and the other rejoins. A second topic with
// unclean.leader.election.enable=true and min.insync.replicas=1 shows what unclean election
// costs: the out-of-sync replica that comes back first leads, and the records only the dead
// leader had are gone. A third, with Kafka's default unclean.leader.election.enable=false, stays
// offline instead, until kafka-leader-election --election-type unclean elects that replica.
func TestEligibleLeaderReplicasDescribe(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	c := StartClusterWith(t, []string{RoleCombined, RoleBroker, RoleBroker}, clusterSettings...)
	b2, b3 := c.Nodes[1], c.Nodes[2]
	waitFor(t, clusterDeadline, "three brokers in Metadata", func() error {
		ids, err := liveBrokers(b2.Addr)
		if err != nil || len(ids) != 3 {
			return fmt.Errorf("brokers %v (%v)", ids, err)
		}
		return nil
	})
	javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b2.Addr, "--create", "--topic", "elr",
		"--replica-assignment", "2:3", "--config", "min.insync.replicas=2")
	javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b2.Addr, "--create", "--topic", "unclean",
		"--replica-assignment", "2:3", "--config", "min.insync.replicas=1", "--config", "unclean.leader.election.enable=true")
	javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b2.Addr, "--create", "--topic", "manual",
		"--replica-assignment", "2:3", "--config", "min.insync.replicas=1")
	full := map[string]string{"Leader": "2", "Replicas": "2,3", "Isr": "2,3", "Elr": "", "LastKnownElr": ""}
	waitDescribe(t, b2.Addr, "elr", "elr with a full ISR", full)
	waitDescribe(t, b2.Addr, "unclean", "unclean with a full ISR", full)
	waitDescribe(t, b2.Addr, "manual", "manual with a full ISR", full)
	produceWithAcks(t, b2.Addr, "elr", kgo.AllISRAcks(), "a", "b", "c")
	produceWithAcks(t, b2.Addr, "unclean", kgo.AllISRAcks(), "a", "b", "c")

	// The follower stops: the ISR (2) is below min.insync.replicas, so 3, which had every
	// committed record, becomes eligible. On "unclean" one replica is enough: no ELR, and
	// writes acknowledged by 2 alone are committed there. It stops cleanly (SIGTERM): a killed
	// one would leave the ELR when it registers again (KIP-966 unclean shutdown detection,
	// unclean_shutdown_test.go), and could not be elected from it below.
	if !b3.Stop() {
		t.Fatal("3 did not stop on SIGTERM")
	}
	waitDescribe(t, b2.Addr, "elr", "3 in the ELR", map[string]string{"Leader": "2", "Isr": "2", "Elr": "3", "LastKnownElr": ""})
	waitDescribe(t, b2.Addr, "unclean", "3 out of the ISR", map[string]string{"Leader": "2", "Isr": "2", "Elr": "", "LastKnownElr": ""})
	produceWithAcks(t, b2.Addr, "unclean", kgo.AllISRAcks(), "only-on-2")
	waitDescribe(t, b2.Addr, "manual", "3 out of the ISR", map[string]string{"Leader": "2", "Isr": "2", "Elr": "", "LastKnownElr": ""})

	// The leader dies too: nothing in sync is alive. The ISR is empty, both replicas are
	// eligible, 2 is the last known leader.
	b2.Kill()
	waitDescribe(t, c.Nodes[0].Addr, "elr", "an empty ISR with both replicas eligible",
		map[string]string{"Leader": "none", "Isr": "", "Elr": "2,3", "LastKnownElr": "2"})
	waitDescribe(t, c.Nodes[0].Addr, "unclean", "an empty ISR",
		map[string]string{"Leader": "none", "Isr": "", "Elr": "2", "LastKnownElr": "2"})

	// 3 comes back first. On "elr" it is eligible: a clean election, no record lost. On
	// "unclean" it is not, but unclean election is enabled: it leads with its own log.
	b3.Restart()
	waitDescribe(t, b3.Addr, "elr", "3 elected from the ELR", map[string]string{"Leader": "3", "Isr": "3", "Elr": "2", "LastKnownElr": ""})
	waitDescribe(t, b3.Addr, "unclean", "3 elected uncleanly", map[string]string{"Leader": "3", "Isr": "3", "Elr": "", "LastKnownElr": ""})

	// "manual" has unclean election off: 3 is alive but out of sync, so the partition stays
	// offline (checked once 3 is back, when "elr" and "unclean" have elected it) until an
	// operator asks for an unclean election.
	waitDescribe(t, b3.Addr, "manual", "manual still offline", map[string]string{"Leader": "none", "Isr": "", "Elr": "2", "LastKnownElr": "2"})
	out, _ := javaTool(t, "", "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", b3.Addr,
		"--election-type", "unclean", "--topic", "manual", "--partition", "0")
	if !strings.Contains(out, "Successfully completed leader election (UNCLEAN) for partitions manual-0") {
		t.Fatalf("kafka-leader-election --election-type unclean said:\n%s", out)
	}
	waitDescribe(t, b3.Addr, "manual", "3 elected by kafka-leader-election", map[string]string{"Leader": "3", "Isr": "3", "Elr": "", "LastKnownElr": ""})
	out, _ = javaTool(t, "", "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", b3.Addr,
		"--election-type", "unclean", "--topic", "manual", "--partition", "0")
	if !strings.Contains(out, "Valid replica already elected for partitions manual-0") {
		t.Fatalf("a second unclean election said:\n%s", out)
	}

	// 2 comes back and rejoins both ISRs (on "unclean" it truncates what only it had). It was
	// killed, so on "elr" it leaves the ELR as it registers, before it is back in the ISR.
	b2.Restart()
	waitDescribe(t, b3.Addr, "elr", "2 back in the ISR", map[string]string{"Leader": "3", "Isr": "2,3", "Elr": "", "LastKnownElr": ""})
	waitDescribe(t, b3.Addr, "unclean", "2 back in the ISR", map[string]string{"Leader": "3", "Isr": "2,3", "Elr": "", "LastKnownElr": ""})

	if got := strings.Join(readPartitionZero(t, b3.Addr, "elr"), ","); got != "a,b,c" {
		t.Fatalf("elr holds %s after the ELR election, want a,b,c (nothing lost)", got)
	}
	if got := strings.Join(readPartitionZero(t, b2.Addr, "unclean"), ","); got != "a,b,c" {
		t.Fatalf("unclean holds %s after the unclean election, want a,b,c: the acknowledged only-on-2 is lost, as Kafka documents", got)
	}
}
