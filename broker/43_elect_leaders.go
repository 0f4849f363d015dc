package broker

// ElectLeaders, key 43: v0–v2.
//
// Leader elections through the active controller (controller/elections.go has the rules):
// PREFERRED moves leadership to each partition's preferred replica when it is an active ISR
// member (ELECTION_NOT_NEEDED when it leads already, PREFERRED_LEADER_NOT_AVAILABLE when it
// cannot); UNCLEAN (v1+) is answered ELECTION_NOT_NEEDED for partitions with a leader, and
// elects a leaderless one's ISR or ELR member if one is alive, else any live replica (an
// unclean election: the partition recovers from that replica's log, losing what only the old
// ISR had), ELIGIBLE_LEADERS_NOT_AVAILABLE when none is alive. A null partition list means every partition, and the answer then leaves
// out those that needed no election, as Kafka's does. v0 has no top-level error code: a
// failure of the whole request is every listed partition's error. The answer waits until
// this broker applied the outcome, so a describe right after shows the new leaders.
//
// Not done: authorization (ALTER on the cluster).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(43, 0, 2, (*Broker).handleElectLeaders) }

// leaderElector is the part of Metadata that runs elections (controller.Controller and
// cluster.Link have it).
type leaderElector interface {
	ElectLeaders(ctx context.Context, electionType int8, topics []controller.ElectLeadersTopic) ([]controller.ElectLeadersResult, error)
}

func (b *Broker) handleElectLeaders(ctx context.Context, _ *wire.ConnInfo, req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	ctx, cancel := adminTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	var topics []controller.ElectLeadersTopic
	if req.Topics != nil {
		topics = []controller.ElectLeadersTopic{}
		for _, t := range req.Topics {
			topics = append(topics, controller.ElectLeadersTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	electionType := req.ElectionType
	if req.Version == 0 {
		electionType = controller.ElectPreferred
	}
	var results []controller.ElectLeadersResult
	err := errors.New("this broker's metadata cannot run elections")
	if el, ok := b.ctrl.(leaderElector); ok {
		results, err = el.ElectLeaders(ctx, electionType, topics)
	}
	if err != nil {
		code, msg := controllerCallError(err)
		var kerrp *kerr.Error
		if errors.As(err, &kerrp) {
			code = kerrp.Code
		}
		if req.Version >= 1 {
			resp.ErrorCode = code
		}
		for _, t := range topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)
	for _, tr := range results {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = tr.Topic
		rt.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
		for _, pr := range tr.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = pr.Partition
			rp.ErrorCode, rp.ErrorMessage = itemError(pr.Err, pr.Message)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
