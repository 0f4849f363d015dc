package cluster

// IncrementalAlterConfigs, key 44: v0–v1; AlterConfigs, key 33: v0–v2.
//
// Topic (2), broker (4), group (32) and client metrics (16) resources (the controller stores only the group keys
// sluice honours). Incremental: op 0 SET and 1 DELETE; APPEND (2) and
// SUBTRACT (3) need the key's list semantics, which the forwarding broker resolves into a SET
// before it calls (the controller's AlterConfigs takes only set/delete), so here they are
// INVALID_REQUEST. Legacy AlterConfigs replaces the resource's whole set of overrides.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() {
	register(44, 0, 1, (*Server).handleIncrementalAlterConfigs)
	register(33, 0, 2, (*Server).handleAlterConfigs)
}

func (s *Server) handleIncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	reqs := make([]controller.AlterConfigs, len(req.Resources))
	bad := make([]bool, len(req.Resources))
	for i, r := range req.Resources {
		reqs[i] = controller.AlterConfigs{ResourceType: int8(r.ResourceType), ResourceName: r.ResourceName}
		for _, c := range r.Configs {
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				reqs[i].Ops = append(reqs[i].Ops, controller.ConfigOp{Key: c.Name, Value: c.Value})
			case kmsg.IncrementalAlterConfigOpDelete:
				reqs[i].Ops = append(reqs[i].Ops, controller.ConfigOp{Key: c.Name})
			default:
				bad[i] = true
			}
		}
	}
	codes := s.alterConfigs(ctx, reqs, bad, req.ValidateOnly)
	for i, r := range req.Resources {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
		out.ErrorCode, out.ErrorMessage = codes[i].code, codes[i].msg
		resp.Resources = append(resp.Resources, out)
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

func (s *Server) handleAlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	reqs := make([]controller.AlterConfigs, len(req.Resources))
	for i, r := range req.Resources {
		reqs[i] = controller.AlterConfigs{ResourceType: int8(r.ResourceType), ResourceName: r.ResourceName, ReplaceAll: true}
		for _, c := range r.Configs {
			reqs[i].Ops = append(reqs[i].Ops, controller.ConfigOp{Key: c.Name, Value: c.Value})
		}
	}
	codes := s.alterConfigs(ctx, reqs, make([]bool, len(reqs)), req.ValidateOnly)
	for i, r := range req.Resources {
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
		out.ErrorCode, out.ErrorMessage = codes[i].code, codes[i].msg
		resp.Resources = append(resp.Resources, out)
	}
	if req.Version >= 2 {
		setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	}
	return resp, nil
}

type codeMsg struct {
	code int16
	msg  *string
}

// alterConfigs proposes the resources not marked bad and returns each one's outcome.
func (s *Server) alterConfigs(ctx context.Context, reqs []controller.AlterConfigs, bad []bool, validateOnly bool) []codeMsg {
	out := make([]codeMsg, len(reqs))
	var send []controller.AlterConfigs
	var idx []int
	for i := range reqs {
		if bad[i] {
			out[i] = codeMsg{kerr.InvalidRequest.Code, strPtr("APPEND and SUBTRACT must be resolved by the broker before forwarding.")}
			continue
		}
		send, idx = append(send, reqs[i]), append(idx, i)
	}
	if len(send) == 0 {
		return out
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	results, err := s.cfg.Controller.AlterConfigs(ctx, send, validateOnly)
	for j, i := range idx {
		switch {
		case err != nil:
			out[i].code, out[i].msg = callError(err)
		case j >= len(results):
			out[i].code = kerr.UnknownServerError.Code
		default:
			out[i].code, out[i].msg = itemError(results[j].Err, results[j].Message)
		}
	}
	return out
}
