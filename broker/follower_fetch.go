package broker

// Serving follower fetches, as Kafka's ReplicaManager and Partition.fetchRecords do for a fetch
// from a replica:
//
//   - A fetch is a follower's when its replica ID is >= 0: ReplicaID before v15, ReplicaState.ID
//     from v15 on (KIP-903, which also carries the follower's broker epoch). Negative IDs are
//     consumers (-1) and debugging consumers (-2), served as consumers.
//   - Only the leader serves it, and only to a replica in the partition's assignment
//     (NOT_LEADER_OR_FOLLOWER otherwise, as Kafka's followerReplicaOrThrow).
//   - It reads up to the log end, not the HW: a follower copies what the leader has.
//   - Its fetch offset is the follower's log end (Replica.UpdateFollowerFetch): the HW moves to
//     the smallest log end over the ISR, which completes acks=all produces waiting on it (the
//     replica's OnChange wakes the purgatory), and a follower that caught up is proposed into
//     the ISR (alterPartitionSender).
//   - Its LogStartOffset (v5+) is the follower's log start, kept per follower: the low
//     watermark (the smallest log start over the live replicas) is what DeleteRecords waits
//     for (21_delete_records.go). A follower whose log start is behind the leader's, while its
//     log end is not, is answered at once rather than held for MinBytes, so it moves its log
//     start without waiting out replica.fetch.wait.max.ms.
//   - A fetch from a follower whose broker epoch (v15+) is older than the one registered in the
//     image is served but does not update the follower's state: a stale incarnation of the
//     follower must not vouch for records the new one may not have (Kafka skips the update the
//     same way). The epoch of the fetches counted is kept per follower and sent with every ISR
//     proposal naming it (AlterPartition NewIsrWithEpochs), so the controller refuses
//     (INELIGIBLE_REPLICA) a proposal made from fetches of an incarnation that has registered
//     again since the leader saw them.
//   - A fetch whose LastFetchedEpoch diverges is answered with DivergingEpoch and no records
//     (readTargets, divergingEpoch), and does not update the follower's state either.
//
// A partition this leader throttles (throttle.go) is answered without records to a replica
// outside its ISR while leader.replication.throttled.rate is exceeded; the bytes it sends for
// throttled partitions count against that rate.
//
// Fetch sessions: followers may use them as consumers do (the server side does not tell them
// apart); sluice's own fetcher (fetcher.go) sends sessionless full fetches. There are no
// consumer quotas to exempt followers from.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
)

// fetchingReplica is who sent a fetch: id < 0 for consumers.
type fetchingReplica struct {
	id          int32
	brokerEpoch int64 // -1 when not sent (before v15)
}

// followerOf returns who sent req.
func followerOf(req *kmsg.FetchRequest) fetchingReplica {
	if req.Version >= 15 {
		return fetchingReplica{id: req.ReplicaState.ID, brokerEpoch: req.ReplicaState.Epoch}
	}
	return fetchingReplica{id: req.ReplicaID, brokerEpoch: -1}
}

// divergingEpoch checks a fetch's last fetched epoch against the leader's epoch cache, as
// Kafka's Partition.readFromLocalLog: when the log's end of that epoch (or of the largest epoch
// below it) is before the fetch offset, or the log has no such epoch, the fetcher's log has
// records the leader's does not, and it is told where the epochs part. nil: no divergence (or
// no last fetched epoch). An EndOffset < 0 means the leader cannot place the epoch at all.
func divergingEpoch(p *Partition, lastFetchedEpoch int32, fetchOffset int64) *kmsg.FetchResponseTopicPartitionDivergingEpoch {
	if lastFetchedEpoch < 0 {
		return nil
	}
	endEpoch, endOffset := leaderEndOffsetForEpoch(p, lastFetchedEpoch)
	if endOffset >= 0 && endEpoch == lastFetchedEpoch && endOffset >= fetchOffset {
		return nil
	}
	d := kmsg.NewFetchResponseTopicPartitionDivergingEpoch()
	d.Epoch, d.EndOffset = endEpoch, endOffset
	if endOffset < 0 {
		d.Epoch = -1
	}
	return &d
}

// leaderEndOffsetForEpoch is the end offset of epoch in p's log as a Kafka leader answers it:
// the largest epoch <= epoch the log holds and where the next one starts (the log end for the
// latest). A Kafka leader writes its epoch's start (the log end) into its epoch cache when it is
// elected (maybeAssignEpochStartOffset); sluice's log records an epoch only with its first
// batch, so until the new leader appends, its current epoch is added here: the log's latest
// epoch ends at the log end, and the current epoch ends there too. Without it a follower of a
// leader that has not written yet would be told the epoch is unknown and fall back to its HW.
func leaderEndOffsetForEpoch(p *Partition, epoch int32) (int32, int64) {
	s := p.replica.Snapshot()
	if s.Leader {
		for range 8 {
			// latest and the log end of one instant: an append between the two reads
			// changes the log end, and then they are read again.
			logEnd := p.log.LogEndOffset()
			latest := p.log.LatestEpoch()
			if p.log.LogEndOffset() != logEnd {
				continue
			}
			if s.LeaderEpoch <= latest || epoch <= latest {
				break // the log knows the epoch asked about or the current one: its answer
			}
			switch {
			case epoch == s.LeaderEpoch:
				return epoch, logEnd
			case epoch > s.LeaderEpoch:
				return -1, -1
			case latest < 0:
				return epoch, logEnd // an empty log: Kafka's answer below the first epoch
			default:
				return latest, logEnd
			}
		}
	}
	return p.log.EndOffsetForEpoch(epoch)
}

// recordFollowerFetch applies a follower's fetch at fetchOffset, reporting its log start
// logStart (-1: not sent), to the leader's replica and returns the snapshot to answer with
// (its HW is after the fetch moved it), or an error code.
func (b *Broker) recordFollowerFetch(p *Partition, im *controller.Image, topic *controller.TopicInfo, f fetchingReplica, fetchOffset, logStart int64) (replica.Snapshot, int16) {
	info := &topic.Partitions[p.tp.partition]
	if !slices.Contains(info.Replicas, f.id) || f.id == b.nodeID {
		return replica.Snapshot{}, kerr.NotLeaderForPartition.Code
	}
	if f.brokerEpoch >= 0 {
		if reg := im.Brokers[f.id]; reg != nil && f.brokerEpoch < reg.Epoch {
			return p.replica.Snapshot(), 0 // a stale incarnation: served, not counted
		}
	}
	res, err := p.replica.UpdateFollowerFetch(f.id, f.brokerEpoch, fetchOffset, logStart, b.clock.Now())
	if err != nil {
		switch {
		case err == replica.ErrUnknownReplica:
			return replica.Snapshot{}, kerr.NotLeaderForPartition.Code
		default:
			return replica.Snapshot{}, appendErrorCode(err)
		}
	}
	if res.Proposal != nil {
		b.alterPartition.ProposeISR(p, *res.Proposal)
	}
	return p.replica.Snapshot(), 0
}
