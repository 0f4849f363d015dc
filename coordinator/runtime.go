package coordinator

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// PartitionLog is one internal-topic partition (__consumer_offsets or
// __transaction_state) as a shard sees it. The broker implements it over the
// partition replica it leads.
type PartitionLog interface {
	// Append writes batch, one uncompressed v2 record batch built by the
	// coordinator (base offset 0; the log assigns offsets, as for a
	// produce; producer ID -1, or a transactional producer's ID and epoch
	// for a TxnOffsetCommit), and calls done once the batch is committed
	// (every record below the high watermark, i.e. acks=all) with the last
	// offset of the batch, or once it failed. done must be called exactly
	// once, in append order for successive Appends; it may be called on any
	// goroutine, even inside Append, and never blocks. A *kerr.Error (may be
	// wrapped) chooses the error code the coordinator derives, as Kafka
	// does: NOT_LEADER_OR_FOLLOWER/KAFKA_STORAGE_ERROR → NOT_COORDINATOR;
	// NOT_ENOUGH_REPLICAS(_AFTER_APPEND)/REQUEST_TIMED_OUT/
	// UNKNOWN_TOPIC_OR_PARTITION → COORDINATOR_NOT_AVAILABLE;
	// MESSAGE_TOO_LARGE/RECORD_LIST_TOO_LARGE → INVALID_COMMIT_OFFSET_SIZE
	// for commits. Any other error counts as NOT_COORDINATOR.
	Append(batch []byte, done func(lastOffset int64, err error))
	// Replay calls fn for every batch from the log start to the current
	// end, in offset order (for loading): data and control batches alike,
	// as stored (fn decodes and, if needed, decompresses them). Replay
	// stops and returns fn's first error.
	Replay(fn func(batch []byte) error) error
}

const (
	shardLoading int32 = iota
	shardActive
	shardUnloaded
)

// runtime is the part of a coordinator shard that does not depend on what
// the shard coordinates (groups or transactions): a single-threaded event
// loop over one internal-topic partition, timers whose callbacks run as
// events, and writes whose completions (the high watermark passing the batch)
// run as events. Every event (a request, a timer, an append completion) is a
// function submitted to the queue and run by the loop's goroutine, so a
// state machine built on it only ever sees one event at a time, in
// submission order. submit never blocks and never runs an event on the
// caller's goroutine, so a PartitionLog may call done from any goroutine,
// holding any lock, even inside Append.
type runtime struct {
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
	// afterEvent, if set before start, runs after every event (tests).
	afterEvent func()
	// onUnload, set by the state machine, runs inside the unload event
	// after pending writes were answered (to fail its waiters).
	onUnload func()

	// The fields below belong to the event loop (and to replay, before the
	// shard is active).

	// unloaded is set by the unload event; later events answer
	// NOT_COORDINATOR and write nothing.
	unloaded bool
	// pendingWrites holds the completion of each append not yet finished,
	// so unload can answer them.
	pendingWrites map[uint64]func(code int16)
	nextWriteID   uint64
	// timers are all scheduled timers, so unload can stop them.
	timers map[*shardTimer]struct{}
}

func (r *runtime) init(cfg *Config, partition int32, log PartitionLog) {
	r.cfg, r.partition, r.log = cfg, partition, log
	r.pendingWrites = make(map[uint64]func(int16))
	r.timers = make(map[*shardTimer]struct{})
	r.wake = make(chan struct{}, 1)
	r.quit = make(chan struct{})
	r.loopDone = make(chan struct{})
	r.status.Store(shardLoading)
}

// start runs the event loop until unload.
func (r *runtime) start() { go r.loop() }

func (r *runtime) loop() {
	defer close(r.loopDone)
	for {
		select {
		case <-r.wake:
		case <-r.quit:
		}
		for {
			r.exec.Lock()
			if len(r.exec.queue) == 0 {
				select {
				case <-r.quit:
					r.exec.stopped = true
					r.exec.Unlock()
					return
				default:
				}
				r.exec.Unlock()
				break
			}
			next := r.exec.queue[0]
			r.exec.queue[0] = nil
			r.exec.queue = r.exec.queue[1:]
			r.exec.Unlock()
			next()
			if r.afterEvent != nil {
				r.afterEvent()
			}
		}
	}
}

func (r *runtime) isActive() bool { return r.status.Load() == shardActive }

// submit queues ev to run after every event submitted before it. It never
// blocks on the shard.
func (r *runtime) submit(ev func()) {
	r.exec.Lock()
	if r.exec.stopped {
		r.exec.Unlock()
		r.lateMu.Lock()
		defer r.lateMu.Unlock()
		ev()
		return
	}
	r.exec.queue = append(r.exec.queue, ev)
	r.exec.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// call runs f as an event and waits for it.
func (r *runtime) call(f func()) {
	done := make(chan struct{})
	r.submit(func() {
		defer close(done)
		f()
	})
	<-done
}

func (r *runtime) now() time.Time { return r.cfg.Clock.Now() }

// shardTimer is a timer whose callback runs as a shard event, and never after
// Stop or unload.
type shardTimer struct {
	t       Timer
	stopped bool // set by stop, read by the callback event
}

// schedule runs f as an event after d.
func (r *runtime) schedule(d time.Duration, f func()) *shardTimer {
	st := &shardTimer{}
	if r.unloaded {
		st.stopped = true
		st.t = stoppedTimer{}
		return st
	}
	r.timers[st] = struct{}{}
	st.t = r.cfg.Clock.AfterFunc(d, func() {
		// Wait for the event: the timer's goroutine has nothing else to do,
		// and a manual clock in tests then knows the event ran (perhaps on
		// another goroutine that was running the shard) before it fires
		// the next timer.
		done := make(chan struct{})
		r.submit(func() {
			defer close(done)
			if st.stopped || r.unloaded {
				return
			}
			st.stopped = true
			delete(r.timers, st)
			f()
		})
		<-done
	})
	return st
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }

func (r *runtime) stopTimer(st *shardTimer) {
	if st == nil || st.stopped {
		return
	}
	st.stopped = true
	st.t.Stop()
	delete(r.timers, st)
}

// write appends recs as one non-transactional batch and calls onDone as an
// event once the batch is committed (code 0) or failed (the coordinator
// error code to answer with). REQUIRES: running as a shard event.
func (r *runtime) write(recs []record, onDone func(code int16)) {
	r.writeAs(-1, -1, recs, onDone)
}

// writeAs is write for a transactional producer's batch (producerID >= 0):
// Kafka's TxnOffsetCommit records are appended as part of the producer's
// transaction, and the marker the transaction coordinator writes later
// commits or aborts them.
func (r *runtime) writeAs(producerID int64, producerEpoch int16, recs []record, onDone func(code int16)) {
	if r.unloaded {
		// The partition is no longer ours: never append to it.
		onDone(errNotCoordinator)
		return
	}
	if len(recs) == 0 {
		onDone(0)
		return
	}
	id := r.nextWriteID
	r.nextWriteID++
	r.pendingWrites[id] = onDone
	b := encodeBatchAs(r.now().UnixMilli(), producerID, producerEpoch, recs)
	r.log.Append(b, func(_ int64, err error) {
		r.submit(func() {
			done, ok := r.pendingWrites[id]
			if !ok {
				return // answered by unload
			}
			delete(r.pendingWrites, id)
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

// logRecord is one record replayed from the partition, with what its batch
// says about it.
type logRecord struct {
	offset        int64
	key, value    []byte // value nil: tombstone
	producerID    int64
	producerEpoch int16
	transactional bool
	// control is set for a control record (a transaction marker); commit
	// says which. key and value are then the control record's.
	control, commit bool
}

// replayMaxBatch bounds a decompressed batch during replay.
const replayMaxBatch = 64 << 20

// replay calls fn for every record of the partition, in order, control
// records included. REQUIRES: shard event, shard not yet active.
func (r *runtime) replay(fn func(rec *logRecord) error) error {
	return r.log.Replay(func(b []byte) error {
		return forEachLogRecord(b, fn)
	})
}

// forEachLogRecord decodes one stored batch (decompressing it if needed)
// and calls fn for each record.
func forEachLogRecord(b []byte, fn func(rec *logRecord) error) error {
	h, err := batch.Check(b)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	records := b[batch.HeaderSize:h.Size()]
	if codec := h.Compression(); codec != 0 {
		if records, err = compress.Decompress(codec, records, replayMaxBatch); err != nil {
			return fmt.Errorf("%w: %v", ErrCorruptBatch, err)
		}
	}
	var inner error
	rec := logRecord{producerID: h.ProducerID, producerEpoch: h.ProducerEpoch,
		transactional: h.IsTransactional(), control: h.IsControl()}
	err = batch.WalkRecords(records, h.RecordCount, func(ri batch.RecordInfo) bool {
		rec.offset = h.BaseOffset + int64(ri.OffsetDelta)
		rec.key, rec.value = ri.Key, ri.Value
		if rec.control {
			// A control record's key is version int16, type int16 (0
			// abort, 1 commit), as Kafka's ControlRecordType.
			if len(ri.Key) < 4 {
				inner = fmt.Errorf("%w: control record key of %d bytes", ErrCorruptBatch, len(ri.Key))
				return false
			}
			rec.commit = ri.Key[3] == 1 && ri.Key[2] == 0
		}
		inner = fn(&rec)
		return inner == nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	return inner
}

// unload answers everything pending with NOT_COORDINATOR, stops timers and
// ends the event loop.
func (r *runtime) unload() {
	r.status.Store(shardUnloaded)
	defer func() {
		r.quitOnce.Do(func() { close(r.quit) })
		<-r.loopDone
	}()
	r.call(func() {
		if r.unloaded {
			return
		}
		r.unloaded = true
		for st := range r.timers {
			st.stopped = true
			st.t.Stop()
		}
		r.timers = nil
		for id, w := range r.pendingWrites {
			delete(r.pendingWrites, id)
			w(errNotCoordinator)
		}
		if r.onUnload != nil {
			r.onUnload()
		}
	})
}
