package broker

// Metadata, key 3: v0–v13.
//
// v0: an empty topic list means all topics; v1+: a null list means all, an empty list none.
// v4+: AllowAutoTopicCreation (before v4 auto-creation is always requested). v10+: topics may be
// named by ID. v13: top-level ErrorCode. Topics are auto-created, when auto.create.topics.enable
// is on, with num.partitions and default.replication.factor; unlike Kafka (which answers
// LEADER_NOT_AVAILABLE until the topic is ready) sluice waits for the creation to be applied and
// answers with the new topic's metadata, so clients need no retry.

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(3, 0, 13, (*Broker).handleMetadata) }

func (b *Broker) handleMetadata(ctx context.Context, conn *wire.ConnInfo, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	im := b.ctrl.Image()

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if !allTopics {
		im = b.autoCreateTopics(ctx, conn, im, req)
	}
	im = b.awaitLeaderFailover(ctx, im) // leader_hints.go

	resp.ClusterID = &im.ClusterID
	resp.ControllerID = b.nodeID
	resp.Brokers = brokersFor(im, conn.ListenerName)
	offline := b.offlineSnapshot()

	// With no partition offline here, every topic's answer comes from the image's cache.
	var cached *metadataTopics
	if offline == nil {
		cached = b.metadataTopicsFor(im)
	}
	answer := func(topic *controller.TopicInfo) kmsg.MetadataResponseTopic {
		if cached != nil {
			if i, ok := cached.index[topic.Name]; ok {
				return cached.topics[i] // a copy: fillAuthorizedOperations may complete it
			}
		}
		return topicMetadata(topic, b.nodeID, offline)
	}
	if allTopics {
		// Kafka leaves topics the caller may not describe out of an all-topics answer.
		switch {
		case cached != nil && !b.authzOn():
			resp.Topics = slices.Clone(cached.topics)
		case cached != nil: // already sorted: no second sort of the names
			for _, t := range cached.topics {
				if b.allowedTopic(conn, authz.OpDescribe, *t.Topic) {
					resp.Topics = append(resp.Topics, t)
				}
			}
		default:
			for _, name := range sortedTopicNames(im) {
				if b.allowedTopic(conn, authz.OpDescribe, name) {
					resp.Topics = append(resp.Topics, topicMetadata(im.Topics[name], b.nodeID, offline))
				}
			}
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		var topic *controller.TopicInfo
		if rt.Topic != nil {
			topic = im.Topics[*rt.Topic]
		} else {
			topic = im.TopicsByID[controller.TopicID(rt.TopicID)]
		}
		if b.authzOn() {
			name := ""
			if rt.Topic != nil {
				name = *rt.Topic
			} else if topic != nil {
				name = topic.Name
			}
			if !b.allowedTopic(conn, authz.OpDescribe, name) || topic == nil && rt.Topic != nil && b.autoCreateDenied(conn, req, name) {
				t := kmsg.NewMetadataResponseTopic()
				t.Topic, t.TopicID = rt.Topic, rt.TopicID
				t.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, t)
				continue
			}
		}
		if topic == nil {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if rt.Topic == nil {
				t.ErrorCode = kerr.UnknownTopicID.Code
			} else if err := controller.ValidateTopicName(*rt.Topic); err != nil {
				t.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, t)
			continue
		}
		resp.Topics = append(resp.Topics, answer(topic))
	}
	return resp, nil
}

// metadataTopics is every topic's Metadata answer for one image, sorted by name and indexed,
// built once per image and shared by the requests answered from it. Read-only once built:
// answers take copies of its elements, and the partitions' slices they share are never
// written. Building it costs what one all-topics answer cost before; each later request of
// the same image costs a copy of the topic headers (a 10,000-partition answer allocated
// 2.6 MB per request).
type metadataTopics struct {
	im     *controller.Image
	topics []kmsg.MetadataResponseTopic
	index  map[string]int
}

// metadataTopicsFor returns the cache for im, building it if the last one was of another
// image. Concurrent builders may both build; the last stored wins, both are correct.
func (b *Broker) metadataTopicsFor(im *controller.Image) *metadataTopics {
	if c := b.metadataCache.Load(); c != nil && c.im == im {
		return c
	}
	names := sortedTopicNames(im)
	c := &metadataTopics{im: im, topics: make([]kmsg.MetadataResponseTopic, 0, len(names)), index: make(map[string]int, len(names))}
	for i, name := range names {
		c.topics = append(c.topics, topicMetadata(im.Topics[name], b.nodeID, nil))
		c.index[name] = i
	}
	b.metadataCache.Store(c)
	return c
}

func sortedTopicNames(im *controller.Image) []string {
	names := make([]string, 0, len(im.Topics))
	for name := range im.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// autoCreateTopics creates the requested topics that do not exist, when the request and the
// broker allow it, and returns the image to answer from.
func (b *Broker) autoCreateTopics(ctx context.Context, conn *wire.ConnInfo, im *controller.Image, req *kmsg.MetadataRequest) *controller.Image {
	if !b.cfg.Static.AutoCreateTopicsEnable || (req.Version >= 4 && !req.AllowAutoTopicCreation) {
		return im
	}
	var create []controller.CreateTopic
	for _, rt := range req.Topics {
		if rt.Topic == nil || im.Topics[*rt.Topic] != nil || controller.ValidateTopicName(*rt.Topic) != nil || *rt.Topic == clusterMetadataTopic {
			continue
		}
		if b.authzOn() && (!b.allowedTopic(conn, authz.OpDescribe, *rt.Topic) || b.autoCreateDenied(conn, req, *rt.Topic)) {
			continue
		}
		create = append(create, controller.CreateTopic{
			Name:                 *rt.Topic,
			NumPartitions:        b.cfg.Static.NumPartitions,
			ReplicationFactor:    b.cfg.Static.DefaultReplicationFactor,
			MaxReplicasPerBroker: b.maxHostedPartitions(),
		})
	}
	if len(create) == 0 {
		return im
	}
	if _, err := b.ctrl.CreateTopics(ctx, create, false); err != nil {
		b.logger.Warn("auto-creating topics", "err", err)
	}
	latest := b.ctrl.Image()
	b.waitForImage(ctx, latest.Offset)
	return latest
}

// brokersFor lists the unfenced brokers with their endpoint on the named listener.
func brokersFor(im *controller.Image, listener string) []kmsg.MetadataResponseBroker {
	ids := make([]int32, 0, len(im.Brokers))
	for id, br := range im.Brokers {
		if !br.Fenced {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]kmsg.MetadataResponseBroker, 0, len(ids))
	for _, id := range ids {
		br := im.Brokers[id]
		ep, ok := endpointFor(br, listener)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = id, ep.Host, ep.Port, br.Rack
		out = append(out, mb)
	}
	return out
}

// endpointFor returns the broker's endpoint on the named listener, or its first endpoint when
// the name is empty or unknown (a single-listener cluster).
func endpointFor(br *controller.BrokerInfo, listener string) (controller.Endpoint, bool) {
	for _, ep := range br.Endpoints {
		if ep.Listener == listener {
			return ep, true
		}
	}
	if len(br.Endpoints) > 0 {
		return br.Endpoints[0], true
	}
	return controller.Endpoint{}, false
}

// topicMetadata describes topic as the image has it, except that replicas on this node that a
// storage error took offline (offline.go) are listed as offline replicas, and a partition this
// node led then has no leader (LEADER_NOT_AVAILABLE), as Kafka reports a partition whose only
// replica is in an offline log directory.
func topicMetadata(topic *controller.TopicInfo, nodeID int32, offline map[topicPartition]bool) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	name := topic.Name
	t.Topic = &name
	t.TopicID = topic.ID
	t.IsInternal = topic.Internal
	for _, pi := range topic.Partitions {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = pi.Partition
		p.Leader = pi.Leader
		p.LeaderEpoch = pi.LeaderEpoch
		p.Replicas = pi.Replicas
		p.ISR = pi.ISR
		p.OfflineReplicas = []int32{}
		if offline[topicPartition{topic.Name, pi.Partition}] {
			p.OfflineReplicas = []int32{nodeID}
			if p.Leader == nodeID {
				p.Leader = -1
			}
		}
		if p.Leader < 0 {
			p.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

// autoCreateDenied reports whether the request would auto-create the missing topic name but
// conn may not create it (CREATE on the cluster or the topic): Kafka then answers
// TOPIC_AUTHORIZATION_FAILED instead of creating it.
func (b *Broker) autoCreateDenied(conn *wire.ConnInfo, req *kmsg.MetadataRequest, name string) bool {
	if !b.cfg.Static.AutoCreateTopicsEnable || (req.Version >= 4 && !req.AllowAutoTopicCreation) {
		return false
	}
	return !b.allowedCluster(conn, authz.OpCreate) && !b.allowedTopic(conn, authz.OpCreate, name)
}
