package broker

// ListPartitionReassignments, key 46: v0.
//
// Answered from this broker's metadata image (the replicated controller state,
// controller.ListReassignments): a null topic list lists every partition being reassigned;
// otherwise the named partitions that are (unknown topics and partitions are left out, as
// Kafka's controller leaves them out). Each with its replicas (target first, then those being
// removed), adding and removing replicas.
//
// Not done: authorization.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(46, 0, 0, (*Broker).handleListPartitionReassignments) }

func (b *Broker) handleListPartitionReassignments(_ context.Context, _ *wire.ConnInfo, req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var topics map[string][]int32
	if req.Topics != nil {
		topics = make(map[string][]int32, len(req.Topics))
		for _, t := range req.Topics {
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
	}
	for _, tr := range controller.ListReassignments(b.ctrl.Image(), topics) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = tr.Topic
		for _, p := range tr.Partitions {
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition, rp.Replicas = p.Partition, p.Replicas
			rp.AddingReplicas, rp.RemovingReplicas = nonNil(p.AddingReplicas), nonNil(p.RemovingReplicas)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
