package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
)

// TestListOffsetsV0: v0 (Kafka 0.8's offset request, sent by sarama configured for 0.8–0.10.0)
// was unadvertised. Latest must answer the high watermark first, then segment starts below it,
// at most MaxNumOffsets of them; earliest the log start offset.
func TestListOffsetsV0(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "lo", 1, nil)
	tb.produce(t, "lo", 0, 3)
	list := func(ts int64, maxNum int32) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 0, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.MaxNumOffsets = ts, maxNum
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return tb.direct(t, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	if p := list(-1, 1); p.ErrorCode != 0 || len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 3 {
		t.Errorf("latest, max 1: %v %v; want [3]", kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets)
	}
	if p := list(-1, 10); len(p.OldStyleOffsets) != 2 || p.OldStyleOffsets[0] != 3 || p.OldStyleOffsets[1] != 0 {
		t.Errorf("latest, max 10: %v; want [3 0] (the HW, the only segment's start)", p.OldStyleOffsets)
	}
	if p := list(-2, 1); len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 0 {
		t.Errorf("earliest: %v; want [0]", p.OldStyleOffsets)
	}
}

// TestACLsV0: DescribeAcls v0 and CreateAcls/DeleteAcls v0–v1 were unadvertised. A v0
// creation is a LITERAL pattern, and v0 filters see and delete only LITERAL patterns, as in
// Kafka 3.x.
func TestACLsV0(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass, "super.users": "User:ANONYMOUS"})
	create := func(v int16, name string, pattern kmsg.ACLResourcePatternType) {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = v
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.Principal, c.Host = kmsg.ACLResourceTypeTopic, name, "User:alice", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		if v > 0 {
			c.ResourcePatternType = pattern
		}
		req.Creations = append(req.Creations, c)
		resp := tb.direct(t, req).(*kmsg.CreateACLsResponse)
		if code := resp.Results[0].ErrorCode; code != 0 {
			t.Fatalf("create v%d %s: %v", v, name, kerr.ErrorForCode(code))
		}
	}
	create(0, "lit", 0)
	create(1, "pre", kmsg.ACLResourcePatternTypePrefixed)
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.Version, describe.ResourceType, describe.Operation, describe.PermissionType = 0, kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	d := tb.direct(t, describe).(*kmsg.DescribeACLsResponse)
	if d.ErrorCode != 0 || len(d.Resources) != 1 || d.Resources[0].ResourceName != "lit" {
		t.Fatalf("describe v0: %v %+v; want the literal ACL only", kerr.ErrorForCode(d.ErrorCode), d.Resources)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 0
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	r := tb.direct(t, del).(*kmsg.DeleteACLsResponse)
	if len(r.Results) != 1 || r.Results[0].ErrorCode != 0 || len(r.Results[0].MatchingACLs) != 1 || r.Results[0].MatchingACLs[0].ResourceName != "lit" {
		t.Fatalf("delete v0: %+v; want the literal ACL deleted only", r.Results)
	}
}
