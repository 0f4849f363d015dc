package coordinator

// The transaction coordinator, as Kafka 4.x's TransactionCoordinator,
// TransactionStateManager and TransactionMarkerChannelManager behave: one
// shard per partition of __transaction_state led here, each a
// single-threaded state machine on the same runtime as the group shards.
// A transactional ID belongs to partition abs(hashCode(id)) %
// transaction.state.log.num.partitions. Every state change is first written
// to the partition as a TransactionLogKey/Value record and applied once the
// high watermark passes it; while such a write is in flight the ID is
// "pending" and other requests for it answer CONCURRENT_TRANSACTIONS, as
// Kafka's pendingState does.
//
// Ending a transaction: EndTxn writes PrepareCommit/PrepareAbort and answers;
// the shard then has COMMIT/ABORT markers written to every partition of the
// transaction (TxnMarkerWriter, retried with a back-off until each partition
// has it or is gone), and writes CompleteCommit/CompleteAbort. A reload finds
// Prepare* states and resumes their markers.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TxnMarker is one transaction's outcome to write as control batches.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// TransactionVersion is 2 for a KIP-890 part 2 transaction.
	TransactionVersion int8
	Partitions         []TopicPartitions
}

// TxnMarkerWriter writes transaction markers to data partitions (the
// broker's WriteTxnMarkers, locally or to the partition's leader). It is
// called off the shard's goroutine and may block. It returns the partitions
// whose marker was not written, with the Kafka error for each; a partition
// absent from the result has its marker. Partitions that answer
// UNKNOWN_TOPIC_OR_PARTITION (deleted) are dropped by the coordinator as
// Kafka does; any other error is retried.
type TxnMarkerWriter interface {
	WriteTxnMarkers(ctx context.Context, m TxnMarker) map[TopicPartition]error
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// TxnConfig holds the transaction coordinator's settings, named after
// Kafka's broker keys.
type TxnConfig struct {
	// NumPartitions is transaction.state.log.num.partitions (50).
	NumPartitions int32
	// MaxTimeout is transaction.max.timeout.ms (15m).
	MaxTimeout time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10s).
	AbortTimedOutInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms (7d).
	IDExpiration time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1h).
	RemoveExpiredInterval time.Duration
	// MarkerRetryBackoff is how long to wait before retrying markers that a
	// partition did not take (Kafka retries on its channel manager's
	// cycle, about 100ms).
	MarkerRetryBackoff time.Duration
	// TransactionVersion2 is true when the finalized transaction.version
	// feature is 2: partitions join a transaction implicitly through the
	// partition leaders' verification (VerifyTxnPartition).
	TransactionVersion2 bool

	// ProducerIDs hands out fresh producer IDs (may block).
	ProducerIDs func(ctx context.Context) (int64, error)
	// Markers writes markers.
	Markers TxnMarkerWriter
	// OffsetsPartitionFor maps a group to its __consumer_offsets partition
	// (AddOffsetsToTxn adds that partition to the transaction).
	OffsetsPartitionFor func(group string) int32
	// Topics resolves data topics (AddPartitionsToTxn answers
	// UNKNOWN_TOPIC_OR_PARTITION for others). May be nil.
	Topics TopicMetadata
	Clock  Clock
	Logger *slog.Logger
}

// DefaultTxnConfig returns Kafka 4.x's defaults.
func DefaultTxnConfig() TxnConfig {
	return TxnConfig{
		NumPartitions:         50,
		MaxTimeout:            15 * time.Minute,
		AbortTimedOutInterval: 10 * time.Second,
		IDExpiration:          7 * 24 * time.Hour,
		RemoveExpiredInterval: time.Hour,
		MarkerRetryBackoff:    100 * time.Millisecond,
		TransactionVersion2:   true,
	}
}

// TxnCoordinator routes transactional requests to the shards this broker
// leads.
type TxnCoordinator struct {
	cfg TxnConfig
	// rcfg is the runtime's view of the configuration (its clock).
	rcfg Config
	log  *slog.Logger
	// ctx ends at Close; marker writes in flight use it.
	ctx    context.Context
	cancel context.CancelFunc
	// spawn runs marker writes off the shard's loop (go f() in
	// production; tests run them inline for a deterministic trace).
	spawn func(f func())

	mu struct {
		sync.Mutex
		// shards holds every partition that is loading or loaded here.
		shards map[int32]*txnShard
		closed bool
	}
}

// NewTxn returns a transaction coordinator with no shards loaded.
func NewTxn(cfg TxnConfig) *TxnCoordinator {
	def := DefaultTxnConfig()
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = def.NumPartitions
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = def.MaxTimeout
	}
	if cfg.AbortTimedOutInterval <= 0 {
		cfg.AbortTimedOutInterval = def.AbortTimedOutInterval
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = def.IDExpiration
	}
	if cfg.RemoveExpiredInterval <= 0 {
		cfg.RemoveExpiredInterval = def.RemoveExpiredInterval
	}
	if cfg.MarkerRetryBackoff <= 0 {
		cfg.MarkerRetryBackoff = def.MarkerRetryBackoff
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &TxnCoordinator{cfg: cfg, rcfg: Config{Clock: cfg.Clock}, log: cfg.Logger.With("component", "txn-coordinator")}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.spawn = func(f func()) { go f() }
	t.mu.shards = make(map[int32]*txnShard)
	return t
}

// PartitionFor returns the __transaction_state partition that owns
// transactionalID, computed as Kafka does (see Coordinator.PartitionFor).
func (t *TxnCoordinator) PartitionFor(transactionalID string) int32 {
	return partitionFor(transactionalID, t.cfg.NumPartitions)
}

// Load makes this broker the transaction coordinator for a
// __transaction_state partition whose leader epoch is coordinatorEpoch: it
// replays log, resumes the markers of transactions found in PrepareCommit /
// PrepareAbort, then serves. Requests meanwhile answer
// COORDINATOR_LOAD_IN_PROGRESS. It blocks for the replay.
func (t *TxnCoordinator) Load(partition, coordinatorEpoch int32, log PartitionLog) error {
	if partition < 0 || partition >= t.cfg.NumPartitions {
		return fmt.Errorf("coordinator: transaction partition %d out of range [0,%d)", partition, t.cfg.NumPartitions)
	}
	t.mu.Lock()
	if t.mu.closed {
		t.mu.Unlock()
		return ErrClosed
	}
	if _, ok := t.mu.shards[partition]; ok {
		t.mu.Unlock()
		return ErrShardLoaded
	}
	s := newTxnShard(t, partition, coordinatorEpoch, log)
	s.start()
	t.mu.shards[partition] = s
	t.mu.Unlock()

	var err error
	s.call(func() {
		if s.unloaded {
			err = ErrClosed
			return
		}
		if err = s.replayTxns(); err == nil {
			s.activate()
		}
	})
	if err != nil {
		t.mu.Lock()
		if t.mu.shards[partition] == s {
			delete(t.mu.shards, partition)
		}
		t.mu.Unlock()
		s.unload()
		t.log.Error("loading transaction coordinator shard failed", "partition", partition, "err", err)
		return fmt.Errorf("coordinator: loading transaction partition %d: %w", partition, err)
	}
	return nil
}

// Unload stops coordinating a partition. Pending requests answer
// NOT_COORDINATOR; markers in flight are abandoned (the next coordinator
// resumes them from the log).
func (t *TxnCoordinator) Unload(partition int32) {
	t.mu.Lock()
	s := t.mu.shards[partition]
	delete(t.mu.shards, partition)
	t.mu.Unlock()
	if s != nil {
		s.unload()
	}
}

// Close unloads every shard.
func (t *TxnCoordinator) Close() {
	t.mu.Lock()
	t.mu.closed = true
	shards := t.mu.shards
	t.mu.shards = make(map[int32]*txnShard)
	t.mu.Unlock()
	t.cancel()
	for _, s := range shards {
		s.unload()
	}
}

// lookup returns the shard owning transactionalID or the code to answer.
func (t *TxnCoordinator) lookup(transactionalID string) (*txnShard, int16) {
	t.mu.Lock()
	s := t.mu.shards[t.PartitionFor(transactionalID)]
	t.mu.Unlock()
	if s == nil {
		return nil, errNotCoordinator
	}
	if !s.isActive() {
		return nil, errLoadInProgress
	}
	return s, 0
}

func (t *TxnCoordinator) activeShards() (active []*txnShard, loading bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.mu.shards {
		if s.isActive() {
			active = append(active, s)
		} else {
			loading = true
		}
	}
	sort.Slice(active, func(i, j int) bool { return active[i].partition < active[j].partition })
	return active, loading
}

// onTxnShard runs start on the shard owning id and waits for its reply.
func onTxnShard[R any](ctx context.Context, t *TxnCoordinator, id string, errResp func(code int16) R, start func(s *txnShard, reply func(R))) (R, error) {
	s, code := t.lookup(id)
	if code != 0 {
		return errResp(code), nil
	}
	ch := make(chan R, 1)
	s.submit(func() {
		if s.unloaded {
			ch <- errResp(errNotCoordinator)
			return
		}
		start(s, func(r R) { ch <- r })
	})
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// txnShard is the transaction state machine of one __transaction_state
// partition.
type txnShard struct {
	runtime
	t                *TxnCoordinator
	coordinatorEpoch int32

	// txns are the transactional IDs of the partition. Owned by the loop.
	txns map[string]*txnMeta
}

// txnMeta is one transactional ID: its persisted state plus what is in
// flight.
type txnMeta struct {
	id string
	txnData
	// pending is set while a write of this ID's state is in flight (Kafka's
	// pendingState): requests answer CONCURRENT_TRANSACTIONS meanwhile.
	pending bool
	// markersRunning is set while markers are being written for a Prepare*
	// state.
	markersRunning bool
	// markersLeft are the partitions still owed the marker.
	markersLeft map[TopicPartition]struct{}
	// pendingAdd is set while the write in flight adds partitions.
	// Invariant: only set while pending.
	pendingAdd bool
	// settleWaiters are requests that add partitions, held while a write
	// is in flight (see whenSettled). Invariant: empty unless pending;
	// at most maxSettleWaiters.
	settleWaiters []func()
}

// maxSettleWaiters bounds the requests held per transactional ID while its
// state is being written; more answer CONCURRENT_TRANSACTIONS at once.
const maxSettleWaiters = 1024

// whenSettled runs f now when id has no state write in flight, otherwise
// once that write completes. Requests that add partitions to the open
// transaction go through it: a producer verifying many partitions at once
// (KIP-890) would otherwise see CONCURRENT_TRANSACTIONS for all but one and
// retry each after a back-off. REQUIRES: shard event.
//
// Only a write adding partitions is waited for: a request held across the
// write that completes a transaction would be answered after that
// transaction's markers landed, and a partition leader that started
// verifying before its marker arrived then refuses the batch (the KIP-890
// guard).
func (s *txnShard) whenSettled(id string, f func()) {
	m := s.txns[id]
	if m == nil || !m.pending || !m.pendingAdd || len(m.settleWaiters) >= maxSettleWaiters {
		f()
		return
	}
	m.settleWaiters = append(m.settleWaiters, f)
}

func newTxnShard(t *TxnCoordinator, partition, coordinatorEpoch int32, log PartitionLog) *txnShard {
	s := &txnShard{t: t, coordinatorEpoch: coordinatorEpoch, txns: make(map[string]*txnMeta)}
	s.runtime.init(&t.rcfg, partition, log)
	return s
}

func (s *txnShard) nowMs() int64 { return s.now().UnixMilli() }

func (s *txnShard) replayTxns() error {
	return s.replay(func(r *logRecord) error {
		if r.control {
			return nil
		}
		id, d, err := decodeTxnRecord(r.key, r.value)
		if err != nil {
			return err
		}
		if d == nil {
			delete(s.txns, id)
			return nil
		}
		m := s.txns[id]
		if m == nil {
			m = &txnMeta{id: id}
			s.txns[id] = m
		}
		if m.producerID == d.producerID && d.epoch > m.epoch {
			d.lastEpoch = m.epoch
		}
		m.txnData = *d
		return nil
	})
}

// activate resumes markers of prepared transactions and starts the
// periodic checks. REQUIRES: shard event.
func (s *txnShard) activate() {
	for _, m := range s.txns {
		if m.state == txnPrepareCommit || m.state == txnPrepareAbort {
			s.startMarkers(m)
		}
	}
	s.scheduleAbortCheck()
	s.scheduleExpireCheck()
	s.status.CompareAndSwap(shardLoading, shardActive)
}

// persist writes next as id's state; once committed it becomes the state
// and onDone(0) runs, otherwise the state is unchanged and onDone gets the
// code. REQUIRES: shard event, m not pending.
func (s *txnShard) persist(m *txnMeta, next txnData, onDone func(code int16)) {
	m.pending = true
	s.write([]record{txnRecord(m.id, &next)}, func(code int16) {
		m.pending, m.pendingAdd = false, false
		if code == 0 {
			if s.txns[m.id] != m {
				s.txns[m.id] = m
			}
			m.txnData = next
		}
		onDone(code)
		waiting := m.settleWaiters
		m.settleWaiters = nil
		for _, f := range waiting {
			s.whenSettled(m.id, f)
		}
	})
}

// bumpEpoch returns d with its epoch raised by one, or, when the epoch is
// exhausted, with newID at epoch 0 (newID < 0: none at hand, the epoch
// saturates; the caller allocates one first).
func bumpEpoch(d txnData, newID int64) txnData {
	if d.epoch >= math.MaxInt16-1 && newID >= 0 {
		d.prevProducerID = d.producerID
		d.producerID, d.epoch, d.lastEpoch = newID, 0, -1
		return d
	}
	if d.epoch == math.MaxInt16 {
		return d // saturated: never wrap to a negative epoch
	}
	d.lastEpoch = d.epoch
	d.epoch++
	return d
}

func epochExhausted(d *txnData) bool { return d.epoch >= math.MaxInt16-1 }

// prepareEnd writes Prepare{Commit,Abort} for m (bumping the epoch under
// transaction version 2, and always for an abort the coordinator starts
// itself, to fence the producer), then starts the markers. nextID >= 0 is
// the producer ID a transaction version 2 end at an exhausted epoch rolls
// to: the markers carry the bumped epoch (Short.MAX_VALUE) and the
// Complete record moves the ID to nextID at epoch 0, as Kafka's
// prepareAbortOrCommit and prepareComplete do. REQUIRES: shard event, m
// not pending.
func (s *txnShard) prepareEnd(m *txnMeta, commit, bump, tv2 bool, nextID int64, onDone func(code int16)) {
	next := m.txnData.clone()
	if bump {
		if tv2 && nextID >= 0 && epochExhausted(&next) {
			next.nextProducerID = nextID
		}
		next = bumpEpoch(next, -1)
	}
	next.clientTxnV2 = tv2
	next.state = txnPrepareAbort
	if commit {
		next.state = txnPrepareCommit
	}
	next.lastUpdate = s.nowMs()
	s.persist(m, next, func(code int16) {
		if code == 0 {
			s.startMarkers(m)
		}
		onDone(code)
	})
}

// startMarkers has the markers of m's prepared transaction written.
// REQUIRES: shard event, m in PrepareCommit or PrepareAbort.
func (s *txnShard) startMarkers(m *txnMeta) {
	if m.markersRunning {
		return
	}
	m.markersRunning = true
	m.markersLeft = make(map[TopicPartition]struct{})
	for _, tp := range m.sortedPartitions() {
		for _, p := range tp.Partitions {
			m.markersLeft[TopicPartition{tp.Topic, p}] = struct{}{}
		}
	}
	s.sendMarkers(m)
}

// sendMarkers writes the markers still owed, off the loop, and handles the
// result as an event. REQUIRES: shard event.
func (s *txnShard) sendMarkers(m *txnMeta) {
	if len(m.markersLeft) == 0 {
		s.completeEnd(m)
		return
	}
	mk := TxnMarker{ProducerID: m.producerID, ProducerEpoch: m.epoch, Commit: m.state == txnPrepareCommit,
		CoordinatorEpoch: s.coordinatorEpoch, TransactionVersion: 1}
	if m.clientTxnV2 {
		mk.TransactionVersion = 2
	}
	byTopic := map[string][]int32{}
	for tp := range m.markersLeft {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	for topic, ps := range byTopic {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		mk.Partitions = append(mk.Partitions, TopicPartitions{topic, ps})
	}
	sort.Slice(mk.Partitions, func(i, j int) bool { return mk.Partitions[i].Topic < mk.Partitions[j].Topic })
	w := s.t.cfg.Markers
	ctx := s.t.ctx
	s.t.spawn(func() {
		var failed map[TopicPartition]error
		if w == nil {
			failed = map[TopicPartition]error{}
			for tp := range m.markersLeft {
				failed[tp] = kerr.CoordinatorNotAvailable
			}
		} else {
			failed = w.WriteTxnMarkers(ctx, mk)
		}
		s.submit(func() {
			if s.unloaded || !m.markersRunning {
				return
			}
			for tp := range m.markersLeft {
				err, bad := failed[tp]
				if bad && !errIsUnknownTopic(err) {
					continue
				}
				delete(m.markersLeft, tp)
			}
			if len(m.markersLeft) == 0 {
				s.completeEnd(m)
				return
			}
			s.schedule(s.t.cfg.MarkerRetryBackoff, func() { s.sendMarkers(m) })
		})
	})
}

// completeEnd writes Complete{Commit,Abort} once every marker is written,
// retrying the write until it succeeds or the shard unloads. REQUIRES:
// shard event.
func (s *txnShard) completeEnd(m *txnMeta) {
	if m.pending {
		s.schedule(s.t.cfg.MarkerRetryBackoff, func() { s.completeEnd(m) })
		return
	}
	next := m.txnData.clone()
	next.state = txnCompleteAbort
	if m.state == txnPrepareCommit {
		next.state = txnCompleteCommit
	}
	next.partitions = nil
	next.startMs = -1
	next.lastUpdate = s.nowMs()
	if next.nextProducerID >= 0 {
		// The markers are written with the old ID's last epoch: roll.
		next.prevProducerID, next.producerID = next.producerID, next.nextProducerID
		next.epoch, next.lastEpoch, next.nextProducerID = 0, -1, -1
	}
	s.persist(m, next, func(code int16) {
		if code != 0 {
			s.schedule(s.t.cfg.MarkerRetryBackoff, func() { s.completeEnd(m) })
			return
		}
		m.markersRunning = false
		m.markersLeft = nil
	})
}

func (s *txnShard) scheduleAbortCheck() {
	s.schedule(s.t.cfg.AbortTimedOutInterval, func() {
		s.abortTimedOut()
		s.scheduleAbortCheck()
	})
}

// abortTimedOut aborts every open transaction older than its timeout,
// fencing its producer with an epoch bump, as Kafka's
// abortTimedOutTransactions does. REQUIRES: shard event.
func (s *txnShard) abortTimedOut() {
	now := s.nowMs()
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		if m.state != txnOngoing || m.pending || m.startMs < 0 || m.startMs+int64(m.timeoutMs) > now {
			continue
		}
		if epochExhausted(&m.txnData) {
			// Kafka aborts without a bump then; so do we.
			s.prepareEnd(m, false, false, m.clientTxnV2, -1, func(int16) {})
			continue
		}
		s.t.log.Info("aborting timed out transaction", "transactional_id", id, "producer_id", m.producerID, "timeout_ms", m.timeoutMs)
		s.prepareEnd(m, false, true, m.clientTxnV2, -1, func(int16) {})
	}
}

func (s *txnShard) scheduleExpireCheck() {
	s.schedule(s.t.cfg.RemoveExpiredInterval, func() {
		s.expireIDs()
		s.scheduleExpireCheck()
	})
}

// expireIDs removes transactional IDs idle (no open transaction) for
// transactional.id.expiration.ms, with a tombstone, as Kafka's
// removeExpiredTransactionalIds does. REQUIRES: shard event.
func (s *txnShard) expireIDs() {
	now := s.nowMs()
	var recs []record
	var gone []*txnMeta
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		switch m.state {
		case txnEmpty, txnCompleteCommit, txnCompleteAbort:
		default:
			continue
		}
		if m.pending || m.lastUpdate+s.t.cfg.IDExpiration.Milliseconds() > now {
			continue
		}
		m.pending = true
		recs = append(recs, record{key: txnKey(id)})
		gone = append(gone, m)
	}
	s.write(recs, func(code int16) {
		for _, m := range gone {
			m.pending = false
			if code == 0 && s.txns[m.id] == m {
				delete(s.txns, m.id)
			}
		}
	})
}

func (s *txnShard) sortedIDs() []string {
	ids := make([]string, 0, len(s.txns))
	for id := range s.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
