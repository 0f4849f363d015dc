package broker

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/logstore"
)

// Partition is one partition replica hosted on this node: its replica (the log, its offsets
// and its replication state, package replica) and the topic's settings.
type Partition struct {
	tp      topicPartition
	topicID controller.TopicID
	// log is replica's log, for reads and queries (size, timestamps, epochs). Mutations go
	// through replica, which owns the offsets.
	log     *logstore.Log
	replica *replica.Replica
	// settings are the topic's resolved configs from the newest applied image.
	settings atomic.Pointer[config.TopicSettings]
	// counters feed the metrics (partition_counters.go).
	counters partitionCounters
}

// newPartition hosts log. checkpointedHW is the partition's entry in the log directory's
// replication-offset-checkpoint (-1: none); onChange wakes the delayed operations keyed on
// the partition.
func (b *Broker) newPartition(tp topicPartition, id controller.TopicID, log *logstore.Log, checkpointedHW int64) *Partition {
	p := &Partition{tp: tp, topicID: id, log: log}
	p.replica = replica.New(log, replica.Options{
		NodeID:                    b.nodeID,
		Clock:                     b.clock,
		ReplicaLagTimeMax:         time.Duration(b.cfg.Static.ReplicaLagTimeMaxMs) * time.Millisecond,
		CheckpointedHighWatermark: checkpointedHW,
		OnChange:                  func() { b.purgatory.Wake(tp) },
		Name:                      tp.String(),
		// Kafka 4.x's strict min ISR (eligible leader replicas, controller/elections.go).
		MinInsync: func() int32 {
			if s := p.settings.Load(); s != nil {
				return s.MinInsyncReplicas
			}
			return 1
		},
		// The low watermark counts the followers on registered, unfenced brokers, as
		// Kafka's metadataCache.hasAliveBroker (DeleteRecords, 21_delete_records.go).
		ReplicaAlive: func(id int32) bool {
			info := b.ctrl.Image().Brokers[id]
			return info != nil && !info.Fenced
		},
	})
	return p
}

// applyMetadata applies the leadership the image describes to the replica.
func (p *Partition) applyMetadata(info *controller.PartitionInfo, nodeID int32) error {
	if info.Leader == nodeID {
		// A committed ISR change of a partition this node leads on, at the same epoch: one
		// through AlterPartition, or the controller's removal of a fenced broker.
		before, _ := p.replica.ISR()
		_, epoch, _ := p.replica.Role()
		wasLeader, _ := p.leaderState()
		if err := p.replica.BecomeLeader(info.LeaderEpoch, info.ISR, info.Replicas); err != nil {
			return err
		}
		if wasLeader && epoch == info.LeaderEpoch {
			p.counters.countISRChange(len(before), len(info.ISR))
		}
		return nil
	}
	return p.replica.BecomeFollower(info.LeaderEpoch, info.Leader)
}

// applyLeadership applies info to p; an image older than what p applied (never expected: the
// controller only raises epochs) is logged and skipped.
func (b *Broker) applyLeadership(p *Partition, info *controller.PartitionInfo) {
	if err := p.applyMetadata(info, b.nodeID); err != nil {
		b.logger.Warn("leadership from an older metadata image ignored", "partition", p.tp.String(), "err", err)
		return
	}
	// After the role change: a new leader's fetcher is gone only once appends as follower are
	// refused anyway, and a follower's fetcher starts at the epoch just applied.
	b.fetchers.apply(p, info)
	b.maybeProposeRecovered(p, info)
}

// maybeProposeRecovered ends the leader recovery of a partition this node was elected to lead
// uncleanly (controller/elections.go): its log is the partition's log from now on, so it tells
// the controller RECOVERED at once, as a Kafka leader does. isrExpirationLoop sends it again
// until the controller has it.
func (b *Broker) maybeProposeRecovered(p *Partition, info *controller.PartitionInfo) {
	if info.Leader != b.nodeID || !info.LeaderRecovering {
		return
	}
	if change := p.replica.ProposeRecovered(info.LeaderEpoch); change != nil {
		b.logger.Warn("leading a partition elected uncleanly; records only the old ISR had are lost", "partition", p.tp.String(),
			"leaderEpoch", info.LeaderEpoch)
		b.alterPartition.ProposeISR(p, *change)
	}
}

// leaderState returns whether this replica leads and its leader epoch.
func (p *Partition) leaderState() (isLeader bool, leaderEpoch int32) {
	s := p.replica.Snapshot()
	return s.Leader, s.LeaderEpoch
}

// highWatermark returns the current high watermark.
func (p *Partition) highWatermark() int64 { return p.replica.Snapshot().HighWatermark }

// appended and truncatedOrMoved publish the log's offsets after the log was changed directly
// (Reopen after a storage failure, removal) and wake the delayed operations on the partition.
func (p *Partition) appended()         { p.replica.Refresh() }
func (p *Partition) truncatedOrMoved() { p.replica.Refresh() }

// appendOutcome is one partition's append as leader.
type appendOutcome struct {
	info          replica.AppendInfo
	logAppendTime int64
	errCode       int16
	err           error
	// errMessage and recordErrors are Produce v8+'s error_message and record_errors.
	errMessage   *string
	recordErrors []kmsg.ProduceResponseTopicPartitionErrorRecord
	// withLogStart: answer the error with the log start offset, as Kafka does for it.
	withLogStart bool
}

// appendAsLeader is the one way records reach a partition's log on this node as its leader:
// the client-only rules (checkClientAppend) for OriginClient, then the replica's append, which
// checks leadership, epoch and min.insync.replicas under its lock. leaderEpoch >= 0 fences an
// append by an owner that loaded at another epoch (a coordinator shard).
func (p *Partition) appendAsLeader(origin replica.Origin, internal bool, records []byte, produceVersion, acks int16, leaderEpoch int32) appendOutcome {
	return p.appendAsLeaderGuarded(origin, internal, records, produceVersion, acks, leaderEpoch, 0)
}

// appendAsLeaderGuarded is appendAsLeader for a transactional produce verified with the
// coordinator under guard (logstore.Log.BeginTxnVerification; 0: none).
func (p *Partition) appendAsLeaderGuarded(origin replica.Origin, internal bool, records []byte, produceVersion, acks int16, leaderEpoch int32, guard uint64) appendOutcome {
	settings := p.settings.Load()
	out := appendOutcome{logAppendTime: -1}
	validated := false
	if origin == replica.OriginClient {
		v := checkClientAppend(internal, records, produceVersion, settings, p.tp, time.Now())
		if v.code != 0 {
			out.errCode, out.errMessage, out.recordErrors, out.withLogStart = v.code, v.message, v.recordErrors, v.withLogStart
			return out
		}
		records, out.logAppendTime, validated = v.records, v.logAppendTime, true
	}
	info, err := p.replica.AppendAsLeader(origin, records, replica.AppendOptions{
		RequiredAcks: acks, MinInsync: settings.MinInsyncReplicas, LeaderEpoch: leaderEpoch,
		VerificationGuard: guard, Validated: validated,
	})
	if err != nil {
		out.err, out.errCode, out.withLogStart = err, appendErrorCode(err), true
		return out
	}
	out.info = info
	if origin == replica.OriginClient {
		p.counters.countAppend(info.AppendResult)
	}
	return out
}

// checkClientAppend holds the rules that apply only to producers' records, as Kafka's
// LogValidator applies them only for AppendOrigin.CLIENT: the internal topics are written by
// their coordinators only (INVALID_TOPIC_EXCEPTION, ReplicaManager.appendToLocalLog), and the
// records pass Kafka's client batch validation (produce_validate.go), which also stamps their
// max timestamp.
func checkClientAppend(internal bool, records []byte, produceVersion int16, settings *config.TopicSettings, tp topicPartition, now time.Time) produceValidation {
	if internal {
		return produceValidation{code: kerr.InvalidTopicException.Code, logAppendTime: -1}
	}
	return validateProduceRecords(records, produceVersion, settings, tp, now)
}

// appendErrorCode maps an append's error: the replica's Kafka errors as they are, the log's
// through storageErrorCode.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return storageErrorCode(err)
}

// highWatermarkCheckpointLoop writes the log directory's replication-offset-checkpoint every
// replica.high.watermark.checkpoint.interval.ms, as Kafka's ReplicaManager does; Close writes
// it once more after the last append.
func (b *Broker) highWatermarkCheckpointLoop() {
	interval := time.Duration(b.cfg.Static.Int64("replica.high.watermark.checkpoint.interval.ms")) * time.Millisecond
	b.every(interval, 5*time.Second, b.checkpointHighWatermarks)
}

// checkpointHighWatermarks writes the HW of every hosted partition into the checkpoint of its
// log directory, keeping the entries of partitions that are offline (their HW is not known
// until they serve again), and only for the directories where something changed since the
// last write.
func (b *Broker) checkpointHighWatermarks() {
	b.hwCheckpoint.mu.Lock()
	defer b.hwCheckpoint.mu.Unlock()
	paths := b.logDirPaths()
	next := make([]map[replica.TopicPartition]int64, len(paths))
	for i := range next {
		next[i] = make(map[replica.TopicPartition]int64)
	}
	b.mu.RLock()
	for tp, p := range b.mu.partitions {
		i, ok := b.placedIn(tp)
		if !ok {
			continue
		}
		next[i][replica.TopicPartition{Topic: tp.topic, Partition: tp.partition}] = p.highWatermark()
	}
	b.mu.RUnlock()
	for tp := range b.offlineSnapshot() {
		key := replica.TopicPartition{Topic: tp.topic, Partition: tp.partition}
		i, ok := b.placedIn(tp)
		if !ok {
			continue
		}
		if hw, ok := b.hwCheckpoint.mu.written[i][key]; ok {
			if _, hosted := next[i][key]; !hosted {
				next[i][key] = hw
			}
		}
	}
	if b.hwCheckpoint.mu.written == nil {
		b.hwCheckpoint.mu.written = make([]map[replica.TopicPartition]int64, len(paths))
	}
	for i, dir := range paths {
		if b.hwCheckpoint.mu.written[i] != nil && maps.Equal(next[i], b.hwCheckpoint.mu.written[i]) {
			continue
		}
		if err := replica.WriteHighWatermarks(b.fs(), dir, next[i]); err != nil {
			b.logger.Warn("writing the high-watermark checkpoint", "dir", dir, "err", err)
			continue
		}
		b.hwCheckpoint.mu.written[i] = next[i]
	}
}

// checkpointedHighWatermark is tp's HW in the checkpoint read at start, or -1.
func (b *Broker) checkpointedHighWatermark(tp topicPartition) int64 {
	if hw, ok := b.hwCheckpoint.atStart[replica.TopicPartition{Topic: tp.topic, Partition: tp.partition}]; ok {
		return hw
	}
	return -1
}

// loadHighWatermarkCheckpoint reads the checkpoints of every log directory at start. A damaged
// file is logged and ignored: a HW that starts lower than it was is safe (records become
// visible again as the ISR confirms them; a sole-replica leader moves it to its log end at
// once), never a higher one. Only a partition's own directory's entry counts (a moved
// partition's old directory may still name it).
func (b *Broker) loadHighWatermarkCheckpoint() {
	paths := b.logDirPaths()
	b.hwCheckpoint.atStart = make(map[replica.TopicPartition]int64)
	b.hwCheckpoint.mu.written = make([]map[replica.TopicPartition]int64, len(paths))
	for i, dir := range paths {
		hws, err := replica.ReadHighWatermarks(b.fs(), dir)
		if err != nil {
			b.logger.Warn("ignoring the high-watermark checkpoint", "dir", dir, "err", err)
			hws = nil
		}
		b.hwCheckpoint.mu.written[i] = hws
		for tp, hw := range hws {
			if j, ok := b.placedIn(topicPartition{tp.Topic, tp.Partition}); ok && j == i {
				b.hwCheckpoint.atStart[tp] = hw
			}
		}
	}
}

// isrExpirationLoop asks every led partition to drop followers that lag more than
// replica.lag.time.max.ms, every half of it, as Kafka's isr-expiration task does, and hands
// the proposals to the controller's AlterPartition (alterPartition).
func (b *Broker) isrExpirationLoop() {
	b.every(time.Duration(b.cfg.Static.ReplicaLagTimeMaxMs)*time.Millisecond/2, 15*time.Second, func() {
		now := b.clock.Now()
		im := b.ctrl.Image()
		for _, p := range b.partitionsSnapshot() {
			if change := p.replica.MaybeShrinkISR(now); change != nil {
				b.alterPartition.ProposeISR(p, *change)
			}
			if t := im.TopicsByID[p.topicID]; t != nil && int(p.tp.partition) < len(t.Partitions) {
				b.maybeProposeRecovered(p, &t.Partitions[p.tp.partition])
			}
		}
	})
}

// alterPartitionSender sends a replica's ISR proposal to the controller (Kafka's
// AlterPartition) and reports a refusal back with Replica.ISRChangeFailed; the committed ISR
// arrives in a metadata image.
type alterPartitionSender interface {
	ProposeISR(p *Partition, change replica.ISRChange)
}

// controllerAlterPartition sends ISR proposals to the controller's AlterPartition (Kafka's
// AlterPartitionManager): proposals go on a bounded queue, one goroutine sends what is queued
// in one call with this node's broker epoch. What the answer says about each proposal decides
// what the replica does with it (alterPartitionOutcome):
//   - committed (no error, or NEW_LEADER_ELECTED: committed, and it completed a reassignment
//     that moved the leadership away): the proposal stays pending, so the HW keeps being
//     computed over the maximal ISR, until the metadata image brings the committed state (a
//     BecomeLeader at the same epoch, or this node's new role);
//   - refused (the controller certainly did not write it): Replica.ISRChangeFailed, and the
//     replica goes on with its committed ISR;
//   - unknown (a transport error, a timeout, a controller that moved): the proposal may have
//     been written, so it stays pending and is sent again after alterPartitionRetryBackoff,
//     against the partition epoch of its first send, while the replica still proposes it;
//   - stale (INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH: the metadata moved past the state it
//     was computed from): it stays pending until that metadata reaches the replica and clears
//     it, and is never resent. A proposal cleared while queued is not sent at all.
//
// Dropping a proposal whose fate is not known would be a data-loss hole: an expansion that was
// committed (perhaps with the leadership moved to the new member) no longer counted in the
// HW, so this leader would acknowledge records the new member does not have. Kafka's Partition
// resets to the committed state only on the answers that say the change was not applied.
// After a refusal a partition's next proposal waits alterPartitionRetryBackoff, so a controller
// that refuses every change (one without AlterPartition) is not asked on every follower fetch.
type controllerAlterPartition struct {
	b     *Broker
	queue chan isrProposal
	mu    struct {
		sync.Mutex
		// refusedAt is when each partition's last proposal was refused.
		refusedAt map[topicPartition]time.Time
		// warned are the partitions whose refusal was logged at warn level already.
		warned map[topicPartition]bool
	}
	// answered counts the calls whose answers were handled (tests wait on it).
	answered atomic.Uint64
}

// isrProposal is one queued ISR change.
type isrProposal struct {
	p      *Partition
	change replica.ISRChange
	// basePartitionEpoch is the partition epoch the change was first sent against (-1: not
	// sent yet; the image's then). A resend keeps it, so a change the metadata has since moved
	// past is refused (INVALID_UPDATE_VERSION) instead of being applied to a newer partition
	// state it was not computed from, as Kafka's AlterPartitionManager resends the same request.
	basePartitionEpoch int32
}

// alterPartitionQueue bounds the queued ISR proposals; a proposal that finds it full is
// refused at once (the replica proposes again later).
const alterPartitionQueue = 1024

// alterPartitionRetryBackoff is how long a partition whose ISR change was refused waits
// before its next proposal is sent (Kafka retries after its own backoff too).
const alterPartitionRetryBackoff = time.Second

// alterPartitionTimeout bounds one AlterPartition call.
const alterPartitionTimeout = 30 * time.Second

func newControllerAlterPartition(b *Broker) *controllerAlterPartition {
	c := &controllerAlterPartition{b: b, queue: make(chan isrProposal, alterPartitionQueue)}
	c.mu.refusedAt = make(map[topicPartition]time.Time)
	c.mu.warned = make(map[topicPartition]bool)
	return c
}

// ProposeISR implements alterPartitionSender. It never blocks.
func (c *controllerAlterPartition) ProposeISR(p *Partition, change replica.ISRChange) {
	c.mu.Lock()
	refused, ok := c.mu.refusedAt[p.tp]
	c.mu.Unlock()
	if ok && time.Since(refused) < alterPartitionRetryBackoff {
		p.replica.ISRChangeFailed()
		return
	}
	select {
	case c.queue <- isrProposal{p: p, change: change, basePartitionEpoch: -1}:
	default:
		p.replica.ISRChangeFailed()
	}
}

// run sends queued proposals until the broker closes.
func (c *controllerAlterPartition) run() {
	defer c.b.done.Done()
	for {
		var batch []isrProposal
		select {
		case <-c.b.closing:
			return
		case first := <-c.queue:
			batch = append(batch, first)
		}
	drain:
		for len(batch) < alterPartitionQueue {
			select {
			case more := <-c.queue:
				batch = append(batch, more)
			default:
				break drain
			}
		}
		c.send(batch)
	}
}

// send makes one AlterPartition call for batch and reports refusals to the replicas.
func (c *controllerAlterPartition) send(batch []isrProposal) {
	b := c.b
	im := b.ctrl.Image()
	epoch := b.brokerEpoch()
	reqs := make([]controller.AlterPartition, 0, len(batch))
	sent := make([]isrProposal, 0, len(batch))
	for _, pr := range batch {
		if _, pending := pr.p.replica.ISR(); !slices.Equal(pending, pr.change.ISR) {
			// A metadata image (a committed ISR, a new role) cleared the change since it was
			// queued: sending it now would apply it on top of a state it was not computed from.
			continue
		}
		topic := im.TopicsByID[pr.p.topicID]
		if topic == nil || int(pr.p.tp.partition) >= len(topic.Partitions) {
			pr.p.replica.ISRChangeFailed()
			continue
		}
		info := &topic.Partitions[pr.p.tp.partition]
		if pr.basePartitionEpoch < 0 {
			pr.basePartitionEpoch = info.PartitionEpoch
		}
		reqs = append(reqs, controller.AlterPartition{
			TopicID: pr.p.topicID, Partition: pr.p.tp.partition, LeaderID: b.nodeID, BrokerEpoch: epoch,
			LeaderEpoch: pr.change.LeaderEpoch, PartitionEpoch: pr.basePartitionEpoch, NewISR: pr.change.ISR,
			NewISREpochs: pr.change.BrokerEpochs, // KIP-903: refused if a member registered again since
		})
		sent = append(sent, pr)
	}
	if len(reqs) == 0 {
		return
	}
	ctx, cancel := b.closingContext(alterPartitionTimeout)
	results, err := b.ctrl.AlterPartition(ctx, reqs)
	cancel()
	for i, pr := range sent {
		var rerr error
		msg := ""
		switch {
		case err != nil:
			rerr = err
		case i >= len(results):
			rerr = errors.New("no result for the partition")
		default:
			rerr, msg = results[i].Err, results[i].Message
		}
		switch alterPartitionOutcome(rerr) {
		case isrCommitted:
			c.mu.Lock()
			delete(c.mu.refusedAt, pr.p.tp)
			delete(c.mu.warned, pr.p.tp)
			c.mu.Unlock()
			if rerr != nil {
				b.logger.Info("ISR change completed a reassignment; leadership moved", "partition", pr.p.tp.String(),
					"leaderEpoch", pr.change.LeaderEpoch, "isr", pr.change.ISR, "message", msg)
			} else {
				b.logger.Info("ISR change committed", "partition", pr.p.tp.String(), "leaderEpoch", pr.change.LeaderEpoch, "isr", pr.change.ISR)
			}
		case isrUnknown:
			b.logger.Warn("ISR change not confirmed; keeping it pending and sending it again", "partition", pr.p.tp.String(),
				"leaderEpoch", pr.change.LeaderEpoch, "isr", pr.change.ISR, "err", rerr, "message", msg, "retry_in", alterPartitionRetryBackoff)
			c.retryLater(pr)
		case isrStale:
			// The metadata moved past the state the change was computed from (perhaps by an
			// earlier, unconfirmed send of it): the change stays pending, counted in the HW,
			// until the image that moved it reaches this replica (a BecomeLeader at the same
			// epoch, or a new role) and clears it. Never resent, as in Kafka.
			b.logger.Info("ISR change answered with a newer partition state; waiting for the metadata", "partition", pr.p.tp.String(),
				"leaderEpoch", pr.change.LeaderEpoch, "isr", pr.change.ISR, "err", rerr, "message", msg)
		default:
			c.mu.Lock()
			c.mu.refusedAt[pr.p.tp] = time.Now()
			warned := c.mu.warned[pr.p.tp]
			c.mu.warned[pr.p.tp] = true
			c.mu.Unlock()
			level := slog.LevelWarn
			if warned {
				level = slog.LevelDebug // refused again: said once already
			}
			b.logger.Log(context.Background(), level, "ISR change refused; keeping the committed ISR", "partition", pr.p.tp.String(),
				"leaderEpoch", pr.change.LeaderEpoch, "isr", pr.change.ISR, "err", rerr, "message", msg)
			pr.p.replica.ISRChangeFailed()
		}
	}
	c.answered.Add(1)
}

// isrOutcome is what an AlterPartition answer says about one proposal.
type isrOutcome int

const (
	isrCommitted isrOutcome = iota // written to the metadata log
	isrRefused                     // certainly not written
	isrUnknown                     // perhaps written: the call failed, or the controller moved
	isrStale                       // the metadata is past the state the change was based on
)

// alterPartitionOutcome classifies one proposal's answer (nil: committed). Only the answers
// that say the controller did not apply the change count as refused, as in Kafka's
// Partition.handleAlterPartitionError: the validation refusals that do not depend on a newer
// metadata state than this node's (a stale epoch or partition epoch may mean an earlier,
// unconfirmed send of the same change was committed), and a controller that does not serve
// AlterPartition at all.
func alterPartitionOutcome(err error) isrOutcome {
	if err == nil || errors.Is(err, kerr.NewLeaderElected) {
		return isrCommitted
	}
	if errors.Is(err, kerr.InvalidUpdateVersion) || errors.Is(err, kerr.FencedLeaderEpoch) {
		return isrStale
	}
	for _, refused := range []*kerr.Error{kerr.IneligibleReplica, kerr.InvalidRequest, kerr.StaleBrokerEpoch,
		kerr.UnknownTopicID, kerr.UnknownTopicOrPartition, kerr.OperationNotAttempted, kerr.UnsupportedVersion} {
		if errors.Is(err, refused) {
			return isrRefused
		}
	}
	return isrUnknown
}

// retryLater sends pr again after alterPartitionRetryBackoff if the replica still has the
// same change pending at the same leader epoch then (a metadata image that committed it, or
// a new role, clears it).
func (c *controllerAlterPartition) retryLater(pr isrProposal) {
	time.AfterFunc(alterPartitionRetryBackoff, func() {
		_, pending := pr.p.replica.ISR()
		_, epoch := pr.p.leaderState()
		if epoch != pr.change.LeaderEpoch || !slices.Equal(pending, pr.change.ISR) {
			return
		}
		select {
		case <-c.b.closing:
		case c.queue <- pr:
		default:
			c.retryLater(pr) // the queue is full: the change stays pending; try again later
		}
	})
}

// closingContext is a context that ends after timeout or when the broker closes.
func (b *Broker) closingContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// brokerEpoch is this node's broker epoch from its registration with the quorum (cluster.Link
// has it), or -1 when the metadata source does not know one.
func (b *Broker) brokerEpoch() int64 {
	if e, ok := b.ctrl.(interface{ Epoch() int64 }); ok {
		return e.Epoch()
	}
	return -1
}
