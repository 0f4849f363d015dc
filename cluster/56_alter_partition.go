package cluster

// AlterPartition, key 56: v0–v3.
//
// What a partition leader sends to change its ISR (the rules and per-partition errors are
// controller.AlterPartition's, Kafka's ReplicationControlManager.alterPartition). v0 names
// topics and lists the new ISR; v1 adds the leader recovery state (RECOVERED ends the recovery
// of a leader elected uncleanly; RECOVERING with more than the leader in the ISR, or for a
// partition that has recovered, is INVALID_REQUEST), answered back from v1; v2 names topics by ID (an unknown
// one is UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION before v2); v3 gives each new ISR member
// with the broker epoch it fetched with (KIP-903), checked against its registration. Before
// v2 an ineligible member is OPERATION_NOT_ATTEMPTED, from v2 INELIGIBLE_REPLICA, as Kafka
// answers. A requester whose broker epoch (when not -1) is not its registered one gets
// STALE_BROKER_EPOCH as the response's top-level error with no topics, as Kafka answers; a
// node that is not the active controller answers NOT_CONTROLLER there. An accepted partition
// answers its committed leader, leader epoch, ISR and partition epoch.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(56, 0, 3, (*Server).handleAlterPartition) }

func (s *Server) handleAlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	var items []controller.AlterPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			it := controller.AlterPartition{TopicID: rt.TopicID, Partition: rp.Partition, LeaderID: req.BrokerID,
				BrokerEpoch: req.BrokerEpoch, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch,
				LeaderRecovering: rp.LeaderRecoveryState == 1}
			if req.Version < 2 {
				it.TopicID, it.TopicName = controller.TopicID{}, rt.Topic
			}
			if req.Version >= 3 {
				it.NewISR = make([]int32, 0, len(rp.NewEpochISR))
				it.NewISREpochs = make([]int64, 0, len(rp.NewEpochISR))
				for _, m := range rp.NewEpochISR {
					it.NewISR = append(it.NewISR, m.BrokerID)
					it.NewISREpochs = append(it.NewISREpochs, m.BrokerEpoch)
				}
			} else {
				it.NewISR = rp.NewISR
			}
			items = append(items, it)
		}
	}
	results, err := s.cfg.Controller.AlterPartition(ctx, items)
	if err != nil {
		resp.ErrorCode, _ = callError(err)
		return resp, nil
	}
	if len(results) > 0 && errors.Is(results[0].Err, kerr.StaleBrokerEpoch) {
		// The requester's epoch is checked first, for every partition alike.
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	i := 0
	for _, rt := range req.Topics {
		t := kmsg.NewAlterPartitionResponseTopic()
		t.Topic, t.TopidID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterPartitionResponseTopicPartition()
			p.Partition = rp.Partition
			if i >= len(results) {
				p.ErrorCode = kerr.UnknownServerError.Code
			} else if r := results[i]; r.Err != nil {
				p.ErrorCode, _ = itemError(r.Err, "")
				if req.Version < 2 {
					p.ErrorCode = legacyAlterPartitionCode(p.ErrorCode)
				}
			} else {
				p.LeaderID, p.LeaderEpoch = r.Partition.Leader, r.Partition.LeaderEpoch
				p.ISR, p.PartitionEpoch = r.Partition.ISR, r.Partition.PartitionEpoch
				if r.Partition.LeaderRecovering {
					p.LeaderRecoveryState = 1 // RECOVERING
				}
			}
			i++
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

// legacyAlterPartitionCode is the code Kafka answers before v2 for one it answers from v2.
func legacyAlterPartitionCode(code int16) int16 {
	switch code {
	case kerr.IneligibleReplica.Code:
		return kerr.OperationNotAttempted.Code
	case kerr.UnknownTopicID.Code:
		return kerr.UnknownTopicOrPartition.Code
	}
	return code
}
