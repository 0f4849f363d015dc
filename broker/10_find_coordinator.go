package broker

// FindCoordinator, key 10: v0–v6.
//
// v4+ batches keys (CoordinatorKeys) and answers per key. A group's coordinator is the leader of
// partition PartitionFor(group) of __consumer_offsets; a transactional ID's (key type 1) the
// leader of its partition of __transaction_state; a share partition's state (key type 2, v6+,
// key "group:topicId:partition", CLUSTER_ACTION) the leader of its partition of
// __share_group_state. Each topic is created on its first lookup, as Kafka does. Other key types
// answer INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/coordinator"
	"sluice/wire"
)

func init() { registerSync(10, 0, 6, (*Broker).handleFindCoordinator) }

// Coordinator key types.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (b *Broker) handleFindCoordinator(ctx context.Context, conn *wire.ConnInfo, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		b.findCoordinator(ctx, conn, req.CoordinatorType, key, &c)
		if req.Version < 4 {
			resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
			if c.ErrorCode != 0 {
				resp.ErrorMessage = c.ErrorMessage
				if resp.ErrorMessage == nil {
					msg := kerr.ErrorForCode(c.ErrorCode).Error()
					resp.ErrorMessage = &msg
				}
			}
			break
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

func (b *Broker) findCoordinator(ctx context.Context, conn *wire.ConnInfo, keyType int8, key string, out *kmsg.FindCoordinatorResponseCoordinator) {
	var topicName string
	var partition int32
	if code := b.findCoordinatorDenied(conn, keyType, key); code != 0 {
		out.ErrorCode = code
		return
	}
	switch keyType {
	case coordinatorGroup:
		if err := b.ensureOffsetsTopic(ctx); err != nil {
			b.logger.Warn("creating the offsets topic", "err", err)
			out.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return
		}
		topicName, partition = offsetsTopic, b.coord.PartitionFor(key)
	case coordinatorTransaction:
		if key == "" {
			out.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		if err := b.ensureTxnTopic(ctx); err != nil {
			b.logger.Warn("creating the transaction state topic", "err", err)
			out.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return
		}
		topicName, partition = txnTopic, b.txnCoord.PartitionFor(key)
	case coordinatorShare:
		if _, ok := coordinator.ParseShareCoordinatorKey(key); !ok {
			out.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		if err := b.ensureShareStateTopic(ctx); err != nil {
			b.logger.Warn("creating the share group state topic", "err", err)
			out.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return
		}
		topicName, partition = shareStateTopic, b.shareCoord.PartitionForKey(key)
	default:
		out.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	im := b.ctrl.Image()
	topic := im.Topics[topicName]
	if topic == nil || int(partition) >= len(topic.Partitions) {
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	leader := topic.Partitions[partition].Leader
	br := im.Brokers[leader]
	if br == nil {
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	ep, ok := endpointFor(br, conn.ListenerName)
	if !ok {
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	out.NodeID, out.Host, out.Port = leader, ep.Host, ep.Port
}

// findCoordinatorDenied: DESCRIBE on the group or transactional ID, as Kafka's KafkaApis.
func (b *Broker) findCoordinatorDenied(conn *wire.ConnInfo, keyType int8, key string) int16 {
	switch {
	case !b.authzOn():
	case keyType == coordinatorGroup && !b.allowedGroup(conn, authz.OpDescribe, key):
		return kerr.GroupAuthorizationFailed.Code
	case keyType == coordinatorTransaction && !b.allowed(conn, authz.OpDescribe, authz.ResourceTransactionalID, key):
		return kerr.TransactionalIDAuthorizationFailed.Code
	case keyType == coordinatorShare && !b.allowedCluster(conn, authz.OpClusterAction):
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}
