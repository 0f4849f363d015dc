package broker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
)

const anonymous = "User:ANONYMOUS"

// addACLs creates acls through the controller and waits until the broker serves them.
func (tb *testBroker) addACLs(t testing.TB, acls ...authz.ACL) {
	t.Helper()
	ctx := testContext(t)
	res, err := tb.Ctrl.CreateACLs(ctx, acls)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("creating ACLs: %v %s", r.Err, r.Message)
		}
	}
	tb.Broker.waitForImage(ctx, tb.Ctrl.Image().Offset)
}

func anonACL(rt int8, name string, op int8) authz.ACL {
	return authz.ACL{ResourceType: rt, ResourceName: name, PatternType: authz.PatternLiteral, Principal: anonymous,
		Host: "*", Operation: op, Permission: authz.PermAllow}
}

// TestAuthorizationEnforced: with the StandardAuthorizer on, the admin and data APIs check what
// Kafka's KafkaApis checks. The client is User:ANONYMOUS (PLAINTEXT); the ACLs are created
// through the controller.
func TestAuthorizationEnforced(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass}, kgo.AllowAutoTopicCreation())
	ctx := testContext(t)
	addACLs := func(acls ...authz.ACL) { t.Helper(); tb.addACLs(t, acls...) }

	// Nothing allowed yet: CreateTopics is refused per topic.
	res, err := tb.Admin.CreateTopics(ctx, 1, 1, nil, "a")
	if err != nil {
		t.Fatal(err)
	}
	if r := res["a"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("creating a without CREATE: %v", r.Err)
	}

	addACLs(anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpCreate))
	for _, name := range []string{"a", "b"} {
		if _, err := tb.Admin.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatalf("creating %s with CREATE on the cluster: %v", name, err)
		}
	}
	addACLs(anonACL(authz.ResourceTopic, "a", authz.OpRead), anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpIdempotentWrite))

	t.Run("metadata", func(t *testing.T) {
		all := kmsg.NewPtrMetadataRequest()
		resp, err := all.RequestWith(ctx, tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tp := range resp.Topics {
			names = append(names, *tp.Topic)
		}
		if !slices.Equal(names, []string{"a"}) {
			t.Errorf("all-topics metadata lists %v, want [a] (READ implies DESCRIBE; b is not describable)", names)
		}
		named := kmsg.NewPtrMetadataRequest()
		for _, n := range []string{"b", "nosuch"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			named.Topics = append(named.Topics, rt)
		}
		named.AllowAutoTopicCreation = true
		resp, err = named.RequestWith(ctx, tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range resp.Topics {
			if tp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("metadata of %s: %v, want TOPIC_AUTHORIZATION_FAILED", *tp.Topic, kerr.ErrorForCode(tp.ErrorCode))
			}
		}
		if tb.Ctrl.Image().Topics["nosuch"] != nil {
			t.Error("an undescribable topic was auto-created")
		}
	})

	t.Run("produce needs WRITE", func(t *testing.T) {
		err := tb.Client.ProduceSync(ctx, &kgo.Record{Topic: "a", Partition: 0, Value: []byte("v")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("producing to a with READ only: %v", err)
		}
	})

	t.Run("list offsets", func(t *testing.T) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		for _, n := range []string{"a", "b"} {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = n
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		kr, err := tb.Client.Broker(1).Request(ctx, req) // straight to the broker: no metadata first
		if err != nil {
			t.Fatal(err)
		}
		resp := kr.(*kmsg.ListOffsetsResponse)
		got := map[string]int16{}
		for _, rt := range resp.Topics {
			got[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		if got["a"] != 0 || got["b"] != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("ListOffsets codes %v, want a ok and b TOPIC_AUTHORIZATION_FAILED", got)
		}
	})

	t.Run("admin APIs", func(t *testing.T) {
		del, err := tb.Admin.DeleteTopics(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		if r := del["b"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
			t.Errorf("deleting b without DELETE: %v", r.Err)
		}
		cp, err := tb.Admin.CreatePartitions(ctx, 2, "a")
		if err != nil {
			t.Fatal(err)
		}
		if r := cp["a"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
			t.Errorf("adding partitions to a without ALTER: %v", r.Err)
		}
		dc := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "a"
		dc.Resources = append(dc.Resources, rr)
		kr, err := tb.Client.Broker(1).Request(ctx, dc)
		if err != nil {
			t.Fatal(err)
		}
		if rc := kr.(*kmsg.DescribeConfigsResponse).Resources; len(rc) != 1 || rc[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("describing a's configs without DESCRIBE_CONFIGS: %+v", rc)
		}
		acls := kmsg.NewPtrDescribeACLsRequest()
		acls.ResourceType, acls.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		acls.Operation, acls.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		dr, err := acls.RequestWith(ctx, tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		if dr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("DescribeAcls without DESCRIBE on the cluster: %v", kerr.ErrorForCode(dr.ErrorCode))
		}
		drr := kmsg.NewPtrDeleteRecordsRequest()
		drt := kmsg.NewDeleteRecordsRequestTopic()
		drt.Topic = "a"
		drp := kmsg.NewDeleteRecordsRequestTopicPartition()
		drp.Offset = -1
		drt.Partitions = append(drt.Partitions, drp)
		drr.Topics = append(drr.Topics, drt)
		kr, err = tb.Client.Broker(1).Request(ctx, drr)
		if err != nil {
			t.Fatal(err)
		}
		if got := kr.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("DeleteRecords on a without DELETE: %v", kerr.ErrorForCode(got))
		}
		ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
		ofe.ReplicaID = -1
		for _, n := range []string{"a", "b"} {
			ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
			ot.Topic = n
			op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			op.CurrentLeaderEpoch, op.LeaderEpoch = -1, 0
			ot.Partitions = append(ot.Partitions, op)
			ofe.Topics = append(ofe.Topics, ot)
		}
		kr, err = tb.Client.Broker(1).Request(ctx, ofe)
		if err != nil {
			t.Fatal(err)
		}
		codes := map[string]int16{}
		for _, ot := range kr.(*kmsg.OffsetForLeaderEpochResponse).Topics {
			codes[ot.Topic] = ot.Partitions[0].ErrorCode
		}
		if codes["a"] != 0 || codes["b"] != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("OffsetForLeaderEpoch codes %v, want a ok and b TOPIC_AUTHORIZATION_FAILED", codes)
		}
		dp := kmsg.NewPtrDescribeProducersRequest()
		for _, n := range []string{"a", "b"} {
			dt := kmsg.NewDescribeProducersRequestTopic()
			dt.Topic, dt.Partitions = n, []int32{0}
			dp.Topics = append(dp.Topics, dt)
		}
		kr, err = tb.Client.Broker(1).Request(ctx, dp)
		if err != nil {
			t.Fatal(err)
		}
		codes = map[string]int16{}
		for _, dt := range kr.(*kmsg.DescribeProducersResponse).Topics {
			codes[dt.Topic] = dt.Partitions[0].ErrorCode
		}
		if codes["a"] != 0 || codes["b"] != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("DescribeProducers codes %v, want a ok and b TOPIC_AUTHORIZATION_FAILED", codes)
		}
		lr, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		if lr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("ListPartitionReassignments without DESCRIBE on the cluster: %v", kerr.ErrorForCode(lr.ErrorCode))
		}
		dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
		kr, err = tb.Client.Broker(1).Request(ctx, dtp)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tp := range kr.(*kmsg.DescribeTopicPartitionsResponse).Topics {
			names = append(names, *tp.Topic)
		}
		if !slices.Equal(names, []string{"a"}) {
			t.Errorf("DescribeTopicPartitions of all topics lists %v, want [a]", names)
		}
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = "b"
		dtp.Topics = append(dtp.Topics, rt)
		kr, err = tb.Client.Broker(1).Request(ctx, dtp)
		if err != nil {
			t.Fatal(err)
		}
		if got := kr.(*kmsg.DescribeTopicPartitionsResponse).Topics; len(got) != 1 || got[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("DescribeTopicPartitions of b: %+v, want TOPIC_AUTHORIZATION_FAILED", got)
		}
	})

	t.Run("ALL on the cluster and WRITE on a", func(t *testing.T) {
		addACLs(anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpAll), anonACL(authz.ResourceTopic, "a", authz.OpWrite))
		if err := tb.Client.ProduceSync(ctx, &kgo.Record{Topic: "a", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("producing to a with WRITE: %v", err)
		}
		acls := kmsg.NewPtrDescribeACLsRequest()
		acls.ResourceType, acls.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		acls.Operation, acls.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		dr, err := acls.RequestWith(ctx, tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range dr.Resources {
			n += len(r.ACLs)
		}
		if dr.ErrorCode != 0 || n != 5 || len(dr.Resources) != 2 {
			t.Fatalf("DescribeAcls with ALL on the cluster: %v, %d ACLs in %d resources; want 5 in 2", kerr.ErrorForCode(dr.ErrorCode), n, len(dr.Resources))
		}
	})
}

// TestAuthorizationTransactions: a transactional producer needs WRITE on its transactional ID
// (InitProducerId refused without it) and, given it and WRITE on the topic, commits.
func TestAuthorizationTransactions(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	ctx := testContext(t)
	res, err := tb.Ctrl.CreateACLs(ctx, []authz.ACL{anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpCreate),
		anonACL(authz.ResourceTopic, "tx-topic", authz.OpWrite)})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("creating ACLs: %v %+v", err, res)
	}
	tb.Broker.waitForImage(ctx, tb.Ctrl.Image().Offset)
	if _, err := tb.Admin.CreateTopic(ctx, 1, 1, nil, "tx-topic"); err != nil {
		t.Fatal(err)
	}
	producer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("tx-topic"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// franz-go initializes a transactional producer's ID (InitProducerId) before the first
	// transaction; its error names the code without wrapping kerr's value.
	if err := producer().BeginTransaction(); err == nil || !strings.Contains(err.Error(), kerr.TransactionalIDAuthorizationFailed.Message) {
		t.Fatalf("beginning a transaction without WRITE on the transactional ID: %v", err)
	}
	res, err = tb.Ctrl.CreateACLs(ctx, []authz.ACL{anonACL(authz.ResourceTransactionalID, "tx", authz.OpWrite)})
	if err != nil || res[0].Err != nil {
		t.Fatalf("creating ACLs: %v %+v", err, res)
	}
	tb.Broker.waitForImage(ctx, tb.Ctrl.Image().Offset)
	cl := producer()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce with WRITE on the transactional ID: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// WRITE implies DESCRIBE on tx; "other" is not describable.
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx", "other"}
	kr, err := tb.Client.Broker(1).Request(ctx, dt)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, st := range kr.(*kmsg.DescribeTransactionsResponse).TransactionStates {
		codes[st.TransactionalID] = st.ErrorCode
	}
	if codes["tx"] != 0 || codes["other"] != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("DescribeTransactions codes %v, want tx ok and other TRANSACTIONAL_ID_AUTHORIZATION_FAILED", codes)
	}
}

// TestAuthorizationWriteTxnMarkers: WriteTxnMarkers, the transaction coordinators' own API,
// needs CLUSTER_ACTION on the cluster (Kafka's KafkaApis.handleWriteTxnMarkersRequest);
// without it every partition of every marker is answered CLUSTER_AUTHORIZATION_FAILED and
// nothing is written.
func TestAuthorizationWriteTxnMarkers(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	ctx := testContext(t)
	send := func() *kmsg.WriteTxnMarkersResponse {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		for _, pid := range []int64{7, 8} {
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = pid, 0, true
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = "nosuch", []int32{0, 1}
			m.Topics = append(m.Topics, mt)
			req.Markers = append(req.Markers, m)
		}
		// To the broker itself: the client's own routing would look the topic up first.
		raw, err := tb.Client.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return raw.(*kmsg.WriteTxnMarkersResponse)
	}
	codes := func(resp *kmsg.WriteTxnMarkersResponse) (n int, denied int) {
		for _, m := range resp.Markers {
			for _, tp := range m.Topics {
				for _, p := range tp.Partitions {
					n++
					if p.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
						denied++
					}
				}
			}
		}
		return n, denied
	}
	if n, denied := codes(send()); n != 4 || denied != 4 {
		t.Fatalf("without CLUSTER_ACTION: %d of %d partitions CLUSTER_AUTHORIZATION_FAILED, want 4 of 4", denied, n)
	}
	res, err := tb.Ctrl.CreateACLs(ctx, []authz.ACL{anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpClusterAction)})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	tb.Broker.waitForImage(ctx, tb.Ctrl.Image().Offset)
	resp := send()
	if n, denied := codes(resp); n != 4 || denied != 0 {
		t.Fatalf("with CLUSTER_ACTION: %d of %d partitions still refused", denied, n)
	}
	if c := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("with CLUSTER_ACTION a marker for an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(c))
	}
}

// TestAuthorizationStreamsGroups: the streams group APIs check what Kafka's KafkaApis checks.
// StreamsGroupHeartbeat: READ on the group, DESCRIBE on every topic the topology names, and
// CREATE (on the cluster, else on each topic) for the internal topics it would create — when
// that is missing the topics are not created and the MISSING_INTERNAL_TOPICS status says so.
// StreamsGroupDescribe: DESCRIBE on the group, and on the topics of the group's topology.
func TestAuthorizationStreamsGroups(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass,
		// The first heartbeat answers MISSING_INTERNAL_TOPICS alone, without the initial
		// rebalance delay's ASSIGNMENT_DELAYED beside it.
		"group.streams.initial.rebalance.delay.ms": "0"}, streamsVersions())
	ctx := testContext(t)
	addACLs := func(acls ...authz.ACL) { t.Helper(); tb.addACLs(t, acls...) }
	const changelog = "app-store-changelog"
	addACLs(anonACL(authz.ResourceTopic, "src", authz.OpCreate))
	if _, err := tb.Admin.CreateTopic(ctx, 2, 1, nil, "src"); err != nil {
		t.Fatal(err)
	}

	if resp := streamsJoin(t, tb, "app", "src"); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("heartbeat without READ on the group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	addACLs(anonACL(authz.ResourceGroup, "app", authz.OpRead))
	if resp := streamsJoin(t, tb, "app", "src"); resp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("heartbeat without DESCRIBE on the topology's topics: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	addACLs(anonACL(authz.ResourceTopic, "src", authz.OpDescribe))
	if resp := streamsJoin(t, tb, "app", "src"); resp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("heartbeat without DESCRIBE on the changelog: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	addACLs(anonACL(authz.ResourceTopic, changelog, authz.OpDescribe))
	if err := tb.Admin.FindGroupCoordinators(ctx, "app").Error(); err != nil {
		t.Fatal(err)
	}
	heartbeat := func() *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		for {
			resp := streamsJoin(t, tb, "app", "src")
			if resp.ErrorCode != kerr.NotCoordinator.Code && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
				return resp
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the coordinator never loaded: %s", kerr.ErrorForCode(resp.ErrorCode))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	resp := heartbeat()
	if resp.ErrorCode != 0 || len(resp.Status) != 1 || resp.Status[0].StatusCode != streamsStatusMissingInternalTopics ||
		!strings.Contains(resp.Status[0].StatusDetail, "; Unauthorized to CREATE on topics "+changelog+".") {
		t.Fatalf("heartbeat without CREATE on the changelog: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Status)
	}
	if tb.Ctrl.Image().Topics[changelog] != nil {
		t.Fatal("the changelog was created without CREATE")
	}
	addACLs(anonACL(authz.ResourceTopic, changelog, authz.OpCreate))
	if resp := heartbeat(); resp.ErrorCode != 0 || strings.Contains(fmt.Sprint(resp.Status), "Unauthorized") {
		t.Fatalf("heartbeat with CREATE on the changelog: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Status)
	}
	if tb.Ctrl.Image().Topics[changelog] == nil {
		t.Fatal("the changelog was not created with CREATE on it")
	}

	describe := func() map[string]kmsg.StreamsGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{"app", "other"}
		raw, err := tb.Client.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]kmsg.StreamsGroupDescribeResponseGroup{}
		for _, g := range raw.(*kmsg.StreamsGroupDescribeResponse).Groups {
			out[g.Group] = g
		}
		return out
	}
	groups := describe()
	if g := groups["other"]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describing a group without DESCRIBE on it: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	if g := groups["app"]; g.ErrorCode != 0 || g.Topology == nil || len(g.Members) != 1 {
		t.Fatalf("describing app: %v %+v", kerr.ErrorForCode(g.ErrorCode), g)
	}
	deny := anonACL(authz.ResourceTopic, changelog, authz.OpDescribe)
	deny.Permission = authz.PermDeny
	addACLs(deny)
	g := describe()["app"]
	if g.ErrorCode != kerr.TopicAuthorizationFailed.Code || g.ErrorMessage == nil || *g.ErrorMessage != streamsDescribeTopicsDenied || len(g.Members) != 0 {
		t.Fatalf("describing app with its changelog undescribable: %v %+v", kerr.ErrorForCode(g.ErrorCode), g)
	}
}

// TestAuthorizationConsumerGroupDescribeTopics: ConsumerGroupDescribe needs DESCRIBE on the
// group, and, as Kafka's handleConsumerGroupDescribe, DESCRIBE on every topic of its members'
// assignments: a group assigned a topic the caller may not describe is answered
// TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members, so the topic's name and its
// partitions' owners stay hidden. The groups' order and the others' answers are unchanged.
func TestAuthorizationConsumerGroupDescribeTopics(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	ctx := testContext(t)
	addACLs := func(acls ...authz.ACL) { t.Helper(); tb.addACLs(t, acls...) }
	addACLs(anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpCreate),
		anonACL(authz.ResourceGroup, "cg", authz.OpRead), anonACL(authz.ResourceGroup, "cg", authz.OpDescribe),
		anonACL(authz.ResourceTopic, "seen", authz.OpDescribe), anonACL(authz.ResourceTopic, "hidden", authz.OpDescribe))
	for _, name := range []string{"seen", "hidden"} {
		if _, err := tb.Admin.CreateTopic(ctx, 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Admin.FindGroupCoordinators(ctx, "cg").Error(); err != nil {
		t.Fatal(err)
	}
	// One KIP-848 member subscribed to both topics, until the coordinator assigns it.
	for {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "cg", "m1", 30000
		req.SubscribedTopicNames = []string{"seen", "hidden"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		raw, err := tb.Client.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := raw.(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode == 0 && resp.Assignment != nil && len(resp.Assignment.Topics) == 2 {
			break
		}
		if resp.ErrorCode != 0 && resp.ErrorCode != kerr.NotCoordinator.Code && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("joining cg: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cg's member was never assigned both topics: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Assignment)
		case <-time.After(20 * time.Millisecond):
		}
	}
	describe := func() map[string]kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"cg", "other"}
		raw, err := tb.Client.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]kmsg.ConsumerGroupDescribeResponseGroup{}
		for _, g := range raw.(*kmsg.ConsumerGroupDescribeResponse).Groups {
			out[g.Group] = g
		}
		return out
	}
	groups := describe()
	if g := groups["other"]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describing a group without DESCRIBE on it: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	if g := groups["cg"]; g.ErrorCode != 0 || len(g.Members) != 1 || len(g.Members[0].Assignment.TopicPartitions) != 2 {
		t.Fatalf("describing cg with DESCRIBE on both topics: %v %+v", kerr.ErrorForCode(g.ErrorCode), g)
	}

	deny := anonACL(authz.ResourceTopic, "hidden", authz.OpDescribe)
	deny.Permission = authz.PermDeny
	addACLs(deny)
	groups = describe()
	g := groups["cg"]
	if g.ErrorCode != kerr.TopicAuthorizationFailed.Code || g.ErrorMessage == nil || *g.ErrorMessage != consumerDescribeTopicsDenied || len(g.Members) != 0 {
		t.Fatalf("describing cg with an assigned topic undescribable: %v %+v", kerr.ErrorForCode(g.ErrorCode), g)
	}
	if strings.Contains(fmt.Sprintf("%+v", g), "hidden") {
		t.Fatalf("the refused description names the hidden topic: %+v", g)
	}
	if g := groups["other"]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describing other after the deny: %v", kerr.ErrorForCode(g.ErrorCode))
	}
}
