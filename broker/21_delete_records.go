package broker

// DeleteRecords, key 21: v0–v2.
//
// Per partition, moves the log start offset up to the requested offset (-1: the high
// watermark) and answers the new low watermark. As Kafka's Partition.deleteRecordsOnLeader
// does: an offset below -1 or above the high watermark is OFFSET_OUT_OF_RANGE, a topic whose
// cleanup.policy lacks "delete" is POLICY_VIOLATION, and an offset at or below the current log
// start changes nothing. Failed partitions answer low watermark -1.
//
// Not done: with followers Kafka answers once every replica's log start offset has moved (a
// delayed operation); sluice answers after the leader's.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

func init() { registerSync(21, 0, 2, (*Broker).handleDeleteRecords) }

func (b *Broker) handleDeleteRecords(_ context.Context, conn *wire.ConnInfo, req *kmsg.DeleteRecordsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	im := b.ctrl.Image()
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		denied := !b.allowedTopic(conn, authz.OpDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewDeleteRecordsResponseTopicPartition()
			p.Partition = rp.Partition
			if denied {
				p.LowWatermark, p.ErrorCode = -1, kerr.TopicAuthorizationFailed.Code
			} else {
				p.LowWatermark, p.ErrorCode = b.deleteRecords(im, rt.Topic, rp.Partition, rp.Offset)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

// deleteRecords moves one partition's log start offset and returns the new low watermark, or
// -1 and an error code.
func (b *Broker) deleteRecords(im *controller.Image, topic string, partition int32, offset int64) (int64, int16) {
	rs := b.resolvePartition(im, topic, controller.TopicID{}, false, partition, true)
	if rs.errCode != 0 {
		return -1, rs.errCode
	}
	policy := config.ParseList(b.topicConfigValue(im, rs.topic, "cleanup.policy"))
	if !slices.Contains(policy, "delete") {
		return -1, kerr.PolicyViolation.Code
	}
	p := rs.partition
	// The replica checks the offset (-1: the HW) against its HW under the lock the move
	// takes, so a concurrent HW or leadership change cannot slip in between.
	start, err := p.replica.DeleteRecordsBefore(offset)
	if err != nil {
		if code := appendErrorCode(err); code == kerr.OffsetOutOfRange.Code || code == kerr.NotLeaderForPartition.Code {
			return -1, code
		}
		b.logger.Warn("deleting records", "partition", p.tp.String(), "offset", offset, "err", err)
		return -1, storageErrorCode(err)
	}
	return start, 0
}
