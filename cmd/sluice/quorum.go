package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/broker"
	"sluice/cluster"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

// quorum is this node's member of the metadata quorum and what connects it to the others: in
// a quorum of several voters, or on a node with one role only, the raft transport and (on a
// broker) the link through which the broker registers, heartbeats and forwards its proposals
// to the active controller; and the controller listener (on a controller), which serves raft
// connections and the controller's Kafka APIs.
//
// The roles (process.roles): a combined node (broker,controller) runs a voter and a broker;
// a controller-only node a voter and no broker (it never registers, so it is in no Metadata
// answer, only in DescribeQuorum and in DescribeCluster on the controller listener); a
// broker-only node an observer — a raft learner that the active controller adds when the
// broker registers — and a broker, with no controller listener: it reaches the voters at the
// addresses in controller.quorum.voters.
type quorum struct {
	ctrl      *controller.Controller
	transport *controller.NetTransport // nil for a combined node alone (no controller.quorum.voters)
	link      *cluster.Link            // nil then and on a controller-only node
	listener  *wire.Server             // nil without a controller listener (a broker-only node)
	// raftSASL is the controller listener's SASL (SASL_PLAINTEXT or SASL_SSL), which the
	// transport's inbound raft connections authenticate with; nil otherwise. Set by listen
	// before the listener accepts (and so before the transport reads it).
	raftSASL *wire.SASLConfig
	// raftMapper is the controller listener's ssl.principal.mapping.rules: the principal of a
	// raft connection with a client certificate (set with raftSASL).
	raftMapper *wire.PrincipalMapper
	alone      aloneQuorum // the broker's Metadata when link is nil
}

// startQuorum opens the metadata log at dir and, with controller.quorum.voters set or on a
// node with one role, starts the transport and (with the broker role) the link. A combined
// node without a voters line starts alone: it registers its own broker at once and has no
// sessions to expire, since nothing heartbeats. Nothing here waits for the other voters; see register.
//
// With controller.quorum.bootstrap.servers instead of voters a controller is in a dynamic
// quorum (KIP-853): its voter set is the one in its metadata log (from `sluice format
// --standalone/--initial-controllers`, or itself alone on an empty log whose bootstrap
// servers are its own listener), and it always runs the network transport so others can
// join. A joiner (joinsDynamicQuorum) bootstraps the voters its bootstrap servers answered and
// follows the log as an observer (a raft learner once AddRaftVoter is under way) until it is
// promoted; clusterID (its formatted meta.properties') makes voters of another cluster refuse
// it. previousEpoch is the broker's PreviousBrokerEpoch (its clean shutdown file's, -1 none).
func startQuorum(cfg *config.Broker, dir string, endpoints []controller.Endpoint, memory *wire.MemoryPool, limits *wire.ConnLimits,
	joiner bool, clusterID string, bootstrap []controller.Record, ctrlClient peerClient, previousEpoch int64, logDirIDs [][16]byte, logger *slog.Logger) (*quorum, error) {
	q := &quorum{}
	voters, addrs := quorumVoters(cfg)
	isController, isBroker := cfg.HasRole("controller"), cfg.HasRole("broker")
	dynamic := isController && len(cfg.ControllerQuorumBootstrapServers) > 0
	ctrlCfg := controller.Config{
		NodeID:    cfg.NodeID,
		Dir:       dir,
		Endpoints: endpoints,
		Rack:      rack(cfg),
		Logger:    logger.With("component", "controller"),
		// KIP-966 eligible leader replicas: eligible.leader.replicas.version=1 is Kafka 4.x's
		// default for new clusters (controller/elections.go).
		EligibleLeaderReplicas: true,
		MinInsyncReplicas:      cfg.Int32("min.insync.replicas"),
		UncleanLeaderElection:  cfg.Bool("unclean.leader.election.enable"),
		// A formatted node's first leader writes the formatted cluster ID and records.
		ClusterID:        clusterID,
		BootstrapRecords: bootstrap,
	}
	if cfg.Bool("auto.leader.rebalance.enable") {
		ctrlCfg.LeaderRebalanceInterval = time.Duration(cfg.Int64("leader.imbalance.check.interval.seconds")) * time.Second
	}
	var err error
	if len(voters) == 0 && isController {
		voters = []int32{cfg.NodeID} // a quorum of this node alone
		if addr := ownControllerAddr(cfg); addr != "" {
			// Where this node's own controller APIs are, for the link's forwarding.
			addrs = map[int32]string{cfg.NodeID: addr}
		}
	}
	if isController && isBroker && len(cfg.QuorumVoters) == 0 && !dynamic {
		// No voters line: a node alone (sluice with no arguments). With one, even naming only
		// this node, broker-only nodes may join as observers, so it takes the path below.
		if q.ctrl, err = controller.Start(ctrlCfg); err != nil {
			return nil, err
		}
		srv, err := cluster.NewServer(cluster.ServerConfig{Controller: q.ctrl, Logger: logger.With("component", "controller-api")})
		if err != nil {
			q.ctrl.Close()
			return nil, err
		}
		q.alone = aloneQuorum{q.ctrl, srv}
	} else {
		observer := !isController || joiner
		tcfg := controller.NetTransportConfig{NodeID: cfg.NodeID, Peers: addrs, Observer: observer, TLS: ctrlClient.tls,
			Logger: logger.With("component", "raft")}
		if joiner {
			tcfg.ClusterID = clusterID
		}
		if mech := ctrlClient.sasl; mech != nil {
			// A SASL_* controller listener: raft connections authenticate as Kafka's
			// controllers' channels do, with sasl.mechanism.controller.protocol and the
			// listener's JAAS credentials, and are checked against the listener's users.
			tcfg.Authenticate = func(ctx context.Context, rw io.ReadWriter, addr string) error {
				return wire.AuthenticateSASLStream(ctx, rw, mech, addr)
			}
			tcfg.AuthenticateInbound = func(r io.Reader, w io.Writer) (string, time.Time, error) {
				if q.raftSASL == nil {
					return "", time.Time{}, errors.New("this node serves no SASL controller listener")
				}
				s, err := q.raftSASL.ServeSASLStream(r, w)
				return s.Principal, s.Expires, err
			}
		}
		if z := broker.NewAuthorizer(cfg); z != nil {
			// Raft between voters needs CLUSTER_ACTION on the cluster, as Kafka's Vote,
			// BeginQuorumEpoch and Fetch do, checked against this node's image.
			tcfg.AuthorizeInbound = func(conn net.Conn, principal string) error {
				if principal == "" {
					var err error
					if principal, err = wire.DivertedPrincipal(conn, q.raftMapper); err != nil {
						return err
					}
				}
				if q.ctrl == nil || !z.Authorize(q.ctrl.Image().ACLs, authz.Request{Principal: principal,
					Host: authz.HostOf(conn.RemoteAddr()), Operation: authz.OpClusterAction,
					ResourceType: authz.ResourceCluster, ResourceName: authz.ClusterName}) {
					return fmt.Errorf("%s lacks CLUSTER_ACTION on the cluster (add it to super.users)", principal)
				}
				return nil
			}
		}
		q.transport, err = controller.NewNetTransport(tcfg)
		if err != nil {
			return nil, err
		}
		ctrlCfg.Voters, ctrlCfg.VoterAddrs, ctrlCfg.Transport = voters, addrs, q.transport
		ctrlCfg.SessionTimeout = time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond
		ctrlCfg.Prober = cluster.Prober{} // fence at once on certain evidence (controller/evidence.go)
		if q.ctrl, err = controller.Open(ctrlCfg); err != nil {
			q.transport.Close()
			return nil, err
		}
		if joiner {
			// The voters accept this node once the active controller has made it a learner
			// (AddRaftVoter); until then it redials with backoff.
			q.transport.Connect()
			logger.Info("joining the metadata quorum as an observer; add it as a voter with kafka-metadata-quorum add-controller",
				"voters", len(voters))
		}
		if isBroker {
			lc := cluster.LinkConfig{
				NodeID: cfg.NodeID, Voters: addrs, Endpoints: endpoints, Rack: rack(cfg),
				HeartbeatInterval: time.Duration(cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
				SessionTimeout:    time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
				Controller:        q.ctrl,
				Observer:          observer,
				// The clean shutdown file's epoch (broker.TakeCleanShutdownEpoch), KIP-966.
				PreviousBrokerEpoch: previousEpoch,
				// The log directories' IDs (BrokerRegistration v2+, controller/log_dirs.go).
				LogDirs:    logDirIDs,
				ClientOpts: ctrlClient.kgoOpts(),
				Logger:     logger.With("component", "link"),
			}
			if observer {
				lc.Registered = q.transport.Connect // the voters know this node once it registered
			}
			if q.link, err = cluster.NewLink(lc); err != nil {
				q.close(logger)
				return nil, err
			}
		}
	}
	if err := q.listen(cfg, addrs, memory, limits, logger); err != nil {
		q.close(logger)
		return nil, err
	}
	return q, nil
}

// quorumVoters lists the voters' node IDs and their controller addresses from
// controller.quorum.voters; empty means this node alone.
func quorumVoters(cfg *config.Broker) ([]int32, map[int32]string) {
	var ids []int32
	addrs := map[int32]string{}
	for _, v := range cfg.QuorumVoters {
		ids = append(ids, v.ID)
		addrs[v.ID] = net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port)))
	}
	return ids, addrs
}

// listen opens the first controller listener, if one is configured: raft connections (they
// start with the transport's magic) go to the transport, everything else is Kafka requests for
// the controller (BrokerRegistration, BrokerHeartbeat, forwarded proposals, DescribeQuorum).
func (q *quorum) listen(cfg *config.Broker, addrs map[int32]string, memory *wire.MemoryPool, limits *wire.ConnLimits, logger *slog.Logger) error {
	var l *config.Listener
	for i := range cfg.Listeners {
		if len(cfg.ControllerListeners) > 0 && cfg.Listeners[i].Name == cfg.ControllerListeners[0] {
			l = &cfg.Listeners[i]
		}
	}
	if l == nil {
		if q.transport != nil && cfg.HasRole("controller") {
			return errors.New("controller.listener.names: a quorum of several voters needs a controller listener in listeners")
		}
		return nil // a broker-only node listens for clients only
	}
	if !cfg.HasRole("controller") {
		return nil
	}
	if len(addrs) == 0 {
		addrs = map[int32]string{cfg.NodeID: net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))}
	}
	srv, err := cluster.NewServer(cluster.ServerConfig{
		Controller: q.ctrl, Voters: addrs, ListenerName: l.Name,
		DefaultNumPartitions: cfg.NumPartitions, DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		Authorizer: broker.NewAuthorizer(cfg),
		Logger:     logger.With("component", "controller-api"),
	})
	if err != nil {
		return err
	}
	sec, err := securityFor(cfg, *l)
	if err != nil {
		return err
	}
	// SCRAM users are looked up in the metadata image first, as on the broker listeners.
	withImageScram(sec.sasl, q.ctrl.Image)
	q.raftSASL = sec.sasl
	q.raftMapper = sec.mapper
	wcfg := wire.Config{
		SecurityProtocol:   sec.protocol,
		TLS:                sec.tls,
		PrincipalMapper:    sec.mapper,
		SASL:               sec.sasl,
		Addr:               net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))),
		ListenerName:       l.Name,
		MaxRequestBytes:    cfg.SocketRequestMaxBytes,
		MaxInFlightPerConn: inFlightPerConnection,
		IdleTimeout:        time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		Versions:           cluster.ServerVersions,
		Memory:             memory,
		Limits:             limits,
		Logger:             logger.With("component", "wire", "listener", l.Name),
	}
	if q.transport != nil {
		wcfg.Divert = controller.IsRaftConnection
		wcfg.DivertConn = q.transport.ServeConn
	}
	if q.listener, err = wire.Listen(wcfg, srv); err != nil {
		return fmt.Errorf("listener %s: %w", l.Name, err)
	}
	logger.Info("listening", "listener", l.Name, "security.protocol", l.SecurityProtocol, "addr", q.listener.Addr().String(), "role", "controller")
	return nil
}

// metadata is what the broker reaches the quorum through.
func (q *quorum) metadata() broker.Metadata {
	if q.link != nil {
		return q.link
	}
	return q.alone
}

// aloneQuorum is the Metadata of a node alone: its controller, and quorum requests on the
// broker listener (kafka-metadata-quorum --bootstrap-server) answered by a controller API
// server that listens nowhere.
type aloneQuorum struct {
	*controller.Controller
	srv *cluster.Server
}

func (a aloneQuorum) ForwardQuorumRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return a.srv.ServeQuorumRequest(ctx, req)
}

// register waits, at most initial.broker.registration.timeout.ms (as Kafka's broker does),
// until the quorum has a leader that registered this broker and unfenced it.
func (q *quorum) register(cfg *config.Broker, logger *slog.Logger) error {
	if q.link == nil {
		return nil // Start registered the single voter's own broker, or there is no broker
	}
	timeout := time.Duration(cfg.Int64("initial.broker.registration.timeout.ms")) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	logger.Info("waiting for the metadata quorum to register this broker", "voters", len(cfg.QuorumVoters), "timeout", timeout)
	if err := q.link.Register(ctx); err != nil {
		if errors.Is(err, kerr.DuplicateBrokerRegistration) {
			// Another live process has this node.id: stop rather than take its ID.
			logger.Error("another live broker is registered with this node.id; not starting", "node.id", cfg.NodeID, "err", err)
			return fmt.Errorf("node.id %d is in use by another live broker (DUPLICATE_BROKER_REGISTRATION): %w", cfg.NodeID, err)
		}
		return fmt.Errorf("registering with the metadata quorum (initial.broker.registration.timeout.ms=%d): %w", timeout.Milliseconds(), err)
	}
	logger.Info("registered with the metadata quorum", "took", time.Since(start).Round(time.Millisecond),
		"controller", q.ctrl.Image().ControllerID)
	return nil
}

// controlledShutdownTimeout bounds how long a stopping broker waits for the active controller
// to move leadership of its partitions to other brokers.
const controlledShutdownTimeout = 10 * time.Second

// controlledShutdown hands this broker's partition leadership to others before it stops, as
// Kafka's controlled shutdown does (controlled.shutdown.enable).
func (q *quorum) controlledShutdown(cfg *config.Broker, logger *slog.Logger) {
	if q.link == nil || !cfg.Bool("controlled.shutdown.enable") {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
	defer cancel()
	if err := q.link.ControlledShutdown(ctx); err != nil {
		logger.Warn("controlled shutdown did not finish; stopping anyway", "err", err)
	}
	logger.Info("shutdown phase done", "phase", "controlled shutdown", "took", time.Since(start))
}

// close stops the link, the controller listener, the transport and the controller, in that
// order.
func (q *quorum) close(logger *slog.Logger) {
	start := time.Now()
	if q.link != nil {
		q.link.Close()
	}
	if q.listener != nil {
		ctx, cancel := context.WithTimeout(context.Background(), inFlightShutdownTimeout)
		_ = q.listener.Shutdown(ctx)
		cancel()
	}
	if q.transport != nil {
		q.transport.Close()
	}
	if err := q.ctrl.Close(); err != nil {
		logger.Error("closing the controller", "err", err)
	}
	logger.Info("shutdown phase done", "phase", "controller", "took", time.Since(start))
}

// brokerListeners are the listeners clients use: every listener but the controller ones.
func brokerListeners(cfg *config.Broker) []config.Listener {
	var out []config.Listener
	for _, l := range cfg.Listeners {
		if !slices.Contains(cfg.ControllerListeners, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// discoverVoters fills cfg.QuorumVoters on a broker-only node configured with
// controller.quorum.bootstrap.servers instead of controller.quorum.voters: it asks each
// server in turn (DescribeQuorum v2, whose Nodes are the voters and their controller
// listeners, answered by any voter) until one answers, for at most
// initial.broker.registration.timeout.ms. sluice's voters are static (a controller refuses a
// dynamic quorum of other nodes), so the voters answered are the ones the quorum was
// bootstrapped with, which the observer's metadata log must start from.
func discoverVoters(cfg *config.Broker, joiner bool, ctrlClient peerClient, logger *slog.Logger) error {
	if cfg.HasRole("controller") && !joiner || len(cfg.QuorumVoters) > 0 || len(cfg.ControllerQuorumBootstrapServers) == 0 {
		return nil
	}
	timeout := time.Duration(cfg.Int64("initial.broker.registration.timeout.ms")) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		for _, server := range cfg.ControllerQuorumBootstrapServers {
			if joiner && cfg.IsOwnControllerAddress(server) {
				continue
			}
			voters, err := describeVoters(ctx, server, ctrlClient)
			if err != nil {
				last = fmt.Errorf("%s: %w", server, err)
				continue
			}
			if slices.ContainsFunc(voters, func(v config.QuorumVoter) bool { return v.ID == cfg.NodeID }) {
				return fmt.Errorf("controller.quorum.bootstrap.servers: node.id %d is a voter of the quorum at %s, but this node has no metadata log; "+
					"a broker-only node must have another ID, and a voter that lost its metadata directory must be removed (kafka-metadata-quorum remove-controller) before it joins again", cfg.NodeID, server)
			}
			cfg.QuorumVoters = voters
			logger.Info("learned the metadata quorum's voters", "from", server, "voters", len(voters))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controller.quorum.bootstrap.servers: no controller told the voters within %v: %v", timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// describeVoters asks one controller listener for the quorum's voters.
func describeVoters(ctx context.Context, server string, ctrlClient peerClient) ([]config.QuorumVoter, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(server), kgo.DialTimeout(2 * time.Second)}, ctrlClient.kgoOpts()...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, err
	}
	var voters []config.QuorumVoter
	for _, n := range resp.(*kmsg.DescribeQuorumResponse).Nodes {
		if len(n.Listeners) == 0 {
			continue
		}
		voters = append(voters, config.QuorumVoter{ID: n.NodeID, Host: n.Listeners[0].Host, Port: int32(n.Listeners[0].Port)})
	}
	if len(voters) == 0 {
		return nil, errors.New("DescribeQuorum answered no voters")
	}
	return voters, nil
}

// joinsDynamicQuorum reports whether this node is a controller joining a dynamic quorum: it
// has controller.quorum.bootstrap.servers (no static voters), no metadata log yet, and a
// bootstrap server that is another node. Without one (only its own listener) it starts a
// quorum of its own, as Kafka's standalone controller does.
func joinsDynamicQuorum(cfg *config.Broker, hasMetadata bool) bool {
	if !cfg.HasRole("controller") || len(cfg.QuorumVoters) > 0 || hasMetadata {
		return false
	}
	for _, server := range cfg.ControllerQuorumBootstrapServers {
		if !cfg.IsOwnControllerAddress(server) {
			return true
		}
	}
	return false
}

// ownControllerAddr is the host:port of this node's first controller listener, "" if none.
func ownControllerAddr(cfg *config.Broker) string {
	for _, l := range cfg.Listeners {
		if len(cfg.ControllerListeners) > 0 && l.Name == cfg.ControllerListeners[0] {
			return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	return ""
}
