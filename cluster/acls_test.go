package cluster

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
)

// TestACLsForwarded: a follower's Link creates and deletes ACLs through the active
// controller's listener (CreateAcls/DeleteAcls v3), returns once its own image has the
// change, and passes the controller's refusals through; DescribeAcls on the controller
// listener reads the image.
func TestACLsForwarded(t *testing.T) {
	ctx := testCtx(t)
	tc := newTestCluster(t, clusterTestConfig{tick: 10 * time.Millisecond, session: time.Minute, heartbeat: 50 * time.Millisecond})
	tc.registerAll(ctx)
	f := tc.follower()
	alice := authz.ACL{ResourceType: authz.ResourceTopic, ResourceName: "t", PatternType: authz.PatternPrefixed,
		Principal: "User:alice", Host: "*", Operation: authz.OpWrite, Permission: authz.PermAllow}
	bad := alice
	bad.Operation = authz.OpAny
	res, err := f.link.CreateACLs(ctx, []authz.ACL{alice, bad})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || !errors.Is(res[1].Err, kerr.InvalidRequest) || res[1].Message != "Invalid operation ANY" {
		t.Fatalf("CreateACLs through follower %d: %+v", f.id, res)
	}
	if got := f.ctrl.Image().ACLs.All(); !slices.Equal(got, []authz.ACL{alice}) {
		t.Fatalf("the follower's image after CreateACLs: %+v", got)
	}

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr := tc.rawRequest(ctx, f.id, describe).(*kmsg.DescribeACLsResponse)
	if dr.ErrorCode != 0 || len(dr.Resources) != 1 || dr.Resources[0].ResourceName != "t" ||
		dr.Resources[0].ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed || len(dr.Resources[0].ACLs) != 1 {
		t.Fatalf("DescribeAcls on the controller listener: %+v", dr)
	}

	principal := "User:alice"
	del, err := f.link.DeleteACLs(ctx, []authz.Filter{{ResourceType: authz.ResourceTopic, PatternType: authz.PatternMatch,
		ResourceName: ptrTo("tx"), Principal: &principal, Operation: authz.OpAny, Permission: authz.PermAny}})
	if err != nil || del[0].Err != nil || !slices.Equal(del[0].Removed, []authz.ACL{alice}) {
		t.Fatalf("DeleteACLs through the follower: %v %+v", err, del)
	}
	if n := f.ctrl.Image().ACLs.Len(); n != 0 {
		t.Fatalf("the follower's image keeps %d ACLs after DeleteACLs", n)
	}
}

func ptrTo[T any](v T) *T { return &v }
