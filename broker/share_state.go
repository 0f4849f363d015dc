package broker

// The share-group state persister (KIP-932), as Kafka 4.4 splits it: the share coordinator
// (coordinator.ShareCoordinator) holds the state of share partitions on the __share_group_state
// partitions this node leads, and answers the persister APIs InitializeShareGroupState (83),
// ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86) and
// ReadShareGroupStateSummary (87) for them; FindCoordinator key type SHARE (2) with the key
// "group:topicId:partition" names its node. The share partitions themselves live on the leader
// of their topic partition (share_groups.go), which reads their state back when it first serves
// them and writes it through the persister (sharePersister) — to the local coordinator, or over
// the inter-broker listener to the node leading the state's partition, as Kafka's
// DefaultStatePersister does.
//
// __share_group_state is created on first use, compacted, with
// share.coordinator.state.topic.num.partitions partitions, replication factor
// share.coordinator.state.topic.replication.factor (capped at the registered brokers) and
// min.insync.replicas share.coordinator.state.topic.min.isr (capped at that factor), like
// __consumer_offsets; a failover of one of its partitions loads the shard on the new leader
// from the replicated log.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/coordinator"
	"sluice/wire"
)

// shareStateTopic is Kafka's internal topic of share-group state.
const shareStateTopic = coordinator.ShareStateTopicName

// coordinatorShare is FindCoordinator's key type for a share partition's state.
const coordinatorShare = 2

func newShareCoordinator(b *Broker) *coordinator.ShareCoordinator {
	s := b.cfg.Static
	return coordinator.NewShare(coordinator.ShareConfig{
		NumPartitions:      s.Int32("share.coordinator.state.topic.num.partitions"),
		UpdatesPerSnapshot: int(s.Int32("share.coordinator.snapshot.update.records.per.snapshot")),
		Topics:             imageTopics{b.ctrl},
		Logger:             b.logger,
	})
}

// ensureShareStateTopic creates __share_group_state if it does not exist yet and waits until
// this node has applied it.
func (b *Broker) ensureShareStateTopic(ctx context.Context) error {
	if b.ctrl.Image().Topics[shareStateTopic] != nil {
		return nil
	}
	s := b.cfg.Static
	rf := s.Int16("share.coordinator.state.topic.replication.factor")
	if brokers := int16(len(b.ctrl.Image().Brokers)); rf > brokers {
		rf = brokers
	}
	minISR := min(int32(s.Int16("share.coordinator.state.topic.min.isr")), int32(rf))
	res, err := b.ctrl.CreateTopics(ctx, []controller.CreateTopic{{
		Name:              shareStateTopic,
		NumPartitions:     s.Int32("share.coordinator.state.topic.num.partitions"),
		ReplicationFactor: rf,
		Internal:          true,
		Configs: map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "producer",
			"min.insync.replicas": strconv.Itoa(int(minISR)),
			"segment.bytes":       strconv.Itoa(int(s.Int32("share.coordinator.state.topic.segment.bytes"))),
		},
	}}, false)
	if err != nil {
		return err
	}
	if len(res) == 1 && res[0].Err != nil && res[0].Err != kerr.TopicAlreadyExists {
		return fmt.Errorf("creating %s: %w", shareStateTopic, res[0].Err)
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)
	return nil
}

// reconcileShareCoordinator loads the share coordinator's shards of the __share_group_state
// partitions this node leads and unloads the others. REQUIRES: called from reconcile only.
func (b *Broker) reconcileShareCoordinator(im *controller.Image) {
	want := map[int32]*Partition{}
	if topic := im.Topics[shareStateTopic]; topic != nil {
		for _, info := range topic.Partitions {
			if info.Leader != b.nodeID {
				continue
			}
			if p := b.partition(shareStateTopic, info.Partition); p != nil {
				want[info.Partition] = p
			}
		}
	}
	for partition, log := range b.shareStateLoaded {
		if want[partition] != log.p {
			b.shareCoord.Unload(partition)
			delete(b.shareStateLoaded, partition)
		}
	}
	for partition, p := range want {
		if _, ok := b.shareStateLoaded[partition]; ok {
			continue
		}
		log := &offsetsPartitionLog{b: b, p: p}
		b.shareStateLoaded[partition] = log
		go func() {
			if err := b.shareCoord.Load(partition, log); err != nil && !errors.Is(err, coordinator.ErrClosed) {
				b.logger.Error("loading share coordinator shard", "partition", partition, "err", err)
			}
		}()
	}
}

// The persister APIs are inter-broker: CLUSTER_ACTION on the cluster, as Kafka's KafkaApis;
// a caller without it gets CLUSTER_AUTHORIZATION_FAILED on every partition.
func init() {
	registerSync(83, 0, 0, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.InitializeShareGroupStateRequest) (kmsg.Response, error) {
		return b.shareCoord.HandleInitialize(ctx, req, b.shareStateRefusal(conn)), nil
	})
	registerSync(84, 0, 0, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.ReadShareGroupStateRequest) (kmsg.Response, error) {
		return b.shareCoord.HandleRead(ctx, req, b.shareStateRefusal(conn)), nil
	})
	registerSync(85, 0, 1, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.WriteShareGroupStateRequest) (kmsg.Response, error) {
		return b.shareCoord.HandleWrite(ctx, req, b.shareStateRefusal(conn)), nil
	})
	registerSync(86, 0, 0, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.DeleteShareGroupStateRequest) (kmsg.Response, error) {
		return b.shareCoord.HandleDelete(ctx, req, b.shareStateRefusal(conn)), nil
	})
	registerSync(87, 0, 1, func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req *kmsg.ReadShareGroupStateSummaryRequest) (kmsg.Response, error) {
		return b.shareCoord.HandleReadSummary(ctx, req, b.shareStateRefusal(conn)), nil
	})
}

// shareStateRefusal is the code every partition of a persister request gets when conn may not
// make it (CLUSTER_AUTHORIZATION_FAILED), 0 when it may.
func (b *Broker) shareStateRefusal(conn *wire.ConnInfo) int16 {
	if b.authzOn() && !b.allowedCluster(conn, authz.OpClusterAction) {
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}

// sharePersistTimeout bounds one persister call (share.coordinator.write.timeout.ms).
func (b *Broker) sharePersistTimeout() time.Duration {
	return time.Duration(b.cfg.Static.Int32("share.coordinator.write.timeout.ms")) * time.Millisecond
}

// shareStateNode is the node whose share coordinator holds k's state, creating the topic on
// first use; -1 with a coordinator error code when there is none.
func (b *Broker) shareStateNode(ctx context.Context, k coordinator.SharePartitionKey) (int32, int16) {
	if err := b.ensureShareStateTopic(ctx); err != nil {
		b.logger.Warn("creating the share group state topic", "err", err)
		return -1, kerr.CoordinatorNotAvailable.Code
	}
	topic := b.ctrl.Image().Topics[shareStateTopic]
	partition := b.shareCoord.PartitionFor(k)
	if topic == nil || int(partition) >= len(topic.Partitions) || topic.Partitions[partition].Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable.Code
	}
	return topic.Partitions[partition].Leader, 0
}

// persistRead reads a share partition's state through the persister.
func (b *Broker) persistReadOnce(ctx context.Context, k coordinator.SharePartitionKey, leaderEpoch int32) coordinator.ShareReadResult {
	if b.shares.inMemory {
		return coordinator.ShareReadResult{StartOffset: -1} // group.share.persister.class.name: no persister
	}
	node, code := b.shareStateNode(ctx, k)
	if code != 0 {
		return coordinator.ShareReadResult{ErrorCode: code, StartOffset: -1}
	}
	if node == b.nodeID {
		return b.shareCoord.Read(ctx, k, leaderEpoch, false)
	}
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.sendToPeer(ctx, node, req)
	if err != nil {
		return coordinator.ShareReadResult{ErrorCode: kerr.CoordinatorNotAvailable.Code, StartOffset: -1}
	}
	r := resp.(*kmsg.ReadShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return coordinator.ShareReadResult{ErrorCode: kerr.UnknownServerError.Code, StartOffset: -1}
	}
	p := r.Topics[0].Partitions[0]
	out := coordinator.ShareReadResult{ErrorCode: p.ErrorCode, StateEpoch: p.StateEpoch, StartOffset: p.StartOffset, LeaderEpoch: leaderEpoch}
	for _, sb := range p.StateBatches {
		out.Batches = append(out.Batches, coordinator.ShareStateBatch{FirstOffset: sb.FirstOffset, LastOffset: sb.LastOffset,
			DeliveryState: sb.DeliveryState, DeliveryCount: sb.DeliveryCount})
	}
	return out
}

// persistWrite writes a share partition's state through the persister and returns its code.
func (b *Broker) persistWriteOnce(ctx context.Context, k coordinator.SharePartitionKey, w coordinator.ShareWrite) int16 {
	if b.shares.inMemory {
		return 0 // group.share.persister.class.name: no persister
	}
	node, code := b.shareStateNode(ctx, k)
	if code != 0 {
		return code
	}
	if node == b.nodeID {
		return b.shareCoord.Write(ctx, k, w)
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset, rp.DeliveryCompleteCount = k.Partition, w.StateEpoch, w.LeaderEpoch, w.StartOffset, w.DeliveryCompleteCount
	for _, sb := range w.Batches {
		s := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		s.FirstOffset, s.LastOffset, s.DeliveryState, s.DeliveryCount = sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount
		rp.StateBatches = append(rp.StateBatches, s)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.sendToPeer(ctx, node, req)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	r := resp.(*kmsg.WriteShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// persistDelete deletes a share partition's state through the persister.
func (b *Broker) persistDeleteOnce(ctx context.Context, k coordinator.SharePartitionKey) int16 {
	if b.shares.inMemory {
		return 0 // group.share.persister.class.name: no persister
	}
	node, code := b.shareStateNode(ctx, k)
	if code != 0 {
		return code
	}
	if node == b.nodeID {
		return b.shareCoord.Delete(ctx, k)
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = k.Partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.sendToPeer(ctx, node, req)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	r := resp.(*kmsg.DeleteShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// sendToPeer sends req to node itself over the inter-broker listener.
func (b *Broker) sendToPeer(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := b.peer(node)
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, kerr.CoordinatorNotAvailable
	}
	return seeds[0].Request(ctx, req)
}

// persistInitialize sets a share partition's state epoch and start offset through the persister
// (InitializeShareGroupState), as Kafka's group coordinator does when offsets are altered.
func (b *Broker) persistInitializeOnce(ctx context.Context, k coordinator.SharePartitionKey, stateEpoch int32, startOffset int64) int16 {
	node, code := b.shareStateNode(ctx, k)
	if code != 0 {
		return code
	}
	if node == b.nodeID {
		return b.shareCoord.Initialize(ctx, k, stateEpoch, startOffset)
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = k.Partition, stateEpoch, startOffset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.sendToPeer(ctx, node, req)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	r := resp.(*kmsg.InitializeShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// shareRetry is how often a persister call is retried while the share coordinator is not ready.
const shareRetry = 20 * time.Millisecond

// retryCoordinator runs call until it answers something other than "the coordinator is not
// ready" (loading, not available, moved), or ctx ends: the state topic was just created, or a
// shard is loading after a restart or failover. Kafka's persister retries the same errors.
func retryCoordinator[R any](ctx context.Context, code func(R) int16, call func() R) R {
	for {
		r := call()
		switch code(r) {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		default:
			return r
		}
		t := time.NewTimer(shareRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return r
		case <-t.C:
		}
	}
}

func self(c int16) int16 { return c }

// persistRead reads a share partition's state through the persister, retrying while the
// coordinator is not ready (at most share.coordinator.write.timeout.ms).
func (b *Broker) persistRead(ctx context.Context, k coordinator.SharePartitionKey, leaderEpoch int32) coordinator.ShareReadResult {
	ctx, cancel := context.WithTimeout(ctx, b.sharePersistTimeout())
	defer cancel()
	return retryCoordinator(ctx, func(r coordinator.ShareReadResult) int16 { return r.ErrorCode },
		func() coordinator.ShareReadResult { return b.persistReadOnce(ctx, k, leaderEpoch) })
}

// persistWrite writes a share partition's state through the persister, retrying likewise.
func (b *Broker) persistWrite(ctx context.Context, k coordinator.SharePartitionKey, w coordinator.ShareWrite) int16 {
	ctx, cancel := context.WithTimeout(ctx, b.sharePersistTimeout())
	defer cancel()
	return retryCoordinator(ctx, self, func() int16 { return b.persistWriteOnce(ctx, k, w) })
}

// persistDelete deletes a share partition's state through the persister, retrying likewise.
func (b *Broker) persistDelete(ctx context.Context, k coordinator.SharePartitionKey) int16 {
	ctx, cancel := context.WithTimeout(ctx, b.sharePersistTimeout())
	defer cancel()
	return retryCoordinator(ctx, self, func() int16 { return b.persistDeleteOnce(ctx, k) })
}

// persistInitialize initializes a share partition's state through the persister, retrying
// likewise.
func (b *Broker) persistInitialize(ctx context.Context, k coordinator.SharePartitionKey, stateEpoch int32, startOffset int64) int16 {
	ctx, cancel := context.WithTimeout(ctx, b.sharePersistTimeout())
	defer cancel()
	return retryCoordinator(ctx, self, func() int16 { return b.persistInitializeOnce(ctx, k, stateEpoch, startOffset) })
}
