package controller

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// ErrClosed is returned by calls on a closed controller.
var ErrClosed = errors.New("controller: closed")

// Bounds of the driver's queues.
const (
	// requestQueue bounds proposals waiting for the driver; callers block (or give up with
	// their context) beyond it.
	requestQueue = 256
	// maxInflight bounds proposals handed to raft but not yet applied.
	maxInflight = 256
	// inboundQueue bounds raft messages received from other voters.
	inboundQueue = 1024
	// defaultSnapshotEvery is how many applied entries trigger a snapshot by default.
	defaultSnapshotEvery = 1024
	// maxEntryBytes bounds one proposal's raft entry, far below maxWALFrame so that every
	// entry written can be read back.
	maxEntryBytes = 8 << 20
)

// errNotController answers proposals on a node that does not lead (or no longer leads).
var errNotController = fail(kerr.NotController, "This node is not the active controller.")

// Config configures a controller.
type Config struct {
	NodeID       int32
	Dir          string     // metadata directory (e.g. <first log.dir>/__cluster_metadata-0)
	Endpoints    []Endpoint // this broker's advertised listeners, registered at start
	Rack         *string
	TickInterval time.Duration // 0 = 100ms
	Logger       *slog.Logger

	// Voters are the node IDs of the metadata quorum's voters; nil means this node alone.
	// Used only to bootstrap a new metadata directory; afterwards the membership is the one
	// in the log and snapshots. A node not among them (process.roles=broker) is an
	// observer: it bootstraps the same initial configuration, never campaigns, and follows
	// the log once the active controller has added it as a raft learner (see "Observers" in
	// the package doc).
	Voters []int32
	// VoterAddrs are the controller listener addresses (host:port) of the voters of
	// controller.quorum.voters, by node ID; voters added later (AddVoter) or formatted
	// (BootstrapVoters) bring their own endpoint in the log. Optional.
	VoterAddrs map[int32]string
	// Transport sends raft messages to the other voters; nil is valid only when this node is
	// the only voter.
	Transport Transport
	// SnapshotEvery is the number of applied entries after which the state machine is
	// snapshotted and the WAL compacted; 0 = 1024.
	SnapshotEvery int
	// SessionTimeout is broker.session.timeout.ms: the active controller fences a broker
	// whose heartbeats stopped this long (counted in ticks of TickInterval, rounded up).
	// 0 = 9 s; negative = never (Start's own single-node registration has no heartbeats).
	SessionTimeout time.Duration
	// MaxReplicationFactor, when positive, refuses topics and partitions with more replicas
	// (INVALID_REPLICATION_FACTOR); see checkReplicationFactor.
	MaxReplicationFactor int

	// Prober, when set, lets the active controller fence a broker at once on certain
	// evidence that its process is gone (evidence.go); nil leaves only the session timeout.
	Prober Prober

	// LeaderRebalanceInterval, when positive, turns on auto leader rebalance
	// (auto.leader.rebalance.enable) with this leader.imbalance.check.interval.seconds
	// (elections.go); 0 = off.
	LeaderRebalanceInterval time.Duration

	// EligibleLeaderReplicas turns on KIP-966 eligible leader replicas
	// (eligible.leader.replicas.version=1, Kafka 4.x's default for new clusters) in the
	// changes this node plans as active controller; MinInsyncReplicas and
	// UncleanLeaderElection are the static min.insync.replicas and
	// unclean.leader.election.enable, used where neither the topic nor the cluster-wide
	// dynamic config sets them (elections.go).
	EligibleLeaderReplicas bool
	MinInsyncReplicas      int32
	UncleanLeaderElection  bool

	// ClusterID, when set, is the cluster ID the first leader of a new log writes (the
	// formatted meta.properties', `sluice format --cluster-id`); empty: a random one.
	ClusterID string
	// BootstrapRecords are written by the first leader of a new log in the same entry as its
	// ClusterIDRecord, as Kafka's active controller writes a formatted bootstrap.checkpoint
	// (`sluice format --add-scram`'s UserScramCredentialRecords). Ignored once the log has a
	// cluster ID.
	BootstrapRecords []Record

	// ticks, when non-nil, replaces the TickInterval ticker: tests drive time by hand.
	ticks <-chan time.Time
}

// Controller runs this node's member of the metadata quorum. All raft and state machine work
// happens in one driver goroutine (run); other goroutines talk to it through bounded channels
// and read the published image.
type Controller struct {
	cfg    Config
	logger *slog.Logger

	// image is the latest published image. Never nil after Start; replaced only by the driver,
	// which closes the old image's changed channel after the swap.
	image atomic.Pointer[Image]
	// elections count the leader changes applied (election_stats.go).
	elections electionStats
	// voterAddrs are the current voters' controller addresses (VoterAddrs), replaced by the
	// driver when the configuration changes.
	voterAddrs atomic.Pointer[map[int32]string]
	// localIncarnation is the incarnation ID of the broker in this controller's own process (a
	// combined node), set once by SetLocalIncarnation; nil on a controller-only node.
	localIncarnation atomic.Pointer[[16]byte]

	requests chan *request    // proposals for the driver, bounded by requestQueue
	inbound  chan *pb.Message // raft messages from other voters, bounded by inboundQueue
	stop     chan struct{}    // closed by Close
	done     chan struct{}    // closed when the driver has exited
	stopOnce sync.Once
	// calls carries transport reports and queries into the driver (see driverCalls).
	calls driverCalls

	mu struct {
		sync.Mutex
		err error // why the driver exited, if not because of Close
	}

	// Fields below are owned by the driver goroutine.
	node      *raft.RawNode
	storage   *diskStorage
	transport Transport
	confState *pb.ConfState
	applied   uint64 // raft index of the last applied entry
	// voterOp is the voter change in flight on this leader (voters.go), nil if none.
	voterOp *voterOp
	// wasVoter: this node was a voter at the last configurationChanged.
	wasVoter bool
	// sinceSnapshot counts entries applied since the last snapshot.
	sinceSnapshot int
	leaderID      int32  // Kafka ID of the known raft leader, -1 if none
	leaderTerm    uint64 // the term in which this node leads; 0 if it does not
	// leaderReady is true once this node leads and has applied an entry of its own term, so
	// the image reflects everything committed before: proposals are validated only then.
	leaderReady bool
	// working is the published image with every in-flight proposal applied on top: the image
	// new proposals validate against, so two proposals cannot both claim the same name.
	// Invariant: working == published image when inflight is empty.
	working *Image
	// workingBuilder, while a batch of proposals is being planned, owns working and applies
	// each proposal's records to it in place, so a batch copies the image's maps once, not
	// once per proposal. Dropped (freezing working) before each Ready.
	workingBuilder *imageBuilder
	inflight       map[uint64]*request // proposal ID -> request, bounded by maxInflight
	waiting        []*request          // requests with waitForLeader parked until leaderReady
	nextProposal   uint64

	// Membership (membership.go). tickCount counts driver ticks; sessions (reset whenever
	// this node becomes leader) hold the last heartbeat of each broker, by broker ID;
	// sessionTicks is SessionTimeout in ticks, 0 = no expiry. clusterIDTerm is the term in
	// which this node proposed a cluster ID.
	tickCount     uint64
	sessions      map[int32]*brokerSession
	sessionTicks  uint64
	clusterIDTerm uint64

	// learnerProposed holds, by raft ID, the tick at which this leader proposed adding a
	// broker as a learner (ensureLearner); entries go once the broker is a member, and the
	// map is reset with every leadership, so it is bounded by the registered brokers.
	learnerProposed map[uint64]uint64
	// learnerRemovals holds, by raft ID, the unregistered broker-only nodes whose learner
	// this leader is removing, with the tick of the last proposal (0 = not yet); entries go
	// once the node is no learner or registered again (unregister.go). Bounded by the
	// brokers unregistered.
	learnerRemovals map[uint64]uint64

	// members are the voters and learners of the applied configuration: written by the
	// driver after each configuration change, read by the transport to accept an observer's
	// connection (AcceptsObserver). Never nil after open.
	members atomic.Pointer[quorumMembers]

	// refusals rate-limits the warnings about refused registrations and heartbeats: one
	// line per kind per logEvery, with the count of those suppressed.
	refusals logLimiter
	// liveness (evidence.go) is what this node's probes showed of each unfenced broker
	// incarnation; livenessTerm the term in which the active controller last suspected
	// every broker.
	liveness     map[int32]*brokerLiveness
	livenessTerm uint64
	// forcedCampaignTerm is the term whose leader this node last campaigned against on
	// evidence that it is gone (ReportPeerGone), so it does so once per term.
	forcedCampaignTerm uint64
	// Auto leader rebalance (elections.go): rebalanceDue is the tick of the next round (0 =
	// none scheduled); rebalanceCheckedOffset the image offset last checked for imbalance.
	rebalanceDue           uint64
	rebalanceCheckedOffset int64
}

// electionDefaults are the static election configs images carry (elections.go).
func (c *Controller) electionDefaults() *electionDefaults {
	return &electionDefaults{elr: c.cfg.EligibleLeaderReplicas, minISR: c.cfg.MinInsyncReplicas, unclean: c.cfg.UncleanLeaderElection}
}

// request is a proposal handed to the driver.
type request struct {
	ctx context.Context
	// plan runs in the driver against the working image and returns the records to propose;
	// none means nothing to commit (validation failed or validate-only) and completes the
	// request at once.
	plan func(working *Image) []Record
	// applied, if set, runs in the driver after the records were applied and the image
	// containing them published.
	applied func(published *Image)
	// waitForLeader parks the request until this node leads instead of failing it with
	// NotController (used by Start).
	waitForLeader bool
	// nonAtomic: the records may be committed in several entries when they do not fit in one
	// (Kafka's non-atomic ControllerResult). Set on a broker's own lifecycle (registration,
	// heartbeat, fencing), whose records are independent partition changes a broker with many
	// partitions produces by the hundred thousand; a user's request stays one entry or is
	// refused with POLICY_VIOLATION.
	nonAtomic bool
	done      chan error // buffered(1); receives the outcome exactly once
}

func (r *request) finish(err error) { r.done <- err }

// Open opens the metadata directory, replays it and joins the quorum (a single voter elects
// itself at once). It does not wait for a leader and registers no broker: brokers register
// with RegisterBroker through the active controller (cluster.Link does, from every node).
// Whichever node first leads a log without a cluster ID proposes one.
func Open(cfg Config) (*Controller, error) { return open(cfg) }

// Start is the single-process path: for a configuration whose only voter is this node it
// opens the quorum, registers this node as an unfenced broker with a new epoch (nothing
// heartbeats, so session expiry is off unless Config.SessionTimeout is set) and returns once
// the published image contains that registration. With several voters it is Open: it never
// waits for an election, and the broker registers through cluster.Link.
func Start(cfg Config) (*Controller, error) {
	alone := len(cfg.Voters) == 0 || (len(cfg.Voters) == 1 && cfg.Voters[0] == cfg.NodeID)
	if !alone {
		return open(cfg)
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = -1
	}
	c, err := open(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.register(); err != nil {
		c.Close()
		return nil, err
	}
	im := c.Image()
	c.logger.Info("controller started", "cluster_id", im.ClusterID, "broker_epoch", im.Brokers[c.cfg.NodeID].Epoch,
		"offset", im.Offset, "topics", len(im.Topics))
	return c, nil
}

// open opens the storage, creates the raft node and starts the driver; the node campaigns
// if it is the only voter.
func open(cfg Config) (*Controller, error) {
	if cfg.Dir == "" {
		return nil, errors.New("controller: Config.Dir is empty")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("controller: node ID %d is negative", cfg.NodeID)
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = defaultSnapshotEvery
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = defaultSessionTimeout
	}
	if len(cfg.Voters) == 0 {
		cfg.Voters = []int32{cfg.NodeID}
	}
	logger := cfg.Logger.With("node", cfg.NodeID)
	voters := make([]uint64, 0, len(cfg.Voters))
	for _, v := range cfg.Voters {
		voters = append(voters, raftID(v))
	}
	slices.Sort(voters)
	transport := cfg.Transport
	if transport == nil {
		if len(voters) != 1 || voters[0] != raftID(cfg.NodeID) {
			return nil, errors.New("controller: a Transport is required unless this node is the only voter")
		}
		transport = noTransport{logger}
	}

	storage, img, err := openStorage(cfg.Dir, voters, logger)
	if err != nil {
		return nil, err
	}
	snapMeta := storage.snapshot.GetMetadata()
	node, err := raft.NewRawNode(&raft.Config{
		ID:                        raftID(cfg.NodeID),
		ElectionTick:              10,
		HeartbeatTick:             1,
		Storage:                   storage.mem,
		Applied:                   snapMeta.GetIndex(),
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum:               true,
		PreVote:                   true,
		// A leader that RemoveVoter demoted stops leading once the change is applied.
		StepDownOnRemoval: true,
		Logger:            raftLogger{logger},
	})
	if err != nil {
		storage.close()
		return nil, err
	}
	var seed [8]byte
	rand.Read(seed[:])
	c := &Controller{
		cfg:          cfg,
		logger:       logger,
		requests:     make(chan *request, requestQueue),
		inbound:      make(chan *pb.Message, inboundQueue),
		stop:         make(chan struct{}),
		done:         make(chan struct{}),
		node:         node,
		storage:      storage,
		transport:    transport,
		confState:    proto.Clone(snapMeta.GetConfState()).(*pb.ConfState),
		applied:      snapMeta.GetIndex(),
		leaderID:     -1,
		working:      img,
		inflight:     map[uint64]*request{},
		nextProposal: binary.BigEndian.Uint64(seed[:]) | 1,
		sessions:     map[int32]*brokerSession{},

		learnerProposed: map[uint64]uint64{},
		learnerRemovals: map[uint64]uint64{},
		refusals:        logLimiter{every: logEvery},
		liveness:        map[int32]*brokerLiveness{},
	}
	if cfg.SessionTimeout > 0 {
		c.sessionTicks = uint64((cfg.SessionTimeout + cfg.TickInterval - 1) / cfg.TickInterval)
	}
	img.defaults = c.electionDefaults()
	c.image.Store(img)
	c.configurationChanged(img)
	c.calls.signal = make(chan struct{}, 1)
	if a, ok := transport.(interface{ Attach(*Controller) }); ok {
		a.Attach(c) // a network transport delivers received messages to c.Step
	}

	// A voter that is alone in the configuration need not wait for an election timeout.
	if cs := c.confState.GetVoters(); len(cs) == 1 && cs[0] == raftID(cfg.NodeID) {
		if err := node.Campaign(); err != nil {
			storage.close()
			return nil, err
		}
	}
	go c.run()
	return c, nil
}

// register proposes the cluster ID (for a new log) and this broker's registration with an
// epoch above any previous one, and waits until both are applied.
func (c *Controller) register() error {
	req := &request{
		ctx:           context.Background(),
		waitForLeader: true,
		plan: func(w *Image) []Record {
			var recs []Record
			if w.ClusterID == "" {
				// Not reached: the leader proposes the cluster ID (proposeClusterID) before
				// it plans parked requests. Kept so a registration never lands in a log
				// without one.
				recs = append(recs, &ClusterIDRecord{ClusterID: c.newClusterID()})
				recs = append(recs, c.cfg.BootstrapRecords...)
			}
			epoch := int64(1)
			if b := w.Brokers[c.cfg.NodeID]; b != nil {
				epoch = b.Epoch + 1
			}
			return append(recs, &RegisterBrokerRecord{
				BrokerID:    c.cfg.NodeID,
				BrokerEpoch: epoch,
				Endpoints:   slices.Clone(c.cfg.Endpoints),
				Rack:        cloneStringPtr(c.cfg.Rack),
			})
		},
	}
	return c.submit(context.Background(), req)
}

// Image returns the current metadata image. Callers must not modify it.
func (c *Controller) Image() *Image { return c.image.Load() }

// Close stops the driver, syncs and closes the metadata files. Pending proposals fail with
// ErrClosed. It returns the error that stopped the driver, if any.
func (c *Controller) Close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(c.mu.err, ErrClosed) {
		return nil
	}
	return c.mu.err
}

// submit hands req to the driver and waits for its outcome.
func (c *Controller) submit(ctx context.Context, req *request) error {
	req.ctx = ctx
	req.done = make(chan error, 1)
	select {
	case c.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.closedErr()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		// The driver may have completed the request just before exiting.
		select {
		case err := <-req.done:
			return err
		default:
			return c.closedErr()
		}
	}
}

func (c *Controller) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.err != nil && !errors.Is(c.mu.err, ErrClosed) {
		return fmt.Errorf("%w: %v", ErrClosed, c.mu.err)
	}
	return ErrClosed
}

// run is the driver: the Ready loop of etcd-raft's documented usage. Every iteration it feeds
// raft one input (a tick, a message, a proposal) and then drains Ready: persist the hard
// state and entries (fsync), send messages, apply committed entries and publish the image,
// Advance.
func (c *Controller) run() {
	exitErr := ErrClosed
	defer func() {
		c.mu.Lock()
		c.mu.err = exitErr
		c.mu.Unlock()
		err := c.storage.close()
		if err != nil && exitErr == ErrClosed {
			c.mu.Lock()
			c.mu.err = err
			c.mu.Unlock()
		}
		for id, r := range c.inflight {
			r.finish(ErrClosed)
			delete(c.inflight, id)
		}
		for _, r := range c.waiting {
			r.finish(ErrClosed)
		}
		c.waiting = nil
		close(c.done)
	}()

	ticks := c.cfg.ticks
	if ticks == nil {
		ticker := time.NewTicker(c.cfg.TickInterval)
		defer ticker.Stop()
		ticks = ticker.C
	}
	for {
		if err := c.processReady(); err != nil {
			if !errors.Is(err, ErrClosed) {
				c.logger.Error("controller stopped", "err", err)
			}
			exitErr = err
			return
		}
		requests := c.requests
		if len(c.inflight) >= maxInflight || (c.leaderTerm != 0 && !c.leaderReady) {
			// Back-pressure; or leading but not yet caught up: let proposals queue.
			requests = nil
		}
		select {
		case <-c.stop:
			return
		case <-ticks:
			c.node.Tick()
			c.tickSessions()
			c.advanceVoterOp()
			c.tickLiveness()
			c.tickRebalance()
		case <-c.calls.signal:
			c.runDriverCalls()
		case m := <-c.inbound:
			if err := c.node.Step(m); err != nil {
				c.logger.Debug("raft rejected message", "type", m.GetType().String(), "err", err)
			}
		case r := <-requests:
			c.handleRequest(r)
			// Take whatever else is queued before the next Ready so concurrent proposals
			// share one WAL fsync (group commit).
			for more := true; more && len(c.inflight) < maxInflight && c.leaderReady; {
				select {
				case r := <-requests:
					c.handleRequest(r)
				default:
					more = false
				}
			}
		}
	}
}

// handleRequest validates and proposes one request. REQUIRES: driver goroutine.
func (c *Controller) handleRequest(r *request) {
	if err := r.ctx.Err(); err != nil {
		r.finish(err)
		return
	}
	if !c.leaderReady {
		if r.waitForLeader {
			c.waiting = append(c.waiting, r)
			return
		}
		r.finish(errNotController)
		return
	}
	recs := r.plan(c.working)
	if len(recs) == 0 {
		r.finish(nil)
		return
	}
	chunks := [][]Record{recs}
	data := encodeEntry(c.nextProposal, recs)
	if len(data) > maxEntryBytes {
		if r.nonAtomic {
			chunks = splitEntries(recs, maxEntryBytes)
		}
		if len(chunks) == 1 || slices.ContainsFunc(chunks, func(ch []Record) bool { return len(ch) == 1 && encodedEntrySize(ch) > maxEntryBytes }) {
			r.finish(fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation: its metadata records take %d bytes, more than %d.", len(data), maxEntryBytes))
			return
		}
		c.logger.Info("committing a broker's metadata change in several entries", "records", len(recs), "bytes", len(data), "entries", len(chunks))
	}
	// Each entry is tracked; the request completes with the last, which raft commits after the
	// others. Only the last one carries r's callbacks.
	for i, chunk := range chunks {
		owner := r
		if i < len(chunks)-1 {
			owner = &request{ctx: r.ctx, done: make(chan error, 1)}
		}
		id := c.nextProposal
		c.nextProposal++
		if c.nextProposal == 0 {
			c.nextProposal = 1
		}
		if len(chunks) > 1 {
			data = encodeEntry(id, chunk)
		}
		if err := c.node.Propose(data); err != nil {
			c.logger.Debug("proposal dropped", "err", err)
			r.finish(errNotController)
			return
		}
		if c.workingBuilder == nil {
			c.workingBuilder = newImageBuilder(c.working)
			c.working = c.workingBuilder.img
		}
		for _, rec := range chunk {
			if err := c.workingBuilder.apply(rec); err != nil {
				c.logger.Error("proposed record does not apply to the working image", "err", err)
			}
		}
		c.inflight[id] = owner
	}
}

// processReady drains raft's Ready. REQUIRES: driver goroutine.
func (c *Controller) processReady() error {
	c.workingBuilder = nil // freeze the working image of the batch just proposed
	for c.node.HasReady() {
		rd := c.node.Ready()
		if rd.SoftState != nil {
			c.leadershipChanged(rd.SoftState)
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := c.installSnapshot(rd.Snapshot); err != nil {
				return err
			}
		}
		if err := c.storage.save(rd.HardState, rd.Entries, rd.MustSync); err != nil {
			// Nothing of this Ready was sent, applied or Advanced: persisting it again once
			// the disk takes writes keeps etcd-raft's contract.
			if err := c.persistWithRetry(rd, err); err != nil {
				return err
			}
		}
		if len(rd.Messages) > 0 {
			c.transport.Send(rd.Messages)
		}
		if err := c.apply(rd.CommittedEntries); err != nil {
			return err
		}
		c.node.Advance(rd)

		if c.sinceSnapshot >= c.cfg.SnapshotEvery {
			img := c.image.Load()
			if err := c.storage.createSnapshot(c.applied, c.confState, encodeImage(img)); err != nil {
				// Not fatal: the WAL still holds everything. The storage is repaired
				// before the next write (persistWithRetry) and the snapshot is tried
				// again after another SnapshotEvery entries.
				c.logger.Warn("metadata snapshot failed; the WAL keeps the entries", "index", c.applied, "dir", c.cfg.Dir, "err", err)
			} else {
				c.logger.Debug("metadata snapshot", "index", c.applied)
			}
			c.sinceSnapshot = 0
		}
		c.proposeClusterID()
		if c.leaderReady && len(c.waiting) > 0 {
			waiting := c.waiting
			c.waiting = nil
			for _, r := range waiting {
				c.handleRequest(r)
			}
		}
	}
	return nil
}

// Bounds of the backoff between attempts to write the metadata WAL after a write failed.
const (
	minWALRetry = 100 * time.Millisecond
	maxWALRetry = 5 * time.Second
)

// persistWithRetry persists rd after storage.save failed with cause (ENOSPC, EIO): it repairs
// the WAL and writes rd again, backing off from minWALRetry to maxWALRetry, until that
// succeeds or the controller is closed (ErrClosed). A failed persist is never followed by
// sending rd's messages, applying its entries or Advance, as etcd-raft's Ready contract
// requires; the driver just does not move until the write went through. Meanwhile new
// proposals are answered at once with KAFKA_STORAGE_ERROR naming the cause, and proposals
// already in flight are too (they may still commit once the disk recovers, as after a lost
// leadership; a retry finds the outcome), except the start's own registration, which waits.
// REQUIRES: driver goroutine.
func (c *Controller) persistWithRetry(rd raft.Ready, cause error) error {
	c.logger.Error("metadata WAL write failed; the controller waits for the disk and retries",
		"file", c.storage.walPath(), "err", cause)
	unavailable := func(cause error) error {
		return fail(kerr.KafkaStorageError, "The metadata log %s cannot be written: %v. The controller retries until it can.",
			c.storage.walPath(), cause)
	}
	for id, r := range c.inflight {
		if !r.waitForLeader {
			r.finish(fail(kerr.KafkaStorageError, "The metadata log %s cannot be written: %v. The change may still be applied once it can; check before retrying.",
				c.storage.walPath(), cause))
			delete(c.inflight, id)
		}
	}
	backoff := minWALRetry
	timer := time.NewTimer(backoff)
	defer timer.Stop()
	for {
		select {
		case <-c.stop:
			return ErrClosed
		case r := <-c.requests:
			if r.waitForLeader {
				c.waiting = append(c.waiting, r)
			} else {
				r.finish(unavailable(cause))
			}
			continue
		case <-timer.C:
		}
		err := c.storage.repair()
		if err == nil {
			err = c.storage.save(rd.HardState, rd.Entries, rd.MustSync)
		}
		if err == nil {
			c.logger.Info("metadata WAL writable again; the controller continues", "file", c.storage.walPath())
			return nil
		}
		cause = err
		c.logger.Debug("metadata WAL still not writable", "file", c.storage.walPath(), "err", err)
		backoff = min(2*backoff, maxWALRetry)
		timer.Reset(backoff)
	}
}

func (c *Controller) leadershipChanged(ss *raft.SoftState) {
	leader := kafkaID(ss.Lead)
	if ss.Lead == raft.None {
		leader = -1
	}
	if ss.RaftState == raft.StateLeader {
		if c.leaderTerm == 0 {
			c.leaderTerm = c.node.BasicStatus().HardState.GetTerm()
			c.sessions = map[int32]*brokerSession{} // every broker gets a full session
			c.learnerProposed = map[uint64]uint64{}
			c.logger.Info("became metadata leader", "term", c.leaderTerm)
		}
	} else if c.leaderTerm != 0 {
		c.logger.Info("lost metadata leadership", "state", ss.RaftState.String(), "leader", leader)
		c.leaderTerm, c.leaderReady = 0, false
		// In-flight proposals may or may not commit under the new leader; their callers
		// are told NOT_CONTROLLER and retry, finding the outcome in the image.
		for id, r := range c.inflight {
			r.finish(errNotController)
			delete(c.inflight, id)
		}
		c.working, c.workingBuilder = c.image.Load(), nil
	}
	if leader != c.leaderID {
		c.leaderID = leader
		// Republish so readers see the new controller ID; the replicated state is unchanged.
		cur := c.image.Load()
		next := *cur
		next.ControllerID = leader
		next.changed = make(chan struct{})
		c.publish(&next)
	}
}

// publish installs next as the current image and then wakes waiters on the previous one.
func (c *Controller) publish(next *Image) {
	next.ControllerID = c.leaderID
	old := c.image.Swap(next)
	close(old.changed)
	if len(c.inflight) == 0 {
		c.working, c.workingBuilder = next, nil
	}
}

func (c *Controller) installSnapshot(snap *pb.Snapshot) error {
	c.logger.Info("installing metadata snapshot from the leader", "index", snap.GetMetadata().GetIndex())
	img, err := decodeImage(snap.GetData())
	if err != nil {
		return err
	}
	if err := c.storage.applySnapshot(snap); err != nil {
		return err
	}
	c.confState = proto.Clone(snap.GetMetadata().GetConfState()).(*pb.ConfState)
	c.applied = snap.GetMetadata().GetIndex()
	c.sinceSnapshot = 0
	img.ControllerID = c.leaderID
	img.defaults = c.electionDefaults()
	c.publish(img)
	c.configurationChanged(img)
	return nil
}

// apply applies committed entries to the state machine, publishes one image for the batch
// and completes the proposals it contains.
func (c *Controller) apply(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	b := newImageBuilder(c.image.Load())
	var completed []*request
	appliedAny, confChanged := false, false
	for _, e := range ents {
		if e.GetIndex() <= c.applied {
			continue
		}
		appliedAny = true
		switch e.GetType() {
		case pb.EntryNormal:
			if len(e.GetData()) == 0 {
				break // a new leader's empty entry
			}
			proposal, recs, err := decodeEntry(e.GetData())
			if err != nil {
				// Every node fails the same way on the same committed bytes, so skipping keeps
				// the state machines identical; it is still a bug worth an error log.
				c.logger.Error("skipping undecodable metadata entry", "index", e.GetIndex(), "err", err)
				break
			}
			b.offset = int64(e.GetIndex())
			for _, r := range recs {
				if pc, ok := r.(*PartitionChangeRecord); ok {
					c.elections.countElection(b.img, pc)
				}
				if err := b.apply(r); err != nil {
					c.logger.Error("skipping metadata record", "index", e.GetIndex(), "err", err)
				}
			}
			if r := c.inflight[proposal]; r != nil {
				delete(c.inflight, proposal)
				completed = append(completed, r)
			}
		case pb.EntryConfChange:
			cc := new(pb.ConfChange)
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				return fmt.Errorf("controller: conf change at %d: %w", e.GetIndex(), err)
			}
			c.confState = c.node.ApplyConfChange(cc)
			confChanged = true
		case pb.EntryConfChangeV2:
			cc := new(pb.ConfChangeV2)
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				return fmt.Errorf("controller: conf change at %d: %w", e.GetIndex(), err)
			}
			c.confState = c.node.ApplyConfChange(cc)
			c.applyVoterContext(b, cc, e.GetIndex())
			confChanged = true
		}
		c.applied = e.GetIndex()
		c.sinceSnapshot++
		if c.leaderTerm != 0 && e.GetTerm() == c.leaderTerm {
			c.leaderReady = true
		}
	}
	if !appliedAny {
		return nil
	}
	img := b.finish(int64(c.applied))
	c.publish(img)
	if confChanged {
		c.configurationChanged(img)
		c.advanceVoterOp()
	}
	if confChanged {
		// Snapshot at once: no node then replays this change over a bootstrapped
		// configuration, and the snapshot raft sends a new learner names it (etcd-raft
		// ignores one that does not). See voters.go.
		c.sinceSnapshot = max(c.sinceSnapshot, c.cfg.SnapshotEvery)
	}
	for _, r := range completed {
		if r.applied != nil {
			r.applied(img)
		}
		r.finish(nil)
	}
	return nil
}
