package cluster

// CreateTopics, key 19: v0–v7.
//
// What a broker forwards, and what Kafka's tools send to a controller. -1 partitions or
// replication factor take the ServerConfig defaults. v5+ answers the partition count and
// replication factor (not the resolved configs: the broker that forwarded fills those from
// its own image); v7 the topic ID. Names __consumer_offsets and __transaction_state are
// created internal, as Kafka's Topic.isInternal marks them. Not carried over the network:
// the forwarding broker's per-broker replica bound (MaxReplicasPerBroker).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(19, 0, 7, (*Server).handleCreateTopics) }

func (s *Server) handleCreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := withTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	create := make([]controller.CreateTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		ct := controller.CreateTopic{Name: rt.Topic, NumPartitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor, Internal: controller.IsInternalTopic(rt.Topic)}
		if len(rt.ReplicaAssignment) > 0 {
			ct.Assignments = make(map[int32][]int32, len(rt.ReplicaAssignment))
			for _, a := range rt.ReplicaAssignment {
				ct.Assignments[a.Partition] = a.Replicas
			}
		} else {
			if ct.NumPartitions == -1 {
				ct.NumPartitions = s.cfg.DefaultNumPartitions
			}
			if ct.ReplicationFactor == -1 {
				ct.ReplicationFactor = s.cfg.DefaultReplicationFactor
			}
		}
		for _, c := range rt.Configs {
			if c.Value == nil {
				continue
			}
			if ct.Configs == nil {
				ct.Configs = map[string]string{}
			}
			ct.Configs[c.Name] = *c.Value
		}
		create = append(create, ct)
	}
	results, err := s.cfg.Controller.CreateTopics(ctx, create, req.ValidateOnly)
	for i, rt := range req.Topics {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic = rt.Topic
		switch {
		case err != nil:
			t.ErrorCode, t.ErrorMessage = callError(err)
		case i >= len(results):
			t.ErrorCode = kerr.UnknownServerError.Code
		default:
			r := results[i]
			t.ErrorCode, t.ErrorMessage = itemError(r.Err, r.Message)
			if t.ErrorCode == 0 {
				t.TopicID = r.ID
				if r.Topic != nil {
					t.NumPartitions = int32(len(r.Topic.Partitions))
					if len(r.Topic.Partitions) > 0 {
						t.ReplicationFactor = int16(len(r.Topic.Partitions[0].Replicas))
					}
				}
			}
		}
		resp.Topics = append(resp.Topics, t)
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}
