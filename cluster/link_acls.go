package cluster

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
)

// CreateACLs creates ACLs through the active controller (CreateAcls v3 to its listener).
func (l *Link) CreateACLs(ctx context.Context, acls []authz.ACL) ([]controller.CreateACLResult, error) {
	var out []controller.CreateACLResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.CreateACLs(ctx, acls)
		return err
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = 3
		for _, a := range acls {
			req.Creations = append(req.Creations, authz.ToCreation(a))
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.CreateACLsResponse)
		if len(r.Results) > 0 && r.Results[0].ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		out = make([]controller.CreateACLResult, len(acls))
		for i := range out {
			if i >= len(r.Results) {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			out[i].Err, out[i].Message = kerr.ErrorForCode(r.Results[i].ErrorCode), deref(r.Results[i].ErrorMessage)
		}
		return nil
	})
	return out, err
}

// DeleteACLs deletes ACLs through the active controller (DeleteAcls v3 to its listener).
func (l *Link) DeleteACLs(ctx context.Context, filters []authz.Filter) ([]controller.DeleteACLsResult, error) {
	var out []controller.DeleteACLsResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.DeleteACLs(ctx, filters)
		return err
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = 3
		for _, f := range filters {
			req.Filters = append(req.Filters, authz.ToDeleteFilter(f))
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.DeleteACLsResponse)
		if len(r.Results) > 0 && r.Results[0].ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		out = make([]controller.DeleteACLsResult, len(filters))
		for i := range out {
			if i >= len(r.Results) {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			rr := r.Results[i]
			out[i].Err, out[i].Message = kerr.ErrorForCode(rr.ErrorCode), deref(rr.ErrorMessage)
			for _, m := range rr.MatchingACLs {
				out[i].Removed = append(out[i].Removed, authz.FromMatchingACL(m))
			}
		}
		return nil
	})
	return out, err
}
