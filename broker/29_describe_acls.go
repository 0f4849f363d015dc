package broker

// DescribeAcls, key 29: v0–v3. Kafka 4 dropped v0 (KIP-896); served as Kafka 3.x did: a v0
// filter has no pattern type and matches LITERAL patterns only (kmsg's default).
//
// Needs DESCRIBE on the cluster; SECURITY_DISABLED without an authorizer. Answered from this
// broker's metadata image: the ACLs the filter matches, grouped by resource pattern. A filter
// with UNKNOWN values is INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

func init() { registerSync(29, 0, 3, (*Broker).handleDescribeACLs) }

func (b *Broker) handleDescribeACLs(_ context.Context, conn *wire.ConnInfo, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := authz.FromDescribe(req)
	var err error
	switch {
	case !b.authzOn():
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(securityDisabled)
	case !b.allowedCluster(conn, authz.OpDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	default:
		if err = f.Validate(); err != nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		} else {
			resp.Resources = authz.DescribeResources(b.ctrl.Image().ACLs.Select(f))
		}
	}
	return resp, nil
}
