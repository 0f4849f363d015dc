package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

// TestControllerListenerAuthorization: with an authorizer, the controller listener checks
// what Kafka's ControllerApis checks. Its users: node (a super user, as the cluster's nodes
// are), admin (CREATE on topic "mine" only) and eve (no ACLs). eve is refused the node APIs
// (BrokerRegistration), the cluster APIs (DescribeQuorum, CreateAcls, AlterUserScram
// Credentials) and every topic, and nothing she asked for happens; admin creates "mine" but
// not "theirs" in one request; node may do anything. Before, any client that reached the
// controller listener could create ACLs, credentials and topics.
func TestControllerListenerAuthorization(t *testing.T) {
	ctx := testCtx(t)
	// One voter, so leadership never moves on a loaded machine; one broker, unfenced, to
	// place replicas on.
	ctrl, err := controller.Start(controller.Config{NodeID: 1, Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	epoch, err := ctrl.RegisterBroker(ctx, controller.BrokerRegistration{BrokerID: 5, ClusterID: ctrl.Image().ClusterID,
		IncarnationID: [16]byte{1}, Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ctrl.Heartbeat(ctx, controller.BrokerHeartbeat{BrokerID: 5, BrokerEpoch: epoch, MetadataOffset: ctrl.Image().Offset}); err != nil || res.IsFenced {
		t.Fatalf("unfencing broker 5: %v %+v", err, res)
	}
	if res, err := ctrl.CreateACLs(ctx, []authz.ACL{{ResourceType: authz.ResourceTopic, ResourceName: "mine",
		PatternType: authz.PatternLiteral, Principal: "User:admin", Host: "*", Operation: authz.OpCreate,
		Permission: authz.PermAllow}}); err != nil || res[0].Err != nil {
		t.Fatalf("creating admin's ACL: %v %+v", err, res)
	}
	s, err := NewServer(ServerConfig{Controller: ctrl, Logger: quietLogger(),
		Authorizer: authz.New([]string{"User:node"}, false)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := wire.Listen(wire.Config{Addr: "127.0.0.1:0", ListenerName: "CONTROLLER", SecurityProtocol: "SASL_PLAINTEXT",
		SASL: &wire.SASLConfig{Mechanisms: []string{"PLAIN"},
			PlainUsers: map[string]string{"node": "n-pw", "admin": "a-pw", "eve": "e-pw"}},
		Versions: ServerVersions, Logger: quietLogger()}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	// Requests go to the listener itself (a client's own routing would look for a controller
	// through Metadata, which the controller listener does not serve).
	client := func(user, pass string) kmsg.Requestor {
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl.SeedBrokers()[0]
	}
	eve, admin, node := client("eve", "e-pw"), client("admin", "a-pw"), client("node", "n-pw")
	aclsBefore := len(ctrl.Image().ACLs.Select(authz.Filter{ResourceType: authz.ResourceAny, PatternType: authz.PatternAny,
		Operation: authz.OpAny, Permission: authz.PermAny}))

	t.Run("eve", func(t *testing.T) {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID = 7, ctrl.Image().ClusterID
		if r, err := reg.RequestWith(ctx, eve); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("BrokerRegistration: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
		}
		if r, err := kmsg.NewPtrDescribeQuorumRequest().RequestWith(ctx, eve); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("DescribeQuorum: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
		}
		create := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeCluster, authz.ClusterName, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:eve", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
		create.Creations = append(create.Creations, c)
		if r, err := create.RequestWith(ctx, eve); err != nil || len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("CreateAcls: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
		}
		scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		del.Name, del.Mechanism = "node", 1
		scram.Deletions = append(scram.Deletions, del)
		if r, err := scram.RequestWith(ctx, eve); err != nil || len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("AlterUserScramCredentials: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
		}
		codes := createTopics(t, ctx, eve, "mine", "theirs")
		for _, name := range []string{"mine", "theirs"} {
			if codes[name] != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("CreateTopics %s: code %d, want TOPIC_AUTHORIZATION_FAILED", name, codes[name])
			}
		}
		im := ctrl.Image()
		if im.Brokers[7] != nil || im.Topics["mine"] != nil || im.Topics["theirs"] != nil {
			t.Errorf("eve's refused requests changed the metadata: broker 7 %+v, topics %v", im.Brokers[7], im.Topics)
		}
		if n := len(im.ACLs.Select(authz.Filter{ResourceType: authz.ResourceAny, PatternType: authz.PatternAny,
			Operation: authz.OpAny, Permission: authz.PermAny})); n != aclsBefore {
			t.Errorf("ACLs after eve's refused CreateAcls: %d, were %d", n, aclsBefore)
		}
	})

	t.Run("admin", func(t *testing.T) {
		codes := createTopics(t, ctx, admin, "mine", "theirs")
		if codes["mine"] != 0 || codes["theirs"] != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("CreateTopics mine, theirs: %v, want mine created and theirs TOPIC_AUTHORIZATION_FAILED", codes)
		}
		eventually(t, "mine in the image, theirs not", func() bool {
			im := ctrl.Image()
			return im.Topics["mine"] != nil && im.Topics["theirs"] == nil
		})
		if r, err := kmsg.NewPtrDescribeQuorumRequest().RequestWith(ctx, admin); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("admin's DescribeQuorum: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
		}
	})

	t.Run("node", func(t *testing.T) {
		if codes := createTopics(t, ctx, node, "theirs"); codes["theirs"] != 0 {
			t.Fatalf("a super user's CreateTopics: %v", codes)
		}
		r, err := kmsg.NewPtrDescribeQuorumRequest().RequestWith(ctx, node)
		if err == nil {
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err != nil && !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Errorf("a super user's DescribeQuorum: %v", err)
		}
	})
}

// createTopics asks cl to create one-partition topics and returns each topic's error code.
func createTopics(t *testing.T, ctx context.Context, cl kmsg.Requestor, names ...string) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for _, name := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if len(codes) != len(names) {
		t.Fatalf("CreateTopics %v answered %+v", names, resp.Topics)
	}
	return codes
}
