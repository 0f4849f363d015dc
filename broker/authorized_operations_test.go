package broker

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"sluice/authz"
)

// opBits is the bit field of ops.
func opBits(ops ...int8) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}

// TestAuthorizedOperations: Metadata, DescribeTopicPartitions, DescribeCluster and DescribeGroups
// carry the operations the caller may perform when it asks (Kafka's authorizedOperations): the
// ACLs' operations with what they imply (READ implies DESCRIBE), 0 for the cluster of a caller
// that may not describe it, MinInt32 where it did not ask.
func TestAuthorizedOperations(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	ctx := testContext(t)
	acls := []authz.ACL{anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpCreate),
		anonACL(authz.ResourceTopic, "t", authz.OpRead), anonACL(authz.ResourceGroup, "g", authz.OpRead)}
	tb.addACLs(t, acls...)
	if _, err := tb.Admin.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	request := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := tb.Client.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	readAndDescribe := opBits(authz.OpRead, authz.OpDescribe)

	// Metadata carries the cluster's field only up to v10 (Kafka 2.7's).
	v27, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.MaxVersions(kversion.V2_7_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer v27.Close()
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	md.IncludeTopicAuthorizedOperations, md.IncludeClusterAuthorizedOperations = true, true
	raw, err := v27.Request(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	m := raw.(*kmsg.MetadataResponse)
	if got := m.Topics[0].AuthorizedOperations; got != readAndDescribe {
		t.Errorf("Metadata topic t: %b, want READ|DESCRIBE %b", got, readAndDescribe)
	}
	if m.AuthorizedOperations != 0 {
		t.Errorf("Metadata cluster without DESCRIBE on it: %b, want 0", m.AuthorizedOperations)
	}
	md.IncludeTopicAuthorizedOperations, md.IncludeClusterAuthorizedOperations = false, false
	if raw, err = v27.Request(ctx, md); err != nil {
		t.Fatal(err)
	}
	m = raw.(*kmsg.MetadataResponse)
	if m.Topics[0].AuthorizedOperations != math.MinInt32 || m.AuthorizedOperations != math.MinInt32 {
		t.Errorf("not asked for: topic %d, cluster %d, want MinInt32", m.Topics[0].AuthorizedOperations, m.AuthorizedOperations)
	}

	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}
	if got := request(dtp).(*kmsg.DescribeTopicPartitionsResponse).Topics[0].AuthorizedOperations; got != readAndDescribe {
		t.Errorf("DescribeTopicPartitions t: %b, want %b", got, readAndDescribe)
	}

	tb.addACLs(t, anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpDescribe))
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if got, want := request(dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations, opBits(authz.OpCreate, authz.OpDescribe); got != want {
		t.Errorf("DescribeCluster: %b, want CREATE|DESCRIBE %b", got, want)
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g"}, true
	groups := tb.Client.RequestSharded(ctx, dg)
	for _, g := range groups {
		if g.Err != nil {
			t.Fatal(g.Err)
		}
		for _, d := range g.Resp.(*kmsg.DescribeGroupsResponse).Groups {
			if d.ErrorCode == 0 && d.AuthorizedOperations != readAndDescribe {
				t.Errorf("DescribeGroups g: %b, want %b", d.AuthorizedOperations, readAndDescribe)
			}
		}
	}
}

// TestAuthorizedOperationsWithoutAuthorizer: with no authorizer every supported operation is
// reported, as Kafka does.
func TestAuthorizedOperationsWithoutAuthorizer(t *testing.T) {
	tb := startTestBroker(t, nil, kgo.AllowAutoTopicCreation())
	ctx := testContext(t)
	if _, err := tb.Admin.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	md.IncludeTopicAuthorizedOperations = true
	resp, err := tb.Client.Request(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	want := opBits(supportedOperations[authz.ResourceTopic]...)
	if got := resp.(*kmsg.MetadataResponse).Topics[0].AuthorizedOperations; got != want {
		t.Errorf("topic t: %b, want every topic operation %b", got, want)
	}
}
