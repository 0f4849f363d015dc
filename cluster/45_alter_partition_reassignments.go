package cluster

// AlterPartitionReassignments, key 45: v0–v1.
//
// Starts or cancels (a null replica list) partition reassignments; the rules and per-partition
// errors are controller.AlterPartitionReassignments', Kafka's ReplicationControlManager's. v1
// (KIP-860) carries AllowReplicationFactorChange (false refuses a target of another length
// with INVALID_REPLICATION_FACTOR) and echoes it in the response. A node that is not the
// active controller answers NOT_CONTROLLER as the response's top-level error, as does a call
// that cannot be proposed; the request's timeout bounds the wait for the commit.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(45, 0, 1, (*Server).handleAlterPartitionReassignments) }

func (s *Server) handleAlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	ctx, cancel := withTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	allow := req.AllowReplicationFactorChange || req.Version < 1
	results, err := s.cfg.Controller.AlterPartitionReassignments(ctx, reassignmentsOf(req), allow)
	if err == nil && len(results) > 0 && errors.Is(results[0].Err, kerr.NotController) {
		err = kerr.NotController // this node does not lead: the whole call is refused
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = callError(err)
		return resp, nil
	}
	fillReassignmentResponse(resp, req, results)
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

// reassignmentsOf lists req's partitions in request order.
func reassignmentsOf(req *kmsg.AlterPartitionAssignmentsRequest) []controller.Reassignment {
	var out []controller.Reassignment
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, controller.Reassignment{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas})
		}
	}
	return out
}

// fillReassignmentResponse answers req's partitions with results, in request order.
func fillReassignmentResponse(resp *kmsg.AlterPartitionAssignmentsResponse, req *kmsg.AlterPartitionAssignmentsRequest, results []controller.ReassignmentResult) {
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if i < len(results) {
				rp.ErrorCode, rp.ErrorMessage = itemError(results[i].Err, results[i].Message)
			} else {
				rp.ErrorCode = kerr.UnknownServerError.Code
			}
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}
