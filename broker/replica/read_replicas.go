package replica

import (
	"slices"
	"time"
)

// InSyncFollower is what a leader knows of one follower in its committed ISR, for choosing a
// consumer's preferred read replica (KIP-392; the broker's follower_reads.go).
type InSyncFollower struct {
	ID int32
	// LogEnd is the follower's log end as of its last fetch (-1 before its first fetch in
	// this leader epoch).
	LogEnd int64
	// LastCaughtUp is the last time the follower had everything the leader had.
	LastCaughtUp time.Time
}

// InSyncFollowers returns the members of the committed ISR other than this node, in ID order,
// with what their fetches told the leader, and the leader's log end of the same instant. Only
// the committed ISR counts, as in Kafka's findPreferredReadReplica: a follower being proposed
// into it may still lag. ok is false unless this replica leads.
func (r *Replica) InSyncFollowers() (followers []InSyncFollower, leaderLogEnd int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.role != RoleLeader {
		return nil, -1, false
	}
	for _, id := range r.mu.isr {
		f := r.mu.followers[id]
		if id == r.opts.NodeID || f == nil {
			continue
		}
		followers = append(followers, InSyncFollower{ID: id, LogEnd: f.logEnd, LastCaughtUp: f.lastCaughtUp})
	}
	slices.SortFunc(followers, func(a, b InSyncFollower) int { return int(a.ID) - int(b.ID) })
	return followers, r.log.LogEndOffset(), true
}
