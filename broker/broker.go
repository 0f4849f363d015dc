package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"sluice/authz"
	"sluice/broker/replica"
	"sluice/controller"
	"sluice/coordinator"
	"sluice/internal/config"
	"sluice/internal/loglevels"
	"sluice/internal/telemetry"
	"sluice/logstore"
	"sluice/wire"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is what the broker needs beyond the metadata image.
type Config struct {
	// Static is the parsed server.properties (plus --set overrides).
	Static *config.Broker
	// LogDir is the directory that holds this node's partition directories, and the
	// broker's own files (metadata-offset-checkpoint); with LogDirs, their first (set by New).
	LogDir string
	// LogDirs are the log directories (log.dirs) partitions are placed in (log_dirs.go);
	// empty: LogDir alone.
	LogDirs []string
	// FS is the file system of the partition logs; nil means the OS's.
	FS     logstore.FS
	Logger *slog.Logger
	// CacheWindowBytes is logstore.Options.CacheWindowBytes for every partition's log.
	CacheWindowBytes int64
	// MaxHostedPartitions bounds the partition replicas a broker may host: creates past it are
	// refused. 0 or negative: none (maxHostedPartitions).
	MaxHostedPartitions int
	// Clock is the time of replicas (replica.lag.time.max.ms) and delayed operations; nil is
	// the wall clock. Tests inject a replica.ManualClock.
	Clock replica.Clock
	// PeerClientOpts are added to every client this broker makes to another broker's
	// inter-broker listener (replica fetchers, transaction markers and verification, peer
	// requests): TLS and SASL for that listener's security protocol. None: PLAINTEXT.
	PeerClientOpts []kgo.Opt
	// PeerTLS is the inter-broker listener's client TLS (nil without TLS), for the
	// connections that watch a leader's liveness (leader_hints.go), which send no requests.
	PeerTLS *tls.Config
	// OnFatal, if set, is called (once) when the broker cannot go on and the process should
	// shut down: a failed log directory the controller was not told of within
	// log.dir.failure.timeout.ms (offline.go). Nil: the error is only logged.
	OnFatal func(error)
	// LogLevels are the run-time levels of the process's log components, the BROKER_LOGGER
	// config resource (broker_loggers.go); nil: that resource lists only a root logger that
	// cannot change.
	LogLevels *loglevels.Levels
}

// Broker serves Kafka requests over the partitions this node hosts.
type Broker struct {
	cfg    Config
	nodeID int32
	ctrl   Metadata
	logger *slog.Logger
	// authorizer decides every request when authorizer.class.name is set; nil allows all
	// (authorize.go).
	authorizer *authz.Authorizer
	// metadataCache is the Metadata answer's topics for the newest image answered from
	// (03_metadata.go).
	metadataCache atomic.Pointer[metadataTopics]

	mu struct {
		sync.RWMutex
		// partitions holds the replicas hosted here, by topic name and partition.
		partitions map[topicPartition]*Partition
		// offline holds the replicas assigned here that are not served because their storage
		// failed (see markOffline). Disjoint from partitions.
		offline map[topicPartition]*offlinePartition
		// appliedImage is the newest metadata image reconcile has acted on; appliedChanged is
		// closed (and replaced) whenever it changes.
		appliedImage   *controller.Image
		appliedChanged chan struct{}
	}

	coord *coordinator.Coordinator
	// shares is the share group state on this node (share_groups.go).
	shares *shareGroups
	// coordinatorLoaded are the __consumer_offsets partitions whose shards are loaded (or
	// loading) here. Owned by the reconcile goroutine.
	coordinatorLoaded map[int32]*offsetsPartitionLog
	// txnCoord is the transaction coordinator; txnLoaded are the __transaction_state
	// partitions whose shards are loaded (or loading) here, owned by the reconcile goroutine.
	txnCoord  *coordinator.TxnCoordinator
	txnLoaded map[int32]txnLoaded
	// shareCoord is the share coordinator (share-group state persister); shareStateLoaded are
	// the __share_group_state partitions whose shards are loaded (or loading) here, owned by the
	// reconcile goroutine (share_state.go).
	shareCoord       *coordinator.ShareCoordinator
	shareStateLoaded map[int32]*offsetsPartitionLog
	// peers are clients to other brokers for markers and verification (transactions.go).
	peers peerClients
	// consumed is what the last retention.consumed.groups pass found (retention_consumed.go).
	consumed consumedRetentionState

	// offline are the partitions a storage error took offline (offline.go).
	offline offlineSet
	// dirs are the log directories (log_dirs.go), set by New and read-only after.
	dirs []logDirState
	// placement is which log directory holds each partition (log_dirs.go).
	placement logDirPlacement
	// moves are the AlterReplicaLogDirs moves in progress (log_dir_moves.go).
	moves logDirMoves
	// dirAssign are the replica directories to tell the controller (log_dir_assign.go).
	dirAssign dirAssignments
	// fatalOnce guards Config.OnFatal.
	fatalOnce sync.Once
	// metadataCheckpointed is the offset in the log directory's metadata-offset-checkpoint.
	// Owned by the reconcile goroutine (and New before it starts).
	metadataCheckpointed int64

	producerIDs   producerIDBlock
	fetchSessions *fetchSessionCache
	// leaderSuspects are leaders whose fetch connections failed (leader_hints.go).
	leaderSuspects leaderSuspects
	// clock is the time of replicas and delayed operations.
	clock replica.Clock
	// telemetry answers GetTelemetrySubscriptions and PushTelemetry and keeps the pushed
	// client metrics for /metrics (telemetry.go).
	telemetry *telemetry.Manager
	// purgatory holds delayed fetches and acks=all produces, keyed by partition
	// (delayed_fetch.go, 00_produce.go).
	purgatory *replica.Purgatory[topicPartition]
	// hwCheckpoint is the log directory's replication-offset-checkpoint (partition.go).
	hwCheckpoint struct {
		atStart map[replica.TopicPartition]int64 // read in New, then read-only
		mu      struct {
			sync.Mutex
			// written is what each log directory's checkpoint holds (by Broker.dirs index).
			written []map[replica.TopicPartition]int64
		}
	}
	alterPartition alterPartitionSender
	// fetchers copy the partitions this node follows from their leaders (fetcher.go).
	fetchers *replicaFetchers
	// throttles are the leader and follower replication quotas (throttle.go).
	throttles *replicationThrottles
	// quotas enforces client produce and fetch byte-rate quotas (quotas.go).
	quotas *clientQuotas

	// txnVerifier, when set, verifies a transactional produce that would start a transaction
	// on a partition with the transaction coordinator (txn_verify.go). Set before serving.
	txnVerifier TxnVerifier
	// offsetsTxnMarker, when set, is called after a transaction marker is committed on a
	// partition of __consumer_offsets (27_write_txn_markers.go). Set before serving.
	offsetsTxnMarker func(partition int32, producerID int64, commit bool)

	// draining is closed by Drain: parked fetches are answered and no fetch parks any more.
	draining  chan struct{}
	drainOnce sync.Once
	closing   chan struct{}
	done      sync.WaitGroup
}

// closeWorkers bounds how many partition logs Close closes at once. Closing a log flushes it
// (fsyncs of its segment, indexes, checkpoints and producer snapshot); done one at a time, a
// node with thousands of partitions spent tens of seconds at shutdown waiting on the disk one
// fsync after another, while the disk could serve many at once.
const closeWorkers = 16

type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s-%d", tp.topic, tp.partition) }

// errUnexpectedBody means the wire layer handed a request body of another type than its key
// names; it cannot happen with kmsg.RequestForKey and closes the connection if it does.
var errUnexpectedBody = errors.New("broker: request body does not match its key")

// New opens the partitions this node hosts according to the controller's current image and
// starts following image changes.
func New(cfg Config, ctrl Metadata) (*Broker, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LogDir == "" && len(cfg.LogDirs) > 0 {
		cfg.LogDir = cfg.LogDirs[0]
	}
	b := &Broker{
		cfg:           cfg,
		nodeID:        cfg.Static.NodeID,
		ctrl:          ctrl,
		logger:        cfg.Logger,
		closing:       make(chan struct{}),
		draining:      make(chan struct{}),
		clock:         cfg.Clock,
		fetchSessions: newFetchSessionCache(int(cfg.Static.MaxIncrementalFetchSessionCacheSlots)),
		authorizer:    NewAuthorizer(cfg.Static),
	}
	if b.clock == nil {
		b.clock = replica.SystemClock{}
	}
	b.purgatory = replica.NewPurgatory[topicPartition](b.clock)
	alterSender := newControllerAlterPartition(b)
	b.alterPartition = alterSender
	b.fetchers = newReplicaFetchers(b)
	b.throttles = newReplicationThrottles(b)
	b.quotas = newClientQuotas(b)
	b.telemetry = telemetry.NewManager(b.clock.Now, cfg.Static.Int32("telemetry.max.bytes"))
	b.mu.partitions = make(map[topicPartition]*Partition)
	b.mu.appliedChanged = make(chan struct{})
	b.offline.init()
	b.moves.init()
	b.dirAssign.wake = make(chan struct{}, 1)
	if err := b.initLogDirs(); err != nil {
		return nil, err
	}
	b.removeDeletedDirs()
	b.loadHighWatermarkCheckpoint()
	if err := b.checkMetadataNotRewound(ctrl.Image()); err != nil {
		return nil, err
	}
	b.coord = newCoordinator(b)
	b.shares = newShareGroups(b)
	b.coordinatorLoaded = make(map[int32]*offsetsPartitionLog)
	b.txnCoord = newTxnCoordinator(b)
	b.txnLoaded = make(map[int32]txnLoaded)
	b.shareCoord = newShareCoordinator(b)
	b.shareStateLoaded = make(map[int32]*offsetsPartitionLog)
	b.SetTxnVerifier(brokerTxnVerifier{b})
	b.SetOffsetsTxnMarkerHook(b.coord.CompleteTxnOffsets)
	initial := ctrl.Image()
	if err := b.reconcile(initial); err != nil {
		b.fetchers.close()
		b.txnCoord.Close()
		b.shareCoord.Close()
		b.coord.Close()
		b.closePartitions()
		return nil, err
	}
	b.done.Add(10)
	go b.dirAssignLoop()
	go alterSender.run()
	go b.storageRecoveryLoop()
	go b.followImages(initial)
	go b.retentionLoop()
	go b.purgatoryLoop()
	go b.highWatermarkCheckpointLoop()
	go b.isrExpirationLoop()
	go b.watchPeers() // leader_hints.go
	go b.every(idleFileSweepInterval, idleFileSweepInterval, closeIdleSegmentFiles)
	return b, nil
}

// Handle implements wire.Handler.
func (b *Broker) Handle(ctx context.Context, req *wire.Request, respond wire.Respond) {
	a, ok := apis[req.Key]
	if !ok || req.Version < a.minVersion || req.Version > a.maxVersion {
		// The wire layer filters these; answer defensively by closing.
		respond(nil, fmt.Errorf("broker: unsupported api %d v%d", req.Key, req.Version))
		return
	}
	defer func() {
		if r := recover(); r != nil {
			b.logger.Error("panic serving request", "api", req.Key, "version", req.Version, "panic", r, "stack", string(debug.Stack()))
			respond(nil, fmt.Errorf("broker: panic serving api %d", req.Key))
		}
	}()
	if deny := b.clusterDenied(req); deny != nil { // authorize.go
		respond(deny, nil)
		return
	}
	b.quotas.waitUnmuted(ctx, req.Conn)
	respond = b.quotas.wrapMutations(req, respond)                                 // quotas_mutation.go
	respond, handled := b.quotas.wrapRequestTime(req, b.quotas.wrap(req, respond)) // quotas_request.go
	// The answers that carry authorized operations get them once answered (authorized_operations.go).
	if authorizedOperationsKeys[req.Key] {
		answer := respond
		respond = func(resp kmsg.Response, err error) {
			if resp != nil && err == nil {
				b.fillAuthorizedOperations(req.Conn, req.Body, resp)
			}
			answer(resp, err)
		}
	}
	a.handle(b, ctx, req, respond)
	handled()
}

// Drain is the first step of shutdown: every parked fetch is answered now with what it has,
// and a fetch that would park from now on is answered at once, so the listeners' wait for
// in-flight requests is not held up by long polls. Safe to call more than once.
func (b *Broker) Drain() {
	b.drainOnce.Do(func() {
		close(b.draining)
		b.purgatory.ExpireWhere(func(op replica.Operation) bool {
			_, isFetch := op.(*delayedFetch)
			return isFetch
		})
	})
}

// isDraining reports whether Drain was called.
func (b *Broker) isDraining() bool {
	select {
	case <-b.draining:
		return true
	default:
		return false
	}
}

// Close stops following metadata, unloads the coordinator and closes every partition log,
// logging one line per phase with its duration. It drains first if Drain was not called.
// When every log closed without an error, none is offline and the broker is registered (its
// Metadata has a broker epoch), it then writes the clean shutdown file (clean_shutdown.go).
func (b *Broker) Close() error {
	b.Drain()
	start := time.Now()
	close(b.closing)
	b.cancelMoves()    // before the logs close: a move in its swap finishes it
	b.done.Wait()      // metadata following, retention and the purgatory worker; timed with the coordinator
	b.fetchers.close() // after followImages: no partition is added to a fetcher any more
	b.txnCoord.Close()
	b.shareCoord.Close()
	b.coord.Close()
	b.shares.close()
	b.peers.close()
	// After the last append: the HWs a restart resumes from (clean shutdown).
	b.checkpointHighWatermarks()
	b.logger.Info("shutdown phase done", "phase", "coordinator", "took", time.Since(start))
	start = time.Now()
	n, err := b.closePartitions()
	b.logger.Info("shutdown phase done", "phase", "logs", "partitions", n, "took", time.Since(start))
	if err != nil {
		return err
	}
	return b.markCleanShutdown()
}

// markCleanShutdown writes the clean shutdown file after every log closed cleanly, unless a
// partition is offline (its log may not hold what it acknowledged) or the broker has no
// broker epoch (not registered, or a node alone, whose Metadata has none).
func (b *Broker) markCleanShutdown() error {
	epoch := b.brokerEpoch()
	if epoch <= 0 {
		return nil
	}
	if left := b.offline.count.Load(); left > 0 {
		b.logger.Warn("not writing the clean shutdown file: partitions are offline", "offline", left)
		return nil
	}
	// In every log directory, as Kafka writes one per directory: a start reads them all.
	for _, dir := range b.logDirPaths() {
		if err := writeCleanShutdownFile(b.fs(), dir, epoch); err != nil {
			return fmt.Errorf("writing the clean shutdown file in %s: %w", dir, err)
		}
	}
	b.logger.Info("wrote the clean shutdown file", "broker_epoch", epoch)
	return nil
}

// closePartitions closes every hosted partition's log, closeWorkers at a time, and returns how
// many it closed. While it runs it logs its progress every closeProgressEvery.
func (b *Broker) closePartitions() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.mu.partitions)
	work := make(chan topicPartition)
	errCh := make(chan error, closeWorkers)
	var closed atomic.Int64
	var wg sync.WaitGroup
	for range min(closeWorkers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var errs []error
			for tp := range work {
				if err := b.mu.partitions[tp].log.Close(); err != nil {
					errs = append(errs, fmt.Errorf("close %s: %w", tp, err))
				}
				closed.Add(1)
			}
			errCh <- errors.Join(errs...)
		}()
	}
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		tick := time.NewTicker(closeProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				b.logger.Info("closing partition logs", "closed", closed.Load(), "of", n)
			case <-stopProgress:
				return
			}
		}
	}()
	for tp := range b.mu.partitions {
		work <- tp
	}
	close(work)
	wg.Wait()
	close(stopProgress)
	<-progressDone
	close(errCh)
	var errs []error
	for err := range errCh {
		errs = append(errs, err)
	}
	clear(b.mu.partitions)
	return n, errors.Join(errs...)
}

// closeProgressEvery is how often a long close of the partition logs says how far it is.
const closeProgressEvery = 5 * time.Second

// partition returns the hosted replica of tp, or nil.
func (b *Broker) partition(topic string, partition int32) *Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.partitions[topicPartition{topic, partition}]
}

// fs is the file system partitions live on.
func (b *Broker) fs() logstore.FS {
	if b.cfg.FS == nil {
		return logstore.OSFS{}
	}
	return b.cfg.FS
}

// partitionDir is tp's directory in the log directory that holds it (placing a new
// partition, log_dirs.go).
func (b *Broker) partitionDir(tp topicPartition) string {
	return filepath.Join(b.logDirPaths()[b.partitionDirIndex(tp)], tp.String())
}

// followImages reconciles hosted partitions with every metadata image published after
// applied (the one New reconciled), and again when partitions whose open failed are to be
// retried.
func (b *Broker) followImages(applied *controller.Image) {
	defer b.done.Done()
	im := applied
	for {
		select {
		case <-im.Changed():
		case <-b.offline.reconcile: // partitions whose open failed are opened again
		case <-b.closing:
			return
		}
		im = b.ctrl.Image()
		if err := b.reconcile(im); err != nil {
			b.logger.Error("applying metadata image", "offset", im.Offset, "err", err)
		}
	}
}

// waitForImage blocks until reconcile has applied an image at least as new as offset, so that a
// client told about a topic can use it at once. It gives up when ctx ends.
func (b *Broker) waitForImage(ctx context.Context, offset int64) {
	for {
		b.mu.RLock()
		applied, appliedChanged := b.mu.appliedImage, b.mu.appliedChanged
		b.mu.RUnlock()
		if applied != nil && applied.Offset >= offset {
			return
		}
		select {
		case <-appliedChanged:
		case <-ctx.Done():
			return
		case <-b.closing:
			return
		}
	}
}
