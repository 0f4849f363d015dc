package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// LinkConfig configures a Link.
type LinkConfig struct {
	NodeID int32
	// Voters are the controller listener addresses (host:port) of the quorum's voters, by
	// node ID (controller.quorum.voters).
	Voters    map[int32]string
	Endpoints []controller.Endpoint // this broker's advertised listeners
	Rack      *string
	// HeartbeatInterval is broker.heartbeat.interval.ms; 0 = 2 s.
	HeartbeatInterval time.Duration
	// SessionTimeout is broker.session.timeout.ms; 0 = 9 s. A registration refused with
	// DUPLICATE_BROKER_REGISTRATION is tried again for this long (plus two heartbeat
	// intervals) before Register gives up: long enough for the session of a crashed previous
	// process of this node to expire, too short to wait out a live one.
	SessionTimeout time.Duration
	// Controller is this node's member of the metadata quorum: a voter (combined mode) or,
	// on a broker-only node, an observer that follows the log as a raft learner. Required.
	Controller *controller.Controller
	// Observer is set on a broker-only node: its local log is empty until the active
	// controller adds it as a learner, so Register learns the cluster ID from the voters
	// (DescribeCluster on their controller listeners) instead of waiting for the local log.
	Observer bool
	// PreviousBrokerEpoch is the broker epoch this node's clean shutdown file held at start
	// (broker.TakeCleanShutdownEpoch; -1: none, the previous process did not shut down
	// cleanly). Every registration of this incarnation sends it (BrokerRegistration v3+), so
	// the controller can tell a clean restart from a crash (KIP-966).
	PreviousBrokerEpoch int64
	// LogDirs are the IDs of the broker's log directories (meta.properties' directory.id),
	// sent with every registration (BrokerRegistration v2+).
	LogDirs [][16]byte
	// Registered, if set, is called once, after the first successful registration: an
	// observer's transport starts dialling the voters then, when they know it.
	Registered func()
	// ClientOpts are added to every client the link makes to a controller listener: TLS
	// and SASL for the controller listener's security protocol (controller.listener.names,
	// listener.security.protocol.map). None: PLAINTEXT.
	ClientOpts []kgo.Opt
	Logger     *slog.Logger
}

// Retry backoff of calls to the active controller (Kafka's reconnect.backoff.ms and
// reconnect.backoff.max.ms defaults).
const (
	minRetry = 50 * time.Millisecond
	maxRetry = time.Second
)

// Link is a broker's connection to the metadata quorum (see the package doc).
type Link struct {
	cfg         LinkConfig
	log         *slog.Logger
	local       *controller.Controller
	incarnation [16]byte
	clientsMu   sync.Mutex
	clients     map[int32]linkClient // one per voter, seeded with its controller listener; guarded by clientsMu

	stop           chan struct{} // closed by Close
	stopOnce       sync.Once
	wg             sync.WaitGroup
	registeredOnce sync.Once

	mu struct {
		sync.Mutex
		epoch        int64 // this incarnation's broker epoch; 0 before registration
		fenced       bool  // as of the last heartbeat
		shuttingDown bool  // ControlledShutdown was called: heartbeats say WantShutDown
		shouldStop   bool  // the controller answered ShouldShutDown
		heartbeating bool
		// offlineLogDirs are the IDs of this broker's failed log directories, sent with
		// every heartbeat (SetOfflineLogDirs).
		offlineLogDirs [][16]byte
		// reportedLogDirs are the offline log directories of the last heartbeat the active
		// controller accepted (ReportedOfflineLogDirs).
		reportedLogDirs [][16]byte
		// clusterID is the cluster ID the voters answered an observer (quorumClusterID),
		// until its own log has one.
		clusterID string
	}
	changed chan struct{} // signalled (capacity 1) when a heartbeat changed mu
	// kick (capacity 1) asks the heartbeat loop for a heartbeat now (SetOfflineLogDirs).
	kick chan struct{}
}

// NewLink returns a link; it sends nothing until Register.
func NewLink(cfg LinkConfig) (*Link, error) {
	if cfg.Controller == nil {
		return nil, errors.New("cluster: LinkConfig.Controller is required")
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Link{cfg: cfg, log: cfg.Logger, local: cfg.Controller, clients: map[int32]linkClient{},
		stop: make(chan struct{}), changed: make(chan struct{}, 1), kick: make(chan struct{}, 1)}
	if _, err := rand.Read(l.incarnation[:]); err != nil {
		return nil, err
	}
	l.incarnation[6] = l.incarnation[6]&0x0f | 0x40
	l.incarnation[8] = l.incarnation[8]&0x3f | 0x80
	// The controller in this process may then replace this node's previous incarnation at
	// once when it is the active controller (controller.isOwnRestart).
	cfg.Controller.SetLocalIncarnation(l.incarnation)
	for id, addr := range cfg.Voters {
		if _, err := l.clientFor(id, addr); err != nil {
			l.closeClients()
			return nil, err
		}
	}
	return l, nil
}

// linkClient is a client seeded with one voter's controller listener.
type linkClient struct {
	addr string
	cl   *kgo.Client
}

// clientFor returns the client for voter id at addr, creating it (and closing one for an
// older address of id).
func (l *Link) clientFor(id int32, addr string) (*kgo.Client, error) {
	l.clientsMu.Lock()
	defer l.clientsMu.Unlock()
	if c, ok := l.clients[id]; ok && c.addr == addr {
		return c.cl, nil
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("sluice-link-%d", l.cfg.NodeID)),
		kgo.DialTimeout(2 * time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return minRetry })}, l.cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	if old, ok := l.clients[id]; ok {
		old.cl.Close()
	}
	l.clients[id] = linkClient{addr: addr, cl: cl}
	return cl, nil
}

// voterAddrs are the voters to reach: those of the applied configuration the local
// controller knows addresses of (voters added with AddRaftVoter included), else
// LinkConfig.Voters.
func (l *Link) voterAddrs() map[int32]string {
	if m := l.local.VoterAddrs(); len(m) > 0 {
		return m
	}
	return l.cfg.Voters
}

// client returns the client of voter id, nil if its address is not known.
func (l *Link) client(id int32) *kgo.Client {
	addr, ok := l.voterAddrs()[id]
	if !ok {
		addr, ok = l.cfg.Voters[id]
	}
	if !ok {
		return nil
	}
	cl, err := l.clientFor(id, addr)
	if err != nil {
		return nil
	}
	return cl
}

// Image returns the local controller's published image.
func (l *Link) Image() *controller.Image { return l.local.Image() }

// Epoch returns this broker's epoch (0 before Register).
func (l *Link) Epoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epoch
}

// leadsLocally reports whether the local controller is the active one.
func (l *Link) leadsLocally() bool { return l.local.Image().ControllerID == l.cfg.NodeID }

// errRetry marks an answer that means "ask the active controller again".
var errRetry = errors.New("cluster: not the active controller")

// retriable reports whether err means the call reached no active controller: NOT_CONTROLLER,
// or a connection failure (any error that is neither a Kafka error, nor the context's, nor
// the local controller being closed).
func retriable(err error) bool {
	if err == nil || errors.Is(err, controller.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, errRetry) || errors.Is(err, kerr.NotController) {
		return true
	}
	var kerrp *kerr.Error
	return !errors.As(err, &kerrp)
}

// withLeader runs local when the local controller leads, else remote with the client of the
// active controller (each voter in turn when none is known), retrying with backoff while the
// outcome is retriable, until ctx ends.
func (l *Link) withLeader(ctx context.Context, local func() error, remote func(cl *kgo.Client) error) error {
	backoff := minRetry
	turn := 0
	for {
		var err error
		if l.leadsLocally() {
			err = local()
		} else {
			target := l.local.Image().ControllerID
			cl := l.client(target)
			if ids := sortedIDs(l.voterAddrs()); cl == nil && len(ids) > 0 {
				cl = l.client(ids[turn%len(ids)])
				turn++
			}
			if cl == nil {
				err = errRetry
			} else {
				err = remote(cl)
			}
		}
		if err == nil || !retriable(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-l.stop:
			t.Stop()
			return controller.ErrClosed
		case <-t.C:
		}
		backoff = min(2*backoff, maxRetry)
	}
}

// request sends req to the seed broker of cl.
func request(ctx context.Context, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errRetry
	}
	return seeds[0].Request(ctx, req)
}

// waitOffset waits until the local image has reached offset (-1: nothing to wait for).
func (l *Link) waitOffset(ctx context.Context, offset int64) {
	for {
		im := l.local.Image()
		if im.Offset >= offset {
			return
		}
		select {
		case <-im.Changed():
		case <-ctx.Done():
			return
		case <-l.stop:
			return
		}
	}
}

// Register registers this broker (a new incarnation, so a new broker epoch) through the
// active controller and returns once it is registered and unfenced; a goroutine then
// heartbeats until Close. It is refused at once with INCONSISTENT_CLUSTER_ID if the quorum
// belongs to another cluster than the local image.
func (l *Link) Register(ctx context.Context) error {
	// The cluster ID comes with the local replica of the log; an observer has none before it
	// registered, and asks the voters.
	for l.local.Image().ClusterID == "" && l.quorumClusterID(ctx) == "" {
		im := l.local.Image()
		retry := time.NewTimer(maxRetry) // an observer asks the voters again
		select {
		case <-im.Changed():
		case <-retry.C:
		case <-ctx.Done():
			retry.Stop()
			return fmt.Errorf("cluster: waiting for the cluster ID: %w", ctx.Err())
		case <-l.stop:
			retry.Stop()
			return controller.ErrClosed
		}
		retry.Stop()
	}
	if err := l.register(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	if !l.mu.heartbeating {
		l.mu.heartbeating = true
		l.wg.Add(1)
		go l.heartbeatLoop()
	}
	l.mu.Unlock()
	for {
		if _, err := l.heartbeatOnce(ctx); err != nil && !retriable(err) {
			return err
		}
		l.mu.Lock()
		fenced := l.mu.fenced
		l.mu.Unlock()
		if !fenced {
			return nil
		}
		t := time.NewTimer(minRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: waiting to be unfenced: %w", ctx.Err())
		case <-l.stop:
			t.Stop()
			return controller.ErrClosed
		case <-t.C:
		}
	}
}

// quorumClusterID is the cluster ID to register with: the local log's, or (on an observer
// whose log is still empty) the first one a voter's controller listener answers in
// DescribeCluster. "" while none is known.
func (l *Link) quorumClusterID(ctx context.Context) string {
	if id := l.local.Image().ClusterID; id != "" || !l.cfg.Observer {
		return id
	}
	l.mu.Lock()
	id := l.mu.clusterID
	l.mu.Unlock()
	if id != "" {
		return id
	}
	for _, vid := range sortedIDs(l.voterAddrs()) {
		cl := l.client(vid)
		if cl == nil {
			continue
		}
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = 1, 2
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := request(rctx, cl, req)
		cancel()
		if err != nil {
			continue
		}
		if r := resp.(*kmsg.DescribeClusterResponse); r.ErrorCode == 0 && r.ClusterID != "" {
			l.mu.Lock()
			l.mu.clusterID = r.ClusterID
			l.mu.Unlock()
			return r.ClusterID
		}
	}
	return ""
}

// duplicateRetry is how often a registration refused with DUPLICATE_BROKER_REGISTRATION is
// tried again.
const duplicateRetry = 250 * time.Millisecond

// register registers this incarnation. A refusal with DUPLICATE_BROKER_REGISTRATION (another
// incarnation of this node ID has a live session) is tried again until the session of that
// incarnation could have expired (LinkConfig.SessionTimeout): a previous process of this node
// that crashed is fenced by then (or at once, when the controller's probe finds its listeners
// closed); a second process started with the same node.id is still refused then, and the
// error says so.
func (l *Link) register(ctx context.Context) error {
	giveUp := time.Now().Add(l.cfg.SessionTimeout + 2*l.cfg.HeartbeatInterval)
	for {
		err := l.registerOnce(ctx)
		if !errors.Is(err, kerr.DuplicateBrokerRegistration) {
			return err
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("%w (another process is registered with node.id %d and keeps heartbeating: node IDs must be unique)", err, l.cfg.NodeID)
		}
		l.log.Warn("the controller refused this broker's registration: another incarnation of this node ID is live; trying again until its session could have expired",
			"broker", l.cfg.NodeID, "err", err, "until", giveUp.Format(time.RFC3339))
		t := time.NewTimer(duplicateRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-l.stop:
			t.Stop()
			return controller.ErrClosed
		case <-t.C:
		}
	}
}

func (l *Link) registerOnce(ctx context.Context) error {
	reg := controller.BrokerRegistration{BrokerID: l.cfg.NodeID, ClusterID: l.quorumClusterID(ctx),
		IncarnationID: l.incarnation, Endpoints: l.cfg.Endpoints, Rack: l.cfg.Rack, PreviousBrokerEpoch: l.cfg.PreviousBrokerEpoch,
		LogDirs: l.cfg.LogDirs}
	var epoch int64
	err := l.withLeader(ctx, func() error {
		var err error
		epoch, err = l.local.RegisterBroker(ctx, reg)
		return err
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID, req.ClusterID, req.IncarnationID, req.Rack = reg.BrokerID, reg.ClusterID, reg.IncarnationID, reg.Rack
		req.PreviousBrokerEpoch, req.LogDirs = reg.PreviousBrokerEpoch, reg.LogDirs
		for _, e := range reg.Endpoints {
			li := kmsg.NewBrokerRegistrationRequestListener()
			li.Name, li.Host, li.Port, li.SecurityProtocol = e.Listener, e.Host, uint16(e.Port), e.SecurityProtocol
			req.Listeners = append(req.Listeners, li)
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.BrokerRegistrationResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
		epoch = r.BrokerEpoch
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster: registering broker %d: %w", l.cfg.NodeID, err)
	}
	l.mu.Lock()
	l.mu.epoch, l.mu.fenced = epoch, true
	l.mu.Unlock()
	l.log.Info("broker registered", "broker", l.cfg.NodeID, "epoch", epoch)
	if l.cfg.Registered != nil {
		l.registeredOnce.Do(l.cfg.Registered)
	}
	return nil
}

// heartbeatOnce sends one heartbeat and records its answer; a refused epoch registers again.
func (l *Link) heartbeatOnce(ctx context.Context) (controller.HeartbeatResult, error) {
	l.mu.Lock()
	hb := controller.BrokerHeartbeat{BrokerID: l.cfg.NodeID, BrokerEpoch: l.mu.epoch, MetadataOffset: l.local.Image().Offset,
		WantShutDown: l.mu.shuttingDown, OfflineLogDirs: l.mu.offlineLogDirs}
	l.mu.Unlock()
	var res controller.HeartbeatResult
	err := l.withLeader(ctx, func() error {
		var err error
		res, err = l.local.Heartbeat(ctx, hb)
		return err
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = hb.BrokerID, hb.BrokerEpoch, hb.MetadataOffset, hb.WantShutDown
		req.OfflineLogDirs = hb.OfflineLogDirs
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.BrokerHeartbeatResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
		res = controller.HeartbeatResult{IsCaughtUp: r.IsCaughtUp, IsFenced: r.IsFenced, ShouldShutDown: r.ShouldShutdown}
		return nil
	})
	if errors.Is(err, kerr.StaleBrokerEpoch) || errors.Is(err, kerr.BrokerIDNotRegistered) {
		l.log.Warn("the controller refused this broker's epoch; registering again", "broker", l.cfg.NodeID, "err", err)
		return res, l.register(ctx)
	}
	if err != nil {
		return res, err
	}
	l.mu.Lock()
	l.mu.fenced = res.IsFenced
	l.mu.reportedLogDirs = hb.OfflineLogDirs
	if res.ShouldShutDown {
		l.mu.shouldStop = true
	}
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return res, nil
}

func (l *Link) heartbeatLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		case <-l.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.HeartbeatInterval)
		if _, err := l.heartbeatOnce(ctx); err != nil {
			l.log.Debug("heartbeat failed", "broker", l.cfg.NodeID, "err", err)
		}
		cancel()
	}
}

// SetOfflineLogDirs sets the log directories this broker reports failed in its heartbeats
// (BrokerHeartbeat's OfflineLogDirs; none: every directory is online) and, when that changes
// them, sends a heartbeat at once, as Kafka's BrokerLifecycleManager propagates a directory
// failure: the controller moves the broker's leadership to other in-sync replicas while any
// is reported, and lets it lead and rejoin ISRs once none is.
func (l *Link) SetOfflineLogDirs(dirs [][16]byte) {
	l.mu.Lock()
	changed := !slices.Equal(l.mu.offlineLogDirs, dirs)
	l.mu.offlineLogDirs = slices.Clone(dirs)
	l.mu.Unlock()
	if !changed {
		return
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// ReportedOfflineLogDirs returns the offline log directories of the last heartbeat the active
// controller accepted: the broker's log.dir.failure.timeout.ms watches that its failed
// directories get there (broker/offline.go).
func (l *Link) ReportedOfflineLogDirs() [][16]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.mu.reportedLogDirs)
}

// ControlledShutdown asks the active controller to move leadership off this broker and
// returns once it answered ShouldShutDown and the local image has this broker fenced, so the
// broker's own answers agree with the controller's (or ctx ends).
func (l *Link) ControlledShutdown(ctx context.Context) error {
	l.mu.Lock()
	l.mu.shuttingDown = true
	l.mu.Unlock()
	for {
		if _, err := l.heartbeatOnce(ctx); err != nil && !retriable(err) {
			return err
		}
		l.mu.Lock()
		done := l.mu.shouldStop
		l.mu.Unlock()
		if done {
			return l.waitFenced(ctx)
		}
		t := time.NewTimer(minRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: controlled shutdown: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// waitFenced waits until the local image shows this broker's registration fenced (or gone, or
// replaced), or ctx ends.
func (l *Link) waitFenced(ctx context.Context) error {
	epoch := l.Epoch()
	for {
		im := l.local.Image()
		if b := im.Brokers[l.cfg.NodeID]; b == nil || b.Fenced || b.Epoch != epoch {
			return nil
		}
		select {
		case <-im.Changed():
		case <-ctx.Done():
			return fmt.Errorf("cluster: controlled shutdown: waiting for the local metadata: %w", ctx.Err())
		case <-l.stop:
			return controller.ErrClosed
		}
	}
}

// Close stops heartbeats and closes the connections. It does not close the controller.
func (l *Link) Close() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
	l.closeClients()
}

func (l *Link) closeClients() {
	l.clientsMu.Lock()
	defer l.clientsMu.Unlock()
	for _, c := range l.clients {
		c.cl.Close()
	}
}

// The proposals of broker.Metadata.

// CreateTopics creates topics through the active controller.
func (l *Link) CreateTopics(ctx context.Context, topics []controller.CreateTopic, validateOnly bool) ([]controller.CreateTopicResult, error) {
	var out []controller.CreateTopicResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.CreateTopics(ctx, topics, validateOnly)
		return localRetry(err, len(out) > 0 && errors.Is(out[0].Err, kerr.NotController))
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validateOnly
		req.TimeoutMillis = timeoutMillis(ctx)
		for _, t := range topics {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, t.NumPartitions, t.ReplicationFactor
			for p, replicas := range t.Assignments {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = p, replicas
				rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
			}
			for k, v := range t.Configs {
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name, c.Value = k, strPtr(v)
				rt.Configs = append(rt.Configs, c)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.CreateTopicsResponse)
		if len(r.Topics) > 0 && r.Topics[0].ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		im := l.local.Image()
		out = make([]controller.CreateTopicResult, len(topics))
		for i := range topics {
			out[i].Name = topics[i].Name
			if i >= len(r.Topics) {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			rt := r.Topics[i]
			out[i].Err, out[i].Message = kerr.ErrorForCode(rt.ErrorCode), deref(rt.ErrorMessage)
			if out[i].Err != nil {
				continue
			}
			out[i].ID = rt.TopicID
			if t := im.TopicsByID[rt.TopicID]; t != nil && !validateOnly {
				out[i].Topic = t
			} else {
				out[i].Topic = plannedTopic(topics[i].Name, rt.TopicID, rt.NumPartitions, rt.ReplicationFactor)
			}
		}
		return nil
	})
	return out, err
}

// plannedTopic stands for a topic a validate-only create would make: its shape, replicas
// unknown (-1).
func plannedTopic(name string, id controller.TopicID, partitions int32, rf int16) *controller.TopicInfo {
	t := &controller.TopicInfo{Name: name, ID: id}
	for p := int32(0); p < partitions && p < math.MaxInt16; p++ {
		replicas := make([]int32, rf)
		for i := range replicas {
			replicas[i] = -1
		}
		t.Partitions = append(t.Partitions, controller.PartitionInfo{Partition: p, Replicas: replicas, Leader: -1})
	}
	return t
}

// DeleteTopics deletes topics through the active controller.
func (l *Link) DeleteTopics(ctx context.Context, names []string, ids []controller.TopicID) ([]controller.DeleteTopicResult, error) {
	var out []controller.DeleteTopicResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.DeleteTopics(ctx, names, ids)
		return localRetry(err, len(out) > 0 && errors.Is(out[0].Err, kerr.NotController))
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = timeoutMillis(ctx)
		for _, n := range names {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = strPtr(n)
			req.Topics = append(req.Topics, t)
			req.TopicNames = append(req.TopicNames, n)
		}
		for _, id := range ids {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.TopicID = id
			req.Topics = append(req.Topics, t)
		}
		req.Version = 6 // names and IDs
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.DeleteTopicsResponse)
		if len(r.Topics) > 0 && r.Topics[0].ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		out = make([]controller.DeleteTopicResult, len(names)+len(ids))
		for i := range out {
			if i >= len(r.Topics) {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			rt := r.Topics[i]
			out[i].Name, out[i].ID = deref(rt.Topic), rt.TopicID
			out[i].Err, out[i].Message = kerr.ErrorForCode(rt.ErrorCode), deref(rt.ErrorMessage)
		}
		return nil
	})
	return out, err
}

// CreatePartitions grows topics through the active controller.
func (l *Link) CreatePartitions(ctx context.Context, reqs []controller.CreatePartitions, validateOnly bool) ([]controller.CreatePartitionsResult, error) {
	var out []controller.CreatePartitionsResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.CreatePartitions(ctx, reqs, validateOnly)
		return localRetry(err, len(out) > 0 && errors.Is(out[0].Err, kerr.NotController))
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.ValidateOnly, req.TimeoutMillis = validateOnly, timeoutMillis(ctx)
		for _, cp := range reqs {
			t := kmsg.NewCreatePartitionsRequestTopic()
			t.Topic, t.Count = cp.Topic, cp.Count
			for _, replicas := range cp.Assignments {
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = replicas
				t.Assignment = append(t.Assignment, a)
			}
			req.Topics = append(req.Topics, t)
		}
		req.Version = 3
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.CreatePartitionsResponse)
		if len(r.Topics) > 0 && r.Topics[0].ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		out = make([]controller.CreatePartitionsResult, len(reqs))
		for i := range out {
			out[i].Topic = reqs[i].Topic
			if i >= len(r.Topics) {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			out[i].Err, out[i].Message = kerr.ErrorForCode(r.Topics[i].ErrorCode), deref(r.Topics[i].ErrorMessage)
		}
		return nil
	})
	return out, err
}

// AlterConfigs changes configs through the active controller (as IncrementalAlterConfigs, or
// the legacy AlterConfigs for ReplaceAll).
func (l *Link) AlterConfigs(ctx context.Context, reqs []controller.AlterConfigs, validateOnly bool) ([]controller.AlterConfigsResult, error) {
	var out []controller.AlterConfigsResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.AlterConfigs(ctx, reqs, validateOnly)
		return localRetry(err, len(out) > 0 && errors.Is(out[0].Err, kerr.NotController))
	}, func(cl *kgo.Client) error {
		out = make([]controller.AlterConfigsResult, len(reqs))
		for i, ac := range reqs {
			out[i].ResourceType, out[i].ResourceName = ac.ResourceType, ac.ResourceName
			code, msg, offset, err := l.alterOne(ctx, cl, ac, validateOnly)
			if err != nil {
				return err
			}
			if code == kerr.NotController.Code {
				return errRetry
			}
			l.waitOffset(ctx, offset)
			out[i].Err, out[i].Message = kerr.ErrorForCode(code), msg
		}
		return nil
	})
	return out, err
}

// alterOne sends one resource's change (one request per resource keeps legacy replace-all
// and incremental changes apart).
func (l *Link) alterOne(ctx context.Context, cl *kgo.Client, ac controller.AlterConfigs, validateOnly bool) (int16, string, int64, error) {
	if ac.ReplaceAll {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version, req.ValidateOnly = 2, validateOnly
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(ac.ResourceType), ac.ResourceName
		for _, op := range ac.Ops {
			if op.Value == nil {
				continue // absent from a replace-all set means removed
			}
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = op.Key, op.Value
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		resp, err := request(ctx, cl, req)
		if err != nil {
			return 0, "", 0, err
		}
		rr := resp.(*kmsg.AlterConfigsResponse)
		if len(rr.Resources) != 1 {
			return kerr.UnknownServerError.Code, "", -1, nil
		}
		return rr.Resources[0].ErrorCode, deref(rr.Resources[0].ErrorMessage), offsetOf(&rr.UnknownTags), nil
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version, req.ValidateOnly = 1, validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(ac.ResourceType), ac.ResourceName
	for _, op := range ac.Ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = op.Key, op.Value, kmsg.IncrementalAlterConfigOpSet
		if op.Value == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := request(ctx, cl, req)
	if err != nil {
		return 0, "", 0, err
	}
	rr := resp.(*kmsg.IncrementalAlterConfigsResponse)
	if len(rr.Resources) != 1 {
		return kerr.UnknownServerError.Code, "", -1, nil
	}
	return rr.Resources[0].ErrorCode, deref(rr.Resources[0].ErrorMessage), offsetOf(&rr.UnknownTags), nil
}

// AllocateProducerIDs reserves count producer IDs for brokerID through the active
// controller. Over the network the controller hands out blocks of 1000 (Kafka's size), so
// count must not be larger.
func (l *Link) AllocateProducerIDs(ctx context.Context, brokerID int32, count int32) (int64, error) {
	var first int64
	err := l.withLeader(ctx, func() error {
		var err error
		first, err = l.local.AllocateProducerIDs(ctx, brokerID, count)
		return err
	}, func(cl *kgo.Client) error {
		if count > producerIDBlock {
			return kerr.InvalidRequest
		}
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = brokerID, -1
		if brokerID == l.cfg.NodeID {
			req.BrokerEpoch = l.Epoch()
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.AllocateProducerIDsResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		first = r.ProducerIDStart
		return nil
	})
	return first, err
}

// localRetry turns a local NOT_CONTROLLER (as a Go error or in the first result) into a retry.
func localRetry(err error, notController bool) error {
	if err == nil && notController {
		return errRetry
	}
	return err
}

func timeoutMillis(ctx context.Context) int32 {
	if d, ok := ctx.Deadline(); ok {
		return int32(min(time.Until(d).Milliseconds(), math.MaxInt32))
	}
	return int32(adminTimeout.Milliseconds())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// AlterPartition commits ISR changes proposed by partition leaders (normally this broker)
// through the active controller, and returns once the local image has the outcome. Over the
// network the items are sent as one AlterPartition request per requester (LeaderID and
// BrokerEpoch), at the highest version both sides speak (v3: every new ISR member with its
// broker epoch); the answer's partitions carry the committed leader, epochs and ISR, and the
// replicas from the local image. A refusal of the whole request is, as for the local call, a
// *kerr.Error: NOT_CONTROLLER is retried; STALE_BROKER_EPOCH becomes every item's error.
func (l *Link) AlterPartition(ctx context.Context, reqs []controller.AlterPartition) ([]controller.AlterPartitionResult, error) {
	type requester struct {
		id    int32
		epoch int64
	}
	groups := map[requester][]int{}
	var order []requester
	for i, r := range reqs {
		k := requester{r.LeaderID, r.BrokerEpoch}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([]controller.AlterPartitionResult, len(reqs))
	// answered counts the groups of order already answered: after a retry (say the
	// controller moved between two groups) they are not sent again, which would find their
	// own change and be refused with INVALID_UPDATE_VERSION.
	answered := 0
	err := l.withLeader(ctx, func() error {
		var idx []int
		for _, k := range order[answered:] {
			idx = append(idx, groups[k]...)
		}
		sub := make([]controller.AlterPartition, len(idx))
		for n, i := range idx {
			sub[n] = reqs[i]
		}
		res, err := l.local.AlterPartition(ctx, sub)
		if err != nil {
			return err
		}
		for n, i := range idx {
			out[i] = res[n]
		}
		answered = len(order)
		return nil
	}, func(cl *kgo.Client) error {
		for ; answered < len(order); answered++ {
			if err := l.alterPartitionRemote(ctx, cl, reqs, groups[order[answered]], out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// alterPartitionRemote sends the items idx of reqs (all from one requester) as one request
// and records their outcomes in out.
func (l *Link) alterPartitionRemote(ctx context.Context, cl *kgo.Client, reqs []controller.AlterPartition, idx []int, out []controller.AlterPartitionResult) error {
	im := l.local.Image()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = reqs[idx[0]].LeaderID, reqs[idx[0]].BrokerEpoch
	type slot struct{ topic, partition int }
	slots := make([]slot, len(idx))
	topicIndex := map[string]int{} // by topic ID, or name when the ID is zero
	for n, i := range idx {
		r := reqs[i]
		key, name := string(r.TopicID[:]), r.TopicName
		if r.TopicID.IsZero() {
			key = "name:" + r.TopicName
		} else if t := im.TopicsByID[r.TopicID]; t != nil {
			name = t.Name // for a controller that speaks only v0–v1
		}
		ti, ok := topicIndex[key]
		if !ok {
			ti = len(req.Topics)
			topicIndex[key] = ti
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic, t.TopicID = name, r.TopicID
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.PartitionEpoch, p.NewISR = r.Partition, r.LeaderEpoch, r.PartitionEpoch, r.NewISR
		if r.LeaderRecovering {
			p.LeaderRecoveryState = 1
		}
		for j, id := range r.NewISR {
			m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			m.BrokerID = id
			if j < len(r.NewISREpochs) {
				m.BrokerEpoch = r.NewISREpochs[j]
			}
			p.NewEpochISR = append(p.NewEpochISR, m)
		}
		slots[n] = slot{ti, len(req.Topics[ti].Partitions)}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, p)
	}
	resp, err := request(ctx, cl, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	switch code := r.ErrorCode; code {
	case 0:
	case kerr.NotController.Code:
		return errRetry
	case kerr.StaleBrokerEpoch.Code:
		for _, i := range idx {
			out[i].Err = kerr.StaleBrokerEpoch
		}
		return nil
	default:
		return kerr.ErrorForCode(code)
	}
	l.waitOffset(ctx, offsetOf(&r.UnknownTags))
	im = l.local.Image()
	for n, i := range idx {
		s := slots[n]
		if s.topic >= len(r.Topics) || s.partition >= len(r.Topics[s.topic].Partitions) {
			out[i].Err = kerr.UnknownServerError
			continue
		}
		rp := r.Topics[s.topic].Partitions[s.partition]
		if out[i].Err = kerr.ErrorForCode(rp.ErrorCode); out[i].Err != nil {
			continue
		}
		p := &controller.PartitionInfo{Partition: rp.Partition, ISR: rp.ISR, Leader: rp.LeaderID,
			LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch}
		t := im.TopicsByID[reqs[i].TopicID]
		if reqs[i].TopicID.IsZero() {
			t = im.Topics[reqs[i].TopicName]
		}
		if t != nil && int(rp.Partition) < len(t.Partitions) && rp.Partition >= 0 {
			p.Replicas = slices.Clone(t.Partitions[rp.Partition].Replicas)
		}
		out[i].Partition = p
	}
	return nil
}

// AlterPartitionReassignments starts or cancels reassignments through the active controller
// and returns once the local image has the outcome.
func (l *Link) AlterPartitionReassignments(ctx context.Context, reqs []controller.Reassignment, allowReplicationFactorChange bool) ([]controller.ReassignmentResult, error) {
	var out []controller.ReassignmentResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.AlterPartitionReassignments(ctx, reqs, allowReplicationFactorChange)
		return localRetry(err, len(out) > 0 && errors.Is(out[0].Err, kerr.NotController))
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version, req.TimeoutMillis, req.AllowReplicationFactorChange = 1, timeoutMillis(ctx), allowReplicationFactorChange
		// One topic entry per item, so the answer maps back by position.
		for _, r := range reqs {
			t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			t.Topic = r.Topic
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Partition, p.Replicas = r.Partition, r.Replicas
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		switch r.ErrorCode {
		case 0:
		case kerr.NotController.Code:
			return errRetry
		default:
			return kerr.ErrorForCode(r.ErrorCode)
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		out = make([]controller.ReassignmentResult, len(reqs))
		for i := range out {
			if i >= len(r.Topics) || len(r.Topics[i].Partitions) != 1 {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			rp := r.Topics[i].Partitions[0]
			out[i].Err, out[i].Message = kerr.ErrorForCode(rp.ErrorCode), deref(rp.ErrorMessage)
		}
		return nil
	})
	return out, err
}

// ElectLeaders runs leader elections through the active controller (see
// controller.ElectLeaders) and returns once the local image has the outcome.
func (l *Link) ElectLeaders(ctx context.Context, electionType int8, topics []controller.ElectLeadersTopic) ([]controller.ElectLeadersResult, error) {
	var out []controller.ElectLeadersResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.ElectLeaders(ctx, electionType, topics)
		return err
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType, req.TimeoutMillis = 2, electionType, timeoutMillis(ctx)
		if topics != nil {
			req.Topics = []kmsg.ElectLeadersRequestTopic{}
			for _, t := range topics {
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic, rt.Partitions = t.Topic, t.Partitions
				req.Topics = append(req.Topics, rt)
			}
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ElectLeadersResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if errors.Is(err, kerr.NotController) {
				return errRetry
			}
			return err
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		out = make([]controller.ElectLeadersResult, 0, len(r.Topics))
		for _, rt := range r.Topics {
			tr := controller.ElectLeadersResult{Topic: rt.Topic}
			for _, rp := range rt.Partitions {
				tr.Partitions = append(tr.Partitions, controller.ElectLeadersPartitionResult{Partition: rp.Partition,
					Err: kerr.ErrorForCode(rp.ErrorCode), Message: deref(rp.ErrorMessage)})
			}
			out = append(out, tr)
		}
		return nil
	})
	return out, err
}

// UnregisterBroker removes broker id's registration through the active controller and returns
// once the local image has the outcome.
func (l *Link) UnregisterBroker(ctx context.Context, id int32) error {
	return l.withLeader(ctx, func() error {
		return l.local.UnregisterBroker(ctx, id)
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.UnregisterBrokerResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil && !errors.Is(err, kerr.NotController) {
				return fmt.Errorf("%w: %s", err, *r.ErrorMessage)
			}
			return err
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		return nil
	})
}

// AssignReplicaDirs tells the active controller which of this broker's log directories holds
// each listed replica (AssignReplicasToDirs, API 73), and returns the per-item errors.
func (l *Link) AssignReplicaDirs(ctx context.Context, items []controller.ReplicaDirAssignment) ([]error, error) {
	epoch := l.Epoch()
	var out []error
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.AssignReplicaDirs(ctx, l.cfg.NodeID, epoch, items)
		return err
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID, req.BrokerEpoch = l.cfg.NodeID, epoch
		// One directory, topic and partition entry per item, so the answer maps back by position.
		for _, it := range items {
			d := kmsg.NewAssignReplicasToDirsRequestDirectory()
			d.ID = it.Dir
			t := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
			t.TopicID = it.TopicID
			p := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
			p.Partition = it.Partition
			t.Partitions = append(t.Partitions, p)
			d.Topics = append(d.Topics, t)
			req.Directories = append(req.Directories, d)
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.AssignReplicasToDirsResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
		out = make([]error, len(items))
		i := 0
		for _, d := range r.Directories {
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					if i < len(out) {
						out[i] = kerr.ErrorForCode(p.ErrorCode)
					}
					i++
				}
			}
		}
		return nil
	})
	return out, err
}
