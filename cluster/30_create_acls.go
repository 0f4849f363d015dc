package cluster

// CreateAcls, key 30: v2–v3; DeleteAcls, key 31: v2–v3; DescribeAcls, key 29: v1–v3.
//
// The controller side of the ACL APIs a broker forwards (cluster.Link): the controller
// validates and commits (controller/acls.go). DescribeAcls reads this node's image. Like the
// other controller-listener handlers these do not authorize: the controller listener is for
// the cluster's own nodes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
)

func init() {
	register(29, 1, 3, (*Server).handleDescribeACLs)
	register(30, 2, 3, (*Server).handleCreateACLs)
	register(31, 2, 3, (*Server).handleDeleteACLs)
}

func (s *Server) handleCreateACLs(ctx context.Context, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	acls := make([]authz.ACL, len(req.Creations))
	for i, c := range req.Creations {
		acls[i] = authz.FromCreation(c)
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	results, err := s.cfg.Controller.CreateACLs(ctx, acls)
	for i := range acls {
		r := kmsg.NewCreateACLsResponseResult()
		switch {
		case err != nil:
			r.ErrorCode, r.ErrorMessage = callError(err)
		case i >= len(results):
			r.ErrorCode = kerr.UnknownServerError.Code
		default:
			r.ErrorCode, r.ErrorMessage = itemError(results[i].Err, results[i].Message)
		}
		resp.Results = append(resp.Results, r)
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

func (s *Server) handleDeleteACLs(ctx context.Context, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	filters := make([]authz.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = authz.FromDeleteFilter(f)
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	results, err := s.cfg.Controller.DeleteACLs(ctx, filters)
	for i := range filters {
		r := kmsg.NewDeleteACLsResponseResult()
		switch {
		case err != nil:
			r.ErrorCode, r.ErrorMessage = callError(err)
		case i >= len(results):
			r.ErrorCode = kerr.UnknownServerError.Code
		default:
			r.ErrorCode, r.ErrorMessage = itemError(results[i].Err, results[i].Message)
			for _, a := range results[i].Removed {
				r.MatchingACLs = append(r.MatchingACLs, authz.MatchingACL(a))
			}
		}
		resp.Results = append(resp.Results, r)
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

func (s *Server) handleDescribeACLs(_ context.Context, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := authz.FromDescribe(req)
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, strPtr(err.Error())
		return resp, nil
	}
	resp.Resources = authz.DescribeResources(s.cfg.Controller.Image().ACLs.Select(f))
	return resp, nil
}
