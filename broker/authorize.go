package broker

// Authorization (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer).
//
// With no authorizer configured every request is allowed and nothing here runs. With one,
// each API checks what Kafka's KafkaApis checks, through the helpers below, against the ACLs
// of the newest metadata image (authz decides; see authz/doc.go for the rules):
//
//	API                         needs                                            when refused
//	Produce                     WRITE topic; WRITE transactional id if set        TOPIC_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	Fetch (consumer)            READ topic                                        TOPIC_AUTHORIZATION_FAILED per partition
//	Fetch (follower)            CLUSTER_ACTION cluster                            CLUSTER_AUTHORIZATION_FAILED
//	ListOffsets                 DESCRIBE topic                                    TOPIC_AUTHORIZATION_FAILED
//	Metadata                    DESCRIBE topic; CREATE topic (or cluster) to      unlisted (all topics) or
//	                            auto-create                                       TOPIC_AUTHORIZATION_FAILED (named)
//	OffsetCommit                READ group, READ topic                            GROUP_/TOPIC_AUTHORIZATION_FAILED
//	OffsetFetch                 DESCRIBE group, DESCRIBE topic                    GROUP_/TOPIC_AUTHORIZATION_FAILED
//	Join/Sync/Heartbeat/Leave   READ group                                        GROUP_AUTHORIZATION_FAILED
//	DescribeGroups: DESCRIBE group; ListGroups: DESCRIBE cluster, else only the groups it may
//	describe; DeleteGroups, OffsetDelete: DELETE group
//	ConsumerGroupDescribe       DESCRIBE group; DESCRIBE on its members'          GROUP_/TOPIC_AUTHORIZATION_FAILED per group
//	                            assigned (current and target) topics
//	ConsumerGroupHeartbeat      READ group, DESCRIBE on subscribed topics         GROUP_/TOPIC_AUTHORIZATION_FAILED
//	FindCoordinator             DESCRIBE group / transactional id                 GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	InitProducerId              WRITE transactional id; without one IDEMPOTENT_WRITE cluster
//	                            or WRITE on some topic                            TRANSACTIONAL_ID_/CLUSTER_AUTHORIZATION_FAILED
//	CreateTopics                CREATE cluster or topic                           TOPIC_AUTHORIZATION_FAILED
//	DeleteTopics                DELETE topic                                      TOPIC_AUTHORIZATION_FAILED
//	CreatePartitions            ALTER topic                                       TOPIC_AUTHORIZATION_FAILED
//	DescribeConfigs             DESCRIBE_CONFIGS topic / cluster                  TOPIC_/CLUSTER_AUTHORIZATION_FAILED
//	AlterConfigs, Incremental   ALTER_CONFIGS topic / cluster                     TOPIC_/CLUSTER_AUTHORIZATION_FAILED
//	DescribeAcls                DESCRIBE cluster                                  CLUSTER_AUTHORIZATION_FAILED
//	CreateAcls, DeleteAcls      ALTER cluster                                     CLUSTER_AUTHORIZATION_FAILED
//	DescribeTopicPartitions     DESCRIBE topic                                    unlisted / TOPIC_AUTHORIZATION_FAILED
//	DescribeLogDirs, ListPartitionReassignments: DESCRIBE cluster; ElectLeaders,
//	AlterPartitionReassignments, UnregisterBroker: ALTER cluster (clusterOps, checked in Handle)
//	Describe/AlterClientQuotas  DESCRIBE_CONFIGS / ALTER_CONFIGS cluster (clusterOps)
//	Describe/AlterUserScramCredentials, DescribeQuorum, Add/RemoveRaftVoter: DESCRIBE / ALTER cluster (clusterOps)
//	StreamsGroupHeartbeat       READ group; DESCRIBE on the topology's topics;    GROUP_/TOPIC_AUTHORIZATION_FAILED;
//	                            CREATE cluster or topic for internal topics       not created, said in MISSING_INTERNAL_TOPICS
//	StreamsGroupDescribe        DESCRIBE group; DESCRIBE on its topology's topics GROUP_/TOPIC_AUTHORIZATION_FAILED per group
//	WriteTxnMarkers             CLUSTER_ACTION cluster                            CLUSTER_AUTHORIZATION_FAILED per partition
//	Transaction APIs            see authorize_txn.go
//	DeleteRecords               DELETE topic                                      TOPIC_AUTHORIZATION_FAILED
//	OffsetForLeaderEpoch        DESCRIBE topic; CLUSTER_ACTION for followers      TOPIC_/CLUSTER_AUTHORIZATION_FAILED
//	DescribeProducers           READ topic                                        TOPIC_AUTHORIZATION_FAILED
//
// DescribeCluster is not authorized, as in Kafka; nor are ApiVersions and the SASL APIs.
// WriteTxnMarkers comes from the transaction coordinators of other nodes (over their peer
// clients): their principal needs CLUSTER_ACTION, as for follower fetches (super.users).
//
// The controller listener's APIs are authorized by the cluster package (cluster/authorize.go),
// as Kafka's ControllerApis does.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

// NewAuthorizer returns the configured authorizer, nil when there is none (the config
// refuses any class but StandardAuthorizer). The controller listener uses one too.
func NewAuthorizer(cfg *config.Broker) *authz.Authorizer {
	if cfg == nil || cfg.String("authorizer.class.name") == "" {
		return nil
	}
	return authz.New(authz.ParseSuperUsers(cfg.String("super.users")), cfg.Bool("allow.everyone.if.no.acl.found"))
}

// authzOn reports whether requests are authorized at all.
func (b *Broker) authzOn() bool { return b.authorizer != nil }

// allowed reports whether conn may perform op on the resource; always with no authorizer.
func (b *Broker) allowed(conn *wire.ConnInfo, op, resourceType int8, name string) bool {
	if b.authorizer == nil {
		return true
	}
	if conn == nil {
		return false
	}
	return b.authorizer.Authorize(b.ctrl.Image().ACLs, authz.Request{Principal: conn.Principal(), Host: authz.HostOf(conn.RemoteAddr),
		Operation: op, ResourceType: resourceType, ResourceName: name})
}

// allowedCluster is allowed for the CLUSTER resource.
func (b *Broker) allowedCluster(conn *wire.ConnInfo, op int8) bool {
	return b.allowed(conn, op, authz.ResourceCluster, authz.ClusterName)
}

func (b *Broker) allowedTopic(conn *wire.ConnInfo, op int8, topic string) bool {
	return b.allowed(conn, op, authz.ResourceTopic, topic)
}

func (b *Broker) allowedGroup(conn *wire.ConnInfo, op int8, group string) bool {
	return b.allowed(conn, op, authz.ResourceGroup, group)
}

// allowedAnyTopic is Kafka's authorizeByResourceType(TOPIC, op).
func (b *Broker) allowedAnyTopic(conn *wire.ConnInfo, op int8) bool {
	if b.authorizer == nil {
		return true
	}
	if conn == nil {
		return false
	}
	return b.authorizer.AuthorizeAny(b.ctrl.Image().ACLs, conn.Principal(), authz.HostOf(conn.RemoteAddr), authz.ResourceTopic, op)
}

// topicNameOf is the name of a topic a request names by ID ("" when unknown).
func topicNameOf(im *controller.Image, id [16]byte) string {
	if t := im.TopicsByID[controller.TopicID(id)]; t != nil {
		return t.Name
	}
	return ""
}

// aclMetadata is what the ACL APIs need of Metadata: controller.Controller and cluster.Link
// have it.
type aclMetadata interface {
	CreateACLs(ctx context.Context, acls []authz.ACL) ([]controller.CreateACLResult, error)
	DeleteACLs(ctx context.Context, filters []authz.Filter) ([]controller.DeleteACLsResult, error)
}

var _ aclMetadata = (*controller.Controller)(nil)

// configResourceDenied is the code for a config resource conn may not act on with op
// (ALTER_CONFIGS or DESCRIBE_CONFIGS): topics need it on the topic, groups on the group,
// brokers and client metrics subscriptions on the cluster.
func (b *Broker) configResourceDenied(conn *wire.ConnInfo, op, resourceType int8, name string) int16 {
	switch {
	case !b.authzOn():
	case resourceType == resourceTopic:
		if !b.allowedTopic(conn, op, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case resourceType == resourceGroup:
		if !b.allowedGroup(conn, op, name) {
			return kerr.GroupAuthorizationFailed.Code
		}
	case resourceType == resourceBroker || resourceType == resourceBrokerLogger || resourceType == resourceClientMetrics:
		if !b.allowedCluster(conn, op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

// authorizeAlterResources fails the resources conn may not ALTER_CONFIGS.
func (b *Broker) authorizeAlterResources(conn *wire.ConnInfo, rs []alterResource) {
	for i := range rs {
		if code := b.configResourceDenied(conn, authz.OpAlterConfigs, rs[i].resourceType, rs[i].name); code != 0 {
			rs[i].fail(code, kerr.ErrorForCode(code).(*kerr.Error).Description)
		}
	}
}

// clusterOps are the APIs that need one operation on the cluster and nothing else; Handle
// refuses them as a whole (clusterDenied) before their handler runs.
var clusterOps = map[int16]int8{
	35: authz.OpDescribe,        // DescribeLogDirs
	43: authz.OpAlter,           // ElectLeaders
	45: authz.OpAlter,           // AlterPartitionReassignments
	46: authz.OpDescribe,        // ListPartitionReassignments
	48: authz.OpDescribeConfigs, // DescribeClientQuotas
	49: authz.OpAlterConfigs,    // AlterClientQuotas
	50: authz.OpDescribe,        // DescribeUserScramCredentials
	51: authz.OpAlter,           // AlterUserScramCredentials
	55: authz.OpDescribe,        // DescribeQuorum
	57: authz.OpAlter,           // UpdateFeatures
	64: authz.OpAlter,           // UnregisterBroker
	80: authz.OpAlter,           // AddRaftVoter
	81: authz.OpAlter,           // RemoveRaftVoter
}

// clusterDenied returns the CLUSTER_AUTHORIZATION_FAILED answer to a request of clusterOps
// that conn may not make, nil when it may (or the API is not one of them).
func (b *Broker) clusterDenied(req *wire.Request) kmsg.Response {
	op, ok := clusterOps[req.Key]
	if !ok || !b.authzOn() || b.allowedCluster(req.Conn, op) {
		return nil
	}
	return authz.ClusterRefusal(req.Body)
}
