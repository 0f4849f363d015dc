package replica

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/logstore"
)

// Origin says who is appending, as Kafka's AppendOrigin does. Rules that apply only to
// producers (the broker's client checks: timestamps, sizes, internal topics) are applied once,
// on the client path, before AppendAsLeader; the replica only refuses an origin on the wrong
// method.
type Origin uint8

const (
	// OriginClient is a producer's records (Produce).
	OriginClient Origin = iota
	// OriginCoordinator is a coordinator's own records (__consumer_offsets, later transaction
	// markers): trusted framing, no client rules.
	OriginCoordinator
	// OriginReplication is records copied from the leader, keeping their offsets and epochs
	// (AppendAsFollower).
	OriginReplication
)

func (o Origin) String() string {
	switch o {
	case OriginClient:
		return "client"
	case OriginCoordinator:
		return "coordinator"
	case OriginReplication:
		return "replication"
	}
	return fmt.Sprintf("origin(%d)", uint8(o))
}

// Role is what this replica is for its partition.
type Role uint8

const (
	// RoleNone: no leadership applied yet (just opened).
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// ErrStaleLeaderEpoch refuses a role change to an epoch older than the replica's.
var ErrStaleLeaderEpoch = errors.New("replica: leader epoch older than the current one")

// ErrUnknownReplica is a follower fetch from a replica not in the partition's assignment.
var ErrUnknownReplica = errors.New("replica: fetch from a replica not assigned to the partition")

// errWrongOrigin is an append whose origin does not belong on the method called.
var errWrongOrigin = errors.New("replica: append origin not allowed here")

// Snapshot is one consistent view of a replica's offsets and leadership.
// Invariant: LogStart <= LastStable <= HighWatermark <= LogEnd.
type Snapshot struct {
	LogStart      int64
	HighWatermark int64
	// LastStable is the last stable offset: the HW, or the first offset of a transaction
	// that is open or whose marker is not yet below the HW, if smaller (never below the
	// log start). read_committed consumers see nothing at or past it.
	LastStable  int64
	LogEnd      int64
	LeaderEpoch int32
	Leader      bool
}

// Options configure a Replica.
type Options struct {
	// NodeID is this node's broker ID: its own entry in the ISR.
	NodeID int32
	// Clock is the time source (nil: SystemClock).
	Clock Clock
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower that has not caught up with the
	// leader's log end for this long is proposed out of the ISR.
	ReplicaLagTimeMax time.Duration
	// CheckpointedHighWatermark is this partition's entry in the log directory's
	// replication-offset-checkpoint, or -1 when it has none. It is clamped to
	// [log start, log end] at open.
	CheckpointedHighWatermark int64
	// OnChange, if set, is called (without the replica's lock) after the published offsets or
	// leadership changed: appends, HW moves, log start moves, truncation, role changes. The
	// broker wakes the delayed operations keyed on the partition from it. It must not block.
	OnChange func()
	// Name names the partition in invariant failures.
	Name string
	// MinInsync, if set, returns the topic's current min.insync.replicas: the leader's HW then
	// advances only while the committed ISR has at least that many members (capped at the
	// replication factor), Kafka 4.x's strict min ISR (KIP-966), which makes the replicas
	// that leave a short ISR eligible leaders. It is called under the replica's lock and must
	// be cheap and not block.
	MinInsync func() int32
	// ReplicaAlive, if set, says whether a replica's broker is registered and not fenced.
	// The low watermark (LowWatermark) counts only live followers' log starts, as Kafka's
	// lowWatermarkIfLeader does, so a dead follower does not hold DeleteRecords up until
	// its timeout. It is called under the replica's lock and must be cheap and not block.
	ReplicaAlive func(id int32) bool
}

// Replica is one partition replica: its log, its offsets and its replication state. See the
// package doc.
type Replica struct {
	log  *logstore.Log
	opts Options

	// pub is the last published snapshot, readable without mu (a sequence lock: writers hold
	// mu, readers retry while a write is in progress).
	pub published

	mu struct {
		sync.Mutex
		role Role
		// leaderEpoch of the newest role applied. Invariant: never decreases.
		leaderEpoch int32
		// leader is the leader's node ID (-1 unknown); this node when role is RoleLeader.
		leader   int32
		replicas []int32
		// isr is the committed ISR (leader only). Invariant: isr ⊆ replicas and contains
		// this node while leader.
		isr []int32
		// pendingISR is an ISR change proposed and not yet committed or refused (nil: none).
		// While one is pending no other is proposed, and the HW is computed over the union
		// of isr and pendingISR (Kafka's "maximal ISR"), so neither the shrink nor the
		// expansion can move it past what the committed ISR holds.
		pendingISR []int32
		// leaderEpochStartOffset is the log end when this node became leader of leaderEpoch:
		// a follower joins the ISR only once it has everything of earlier epochs.
		leaderEpochStartOffset int64
		// followers are the other replicas' fetch states (leader only).
		followers map[int32]*followerState
		// highWatermark: the first offset not known to be on every member of the ISR.
		// Invariant: logStart <= highWatermark <= logEnd; on a leader it never decreases
		// except when the log is cut below it.
		highWatermark int64
	}
}

// published is the seqlock behind Snapshot.
type published struct {
	seq                             atomic.Uint64 // odd while a write is in progress
	logStart, highWatermark, logEnd atomic.Int64
	lastStable                      atomic.Int64
	leaderEpoch                     atomic.Int32
	leader                          atomic.Bool
}

// followerState is what the leader knows of one follower, as Kafka's Replica keeps it.
type followerState struct {
	// logEnd is the follower's log end offset: its last fetch offset (-1 unknown).
	logEnd int64
	// logStart is the follower's log start offset as its last fetch reported it (Fetch
	// v5+ LogStartOffset; -1 unknown: before its first fetch in this leader's term, or a
	// fetch too old to carry it). It feeds the low watermark.
	logStart int64
	// brokerEpoch is the broker epoch of the follower's last fetch (KIP-903; -1 unknown),
	// sent with ISR proposals that name it.
	brokerEpoch int64
	// lastCaughtUp is the last time the follower had everything the leader had at the time
	// of one of its fetches.
	lastCaughtUp time.Time
	// lastFetchTime and lastFetchLeaderLogEnd are the previous fetch's time and the leader's
	// log end at that time.
	lastFetchTime         time.Time
	lastFetchLeaderLogEnd int64
}

// New makes the replica of an open log. It has no role until BecomeLeader or BecomeFollower;
// its HW is the checkpointed one clamped to [log start, log end] (the log start when there is
// none).
func New(log *logstore.Log, opts Options) *Replica {
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	r := &Replica{log: log, opts: opts}
	r.mu.leader = -1
	r.mu.leaderEpoch = -1
	r.mu.highWatermark = opts.CheckpointedHighWatermark // clamped by publishLocked
	r.mu.Lock()
	r.publishLocked()
	r.mu.Unlock()
	return r
}

// Log is the replica's log, for reads and queries; every mutation goes through the replica.
func (r *Replica) Log() *logstore.Log { return r.log }

// Snapshot returns the offsets and leadership as of one instant, without taking the lock.
func (r *Replica) Snapshot() Snapshot {
	p := &r.pub
	for spins := 0; ; spins++ {
		seq := p.seq.Load()
		if seq&1 == 0 {
			s := Snapshot{
				LogStart:      p.logStart.Load(),
				HighWatermark: p.highWatermark.Load(),
				LastStable:    p.lastStable.Load(),
				LogEnd:        p.logEnd.Load(),
				LeaderEpoch:   p.leaderEpoch.Load(),
				Leader:        p.leader.Load(),
			}
			if p.seq.Load() == seq {
				return s
			}
		}
		if spins > 16 {
			runtime.Gosched()
		}
	}
}

// publishLocked re-reads the log's offsets, keeps the HW within them and publishes a new
// snapshot. It reports whether anything a reader sees changed.
// REQUIRES: r.mu held.
func (r *Replica) publishLocked() bool {
	logStart, logEnd := r.log.LogStartOffset(), r.log.LogEndOffset()
	hw := min(max(r.mu.highWatermark, logStart), logEnd)
	r.mu.highWatermark = hw
	lastStable := max(r.log.LastStableOffset(hw), logStart)
	s := Snapshot{
		LogStart: logStart, HighWatermark: hw, LastStable: lastStable, LogEnd: logEnd,
		LeaderEpoch: r.mu.leaderEpoch, Leader: r.mu.role == RoleLeader,
	}
	p := &r.pub
	if invariants {
		r.checkLocked(s)
	}
	if p.seq.Load() != 0 && s == (Snapshot{
		LogStart: p.logStart.Load(), HighWatermark: p.highWatermark.Load(), LastStable: p.lastStable.Load(),
		LogEnd: p.logEnd.Load(), LeaderEpoch: p.leaderEpoch.Load(), Leader: p.leader.Load(),
	}) {
		return false
	}
	p.seq.Add(1)
	p.logStart.Store(s.LogStart)
	p.highWatermark.Store(s.HighWatermark)
	p.lastStable.Store(s.LastStable)
	p.logEnd.Store(s.LogEnd)
	p.leaderEpoch.Store(s.LeaderEpoch)
	p.leader.Store(s.Leader)
	p.seq.Add(1)
	return true
}

// notify calls OnChange. REQUIRES: r.mu not held.
func (r *Replica) notify(changed bool) {
	if changed && r.opts.OnChange != nil {
		r.opts.OnChange()
	}
}

// Refresh publishes the log's offsets after a change made to the log directly (Reopen after a
// storage failure) and wakes waiters.
func (r *Replica) Refresh() {
	r.mu.Lock()
	r.publishLocked()
	r.mu.Unlock()
	// Woken even when nothing changed: a caller that reopened or removed the log wants held
	// operations to look again.
	r.notify(true)
}

// Role returns the role, leader epoch and leader applied last.
func (r *Replica) Role() (role Role, leaderEpoch, leader int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.role, r.mu.leaderEpoch, r.mu.leader
}

// ISR returns the committed ISR (nil unless leader) and the pending proposal, if any.
func (r *Replica) ISR() (isr, pending []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.isr), slices.Clone(r.mu.pendingISR)
}

// BecomeLeader makes this node the leader at epoch with the given ISR and assignment, as the
// metadata image says. At the same epoch it updates the ISR and replicas (a committed ISR
// change); a newer epoch also resets every follower's state, as Kafka's makeLeader does: ISR
// members count as caught up now, their log ends are unknown until they fetch. An older epoch
// is refused (ErrStaleLeaderEpoch). With this node the only ISR member the HW moves to the log
// end at once.
func (r *Replica) BecomeLeader(epoch int32, isr, replicas []int32) error {
	r.mu.Lock()
	if epoch < r.mu.leaderEpoch {
		r.mu.Unlock()
		return fmt.Errorf("%w: %d < %d", ErrStaleLeaderEpoch, epoch, r.mu.leaderEpoch)
	}
	now := r.opts.Clock.Now()
	newTerm := epoch > r.mu.leaderEpoch || r.mu.role != RoleLeader
	if newTerm {
		r.mu.followers = make(map[int32]*followerState, len(replicas))
		r.mu.leaderEpochStartOffset = r.log.LogEndOffset()
	}
	for _, id := range replicas {
		if id == r.opts.NodeID || r.mu.followers[id] != nil {
			continue
		}
		f := &followerState{logEnd: -1, logStart: -1, brokerEpoch: -1, lastFetchLeaderLogEnd: -1}
		if slices.Contains(isr, id) {
			f.lastCaughtUp = now
		}
		r.mu.followers[id] = f
	}
	for id := range r.mu.followers {
		if !slices.Contains(replicas, id) {
			delete(r.mu.followers, id)
		}
	}
	membership := !slices.Equal(r.mu.isr, isr) || !slices.Equal(r.mu.replicas, replicas)
	r.mu.role, r.mu.leaderEpoch, r.mu.leader = RoleLeader, epoch, r.opts.NodeID
	r.mu.isr, r.mu.replicas = slices.Clone(isr), slices.Clone(replicas)
	r.mu.pendingISR = nil
	r.maybeAdvanceHighWatermarkLocked()
	changed := r.publishLocked()
	if invariants {
		r.checkRoleLocked()
	}
	r.mu.Unlock()
	// A membership change wakes waiters too: a replica leaving the assignment no longer
	// holds the low watermark back (DeleteRecordsWait).
	r.notify(changed || newTerm || membership)
	return nil
}

// BecomeFollower makes this node a follower of leader (-1: none known) at epoch. Appends as
// leader are refused from now on, under the same lock they take, so a deposed leader's
// in-flight produce cannot land after this returns. An older epoch is refused.
func (r *Replica) BecomeFollower(epoch int32, leader int32) error {
	r.mu.Lock()
	if epoch < r.mu.leaderEpoch {
		r.mu.Unlock()
		return fmt.Errorf("%w: %d < %d", ErrStaleLeaderEpoch, epoch, r.mu.leaderEpoch)
	}
	wasLeader := r.mu.role == RoleLeader
	r.mu.role, r.mu.leaderEpoch, r.mu.leader = RoleFollower, epoch, leader
	r.mu.isr, r.mu.pendingISR, r.mu.followers = nil, nil, nil
	changed := r.publishLocked()
	if invariants {
		r.checkRoleLocked()
	}
	r.mu.Unlock()
	r.notify(changed || wasLeader)
	return nil
}

// AppendOptions are an append's requirements, checked under the replica's lock together with
// the append.
type AppendOptions struct {
	// RequiredAcks is the produce's acks: -1 (all) refuses the append with
	// NOT_ENOUGH_REPLICAS while the ISR is smaller than MinInsync.
	RequiredAcks int16
	// MinInsync is the topic's min.insync.replicas.
	MinInsync int32
	// LeaderEpoch, when >= 0, is the epoch the caller believes current: any other is
	// FENCED_LEADER_EPOCH (older) or UNKNOWN_LEADER_EPOCH (newer).
	LeaderEpoch int32
	// TransactionVersion of a transaction marker's append (WriteTxnMarkers).
	TransactionVersion int8
	// VerificationGuard of a verified transactional produce (logstore.LeaderAppend).
	VerificationGuard uint64
	// Validated: the broker validated the client's batch (logstore.LeaderAppend.Validated).
	Validated bool
}

// AppendInfo is the outcome of a successful append as leader.
type AppendInfo struct {
	logstore.AppendResult
	// Sync is the append's durability under the flush policy: wait on it before answering.
	Sync logstore.SyncWait
	// LeaderEpoch is the epoch the batches were stamped with.
	LeaderEpoch int32
	// HighWatermark is the HW right after the append: an acks=all produce is answered at once
	// when it is past LastOffset, and is otherwise a delayed operation (AckWait).
	HighWatermark int64
}

// AppendAsLeader appends batches as the leader: leadership, the epoch and min.insync.replicas
// are checked under the lock the append holds, so no role change can come between them.
// Errors that are Kafka's come as *kerr.Error (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH, NOT_ENOUGH_REPLICAS); the log's own are logstore's.
func (r *Replica) AppendAsLeader(origin Origin, batches []byte, o AppendOptions) (AppendInfo, error) {
	if origin == OriginReplication {
		return AppendInfo{}, errWrongOrigin
	}
	r.mu.Lock()
	if r.mu.role != RoleLeader {
		r.mu.Unlock()
		return AppendInfo{}, kerr.NotLeaderForPartition
	}
	if o.LeaderEpoch >= 0 && o.LeaderEpoch != r.mu.leaderEpoch {
		epoch := r.mu.leaderEpoch
		r.mu.Unlock()
		if o.LeaderEpoch < epoch {
			return AppendInfo{}, kerr.FencedLeaderEpoch
		}
		return AppendInfo{}, kerr.UnknownLeaderEpoch
	}
	if o.RequiredAcks == -1 && int32(len(r.mu.isr)) < o.MinInsync {
		r.mu.Unlock()
		return AppendInfo{}, kerr.NotEnoughReplicas
	}
	res, sync, err := r.log.AppendAsLeaderWith(batches, r.mu.leaderEpoch, logstore.LeaderAppend{
		Coordinator: origin == OriginCoordinator, TransactionVersion: o.TransactionVersion,
		VerificationGuard: o.VerificationGuard, Validated: o.Validated,
	})
	if err != nil {
		r.mu.Unlock()
		return AppendInfo{}, err
	}
	changed := false
	if !res.Duplicate {
		r.maybeAdvanceHighWatermarkLocked()
		changed = r.publishLocked()
	}
	info := AppendInfo{AppendResult: res, Sync: sync, LeaderEpoch: r.mu.leaderEpoch, HighWatermark: r.mu.highWatermark}
	r.mu.Unlock()
	r.notify(changed)
	return info, nil
}

// AppendAsFollower appends batches copied from the leader (keeping their offsets and epochs)
// and takes the leader's HW, bounded by this log's end.
func (r *Replica) AppendAsFollower(batches []byte, leaderHighWatermark int64) (logstore.AppendResult, error) {
	r.mu.Lock()
	if r.mu.role != RoleFollower {
		r.mu.Unlock()
		return logstore.AppendResult{}, kerr.NotLeaderForPartition
	}
	var res logstore.AppendResult
	if len(batches) > 0 {
		var err error
		if res, err = r.log.AppendAsFollower(batches); err != nil {
			changed := r.publishLocked()
			r.mu.Unlock()
			r.notify(changed)
			return res, err
		}
	}
	r.mu.highWatermark = min(leaderHighWatermark, r.log.LogEndOffset())
	changed := r.publishLocked()
	r.mu.Unlock()
	r.notify(changed)
	return res, nil
}

// TruncateTo cuts a follower's log to offset (a divergence found with OffsetForLeaderEpoch);
// the HW follows it down when it was above.
func (r *Replica) TruncateTo(offset int64) error {
	return r.asFollower(func() error { return r.log.TruncateTo(offset) })
}

// asFollower runs mutate under the lock while this replica follows, then publishes the new
// offsets and wakes what waits on them; NOT_LEADER_OR_FOLLOWER when it does not follow.
func (r *Replica) asFollower(mutate func() error) error {
	r.mu.Lock()
	if r.mu.role != RoleFollower {
		r.mu.Unlock()
		return kerr.NotLeaderForPartition
	}
	err := mutate()
	changed := r.publishLocked()
	r.mu.Unlock()
	r.notify(changed)
	return err
}

// FollowLeaderLogStart moves a follower's log start up to the leader's (sent with every fetch
// response), as Kafka's follower does after each fetch, so records deleted on the leader
// (retention, DeleteRecords) do not come back if this replica leads later. Never past this
// replica's HW, never backwards.
func (r *Replica) FollowLeaderLogStart(leaderLogStart int64) error {
	return r.asFollower(func() error {
		offset := min(leaderLogStart, r.mu.highWatermark)
		if offset <= r.log.LogStartOffset() {
			return nil
		}
		_, err := r.log.DeleteRecordsBefore(offset)
		return err
	})
}

// TruncateFullyAndStartAt empties a follower's log and restarts it at offset: the leader's
// log start, when this follower's log end fell below it (retention or DeleteRecords ran on the
// leader meanwhile), as Kafka's fetcher does after OFFSET_OUT_OF_RANGE. The HW moves to offset
// with the log start.
func (r *Replica) TruncateFullyAndStartAt(offset int64) error {
	return r.asFollower(func() error { return r.log.TruncateFullyAndStartAt(offset) })
}

// maybeAdvanceHighWatermarkLocked moves the leader's HW to the smallest log end over the
// maximal ISR (the committed ISR and a pending change together), as Kafka's
// maybeIncrementLeaderHW does, and not at all while the ISR is under min.insync.replicas
// (Options.MinInsync). It never moves the HW back. It reports whether it moved.
// REQUIRES: r.mu held.
func (r *Replica) maybeAdvanceHighWatermarkLocked() bool {
	if r.mu.role != RoleLeader || r.underMinInsyncLocked() {
		return false
	}
	newHW := r.log.LogEndOffset()
	consider := func(ids []int32) {
		for _, id := range ids {
			if id == r.opts.NodeID {
				continue
			}
			f := r.mu.followers[id]
			if f == nil {
				newHW = -1 // an ISR member the leader knows nothing of holds the HW
				continue
			}
			newHW = min(newHW, f.logEnd)
		}
	}
	consider(r.mu.isr)
	consider(r.mu.pendingISR)
	if newHW > r.mu.highWatermark {
		r.mu.highWatermark = newHW
		return true
	}
	return false
}

// underMinInsyncLocked reports whether the committed ISR is smaller than the effective
// min.insync.replicas (Options.MinInsync, capped at the replication factor, as Kafka's
// effectiveMinIsr), so the HW must not advance. REQUIRES: r.mu held.
func (r *Replica) underMinInsyncLocked() bool {
	if r.opts.MinInsync == nil {
		return false
	}
	need := min(r.opts.MinInsync(), int32(len(r.mu.replicas)))
	return int32(len(r.mu.isr)) < need
}

// CheckEnoughReplicasReachOffset is an acks=all produce's completion check, as Kafka's
// Partition.checkEnoughReplicasReachOffset: done once the HW is at or past required (with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then smaller than minInsync), or at once with
// NOT_LEADER_OR_FOLLOWER when this node no longer leads the epoch the records were appended
// in (they may be truncated away).
func (r *Replica) CheckEnoughReplicasReachOffset(required int64, appendEpoch, minInsync int32) (done bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.role != RoleLeader || r.mu.leaderEpoch != appendEpoch {
		return true, kerr.NotLeaderForPartition
	}
	if r.mu.highWatermark < required {
		return false, nil
	}
	if int32(len(r.mu.isr)) < minInsync {
		return true, kerr.NotEnoughReplicasAfterAppend
	}
	return true, nil
}

// EnforceRetention applies the log's retention, never moving the log start past the HW.
func (r *Replica) EnforceRetention() error {
	r.mu.Lock()
	err := r.log.EnforceRetentionUpTo(r.mu.highWatermark)
	changed := r.publishLocked()
	r.mu.Unlock()
	r.notify(changed)
	return err
}

// DeleteRecordsBefore moves the log start to offset (-1: the HW) as Kafka's
// deleteRecordsOnLeader: only the leader, never past the HW (OFFSET_OUT_OF_RANGE), never
// backwards. It returns the new log start.
func (r *Replica) DeleteRecordsBefore(offset int64) (int64, error) {
	r.mu.Lock()
	if r.mu.role != RoleLeader {
		r.mu.Unlock()
		return -1, kerr.NotLeaderForPartition
	}
	offset, err := deleteRecordsTarget(offset, r.mu.highWatermark)
	if err != nil {
		r.mu.Unlock()
		return -1, err
	}
	start, err := r.log.DeleteRecordsBefore(offset)
	changed := r.publishLocked()
	r.mu.Unlock()
	r.notify(changed)
	if err != nil {
		return -1, err
	}
	return start, nil
}

// DeleteRecordsResult is the outcome of DeleteRecords on the leader, as Kafka's
// LogDeleteRecordsResult: the offset the log start was asked to reach (-1 resolved to the HW)
// and the partition's low watermark right after the move.
type DeleteRecordsResult struct {
	Requested    int64
	LowWatermark int64
}

// DeleteRecords moves the leader's log start to offset (-1: the HW) as DeleteRecordsBefore
// does, and returns the offset asked for and the low watermark after the move. The request is
// complete once the low watermark reaches Requested (DeleteRecordsWait), which needs every
// live follower to have moved its own log start and said so in a fetch.
func (r *Replica) DeleteRecords(offset int64) (DeleteRecordsResult, error) {
	r.mu.Lock()
	if r.mu.role != RoleLeader {
		r.mu.Unlock()
		return DeleteRecordsResult{}, kerr.NotLeaderForPartition
	}
	offset, err := deleteRecordsTarget(offset, r.mu.highWatermark)
	if err != nil {
		r.mu.Unlock()
		return DeleteRecordsResult{}, err
	}
	if _, err := r.log.DeleteRecordsBefore(offset); err != nil {
		changed := r.publishLocked()
		r.mu.Unlock()
		r.notify(changed)
		return DeleteRecordsResult{}, err
	}
	changed := r.publishLocked()
	res := DeleteRecordsResult{Requested: offset, LowWatermark: r.lowWatermarkLocked()}
	r.mu.Unlock()
	r.notify(changed)
	return res, nil
}

// LowWatermark is the partition's low watermark on its leader, as Kafka's
// lowWatermarkIfLeader: the smallest log start offset over this replica and every follower
// in the assignment whose broker is alive (Options.ReplicaAlive), a follower that has not
// reported one yet counting as -1. NOT_LEADER_OR_FOLLOWER when this replica does not lead.
func (r *Replica) LowWatermark() (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.role != RoleLeader {
		return -1, kerr.NotLeaderForPartition
	}
	return r.lowWatermarkLocked(), nil
}

// REQUIRES: r.mu held, leader.
func (r *Replica) lowWatermarkLocked() int64 {
	low := r.log.LogStartOffset()
	for id, f := range r.mu.followers {
		if r.opts.ReplicaAlive != nil && !r.opts.ReplicaAlive(id) {
			continue
		}
		low = min(low, f.logStart)
	}
	return low
}

// checkLocked panics when a snapshot about to be published breaks an invariant.
// REQUIRES: r.mu held; built with -tags invariants.
func (r *Replica) checkLocked(s Snapshot) {
	if !(s.LogStart <= s.LastStable && s.LastStable <= s.HighWatermark && s.HighWatermark <= s.LogEnd) {
		panic(fmt.Sprintf("replica %s: offsets out of order: logStart %d, lastStable %d, HW %d, logEnd %d",
			r.opts.Name, s.LogStart, s.LastStable, s.HighWatermark, s.LogEnd))
	}
	if r.pub.seq.Load() != 0 && s.LeaderEpoch < r.pub.leaderEpoch.Load() {
		panic(fmt.Sprintf("replica %s: leader epoch went back from %d to %d", r.opts.Name, r.pub.leaderEpoch.Load(), s.LeaderEpoch))
	}
}

// checkRoleLocked panics when the replication state breaks an invariant.
// REQUIRES: r.mu held; built with -tags invariants.
func (r *Replica) checkRoleLocked() {
	for _, set := range [][]int32{r.mu.isr, r.mu.pendingISR} {
		for _, id := range set {
			if !slices.Contains(r.mu.replicas, id) {
				panic(fmt.Sprintf("replica %s: ISR %v (pending %v) not within replicas %v", r.opts.Name, r.mu.isr, r.mu.pendingISR, r.mu.replicas))
			}
		}
	}
	if r.mu.role == RoleLeader && len(r.mu.isr) > 0 && !slices.Contains(r.mu.isr, r.opts.NodeID) {
		panic(fmt.Sprintf("replica %s: leader %d not in its ISR %v", r.opts.Name, r.opts.NodeID, r.mu.isr))
	}
}

// deleteRecordsHighWatermark is the DeleteRecords offset that means "up to the high watermark".
const deleteRecordsHighWatermark = -1

// deleteRecordsTarget resolves a requested DeleteRecords offset against the high watermark.
func deleteRecordsTarget(offset, highWatermark int64) (int64, error) {
	if offset == deleteRecordsHighWatermark {
		offset = highWatermark
	}
	if offset < 0 || offset > highWatermark {
		return 0, kerr.OffsetOutOfRange
	}
	return offset, nil
}
