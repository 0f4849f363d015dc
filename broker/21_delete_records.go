package broker

// DeleteRecords, key 21: v0–v2.
//
// Per partition, moves the log start offset up to the requested offset (-1: the high
// watermark) and answers the partition's low watermark. As Kafka's Partition.deleteRecordsOnLeader
// does: an offset below -1 or above the high watermark is OFFSET_OUT_OF_RANGE, a topic whose
// cleanup.policy lacks "delete" is POLICY_VIOLATION, and an offset at or below the current log
// start changes nothing. Failed partitions answer low watermark -1.
//
// The answer waits for the followers, as Kafka's DelayedDeleteRecords: the low watermark is the
// smallest log start over the leader and every follower in the assignment on a live
// (registered, unfenced) broker, as each follower last reported it in a fetch
// (LogStartOffset, Fetch v5+). Followers move their log start to the leader's with every fetch
// response (fetcher.go). While some partition's low watermark is below its requested offset
// the request is a delayed operation in the purgatory, keyed by its partitions, woken when a
// follower reports a new log start or the assignment changes; at TimeoutMillis each partition
// still waiting is answered REQUEST_TIMED_OUT with the low watermark of the leader's move, and
// one whose leadership moved meanwhile NOT_LEADER_OR_FOLLOWER with -1.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/broker/replica"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

func init() {
	register(21, 0, 2, func(b *Broker, _ context.Context, wreq *wire.Request, respond wire.Respond) {
		req, ok := wreq.Body.(*kmsg.DeleteRecordsRequest)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		b.handleDeleteRecords(wreq.Conn, req, respond)
	})
}

func (b *Broker) handleDeleteRecords(conn *wire.ConnInfo, req *kmsg.DeleteRecordsRequest, respond wire.Respond) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	im := b.ctrl.Image()
	var waits []deleteWait
	for ti, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		denied := !b.allowedTopic(conn, authz.OpDelete, rt.Topic)
		for pi, rp := range rt.Partitions {
			p := kmsg.NewDeleteRecordsResponseTopicPartition()
			p.Partition = rp.Partition
			if denied {
				p.LowWatermark, p.ErrorCode = -1, kerr.TopicAuthorizationFailed.Code
			} else {
				var wait *deleteWait
				p.LowWatermark, p.ErrorCode, wait = b.deleteRecords(im, rt.Topic, rp.Partition, rp.Offset)
				if wait != nil {
					wait.topic, wait.partition = ti, pi
					waits = append(waits, *wait)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if len(waits) == 0 {
		respond(resp, nil)
		return
	}
	keys := make([]topicPartition, len(waits))
	for i, w := range waits {
		keys[i] = w.key
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	b.purgatory.Add(&delayedDeleteRecords{resp: resp, respond: respond, waits: waits}, keys, timeout)
}

// deleteRecords moves one partition's log start offset and returns the low watermark, or -1
// and an error code; when the low watermark is below the offset asked for, also the wait for
// the followers.
func (b *Broker) deleteRecords(im *controller.Image, topic string, partition int32, offset int64) (int64, int16, *deleteWait) {
	rs := b.resolvePartition(im, topic, controller.TopicID{}, false, partition, true)
	if rs.errCode != 0 {
		return -1, rs.errCode, nil
	}
	policy := config.ParseList(b.topicConfigValue(im, rs.topic, "cleanup.policy"))
	if !slices.Contains(policy, "delete") {
		return -1, kerr.PolicyViolation.Code, nil
	}
	p := rs.partition
	// The replica checks the offset (-1: the HW) against its HW under the lock the move
	// takes, so a concurrent HW or leadership change cannot slip in between.
	res, err := p.replica.DeleteRecords(offset)
	if err != nil {
		if code := appendErrorCode(err); code == kerr.OffsetOutOfRange.Code || code == kerr.NotLeaderForPartition.Code {
			return -1, code, nil
		}
		b.logger.Warn("deleting records", "partition", p.tp.String(), "offset", offset, "err", err)
		return -1, storageErrorCode(err), nil
	}
	if res.LowWatermark >= res.Requested {
		return res.LowWatermark, 0, nil
	}
	return res.LowWatermark, 0, &deleteWait{key: p.tp, DeleteRecordsWait: replica.DeleteRecordsWait{
		Replica: p.replica, Required: res.Requested, LowWatermark: res.LowWatermark,
	}}
}

// delayedDeleteRecords is a DeleteRecords whose partitions wait for their followers' log
// starts (Kafka's DelayedDeleteRecords).
type delayedDeleteRecords struct {
	resp    *kmsg.DeleteRecordsResponse
	respond wire.Respond
	waits   []deleteWait
}

// deleteWait is one partition's wait, with its place in the response.
type deleteWait struct {
	replica.DeleteRecordsWait
	key              topicPartition
	topic, partition int
}

// TryComplete implements replica.Operation: answered once every partition's wait settled.
func (d *delayedDeleteRecords) TryComplete(expired bool) bool {
	for i := range d.waits {
		if !d.waits[i].Check(expired) {
			return false
		}
	}
	for i := range d.waits {
		w := &d.waits[i]
		p := &d.resp.Topics[w.topic].Partitions[w.partition]
		p.LowWatermark = w.LowWatermark
		if w.Err != nil {
			p.ErrorCode = appendErrorCode(w.Err)
		}
	}
	d.respond(d.resp, nil)
	return true
}
