package broker

// CreateAcls, key 30: v0–v3. Kafka 4 dropped v0–v1 (KIP-896); served as Kafka 3.x did: a v0
// creation has no pattern type and is LITERAL; v2 is the first flexible version.
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

func init() { registerSync(30, 0, 3, (*Broker).handleCreateACLs) }

// securityDisabled is Kafka's message when no authorizer is configured.
const securityDisabled = "No Authorizer is configured."

// aclChangeRefusal is what CreateAcls and DeleteAcls answer every item before any change:
// SECURITY_DISABLED without an authorizer (or a metadata link that cannot change ACLs),
// CLUSTER_AUTHORIZATION_FAILED unless conn may ALTER the cluster; code 0 and the link when
// the change may go ahead.
func (b *Broker) aclChangeRefusal(conn *wire.ConnInfo) (am aclMetadata, code int16, msg string) {
	am, ok := b.ctrl.(aclMetadata)
	switch {
	case !b.authzOn() || !ok:
		return nil, kerr.SecurityDisabled.Code, securityDisabled
	case !b.allowedCluster(conn, authz.OpAlter):
		return nil, kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Description
	}
	return am, 0, ""
}

func (b *Broker) handleCreateACLs(ctx context.Context, conn *wire.ConnInfo, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	am, code, msg := b.aclChangeRefusal(conn)
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
