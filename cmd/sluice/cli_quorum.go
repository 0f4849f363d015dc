package main

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runQuorum is `sluice quorum describe`: the metadata quorum as kafka-metadata-quorum describe
// --status and --replication show it (DescribeQuorum through a broker, which forwards it to the
// active controller, as Kafka 4.x's brokers do).
func runQuorum(c *cli, args []string) error {
	if len(args) == 0 || args[0] != "describe" {
		return usagef("quorum wants describe")
	}
	fs := c.flags("quorum describe", "table", "json")
	_, _, ctx, err := c.start(fs, args[1:], noArgs)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := req.RequestWith(ctx, c.client)
	if err != nil {
		return fmt.Errorf("DescribeQuorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("DescribeQuorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("DescribeQuorum answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return fmt.Errorf("DescribeQuorum: %w", err)
	}
	type replica struct {
		NodeID   int32  `json:"node_id"`
		Role     string `json:"role"`
		LogEnd   int64  `json:"log_end_offset"`
		Lag      int64  `json:"lag"`
		Endpoint string `json:"endpoint,omitempty"`
	}
	endpoints := map[int32]string{}
	for _, n := range resp.Nodes {
		if len(n.Listeners) > 0 {
			endpoints[n.NodeID] = fmt.Sprintf("%s:%d", n.Listeners[0].Host, n.Listeners[0].Port)
		}
	}
	var replicas []replica
	add := func(role string, rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) {
		for _, r := range rs {
			if role == "follower" && r.ReplicaID == p.LeaderID {
				role = "leader"
			}
			replicas = append(replicas, replica{NodeID: r.ReplicaID, Role: role, LogEnd: r.LogEndOffset,
				Lag: max(p.HighWatermark-r.LogEndOffset, 0), Endpoint: endpoints[r.ReplicaID]})
			if role == "leader" {
				role = "follower"
			}
		}
	}
	add("follower", p.CurrentVoters)
	add("observer", p.Observers)
	sort.SliceStable(replicas, func(i, j int) bool {
		if (replicas[i].Role == "observer") != (replicas[j].Role == "observer") {
			return replicas[j].Role == "observer"
		}
		return replicas[i].NodeID < replicas[j].NodeID
	})
	if c.output == "json" {
		return c.json(map[string]any{"leader": p.LeaderID, "epoch": p.LeaderEpoch, "high_watermark": p.HighWatermark,
			"voters": len(p.CurrentVoters), "observers": len(p.Observers), "replicas": replicas})
	}
	fmt.Fprintf(c.out, "leader %d, epoch %d, high watermark %d, %d voters, %d observers\n\n",
		p.LeaderID, p.LeaderEpoch, p.HighWatermark, len(p.CurrentVoters), len(p.Observers))
	var rows [][]string
	for _, r := range replicas {
		rows = append(rows, []string{fmt.Sprint(r.NodeID), r.Role, fmt.Sprint(r.LogEnd), fmt.Sprint(r.Lag), r.Endpoint})
	}
	return c.table([]string{"NODE", "ROLE", "LOG END", "LAG", "CONTROLLER ENDPOINT"}, rows)
}
