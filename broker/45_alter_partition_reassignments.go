package broker

// AlterPartitionReassignments (kmsg's AlterPartitionAssignments), key 45: v0–v1.
//
// Forwarded to the active controller, as Kafka's brokers forward it; the rules and errors are
// controller.AlterPartitionReassignments' (Kafka's ReplicationControlManager): a target list
// grows the replicas to target ∪ current and the reassignment completes once every adding
// replica is in the ISR; a null list cancels (NO_REASSIGNMENT_IN_PROGRESS when there is
// none); bad targets are INVALID_REPLICA_ASSIGNMENT, unknown partitions
// UNKNOWN_TOPIC_OR_PARTITION. v1 (KIP-860): AllowReplicationFactorChange false refuses a
// target of another length with INVALID_REPLICATION_FACTOR, and is echoed back. The answer
// waits until this broker has applied the image with the change, so a following
// ListPartitionReassignments or Metadata on this broker sees it. A controller call that fails
// as a whole is the top-level error (NOT_CONTROLLER, REQUEST_TIMED_OUT).
//
// Not done: authorization.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(45, 0, 1, (*Broker).handleAlterPartitionReassignments) }

func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, _ *wire.ConnInfo, req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	ctx, cancel := adminTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	var items []controller.Reassignment
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			items = append(items, controller.Reassignment{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas})
		}
	}
	allow := req.AllowReplicationFactorChange || req.Version < 1
	results, err := b.ctrl.AlterPartitionReassignments(ctx, items, allow)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = controllerCallError(err)
		return resp, nil
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if i < len(results) {
				rp.ErrorCode, rp.ErrorMessage = itemError(results[i].Err, results[i].Message)
				if rp.ErrorCode == 0 {
					rp.ErrorMessage = nil
				}
			} else {
				rp.ErrorCode = kerr.UnknownServerError.Code
			}
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
