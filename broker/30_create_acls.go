package broker

// CreateAcls, key 30: v2–v3 (Kafka 4.x dropped v0–v1, KIP-896).
//
// Needs ALTER on the cluster. Without an authorizer every creation is SECURITY_DISABLED, as
// Kafka answers. The creations are forwarded to the active controller, which validates them
// (controller/acls.go: INVALID_REQUEST with Kafka's messages) and commits them together; the
// answer waits until this broker's image has them, so a DescribeAcls that follows sees them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

func init() { registerSync(30, 2, 3, (*Broker).handleCreateACLs) }

// securityDisabled is Kafka's message when no authorizer is configured.
const securityDisabled = "No Authorizer is configured."

func (b *Broker) handleCreateACLs(ctx context.Context, conn *wire.ConnInfo, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	code, msg := int16(0), ""
	am, ok := b.ctrl.(aclMetadata)
	switch {
	case !b.authzOn() || !ok:
		code, msg = kerr.SecurityDisabled.Code, securityDisabled
	case !b.allowedCluster(conn, authz.OpAlter):
		code, msg = kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Description
	}
	if code != 0 {
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, &msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	acls := make([]authz.ACL, len(req.Creations))
	for i, c := range req.Creations {
		acls[i] = authz.FromCreation(c)
	}
	results, err := am.CreateACLs(ctx, acls)
	for i := range acls {
		r := kmsg.NewCreateACLsResponseResult()
		switch {
		case err != nil:
			r.ErrorCode, r.ErrorMessage = controllerCallError(err)
		case i >= len(results):
			r.ErrorCode = kerr.UnknownServerError.Code
		default:
			r.ErrorCode, r.ErrorMessage = itemError(results[i].Err, results[i].Message)
		}
		resp.Results = append(resp.Results, r)
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)
	return resp, nil
}
