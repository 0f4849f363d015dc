package cluster

// ListPartitionReassignments, key 46: v0.
//
// Lists ongoing reassignments (controller.ListReassignments): every one for a null topic
// list, else those of the named partitions. It is answered from this node's image, which
// every voter replicates: no proposal, so any voter answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(46, 0, 0, (*Server).handleListPartitionReassignments) }

func (s *Server) handleListPartitionReassignments(_ context.Context, req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	fillListReassignments(resp, s.cfg.Controller.Image(), req)
	return resp, nil
}

// fillListReassignments answers req from im.
func fillListReassignments(resp *kmsg.ListPartitionReassignmentsResponse, im *controller.Image, req *kmsg.ListPartitionReassignmentsRequest) {
	var topics map[string][]int32
	if req.Topics != nil {
		topics = make(map[string][]int32, len(req.Topics))
		for _, t := range req.Topics {
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
	}
	for _, tr := range controller.ListReassignments(im, topics) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = tr.Topic
		for _, p := range tr.Partitions {
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition, rp.Replicas = p.Partition, p.Replicas
			rp.AddingReplicas, rp.RemovingReplicas = p.AddingReplicas, p.RemovingReplicas
			if rp.AddingReplicas == nil {
				rp.AddingReplicas = []int32{}
			}
			if rp.RemovingReplicas == nil {
				rp.RemovingReplicas = []int32{}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}
