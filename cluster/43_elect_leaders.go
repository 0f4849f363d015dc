package cluster

// ElectLeaders, key 43: v0–v2.
//
// v0: partitions (null: all) and a timeout, preferred elections only; v1 the election type
// (0 preferred, 1 unclean) and a top-level error; v2 is v1 with flexible encoding. The rules
// and per-partition answers are controller/elections.go's. An unknown election type is
// INVALID_REQUEST for the whole request.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(43, 0, 2, (*Server).handleElectLeaders) }

func (s *Server) handleElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	ctx, cancel := withTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	var topics []controller.ElectLeadersTopic
	if req.Topics != nil {
		topics = make([]controller.ElectLeadersTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, controller.ElectLeadersTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	electionType := req.ElectionType
	if req.Version == 0 {
		electionType = controller.ElectPreferred
	}
	results, err := s.cfg.Controller.ElectLeaders(ctx, electionType, topics)
	if err != nil {
		code, msg := callError(err)
		if req.Version >= 1 {
			resp.ErrorCode = code
		}
		for _, t := range topics { // v0 has no top-level code: every partition carries it
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
	resp.Topics = electResults(results)
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

// electResults is the response form of ElectLeaders results.
func electResults(results []controller.ElectLeadersResult) []kmsg.ElectLeadersResponseTopic {
	out := make([]kmsg.ElectLeadersResponseTopic, 0, len(results))
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
		out = append(out, rt)
	}
	return out
}
