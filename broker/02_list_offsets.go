package broker

// ListOffsets, key 2: v0–v11.
//
// v0 (removed by Kafka 4, KIP-896; served as Kafka 3.x's handleListOffsetRequestV0) answers a
// list of at most MaxNumOffsets offsets, newest first: for -1 the high watermark followed by
// the segments' base offsets below it, for -2 the log start offset. Kafka chose segments for
// any other timestamp by their files' modification times, which sluice does not keep; it
// answers the one offset v1 would find for the timestamp (none when there is none).
//
// Special timestamps: -2 earliest (log start offset), -1 latest (the high watermark; the last
// stable offset for read_committed), -3 (v7+) the offset of the largest timestamp, -4 (v8+)
// earliest local (= earliest: sluice has no tiered storage), -5 (v9+) latest tiered (none:
// offset -1), -6 (v11+, KIP-1023) earliest pending upload: timestamp, offset and leader epoch
// -1, what Kafka 4.4's UnifiedLog answers for a topic without remote storage (sluice has none);
// before v11, -6 is refused with INVALID_REQUEST like any other negative timestamp. Any other
// timestamp finds the first offset whose timestamp is at least it, or
// offset -1 when there is none below the high watermark. v4+ checks the client's current leader
// epoch and answers the leader epoch of the found offset.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(2, 0, 11, (*Broker).handleListOffsets) }

// The special timestamps of ListOffsets.
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
	// listEarliestPendingUpload (v11+) is the first offset not yet uploaded to remote storage.
	listEarliestPendingUpload = -6
)

func (b *Broker) handleListOffsets(_ context.Context, conn *wire.ConnInfo, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	im := b.ctrl.Image()
	for _, rt := range req.Topics {
		t := kmsg.NewListOffsetsResponseTopic()
		t.Topic = rt.Topic
		denied := !b.allowedTopic(conn, authz.OpDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewListOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			if denied {
				p.Timestamp, p.Offset, p.LeaderEpoch, p.ErrorCode = -1, -1, -1, kerr.TopicAuthorizationFailed.Code
			} else {
				b.listOffset(im, req, rt.Topic, &rp, &p)
				if req.Version == 0 {
					b.listOffsetsV0(im, rt.Topic, &rp, &p)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

func (b *Broker) listOffset(im *controller.Image, req *kmsg.ListOffsetsRequest, topic string, rp *kmsg.ListOffsetsRequestTopicPartition, out *kmsg.ListOffsetsResponseTopicPartition) {
	out.Timestamp, out.Offset, out.LeaderEpoch = -1, -1, -1
	rs := b.resolvePartition(im, topic, controller.TopicID{}, false, rp.Partition, true)
	if rs.errCode != 0 {
		out.ErrorCode = rs.errCode
		return
	}
	p := rs.partition
	snap := p.replica.Snapshot()
	leaderEpoch := snap.LeaderEpoch
	if code := checkLeaderEpoch(rp.CurrentLeaderEpoch, leaderEpoch); code != 0 {
		out.ErrorCode = code
		return
	}
	hw := snap.HighWatermark
	if req.IsolationLevel == 1 {
		hw = snap.LastStable // read_committed: nothing at or past the last stable offset
	}
	switch rp.Timestamp {
	case listLatest:
		out.Offset = hw
		out.LeaderEpoch = leaderEpoch
	case listEarliest, listEarliestLocal:
		earliest := p.log.EarliestOffset()
		out.Offset, out.LeaderEpoch = earliest.Offset, earliest.LeaderEpoch
	case listMaxTimestamp:
		if found, ok := p.log.MaxTimestamp(); ok && found.Offset < hw {
			out.Offset, out.Timestamp, out.LeaderEpoch = found.Offset, found.Timestamp, found.LeaderEpoch
		}
	case listLatestTiered:
		// No tiered storage: nothing was ever uploaded.
	case listEarliestPendingUpload:
		if req.Version < 11 {
			out.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		// No remote storage: Kafka answers -1 for the offset, timestamp and leader epoch
		// (UnifiedLog.fetchEarliestPendingUploadOffset when remote log is disabled).
	default:
		if rp.Timestamp < 0 {
			out.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		if found, ok := p.log.OffsetForTimestamp(rp.Timestamp); ok && found.Offset < hw {
			out.Offset, out.Timestamp, out.LeaderEpoch = found.Offset, found.Timestamp, found.LeaderEpoch
		}
	}
}

// listOffsetsV0 fills a v0 answer's OldStyleOffsets, after listOffset found the offset v1
// would answer (out.Offset), as Kafka 3.x's legacyFetchOffsetsBefore did for a consumer.
func (b *Broker) listOffsetsV0(im *controller.Image, topic string, rp *kmsg.ListOffsetsRequestTopicPartition, out *kmsg.ListOffsetsResponseTopicPartition) {
	if out.ErrorCode != 0 {
		return
	}
	limit := int(rp.MaxNumOffsets)
	var offsets []int64
	switch {
	case limit <= 0:
	case rp.Timestamp == listLatest:
		rs := b.resolvePartition(im, topic, controller.TopicID{}, false, rp.Partition, true)
		if rs.errCode != 0 {
			out.ErrorCode = rs.errCode
			return
		}
		offsets = append(offsets, out.Offset) // the high watermark
		segs := rs.partition.log.Segments()
		logStart := rs.partition.log.EarliestOffset().Offset
		for i := len(segs) - 1; i >= 0 && len(offsets) < limit; i-- {
			if o := max(segs[i].BaseOffset, logStart); o < offsets[len(offsets)-1] {
				offsets = append(offsets, o)
			}
		}
	case out.Offset >= 0:
		offsets = append(offsets, out.Offset)
	}
	out.OldStyleOffsets = offsets
}
