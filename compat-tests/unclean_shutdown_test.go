package compattests

// KIP-966 unclean shutdown detection on real processes, seen through DescribeTopicPartitions
// (the API Kafka's kafka-topics --describe reads Elr and LastKnownElr from): a broker that
// stops cleanly (SIGTERM) writes the clean shutdown file and comes back still eligible; one
// that is killed (SIGKILL) comes back out of the ELR, so it cannot be elected from it with a
// log that may have lost an acknowledged tail.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// elrState is partition 0 of a topic as DescribeTopicPartitions answers it.
type elrState struct {
	Leader            int32
	ISR, ELR, LastELR []int32
}

func (p elrState) String() string {
	return fmt.Sprintf("leader %d, ISR %v, ELR %v, last known ELR %v", p.Leader, p.ISR, p.ELR, p.LastELR)
}

// describeTopicPartition asks addr for topic's partition 0 with DescribeTopicPartitions v0.
func describeTopicPartition(addr, topic string) (elrState, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return elrState{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	if err := roundTrip(conn, req, resp, 1); err != nil {
		return elrState{}, err
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return elrState{}, err
		}
		for _, p := range t.Partitions {
			if p.Partition == 0 {
				return elrState{Leader: p.LeaderID, ISR: p.ISR, ELR: p.EligibleLeaderReplicas, LastELR: p.LastKnownELR}, nil
			}
		}
	}
	return elrState{}, fmt.Errorf("no partition 0 of %s in %+v", topic, resp.Topics)
}

// sameIDs reports whether a and b hold the same broker IDs, in any order.
func sameIDs(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// waitPartition waits until addr describes topic's partition 0 as want (lists in any order).
func waitPartition(t *testing.T, addr, topic, what string, want elrState) {
	t.Helper()
	waitFor(t, clusterDeadline, what, func() error {
		got, err := describeTopicPartition(addr, topic)
		if err != nil {
			return err
		}
		if got.Leader != want.Leader || !sameIDs(got.ISR, want.ISR) || !sameIDs(got.ELR, want.ELR) ||
			!sameIDs(got.LastELR, want.LastELR) {
			return fmt.Errorf("%s-0: %v, want %v", topic, got, want)
		}
		return nil
	})
}

// createAssigned creates topic with one partition on replicas (the first its leader) and the
// given key=value configs, through addr.
func createAssigned(t *testing.T, addr, topic string, replicas []int32, configs ...string) {
	t.Helper()
	_, cl := clusterAdmin(t, addr)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	for _, kv := range configs {
		k, v, _ := strings.Cut(kv, "=")
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		ct.Configs = append(ct.Configs, cfg)
	}
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 10000
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	resp, err := create.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// TestUncleanShutdownLeavesELRProcesses: node 1 the only voter (hosting no replica), nodes 2
// and 3 brokers holding t-0 (replicas 2,3, min.insync.replicas=2). 3 stops cleanly (ELR [3]),
// then 2 is killed (ISR empty, ELR [2,3], last known 2); 3 restarts with its clean shutdown
// file, stays eligible and is elected from the ELR. Then 3 is killed in turn (ISR empty, ELR
// [2,3], last known 3) and restarted: without a clean shutdown file it leaves the ELR (ELR [2])
// and is not elected, though it is the only live replica. When 2, killed too, comes back
// it leaves the ELR as well; 3, the last leader, is then elected only as an unclean
// election in leader recovery, and every acknowledged record is there. Before, the killed 3
// stayed in the ELR and was elected as if its log held everything it had acknowledged.
func TestUncleanShutdownLeavesELRProcesses(t *testing.T) {
	c := StartClusterWith(t, []string{RoleCombined, RoleBroker, RoleBroker}, clusterSettings...)
	n1, b2, b3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	waitFor(t, clusterDeadline, "three brokers in Metadata", func() error {
		ids, err := liveBrokers(n1.Addr)
		if err != nil || len(ids) != 3 {
			return fmt.Errorf("brokers %v (%v)", ids, err)
		}
		return nil
	})
	createAssigned(t, n1.Addr, "t", []int32{2, 3}, "min.insync.replicas=2")
	waitPartition(t, n1.Addr, "t", "a full ISR", elrState{Leader: 2, ISR: []int32{2, 3}})
	produceWithAcks(t, n1.Addr, "t", kgo.AllISRAcks(), "a", "b", "c")

	if !b3.Stop() {
		t.Fatal("3 did not stop on SIGTERM")
	}
	if !strings.Contains(b3.Log(), "wrote the clean shutdown file") {
		t.Fatal("3 stopped on SIGTERM without writing the clean shutdown file")
	}
	waitPartition(t, n1.Addr, "t", "3 in the ELR", elrState{Leader: 2, ISR: []int32{2}, ELR: []int32{3}})
	b2.Kill()
	waitPartition(t, n1.Addr, "t", "no ISR, both eligible", elrState{Leader: -1, ELR: []int32{2, 3}, LastELR: []int32{2}})
	b3.Restart()
	waitPartition(t, n1.Addr, "t", "3, back cleanly, elected from the ELR", elrState{Leader: 3, ISR: []int32{3}, ELR: []int32{2}})

	b3.Kill()
	waitPartition(t, n1.Addr, "t", "no ISR, both eligible again", elrState{Leader: -1, ELR: []int32{2, 3}, LastELR: []int32{3}})
	b3.Restart()
	waitFor(t, clusterDeadline, "3 registered again", func() error {
		ids, err := liveBrokers(n1.Addr)
		if err != nil || !slices.Contains(ids, 3) {
			return fmt.Errorf("brokers %v (%v)", ids, err)
		}
		return nil
	})
	waitPartition(t, n1.Addr, "t", "3, back after SIGKILL, out of the ELR", elrState{Leader: -1, ELR: []int32{2}, LastELR: []int32{3}})

	b2.Restart()
	waitPartition(t, n1.Addr, "t", "3 elected as the last leader once no replica is eligible, then 2 back in the ISR",
		elrState{Leader: 3, ISR: []int32{2, 3}})
	if got := strings.Join(readPartitionZero(t, n1.Addr, "t"), ","); got != "a,b,c" {
		t.Fatalf("t holds %s, want a,b,c", got)
	}
}
