package cluster

// AssignReplicasToDirs, key 73: v0.
//
// What a broker with several log directories sends to say which directory holds each of its
// replicas (KIP-858); controller.AssignReplicaDirs records it, and a heartbeat that names
// some of its directories offline then moves only their replicas (controller/log_dirs.go).
// Errors: STALE_BROKER_EPOCH (top level) for an epoch that is not the broker's registered
// one, NOT_CONTROLLER off the active controller; per partition UNKNOWN_TOPIC_ID and
// NOT_LEADER_OR_FOLLOWER (no replica of it on that broker).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(73, 0, 0, (*Server).handleAssignReplicasToDirs) }

func (s *Server) handleAssignReplicasToDirs(ctx context.Context, req *kmsg.AssignReplicasToDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	var items []controller.ReplicaDirAssignment
	for _, d := range req.Directories {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				items = append(items, controller.ReplicaDirAssignment{TopicID: t.TopicID, Partition: p.Partition, Dir: d.ID})
			}
		}
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	errs, err := s.cfg.Controller.AssignReplicaDirs(ctx, req.BrokerID, req.BrokerEpoch, items)
	if err != nil {
		resp.ErrorCode, _ = callError(err)
		return resp, nil
	}
	if len(errs) > 0 && errors.Is(errs[0], kerr.StaleBrokerEpoch) {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	i := 0
	for _, d := range req.Directories {
		rd := kmsg.NewAssignReplicasToDirsResponseDirectory()
		rd.ID = d.ID
		for _, t := range d.Topics {
			rt := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				rp.Partition = p.Partition
				if i < len(errs) && errs[i] != nil {
					rp.ErrorCode, _ = itemError(errs[i], "")
				}
				i++
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Directories = append(resp.Directories, rd)
	}
	return resp, nil
}
