package broker

// CreateTopics, key 19: v0–v7.
//
// v1+: ValidateOnly and per-topic error messages. v4+ (KIP-464): NumPartitions and
// ReplicationFactor may be -1 for the broker's num.partitions / default.replication.factor
// (accepted at every version). v5+ (KIP-525): a created (or validated) topic is answered with
// its partition count, replication factor and resolved configs (value, read-only, source,
// sensitivity); a failed topic with -1/-1 and no configs. v7: the topic ID.
//
// The request shape is checked here as Kafka's ControllerApis and ReplicationControlManager
// check it (duplicate names, manual assignments with explicit counts, non-positive counts); the
// controller checks names, existence, placement and configs. A created topic is answered only
// after this broker has applied it, so a client can produce to it at once.
//
// __cluster_metadata cannot be created (TOPIC_AUTHORIZATION_FAILED, as Kafka answers).
//
// A topic that would make a broker host more partition replicas than maxHostedPartitions (none
// unless Config.MaxHostedPartitions sets one) is refused with POLICY_VIOLATION, as Kafka
// refuses creates past its own partition limits, and nothing of it is created;
// CreatePartitions and auto-creation likewise.
//
// Not done: CreateTopicPolicy (create.topic.policy.class.name), controller mutation quotas.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(19, 0, 7, (*Broker).handleCreateTopics) }

// clusterMetadataTopic is the name of KRaft's metadata log, never a user topic.
const clusterMetadataTopic = "__cluster_metadata"

func (b *Broker) handleCreateTopics(ctx context.Context, conn *wire.ConnInfo, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := adminTimeout(ctx, req.TimeoutMillis)
	defer cancel()

	// Kafka answers every occurrence of a duplicated name with INVALID_REQUEST.
	counts := map[string]int{}
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}

	results := make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	var create []controller.CreateTopic
	var createIdx []int
	for i, rt := range req.Topics {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic = rt.Topic
		results[i] = t
		if counts[rt.Topic] > 1 {
			results[i].ErrorCode, results[i].ErrorMessage = kerr.InvalidRequest.Code, strPtr("Duplicate topic name.")
			continue
		}
		if rt.Topic == clusterMetadataTopic {
			// Kafka's ControllerApis never lets a client create the metadata topic and answers
			// as for an unauthorized topic. Here it would also collide with the metadata
			// directory, <log dir>/__cluster_metadata-0.
			results[i].ErrorCode, results[i].ErrorMessage = kerr.TopicAuthorizationFailed.Code, strPtr("Authorization failed.")
			continue
		}
		if b.authzOn() && !b.allowedCluster(conn, authz.OpCreate) && !b.allowedTopic(conn, authz.OpCreate, rt.Topic) {
			results[i].ErrorCode, results[i].ErrorMessage = kerr.TopicAuthorizationFailed.Code, strPtr("Authorization failed.")
			continue
		}
		ct, code, msg := b.createTopicFromRequest(&rt)
		if code != 0 {
			results[i].ErrorCode, results[i].ErrorMessage = code, msg
			continue
		}
		create = append(create, ct)
		createIdx = append(createIdx, i)
	}

	if len(create) > 0 {
		created, err := b.ctrl.CreateTopics(ctx, create, req.ValidateOnly)
		if err != nil {
			code, msg := controllerCallError(err)
			for _, i := range createIdx {
				results[i].ErrorCode, results[i].ErrorMessage = code, msg
			}
		} else {
			if !req.ValidateOnly {
				// The controller publishes the image holding the new topics before it returns.
				b.waitForImage(ctx, b.ctrl.Image().Offset)
			}
			im := b.ctrl.Image()
			byName := make(map[string]int, len(create))
			for j := range create {
				byName[create[j].Name] = j
			}
			answered := make([]bool, len(create))
			for _, r := range created {
				j, ok := byName[r.Name]
				if !ok || answered[j] {
					continue
				}
				answered[j] = true
				b.fillCreateTopicResult(im, &results[createIdx[j]], &create[j], &r, req.Version)
				if !req.ValidateOnly && results[createIdx[j]].ErrorCode == 0 {
					b.checkCreatedPartitions(&results[createIdx[j]], r.Topic)
				}
			}
			for j, done := range answered {
				if !done {
					results[createIdx[j]].ErrorCode = kerr.UnknownServerError.Code
				}
			}
		}
	}
	resp.Topics = results
	return resp, nil
}

// checkCreatedPartitions fails a created topic's result when this node could not create the
// files of one of its partitions (a full disk, an I/O error): the topic exists in the metadata
// but cannot take data here, so success would be a lie. The answer is KAFKA_STORAGE_ERROR with
// the cause; the partition is offline and is created by the background retry once the disk
// takes writes again (offline.go), after which the topic serves.
func (b *Broker) checkCreatedPartitions(out *kmsg.CreateTopicsResponseTopic, topic *controller.TopicInfo) {
	if topic == nil {
		return
	}
	for _, pi := range topic.Partitions {
		if !slices.Contains(pi.Replicas, b.nodeID) {
			continue
		}
		tp := topicPartition{topic.Name, pi.Partition}
		cause := b.offlineCause(tp)
		if cause == nil && b.partition(tp.topic, tp.partition) != nil {
			continue
		}
		if cause == nil {
			cause = errors.New("its log was not opened")
		}
		out.ErrorCode = kerr.KafkaStorageError.Code
		out.ErrorMessage = strPtr(fmt.Sprintf("The topic was created, but partition %d could not be created on node %d: %v. "+
			"It is retried in the background and serves once the log directory takes writes again.", pi.Partition, b.nodeID, cause))
		return
	}
}

// createTopicFromRequest checks one requested topic's shape and resolves defaults; a non-zero
// code rejects it with Kafka's message.
func (b *Broker) createTopicFromRequest(rt *kmsg.CreateTopicsRequestTopic) (controller.CreateTopic, int16, *string) {
	ct := controller.CreateTopic{
		Name:                 rt.Topic,
		NumPartitions:        rt.NumPartitions,
		ReplicationFactor:    rt.ReplicationFactor,
		MaxReplicasPerBroker: b.maxHostedPartitions(),
		Internal:             controller.IsInternalTopic(rt.Topic),
	}
	if len(rt.ReplicaAssignment) > 0 {
		// As Kafka's ReplicationControlManager words it.
		if rt.NumPartitions != -1 {
			return ct, kerr.InvalidRequest.Code, strPtr("A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		if rt.ReplicationFactor != -1 {
			return ct, kerr.InvalidRequest.Code, strPtr("A manual partition assignment was specified, but replicationFactor was not set to -1.")
		}
		ct.Assignments = make(map[int32][]int32, len(rt.ReplicaAssignment))
		for _, a := range rt.ReplicaAssignment {
			ct.Assignments[a.Partition] = a.Replicas
		}
	} else {
		switch {
		case rt.NumPartitions == -1:
			ct.NumPartitions = b.cfg.Static.NumPartitions
		case rt.NumPartitions <= 0:
			return ct, kerr.InvalidPartitions.Code, strPtr("Number of partitions was set to an invalid non-positive value.")
		}
		switch {
		case rt.ReplicationFactor == -1:
			ct.ReplicationFactor = b.cfg.Static.DefaultReplicationFactor
		case rt.ReplicationFactor <= 0:
			return ct, kerr.InvalidReplicationFactor.Code, strPtr("Replication factor must be larger than 0, or -1 to use the default value.")
		}
	}
	for _, c := range rt.Configs {
		if c.Value == nil {
			continue // a null value sets nothing, as Kafka's controller skips it
		}
		if ct.Configs == nil {
			ct.Configs = make(map[string]string, len(rt.Configs))
		}
		ct.Configs[c.Name] = *c.Value
	}
	return ct, 0, nil
}

// fillCreateTopicResult writes the controller's answer for one topic into the response.
func (b *Broker) fillCreateTopicResult(im *controller.Image, out *kmsg.CreateTopicsResponseTopic, ct *controller.CreateTopic, r *controller.CreateTopicResult, version int16) {
	out.ErrorCode, out.ErrorMessage = itemError(r.Err, r.Message)
	if out.ErrorCode != 0 {
		return
	}
	out.TopicID = r.ID
	out.NumPartitions, out.ReplicationFactor = ct.NumPartitions, ct.ReplicationFactor
	if len(ct.Assignments) > 0 {
		out.NumPartitions = int32(len(ct.Assignments))
		for _, replicas := range ct.Assignments {
			out.ReplicationFactor = int16(len(replicas))
			break
		}
	}
	overrides := ct.Configs
	if r.Topic != nil {
		out.TopicID = r.Topic.ID
		out.NumPartitions = int32(len(r.Topic.Partitions))
		if len(r.Topic.Partitions) > 0 {
			out.ReplicationFactor = int16(len(r.Topic.Partitions[0].Replicas))
		}
		overrides = r.Topic.Configs
	}
	if version < 5 {
		return
	}
	for _, e := range b.topicConfigEntries(im, overrides, nil) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.name, e.value, e.readOnly, int8(e.source), e.sensitive
		out.Configs = append(out.Configs, c)
	}
}

// maxHostedPartitions is the most partition replicas a broker may host (0 = no bound), which
// CreateTopics, CreatePartitions and auto-creation must not pass: Config.MaxHostedPartitions
// when set, else none. The descriptor limit does not bound partitions: segment files are
// opened through the process's file cache, which keeps at most its limit open and closes idle
// ones, so partitions beyond it cost reopens, not descriptors (issue 20: the bound derived
// from the file limit stopped a node at 10,000 partitions under `ulimit -n` 20,000).
func (b *Broker) maxHostedPartitions() int {
	return max(b.cfg.MaxHostedPartitions, 0)
}
