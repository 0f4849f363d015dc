package broker

// DeleteAcls, key 31: v0–v3. Kafka 4 dropped v0–v1 (KIP-896); served as Kafka 3.x did: a v0
// filter has no pattern type and matches LITERAL patterns only; v2 is the first flexible version.
//
// Needs ALTER on the cluster; SECURITY_DISABLED without an authorizer. Each filter removes
// every ACL it matches (authz.Filter: ANY and MATCH as Kafka's AclBindingFilter); a filter
// with UNKNOWN values is INVALID_REQUEST. Forwarded to the active controller.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

func init() { registerSync(31, 0, 3, (*Broker).handleDeleteACLs) }

func (b *Broker) handleDeleteACLs(ctx context.Context, conn *wire.ConnInfo, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	am, code, msg := b.aclChangeRefusal(conn)
	if code != 0 {
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, &msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	filters := make([]authz.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = authz.FromDeleteFilter(f)
	}
	results, err := am.DeleteACLs(ctx, filters)
	for i := range filters {
		r := kmsg.NewDeleteACLsResponseResult()
		switch {
		case err != nil:
			r.ErrorCode, r.ErrorMessage = controllerCallError(err)
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
	b.waitForImage(ctx, b.ctrl.Image().Offset)
	return resp, nil
}
