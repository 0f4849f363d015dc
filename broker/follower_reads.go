package broker

// Fetching from the closest replica (KIP-392), as Kafka's ReplicaManager does it:
//
//   - On the leader. A consumer's fetch of v11+ carries the client's rack (client.rack). With
//     replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector, the
//     leader looks for a replica in that rack (broker.rack in the brokers' registrations)
//     among the followers of the committed ISR whose log end reaches the fetch offset; if the
//     leader's own rack is the client's, or no such follower exists, the leader serves the
//     fetch itself. Otherwise the follower with the largest log end (then the most recently
//     caught up) is answered as PreferredReadReplica with no records, at once (a fetch that
//     names a preferred replica is never held in the purgatory), as Kafka's
//     findPreferredReadReplica and RackAwareReplicaSelector do. replica.selector.class unset
//     (Kafka's default): the leader never names another replica.
//   - On a follower. A consumer's fetch of v11+ is served by any replica of the partition, as
//     in Kafka (its fetchOnlyLeader is false once the client sends client metadata, v11+),
//     and reads up to the follower's own high watermark, which is the leader's HW as of the
//     follower's last fetch bounded by its log end (Replica.AppendAsFollower): a consumer never
//     sees a record the leader has not committed. Past the follower's HW but within its log
//     the answer is empty (the consumer waits there, held in the purgatory until the HW moves);
//     past its log end or below its log start it is OFFSET_OUT_OF_RANGE, on which Kafka's
//     consumers drop the preferred replica and ask the leader again. The client's
//     CurrentLeaderEpoch is checked against the epoch the follower applied
//     (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); a broker that no longer hosts the partition
//     answers NOT_LEADER_OR_FOLLOWER. A follower serves reads whether or not it is in the ISR,
//     as Kafka's does: only the leader's choice looks at the ISR, and the follower's HW keeps
//     the reads within what the leader committed either way.
//   - Older fetch versions, and fetches from followers (replica ID >= 0), go to the leader only.
//
// ListOffsets and OffsetForLeaderEpoch stay leader-only, as in Kafka; Kafka's consumers send
// them to the leader.
//
// Not done: Kafka also requires a chosen follower's log start to be at or below the fetch
// offset; sluice's leader does not track its followers' log starts (they follow the leader's
// with every fetch), and requires the fetch offset to be within the leader's own log instead.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
)

// rackAwareReplicaSelector is the one replica.selector.class sluice has built in (any other
// class is refused when the config is read).
const rackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// consumerMayReadFollower says whether req may be served by a follower: a consumer's fetch
// that carries client metadata (v11+).
func consumerMayReadFollower(req *kmsg.FetchRequest, from fetchingReplica) bool {
	return from.id < 0 && req.Version >= 11
}

// rackAwareReads says whether this broker's leaders point consumers at followers in their
// rack (replica.selector.class).
func (b *Broker) rackAwareReads() bool {
	return b.cfg.Static != nil && strings.TrimSpace(b.cfg.Static.String("replica.selector.class")) == rackAwareReplicaSelector
}

// preferredReadReplica is the replica this leader tells a consumer in clientRack to fetch p
// from at fetchOffset, or -1 for this leader itself (see the file comment). listener is the
// listener the consumer is connected to: a replica must be reachable on it.
func (b *Broker) preferredReadReplica(im *controller.Image, listener string, p *Partition, clientRack string, fetchOffset int64) int32 {
	if clientRack == "" {
		return -1
	}
	if self := im.Brokers[b.nodeID]; self != nil && self.Rack != nil && *self.Rack == clientRack {
		return -1 // the leader is in the client's rack: RackAwareReplicaSelector keeps it
	}
	followers, leaderEnd, ok := p.replica.InSyncFollowers()
	if !ok || fetchOffset < p.log.LogStartOffset() || fetchOffset > leaderEnd {
		return -1 // the leader answers an offset out of range itself
	}
	candidates := make([]replica.InSyncFollower, 0, len(followers))
	for _, f := range followers {
		br := im.Brokers[f.ID]
		if br == nil || br.Fenced || br.Rack == nil || *br.Rack != clientRack || f.LogEnd < fetchOffset {
			continue
		}
		if _, ok := endpointFor(br, listener); !ok {
			continue
		}
		candidates = append(candidates, f)
	}
	if len(candidates) == 0 {
		return -1
	}
	// The most data, then the most recently caught up (Kafka's ReplicaView comparator), then
	// the lowest ID so the choice is stable.
	best := slices.MaxFunc(candidates, func(a, b replica.InSyncFollower) int {
		if c := cmp.Compare(a.LogEnd, b.LogEnd); c != 0 {
			return c
		}
		if c := a.LastCaughtUp.Compare(b.LastCaughtUp); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return best.ID
}

// servesFollowerReads says whether p, which does not lead, may serve a consumer: only once it
// follows a leader (a replica that has applied no role yet has no HW learned from a leader).
func (b *Broker) servesFollowerReads(p *Partition) bool {
	role, _, _ := p.replica.Role()
	return role == replica.RoleFollower
}
