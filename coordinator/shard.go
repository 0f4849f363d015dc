package coordinator

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// PartitionLog is one __consumer_offsets partition as a shard sees it. The
// broker implements it over the partition replica it leads.
type PartitionLog interface {
	// Append writes batch, one uncompressed v2 record batch built by the
	// coordinator (base offset 0; the log assigns offsets, as for a
	// produce), and calls done once the batch is committed (every record
	// below the high watermark, i.e. acks=all) with the last offset of the
	// batch, or once it failed. done must be called exactly once, in
	// append order for successive Appends; it may be called on any
	// goroutine, even inside Append, and never blocks. A *kerr.Error (may be
	// wrapped) chooses the error code the coordinator derives, as Kafka
	// does: NOT_LEADER_OR_FOLLOWER/KAFKA_STORAGE_ERROR → NOT_COORDINATOR;
	// NOT_ENOUGH_REPLICAS(_AFTER_APPEND)/REQUEST_TIMED_OUT/
	// UNKNOWN_TOPIC_OR_PARTITION → COORDINATOR_NOT_AVAILABLE;
	// MESSAGE_TOO_LARGE/RECORD_LIST_TOO_LARGE → INVALID_COMMIT_OFFSET_SIZE
	// for commits. Any other error counts as NOT_COORDINATOR.
	Append(batch []byte, done func(lastOffset int64, err error))
	// Replay calls fn for every record from the log start to the current
	// end, in offset order (for loading). value is nil for a tombstone (a
	// record whose value length is -1); an empty non-nil value is not a
	// tombstone. Replay stops and returns fn's first error.
	Replay(fn func(offset int64, key, value []byte) error) error
}

const (
	shardLoading int32 = iota
	shardActive
	shardUnloaded
)

// Error codes used often.
var (
	errNotCoordinator      = kerr.NotCoordinator.Code
	errLoadInProgress      = kerr.CoordinatorLoadInProgress.Code
	errCoordNotAvailable   = kerr.CoordinatorNotAvailable.Code
	errUnknownMember       = kerr.UnknownMemberID.Code
	errIllegalGeneration   = kerr.IllegalGeneration.Code
	errRebalanceInProgress = kerr.RebalanceInProgress.Code
	errFencedInstance      = kerr.FencedInstanceID.Code
)

// shard is the coordinator for one __consumer_offsets partition: a
// single-threaded state machine. Every event (a request, a timer, an append
// completion) is a function submitted to the shard's queue and run by the
// shard's own goroutine, so the state below is only ever touched by one
// event at a time, in submission order. submit never blocks and never runs
// an event on the caller's goroutine, so a PartitionLog may call done from
// any goroutine, holding any lock, even inside Append.
type shard struct {
	c         *Coordinator
	cfg       *Config
	partition int32
	log       PartitionLog
	status    atomic.Int32 // shardLoading → shardActive → shardUnloaded

	exec struct {
		sync.Mutex
		// queue holds events not yet run. Its length is bounded by the
		// callers waiting on the shard (each request waits for its own
		// event), the shard's timers, and its in-flight appends.
		queue []func()
		// stopped is set when the loop has exited (after unload); later
		// events run on the submitter's goroutine, one at a time under
		// lateMu. They can only answer NOT_COORDINATOR or do nothing.
		stopped bool
	}
	lateMu   sync.Mutex
	wake     chan struct{} // capacity 1: the queue is not empty
	quit     chan struct{} // closed by unload once its event ran
	quitOnce sync.Once
	loopDone chan struct{} // closed when the loop exits

	// The fields below belong to the event loop (and to replay, before the
	// shard is active).

	groups map[string]*group
	// unloaded is set by the unload event; later events answer
	// NOT_COORDINATOR and write nothing.
	unloaded bool
	// pendingWrites holds the completion of each append not yet finished,
	// so unload can answer them.
	pendingWrites map[uint64]func(code int16)
	nextWriteID   uint64
	// timers are all scheduled timers, so unload can stop them.
	timers         map[*shardTimer]struct{}
	retentionTimer *shardTimer
}

func newShard(c *Coordinator, partition int32, log PartitionLog) *shard {
	s := &shard{
		c:             c,
		cfg:           &c.cfg,
		partition:     partition,
		log:           log,
		groups:        make(map[string]*group),
		pendingWrites: make(map[uint64]func(int16)),
		timers:        make(map[*shardTimer]struct{}),
		wake:          make(chan struct{}, 1),
		quit:          make(chan struct{}),
		loopDone:      make(chan struct{}),
	}
	s.status.Store(shardLoading)
	return s
}

// start runs the shard's event loop until unload.
func (s *shard) start() { go s.loop() }

func (s *shard) loop() {
	defer close(s.loopDone)
	for {
		select {
		case <-s.wake:
		case <-s.quit:
		}
		for {
			s.exec.Lock()
			if len(s.exec.queue) == 0 {
				select {
				case <-s.quit:
					s.exec.stopped = true
					s.exec.Unlock()
					return
				default:
				}
				s.exec.Unlock()
				break
			}
			next := s.exec.queue[0]
			s.exec.queue[0] = nil
			s.exec.queue = s.exec.queue[1:]
			s.exec.Unlock()
			next()
			if hook := s.c.eventHook.Load(); hook != nil {
				(*hook)(s)
			}
		}
	}
}

func (s *shard) isActive() bool { return s.status.Load() == shardActive }

// submit queues ev to run after every event submitted before it. It never
// blocks on the shard.
func (s *shard) submit(ev func()) {
	s.exec.Lock()
	if s.exec.stopped {
		s.exec.Unlock()
		s.lateMu.Lock()
		defer s.lateMu.Unlock()
		ev()
		return
	}
	s.exec.queue = append(s.exec.queue, ev)
	s.exec.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shard) now() time.Time { return s.cfg.Clock.Now() }

// shardTimer is a timer whose callback runs as a shard event, and never after
// Stop or unload.
type shardTimer struct {
	t       Timer
	stopped bool // set by stop, read by the callback event
}

// schedule runs f as an event after d.
func (s *shard) schedule(d time.Duration, f func()) *shardTimer {
	st := &shardTimer{}
	if s.unloaded {
		st.stopped = true
		st.t = stoppedTimer{}
		return st
	}
	s.timers[st] = struct{}{}
	st.t = s.cfg.Clock.AfterFunc(d, func() {
		// Wait for the event: the timer's goroutine has nothing else to do,
		// and a manual clock in tests then knows the event ran (perhaps on
		// another goroutine that was running the shard) before it fires
		// the next timer.
		done := make(chan struct{})
		s.submit(func() {
			defer close(done)
			if st.stopped || s.unloaded {
				return
			}
			st.stopped = true
			delete(s.timers, st)
			f()
		})
		<-done
	})
	return st
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }

func (s *shard) stopTimer(st *shardTimer) {
	if st == nil || st.stopped {
		return
	}
	st.stopped = true
	st.t.Stop()
	delete(s.timers, st)
}

// write appends recs as one batch and calls onDone as an event once the batch
// is committed (code 0) or failed (the coordinator error code to answer
// with). REQUIRES: running as a shard event.
func (s *shard) write(recs []record, onDone func(code int16)) {
	if s.unloaded {
		// The partition is no longer ours: never append to it.
		onDone(errNotCoordinator)
		return
	}
	if len(recs) == 0 {
		onDone(0)
		return
	}
	id := s.nextWriteID
	s.nextWriteID++
	s.pendingWrites[id] = onDone
	batch := encodeBatch(s.now().UnixMilli(), recs)
	s.log.Append(batch, func(_ int64, err error) {
		s.submit(func() {
			done, ok := s.pendingWrites[id]
			if !ok {
				return // answered by unload
			}
			delete(s.pendingWrites, id)
			done(appendErrorCode(err))
		})
	})
}

// appendErrorCode maps an append failure to the code a coordinator answers
// with, as Kafka's coordinator runtime normalizes storage errors.
func appendErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return errNotCoordinator
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return errCoordNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return errNotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize.Code
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress:
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// replay loads the partition's records. REQUIRES: shard event, shard not
// yet active.
func (s *shard) replay() error {
	return s.log.Replay(func(_ int64, key, value []byte) error {
		if len(key) >= 2 {
			if kind := int16(binary.BigEndian.Uint16(key)); kind >= keyConsumerGroupLo {
				return s.applyConsumerRecord(key, value)
			}
		}
		d, err := decodeRecord(key, value)
		if err != nil {
			return err
		}
		s.applyRecord(&d)
		return nil
	})
}

// applyRecord applies one replayed record to the state.
func (s *shard) applyRecord(d *decodedRecord) {
	switch d.kind {
	case keyOffsetCommitV0, keyOffsetCommit:
		g := s.groups[d.group]
		if d.offset == nil {
			if g != nil {
				g.deleteOffset(d.topic, d.partition)
				s.maybeDropLoadedGroup(g)
			}
			return
		}
		if g == nil {
			g = s.newGroup(d.group)
		}
		v := d.offset
		e := &offsetEntry{
			offset:          v.Offset,
			leaderEpoch:     -1,
			metadata:        v.Metadata,
			commitTimestamp: v.CommitTimestamp,
			expireTimestamp: -1,
			topicID:         v.TopicID,
		}
		if v.Version >= 3 {
			e.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			e.expireTimestamp = v.ExpireTimestamp
		}
		g.setOffset(d.topic, d.partition, e)
	case keyGroupMetadata:
		g := s.groups[d.group]
		if d.groupValue == nil {
			if g != nil {
				g.resetToSimple()
				s.maybeDropLoadedGroup(g)
			}
			return
		}
		if g == nil {
			g = s.newGroup(d.group)
		}
		g.loadMetadata(d.groupValue, s.now())
	default:
		// Newer record types (KIP-848 and later) are skipped.
	}
}

// maybeDropLoadedGroup forgets a replayed group left with neither metadata
// nor offsets.
func (s *shard) maybeDropLoadedGroup(g *group) {
	if g.cg == nil && g.protocolType == "" && g.generation == 0 && len(g.members) == 0 && g.numOffsets() == 0 {
		delete(s.groups, g.id)
	}
}

func (s *shard) newGroup(id string) *group {
	g := newGroup(s, id, s.now())
	s.groups[id] = g
	return g
}

// activate starts serving after replay: member session timers and the
// offset retention check. REQUIRES: running as a shard event.
func (s *shard) activate() {
	for _, g := range s.groups {
		for _, m := range g.members {
			g.scheduleHeartbeatExpiry(m)
		}
		if g.cg != nil {
			for _, m := range g.cg.members {
				g.scheduleConsumerSession(m)
			}
		}
	}
	s.scheduleRetentionCheck()
	// An Unload during the replay wins.
	s.status.CompareAndSwap(shardLoading, shardActive)
}

func (s *shard) numGroups() int {
	n := make(chan int, 1)
	s.submit(func() { n <- len(s.groups) })
	return <-n
}

// unload answers everything pending with NOT_COORDINATOR, stops timers and
// ends the event loop.
func (s *shard) unload() {
	s.status.Store(shardUnloaded)
	defer func() {
		s.quitOnce.Do(func() { close(s.quit) })
		<-s.loopDone
	}()
	done := make(chan struct{})
	s.submit(func() {
		defer close(done)
		if s.unloaded {
			return
		}
		s.unloaded = true
		for st := range s.timers {
			st.stopped = true
			st.t.Stop()
		}
		s.timers = nil
		for id, w := range s.pendingWrites {
			delete(s.pendingWrites, id)
			w(errNotCoordinator)
		}
		for _, g := range s.groups {
			g.failAllWaiters(errNotCoordinator)
		}
	})
	<-done
}

func (s *shard) scheduleRetentionCheck() {
	s.retentionTimer = s.schedule(s.cfg.OffsetsRetentionCheckInterval, func() {
		s.expireOffsets()
		s.scheduleRetentionCheck()
	})
}
