package broker

// OffsetForLeaderEpoch, key 23: v0–v4.
//
// Per partition: the largest leader epoch <= the requested one that the log holds and the end
// offset of that epoch (the start of the next epoch, or the log end offset for the latest), as
// Kafka's LeaderEpochFileCache.endOffsetFor answers. An epoch the log cannot place answers
// UNDEFINED: epoch -1, offset -1, no error. v1+ returns the epoch; v2+ checks the client's
// current leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); v3+ carries the replica
// id (-1 consumers, -2 debug, >= 0 followers). Like Kafka, every caller must ask the leader.
// A leader that has not appended in its current epoch yet answers as if that epoch started at
// its log end, as Kafka's leader does (leaderEndOffsetForEpoch). A request naming a newer
// current leader epoch than this broker applied waits for its metadata (leader_catchup.go).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(23, 0, 4, (*Broker).handleOffsetForLeaderEpoch) }

func (b *Broker) handleOffsetForLeaderEpoch(ctx context.Context, conn *wire.ConnInfo, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	req, denied := b.authorizeOffsetForLeaderEpoch(conn, req)
	resp, err := b.serveOffsetForLeaderEpoch(ctx, req)
	if err == nil {
		resp.(*kmsg.OffsetForLeaderEpochResponse).Topics = append(resp.(*kmsg.OffsetForLeaderEpochResponse).Topics, denied...)
	}
	return resp, err
}

// authorizeOffsetForLeaderEpoch: a follower (replica ID >= 0) needs CLUSTER_ACTION on the
// cluster, a consumer DESCRIBE on each topic, as Kafka's KafkaApis. It returns the request
// narrowed to what conn may ask and the answers for the rest.
func (b *Broker) authorizeOffsetForLeaderEpoch(conn *wire.ConnInfo, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochRequest, []kmsg.OffsetForLeaderEpochResponseTopic) {
	if !b.authzOn() {
		return req, nil
	}
	follower := req.Version >= 3 && req.ReplicaID >= 0
	clusterOK := follower && b.allowedCluster(conn, authz.OpClusterAction)
	narrowed := *req
	narrowed.Topics = nil
	var denied []kmsg.OffsetForLeaderEpochResponseTopic
	for _, rt := range req.Topics {
		code := int16(0)
		switch {
		case follower && !clusterOK:
			code = kerr.ClusterAuthorizationFailed.Code
		case !follower && !b.allowedTopic(conn, authz.OpDescribe, rt.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		}
		if code == 0 {
			narrowed.Topics = append(narrowed.Topics, rt)
			continue
		}
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			p.Partition, p.ErrorCode, p.LeaderEpoch, p.EndOffset = rp.Partition, code, -1, -1
			t.Partitions = append(t.Partitions, p)
		}
		denied = append(denied, t)
	}
	return &narrowed, denied
}

func (b *Broker) serveOffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	var deadline <-chan time.Time
	for {
		resp, behind := b.offsetForLeaderEpoch(req)
		if !behind {
			return resp, nil
		}
		// The client knows a newer leader epoch than this broker applied (leader_catchup.go).
		if deadline == nil {
			leaderEpochWaits.Add(1)
			t := time.NewTimer(leaderCatchUpWait)
			defer t.Stop()
			deadline = t.C
		}
		if !b.awaitAppliedImage(ctx, deadline) {
			resp, _ := b.offsetForLeaderEpoch(req)
			return resp, nil
		}
	}
}

// offsetForLeaderEpoch answers req from the current image; behind reports a partition whose
// error may be only this broker's metadata lagging the client's (behindClient).
func (b *Broker) offsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) (resp *kmsg.OffsetForLeaderEpochResponse, behind bool) {
	resp = req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	im := b.ctrl.Image()
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			p.Partition = rp.Partition
			currentEpoch := rp.CurrentLeaderEpoch
			if req.Version < 2 {
				currentEpoch = -1 // the field does not exist before v2
			}
			p.ErrorCode, p.LeaderEpoch, p.EndOffset = b.endOffsetForEpoch(im, rt.Topic, rp.Partition, currentEpoch, rp.LeaderEpoch)
			behind = behind || b.behindClient(p.ErrorCode, rt.Topic, rp.Partition, currentEpoch)
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, behind
}

func (b *Broker) endOffsetForEpoch(im *controller.Image, topic string, partition, currentEpoch, epoch int32) (code int16, endEpoch int32, endOffset int64) {
	rs := b.resolvePartition(im, topic, controller.TopicID{}, false, partition, true)
	if rs.errCode != 0 {
		return rs.errCode, -1, -1
	}
	if code := checkLeaderEpoch(currentEpoch, rs.partition.replica.Snapshot().LeaderEpoch); code != 0 {
		return code, -1, -1
	}
	if epoch < 0 {
		return 0, -1, -1
	}
	endEpoch, endOffset = leaderEndOffsetForEpoch(rs.partition, epoch)
	if endOffset < 0 {
		return 0, -1, -1
	}
	return 0, endEpoch, endOffset
}
