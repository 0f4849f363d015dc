package replica

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ISRChange is a proposed ISR for the controller (Kafka's AlterPartition). The replica only
// decides; the caller sends it. Until the change is committed (a BecomeLeader at the same
// epoch with the new ISR) or refused (ISRChangeFailed) no other is proposed.
type ISRChange struct {
	LeaderEpoch int32
	// ISR is the whole proposed ISR, sorted.
	ISR []int32
	// BrokerEpochs has one entry per ISR member: the broker epoch the member fetched with
	// last (Fetch v15 ReplicaState, KIP-903), -1 for this node and for a member not seen
	// fetching with one in this term. The controller refuses the change (INELIGIBLE_REPLICA)
	// when a member has registered again since: a restarted broker may have lost what it
	// fetched, so a proposal made from its old incarnation's fetches must not put it back.
	BrokerEpochs []int64
}

// changeLocked builds the proposal of isr at the current epoch. REQUIRES: r.mu held.
func (r *Replica) changeLocked(isr []int32) *ISRChange {
	c := &ISRChange{LeaderEpoch: r.mu.leaderEpoch, ISR: slices.Clone(isr), BrokerEpochs: make([]int64, len(isr))}
	for i, id := range isr {
		c.BrokerEpochs[i] = -1
		if f := r.mu.followers[id]; f != nil && id != r.opts.NodeID {
			c.BrokerEpochs[i] = f.brokerEpoch
		}
	}
	return c
}

// FollowerFetch is the outcome of a follower's fetch for the leader.
type FollowerFetch struct {
	// HighWatermark after the fetch, to return to the follower.
	HighWatermark int64
	// Proposal, if not nil, asks the controller to add the follower to the ISR.
	Proposal *ISRChange
}

// UpdateFollowerFetch records that follower replicaID, at broker epoch brokerEpoch (-1: the
// fetch does not carry one), fetched from fetchOffset at now, reporting logStart as its log
// start offset (-1: the fetch does not carry one): its
// log end is fetchOffset (a follower fetches from its own log end), it is caught up if it has
// what the leader had at this fetch or at its previous one (Kafka's rule, so a follower under
// constant load counts as caught up), and the HW moves to the smallest log end over the ISR.
// A follower outside the ISR that has reached the HW and the start of this leader's epoch is
// proposed into it. A moved log start wakes waiters (OnChange): the low watermark may have
// reached what a DeleteRecords waits for.
func (r *Replica) UpdateFollowerFetch(replicaID int32, brokerEpoch, fetchOffset, logStart int64, now time.Time) (FollowerFetch, error) {
	r.mu.Lock()
	if r.mu.role != RoleLeader {
		r.mu.Unlock()
		return FollowerFetch{}, kerr.NotLeaderForPartition
	}
	f := r.mu.followers[replicaID]
	if f == nil {
		r.mu.Unlock()
		return FollowerFetch{}, ErrUnknownReplica
	}
	leaderEnd := r.log.LogEndOffset()
	if fetchOffset < 0 || fetchOffset > leaderEnd {
		r.mu.Unlock()
		return FollowerFetch{}, kerr.OffsetOutOfRange
	}
	switch {
	case fetchOffset >= leaderEnd:
		f.lastCaughtUp = now
	case f.lastFetchLeaderLogEnd >= 0 && fetchOffset >= f.lastFetchLeaderLogEnd:
		f.lastCaughtUp = f.lastFetchTime
	}
	f.logEnd = fetchOffset
	f.lastFetchLeaderLogEnd, f.lastFetchTime = leaderEnd, now
	logStartMoved := logStart != f.logStart
	f.logStart, f.brokerEpoch = logStart, brokerEpoch

	var out FollowerFetch
	if r.mu.pendingISR == nil && !slices.Contains(r.mu.isr, replicaID) &&
		f.logEnd >= r.mu.highWatermark && f.logEnd >= r.mu.leaderEpochStartOffset {
		isr := append(slices.Clone(r.mu.isr), replicaID)
		slices.Sort(isr)
		r.mu.pendingISR = isr
		out.Proposal = r.changeLocked(isr)
	}
	r.maybeAdvanceHighWatermarkLocked()
	changed := r.publishLocked()
	out.HighWatermark = r.mu.highWatermark
	if invariants {
		r.checkRoleLocked()
	}
	r.mu.Unlock()
	r.notify(changed || logStartMoved)
	return out, nil
}

// MaybeShrinkISR proposes the ISR without the followers that have not caught up for
// replica.lag.time.max.ms at now (Kafka's isr-expiration check; the broker runs it
// periodically). A follower whose log end equals the leader's counts as caught up. It returns
// nil when there is nothing to propose (not leader, a change pending, everyone in sync).
func (r *Replica) MaybeShrinkISR(now time.Time) *ISRChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.role != RoleLeader || r.mu.pendingISR != nil {
		return nil
	}
	leaderEnd := r.log.LogEndOffset()
	var keep []int32
	for _, id := range r.mu.isr {
		if id != r.opts.NodeID {
			f := r.mu.followers[id]
			if f == nil || (f.logEnd != leaderEnd && now.Sub(f.lastCaughtUp) > r.opts.ReplicaLagTimeMax) {
				continue
			}
		}
		keep = append(keep, id)
	}
	if len(keep) == len(r.mu.isr) {
		return nil
	}
	slices.Sort(keep)
	r.mu.pendingISR = keep
	if invariants {
		r.checkRoleLocked()
	}
	return r.changeLocked(keep)
}

// ISRChangeFailed drops the pending ISR proposal (the controller refused it or the call
// failed), so the next check may propose again.
func (r *Replica) ISRChangeFailed() {
	r.mu.Lock()
	r.mu.pendingISR = nil
	r.maybeAdvanceHighWatermarkLocked()
	changed := r.publishLocked()
	r.mu.Unlock()
	r.notify(changed)
}

// ProposeRecovered proposes the committed ISR unchanged, for a leader elected uncleanly whose
// partition is in leader recovery (Kafka's LeaderRecoveryState RECOVERING): the caller sends
// it as an AlterPartition with the state RECOVERED, which ends the recovery. It returns nil
// when this replica does not lead epoch or another change is pending; the pending change is
// then that one, settled as any other (committed, or ISRChangeFailed).
func (r *Replica) ProposeRecovered(epoch int32) *ISRChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.role != RoleLeader || r.mu.leaderEpoch != epoch || r.mu.pendingISR != nil {
		return nil
	}
	r.mu.pendingISR = slices.Clone(r.mu.isr)
	return r.changeLocked(r.mu.isr)
}

// FollowerLag is what a leader knows of one follower's progress (Kafka's per-replica
// state): the inputs of the ISR decisions, for metrics and operators.
type FollowerLag struct {
	ID int32
	// LogEnd and LogStart are the follower's as of its last fetch (-1: none in this
	// leader's term).
	LogEnd, LogStart int64
	// LagRecords is the leader's log end minus the follower's (the whole log end when the
	// follower has not fetched yet).
	LagRecords int64
	// SinceCaughtUp is how long ago the follower last had everything the leader had at one
	// of its fetches (Kafka's lastCaughtUpTimeMs), -1 when it has not since this node became
	// leader.
	SinceCaughtUp time.Duration
	// CaughtUp is Kafka's Replica.isCaughtUp: at the leader's log end, or caught up within
	// replica.lag.time.max.ms. A follower in the ISR that is not caught up is about to be
	// proposed out of it.
	CaughtUp bool
}

// FollowerLags returns every follower's progress as of now, sorted by ID; nil unless this
// replica leads.
func (r *Replica) FollowerLags(now time.Time) []FollowerLag {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.role != RoleLeader {
		return nil
	}
	leaderEnd := r.log.LogEndOffset()
	out := make([]FollowerLag, 0, len(r.mu.followers))
	for id, f := range r.mu.followers {
		l := FollowerLag{ID: id, LogEnd: f.logEnd, LogStart: f.logStart, LagRecords: leaderEnd - max(f.logEnd, 0), SinceCaughtUp: -1}
		if !f.lastCaughtUp.IsZero() {
			l.SinceCaughtUp = max(now.Sub(f.lastCaughtUp), 0)
		}
		l.CaughtUp = f.logEnd == leaderEnd || (l.SinceCaughtUp >= 0 && l.SinceCaughtUp <= r.opts.ReplicaLagTimeMax)
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b FollowerLag) int { return int(a.ID - b.ID) })
	return out
}
