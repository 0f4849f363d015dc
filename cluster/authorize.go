package cluster

// Authorization on the controller listener (authorizer.class.name set: ServerConfig.Authorizer).
//
// Kafka's ControllerApis authorizes every request its controllers serve; so does Server,
// against the ACLs of the local controller's image:
//
//	API                                               needs                     when refused
//	BrokerRegistration, BrokerHeartbeat,              CLUSTER_ACTION cluster    CLUSTER_AUTHORIZATION_FAILED
//	AlterPartition, AllocateProducerIds,
//	UpdateRaftVoter
//	ElectLeaders, AlterPartitionReassignments,        ALTER cluster             CLUSTER_AUTHORIZATION_FAILED
//	UnregisterBroker, AlterUserScramCredentials,
//	UpdateFeatures, AddRaftVoter, RemoveRaftVoter,
//	DescribeCluster (ALTER on a controller, as Kafka), CreateAcls, DeleteAcls
//	DescribeQuorum, ListPartitionReassignments,       DESCRIBE cluster          CLUSTER_AUTHORIZATION_FAILED
//	DescribeAcls
//	AlterClientQuotas                                 ALTER_CONFIGS cluster     CLUSTER_AUTHORIZATION_FAILED
//	CreateTopics                                      CREATE cluster or topic   TOPIC_AUTHORIZATION_FAILED per topic
//	DeleteTopics                                      DELETE cluster or topic   TOPIC_AUTHORIZATION_FAILED per topic
//	CreatePartitions                                  ALTER topic               TOPIC_AUTHORIZATION_FAILED per topic
//	AlterConfigs, IncrementalAlterConfigs             ALTER_CONFIGS on the      CLUSTER_/TOPIC_/GROUP_AUTHORIZATION_FAILED
//	                                                  resource (cluster for     per resource
//	                                                  brokers and loggers)
//
// ApiVersions and the SASL APIs are not authorized. One difference from Kafka: a principal
// with CLUSTER_ACTION on the cluster (the cluster's own nodes, usually super.users) may make any
// request here. Brokers forward their clients' admin requests to the active controller as
// plain requests, having authorized the client themselves (broker/authorize.go), where Kafka
// wraps them in an Envelope whose sender needs CLUSTER_ACTION and whose inner principal the
// controller authorizes again.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

// controllerClusterOps are the APIs that need one operation on the cluster and nothing else.
var controllerClusterOps = map[int16]int8{
	29: authz.OpDescribe,      // DescribeAcls
	30: authz.OpAlter,         // CreateAcls
	31: authz.OpAlter,         // DeleteAcls
	43: authz.OpAlter,         // ElectLeaders
	45: authz.OpAlter,         // AlterPartitionReassignments
	46: authz.OpDescribe,      // ListPartitionReassignments
	49: authz.OpAlterConfigs,  // AlterClientQuotas
	51: authz.OpAlter,         // AlterUserScramCredentials
	55: authz.OpDescribe,      // DescribeQuorum
	56: authz.OpClusterAction, // AlterPartition
	57: authz.OpAlter,         // UpdateFeatures
	60: authz.OpAlter,         // DescribeCluster
	62: authz.OpClusterAction, // BrokerRegistration
	63: authz.OpClusterAction, // BrokerHeartbeat
	64: authz.OpAlter,         // UnregisterBroker
	67: authz.OpClusterAction, // AllocateProducerIds
	80: authz.OpAlter,         // AddRaftVoter
	81: authz.OpAlter,         // RemoveRaftVoter
	82: authz.OpClusterAction, // UpdateRaftVoter
}

// unauthorizedKeys are the APIs anyone may call: ApiVersions and the SASL exchange.
var unauthorizedKeys = map[int16]bool{17: true, 18: true, 36: true}

// allowed reports whether conn may perform op on the resource (always, with no authorizer).
func (s *Server) allowed(conn *wire.ConnInfo, op, resourceType int8, name string) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	if conn == nil {
		return false
	}
	return s.cfg.Authorizer.Authorize(s.cfg.Controller.Image().ACLs, authz.Request{Principal: conn.Principal(),
		Host: authz.HostOf(conn.RemoteAddr), Operation: op, ResourceType: resourceType, ResourceName: name})
}

func (s *Server) allowedCluster(conn *wire.ConnInfo, op int8) bool {
	return s.allowed(conn, op, authz.ResourceCluster, authz.ClusterName)
}

// authorize checks req before its handler runs. It returns the whole answer when the request
// is refused as a whole (refused != nil); otherwise it may have taken the items conn may not
// touch out of req.Body, and then finish adds their refusals to the handler's response.
func (s *Server) authorize(req *wire.Request) (refused kmsg.Response, finish func(kmsg.Response)) {
	if s.cfg.Authorizer == nil || unauthorizedKeys[req.Key] || s.allowedCluster(req.Conn, authz.OpClusterAction) {
		return nil, nil
	}
	if op, ok := controllerClusterOps[req.Key]; ok {
		if s.allowedCluster(req.Conn, op) {
			return nil, nil
		}
		return authz.ClusterRefusal(req.Body), nil
	}
	switch r := req.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		return nil, s.authorizeCreateTopics(req.Conn, r)
	case *kmsg.DeleteTopicsRequest:
		return nil, s.authorizeDeleteTopics(req.Conn, r)
	case *kmsg.CreatePartitionsRequest:
		return nil, s.authorizeCreatePartitions(req.Conn, r)
	case *kmsg.AlterConfigsRequest:
		return nil, s.authorizeAlterConfigs(req.Conn, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return nil, s.authorizeIncrementalAlterConfigs(req.Conn, r)
	}
	// An API added to the listener without a rule here is refused rather than left open.
	return authz.ClusterRefusal(req.Body), nil
}

// authorizeCreateTopics keeps the topics conn may create (CREATE on the cluster, else on the
// topic) and refuses the others with TOPIC_AUTHORIZATION_FAILED, as ControllerApis does.
func (s *Server) authorizeCreateTopics(conn *wire.ConnInfo, r *kmsg.CreateTopicsRequest) func(kmsg.Response) {
	if s.allowedCluster(conn, authz.OpCreate) {
		return nil
	}
	var kept []kmsg.CreateTopicsRequestTopic
	var denied []string
	for _, t := range r.Topics {
		if s.allowed(conn, authz.OpCreate, authz.ResourceTopic, t.Topic) {
			kept = append(kept, t)
		} else {
			denied = append(denied, t.Topic)
		}
	}
	r.Topics = kept
	return func(resp kmsg.Response) {
		out := resp.(*kmsg.CreateTopicsResponse)
		for _, name := range denied {
			t := kmsg.NewCreateTopicsResponseTopic()
			t.Topic, t.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
			t.ErrorMessage = strPtr("Authorization failed.")
			t.NumPartitions, t.ReplicationFactor = -1, -1
			out.Topics = append(out.Topics, t)
		}
	}
}

// authorizeDeleteTopics keeps the topics conn may delete (DELETE on the cluster, else on the
// topic; a topic named by ID is looked up in the image, and an unknown ID is left to the
// handler, which answers UNKNOWN_TOPIC_ID).
func (s *Server) authorizeDeleteTopics(conn *wire.ConnInfo, r *kmsg.DeleteTopicsRequest) func(kmsg.Response) {
	if s.allowedCluster(conn, authz.OpDelete) {
		return nil
	}
	im := s.cfg.Controller.Image()
	mayDelete := func(name string) bool { return s.allowed(conn, authz.OpDelete, authz.ResourceTopic, name) }
	var denied []kmsg.DeleteTopicsResponseTopic
	refuse := func(name *string, id [16]byte) {
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic, t.TopicID, t.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		denied = append(denied, t)
	}
	if r.Version < 6 {
		var kept []string
		for _, name := range r.TopicNames {
			if mayDelete(name) {
				kept = append(kept, name)
			} else {
				refuse(strPtr(name), [16]byte{})
			}
		}
		r.TopicNames = kept
	} else {
		var kept []kmsg.DeleteTopicsRequestTopic
		for _, t := range r.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			} else if topic := im.TopicsByID[t.TopicID]; topic != nil {
				name = topic.Name
			} else {
				kept = append(kept, t) // unknown ID: the handler's answer
				continue
			}
			if mayDelete(name) {
				kept = append(kept, t)
			} else {
				refuse(t.Topic, t.TopicID)
			}
		}
		r.Topics = kept
	}
	return func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteTopicsResponse)
		out.Topics = append(out.Topics, denied...)
	}
}

// authorizeCreatePartitions keeps the topics conn may alter (ALTER on the topic).
func (s *Server) authorizeCreatePartitions(conn *wire.ConnInfo, r *kmsg.CreatePartitionsRequest) func(kmsg.Response) {
	var kept []kmsg.CreatePartitionsRequestTopic
	var denied []string
	for _, t := range r.Topics {
		if s.allowed(conn, authz.OpAlter, authz.ResourceTopic, t.Topic) {
			kept = append(kept, t)
		} else {
			denied = append(denied, t.Topic)
		}
	}
	r.Topics = kept
	return func(resp kmsg.Response) {
		out := resp.(*kmsg.CreatePartitionsResponse)
		for _, name := range denied {
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic, t.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
			out.Topics = append(out.Topics, t)
		}
	}
}

// Config resource types (Kafka's ConfigResource.Type codes) and the ACL resource each is
// authorized on.
const (
	configResourceTopic int8 = 2
	configResourceGroup int8 = 32
)

// configRefusal says whether conn may not ALTER_CONFIGS the resource, and with which code.
func (s *Server) configRefusal(conn *wire.ConnInfo, resourceType int8, name string) (int16, bool) {
	switch resourceType {
	case configResourceTopic:
		if !s.allowed(conn, authz.OpAlterConfigs, authz.ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed.Code, true
		}
	case configResourceGroup:
		if !s.allowed(conn, authz.OpAlterConfigs, authz.ResourceGroup, name) {
			return kerr.GroupAuthorizationFailed.Code, true
		}
	default: // brokers, broker loggers, client metrics, and types the handler refuses anyway
		if !s.allowedCluster(conn, authz.OpAlterConfigs) {
			return kerr.ClusterAuthorizationFailed.Code, true
		}
	}
	return 0, false
}

type configDenial struct {
	resourceType int8
	name         string
	code         int16
}

// splitConfigResources keeps the resources conn may alter and lists the refusals of the
// others; resource gives a resource's type and name (AlterConfigs and IncrementalAlterConfigs
// name them alike in different kmsg types).
func splitConfigResources[R any](s *Server, conn *wire.ConnInfo, resources []R, resource func(R) (kmsg.ConfigResourceType, string)) (kept []R, denied []configDenial) {
	for _, res := range resources {
		typ, name := resource(res)
		if code, refused := s.configRefusal(conn, int8(typ), name); refused {
			denied = append(denied, configDenial{int8(typ), name, code})
		} else {
			kept = append(kept, res)
		}
	}
	return kept, denied
}

func (s *Server) authorizeAlterConfigs(conn *wire.ConnInfo, r *kmsg.AlterConfigsRequest) func(kmsg.Response) {
	var denied []configDenial
	r.Resources, denied = splitConfigResources(s, conn, r.Resources, func(res kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
		return res.ResourceType, res.ResourceName
	})
	return func(resp kmsg.Response) {
		out := resp.(*kmsg.AlterConfigsResponse)
		for _, d := range denied {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = kmsg.ConfigResourceType(d.resourceType), d.name, d.code
			out.Resources = append(out.Resources, rr)
		}
	}
}

func (s *Server) authorizeIncrementalAlterConfigs(conn *wire.ConnInfo, r *kmsg.IncrementalAlterConfigsRequest) func(kmsg.Response) {
	var denied []configDenial
	r.Resources, denied = splitConfigResources(s, conn, r.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
		return res.ResourceType, res.ResourceName
	})
	return func(resp kmsg.Response) {
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, d := range denied {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = kmsg.ConfigResourceType(d.resourceType), d.name, d.code
			out.Resources = append(out.Resources, rr)
		}
	}
}
