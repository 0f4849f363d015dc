package cluster

// CreatePartitions, key 37: v0–v3.
//
// Grows topics; an explicit assignment gives one replica list per new partition.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(37, 0, 3, (*Server).handleCreatePartitions) }

func (s *Server) handleCreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := withTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	reqs := make([]controller.CreatePartitions, 0, len(req.Topics))
	for _, t := range req.Topics {
		cp := controller.CreatePartitions{Topic: t.Topic, Count: t.Count}
		if t.Assignment != nil {
			cp.Assignments = make([][]int32, 0, len(t.Assignment))
			for _, a := range t.Assignment {
				cp.Assignments = append(cp.Assignments, a.Replicas)
			}
		}
		reqs = append(reqs, cp)
	}
	results, err := s.cfg.Controller.CreatePartitions(ctx, reqs, req.ValidateOnly)
	for i, t := range req.Topics {
		out := kmsg.NewCreatePartitionsResponseTopic()
		out.Topic = t.Topic
		switch {
		case err != nil:
			out.ErrorCode, out.ErrorMessage = callError(err)
		case i >= len(results):
			out.ErrorCode = kerr.UnknownServerError.Code
		default:
			out.ErrorCode, out.ErrorMessage = itemError(results[i].Err, results[i].Message)
		}
		resp.Topics = append(resp.Topics, out)
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}
