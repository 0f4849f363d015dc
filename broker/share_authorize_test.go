package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
)

// TestAuthorizationShareGroups: with the StandardAuthorizer on, the share APIs check the
// group and topic ACLs Kafka's KafkaApis checks, and a refused request changes nothing.
func TestAuthorizationShareGroups(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	addACLs := func(acls ...authz.ACL) { t.Helper(); tb.addACLs(t, acls...) }
	addACLs(anonACL(authz.ResourceTopic, "guarded", authz.OpCreate))
	tb.createTopic(t, "guarded", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["guarded"].ID)
	c := &shareClient{t: t, tb: tb, group: "sg-auth", member: "m"}

	if hb := c.heartbeat(0, "guarded"); hb.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("heartbeat without READ on the group: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	addACLs(anonACL(authz.ResourceGroup, "sg-auth", authz.OpRead))
	if hb := c.heartbeat(0, "guarded"); hb.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("heartbeat without DESCRIBE on the topic: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	addACLs(anonACL(authz.ResourceTopic, "guarded", authz.OpDescribe))
	if hb := c.heartbeat(0, "guarded"); hb.ErrorCode != 0 {
		t.Fatalf("heartbeat with READ and DESCRIBE: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	resp := tb.direct(t, c.fetchReq(topicID, 10, 0)).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("share fetch without READ on the topic: %+v", resp)
	}
	// READ on a group implies DESCRIBE (Kafka's ACL rules); no ACL on other-group.
	d := tb.direct(t, &kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{"sg-auth", "other-group"}}).(*kmsg.ShareGroupDescribeResponse)
	if d.Groups[0].ErrorCode != 0 || d.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe: %v and %v, want none and GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(d.Groups[0].ErrorCode), kerr.ErrorForCode(d.Groups[1].ErrorCode))
	}
	other := &shareClient{t: t, tb: tb, group: "other-group", member: "m"}
	if resp := tb.direct(t, other.fetchReq(topicID, 10, 0)).(*kmsg.ShareFetchResponse); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("share fetch without READ on the group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}
