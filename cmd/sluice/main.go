// Command sluice runs a sluice node: a Kafka-compatible broker with its own metadata quorum.
//
// With no arguments it is a single-node cluster on 127.0.0.1:9092 keeping its data in ./data.
// --config reads a Kafka server.properties file; --set key=value (repeatable) overrides one key.
// Unknown or invalid keys stop the start with an error naming the key. --http-addr (off by
// default) serves /healthz, /readyz and Prometheus /metrics (package ops). --version prints the
// version (version.go); --log-format text|json and --log-level shape the log.
//
// `sluice format` prepares a node's directories, as kafka-storage format does (format.go).
// `sluice migrate --from-kafka DIR` adopts a stopped Kafka KRaft broker's directory in place
// (migrate.go, package migrate).
//
// `sluice topic|produce|consume|group|cluster ...` are admin subcommands instead, Kafka clients
// on franz-go that work against any Kafka-compatible broker (cli.go; `sluice help` lists them).
//
// SIGTERM, SIGINT or SIGHUP (the terminal that started it closing) shut it down cleanly, as the
// Kafka JVM's shutdown hooks do, logging one line per phase with its duration: listeners (stop
// accepting), in-flight requests (parked fetches are answered at once; requests already read are
// answered and written, for at most inFlightShutdownTimeout, and a client that stops reading is
// cut off after wire's drain write timeout), coordinator, logs (flushed and closed, many at
// once), controller. A second signal during shutdown exits at once with status 1. SIGPIPE is
// ignored, so a log written to a pipe whose reader is gone does not kill the process mid-way.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"sluice/broker"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/internal/loglevels"
	"sluice/ops"
	"sluice/wire"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "format" {
		os.Exit(runFormat(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		os.Exit(runMigrate(os.Args[2:], os.Stdout, os.Stderr))
	}
	if isSubcommand(os.Args[1:]) {
		os.Exit(runCLI(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}

// setFlags collects repeated --set key=value flags.
type setFlags map[string]string

func (s setFlags) String() string { return fmt.Sprint(map[string]string(s)) }

func (s setFlags) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("--set wants key=value, got %q", kv)
	}
	s[strings.TrimSpace(k)] = v
	return nil
}

// inFlightPerConnection bounds unanswered requests per connection (Kafka processes one at a
// time; sluice overlaps waiting ones, e.g. acks=all produce, up to this many).
const inFlightPerConnection = 32

// defaultCacheWindowBytes is how much of each partition's newest data stays in the page cache
// by default (logstore's drop-behind): enough for consumers at the tail, small enough that a
// producer's stream recycles pages instead of pushing the machine into reclaim.
const defaultCacheWindowBytes = 512 << 20

func run(args []string) error {
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	configPath := fs.String("config", "", "Kafka-style server.properties file")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text (logfmt) or json")
	showVersion := fs.Bool("version", false, "print the version and exit")
	httpAddr := fs.String("http-addr", "", "serve /healthz, /readyz and Prometheus /metrics on this host:port (e.g. 127.0.0.1:9644); off when empty")
	consoleAddr := fs.String("console-addr", "", "serve the web console on this host:port (e.g. 127.0.0.1:9645); off when empty")
	consoleWrites := fs.Bool("console-writes", false, "let the web console create topics and move group offsets (read-only otherwise)")
	debugAddr := fs.String("debug-addr", "", "serve Go's pprof profiles on this host:port (e.g. 127.0.0.1:6060); off when empty")
	cacheWindow := fs.Int64("cache-window-bytes", defaultCacheWindowBytes,
		"page cache kept per partition for its newest data; older appended bytes are written back and dropped from the cache (0: leave it to the kernel)")
	overrides := setFlags{}
	fs.Var(overrides, "set", "key=value broker config override (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) { // the flags are printed; add the subcommands
			fmt.Fprint(os.Stderr, "\n"+cliUsage)
			return nil
		}
		return err
	}
	if *showVersion {
		fmt.Println(buildVersion())
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (use --config FILE)", fs.Arg(0))
	}
	if err := consoleFlagProblem(*consoleAddr, *consoleWrites); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	// The base handler lets every level through; logLevels filters per component, so
	// kafka-configs --entity-type broker-loggers can change a component's level at run time.
	logLevels := loglevels.New(level)
	var handler slog.Handler
	switch opts := (&slog.HandlerOptions{Level: loglevels.LevelTrace}); *logFormat {
	case "text":
		handler = slog.NewTextHandler(os.Stderr, opts)
	case "json":
		handler = slog.NewJSONHandler(os.Stderr, opts)
	default:
		return fmt.Errorf("--log-format %q: want text or json", *logFormat)
	}
	logger := slog.New(logLevels.Handler(handler))
	slog.SetDefault(logger)

	// From here on a shutdown signal is queued, not fatal: one that arrives during start is
	// acted on once the node is up.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, shutdownSignals...)
	signal.Ignore(syscall.SIGPIPE)

	if *debugAddr != "" {
		if err := serveDebug(*debugAddr, logger); err != nil {
			return fmt.Errorf("--debug-addr: %w", err)
		}
	}

	cfg, err := loadNodeConfig(*configPath, overrides)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	memory, limits, err := requestLimits(cfg, logger)
	if err != nil {
		return err
	}
	// TLS and SASL settings are checked (and SCRAM credentials salted) before anything starts.
	security := map[string]listenerSecurity{}
	for _, l := range brokerListeners(cfg) {
		if security[l.Name], err = securityFor(cfg, l); err != nil {
			return err
		}
	}
	// So are the client sides of the connections this node makes to the others.
	ctrlClient, err := controllerClient(cfg)
	if err != nil {
		return err
	}
	var brokerClient peerClient
	if cfg.HasRole("broker") {
		if brokerClient, err = interBrokerClient(cfg); err != nil {
			return err
		}
	}

	// Every log directory (log.dirs: several are JBOD, broker/log_dirs.go) is created and
	// locked; the first also holds the broker's own files.
	logDir := cfg.LogDirs[0]
	for _, dir := range cfg.LogDirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		unlock, err := lockDir(dir)
		if err != nil {
			return err
		}
		defer unlock()
	}
	// metadata.log.dir (default: the log directory) holds the metadata log, as in Kafka.
	metadataDir := cfg.MetadataLogDir
	if !slices.ContainsFunc(cfg.LogDirs, func(d string) bool { return filepath.Clean(d) == filepath.Clean(metadataDir) }) {
		if err := os.MkdirAll(metadataDir, 0o755); err != nil {
			return err
		}
		unlockMetadata, err := lockDir(metadataDir)
		if err != nil {
			return err
		}
		defer unlockMetadata()
	}

	var endpoints []controller.Endpoint
	if cfg.HasRole("broker") { // a controller-only node registers no broker
		if endpoints, err = advertisedEndpoints(cfg); err != nil {
			return err
		}
	}
	// A log directory of a cluster whose metadata is gone must not become a new cluster.
	metadataLog := filepath.Join(metadataDir, "__cluster_metadata-0")
	hasMetadata, err := controller.HasState(metadataLog)
	if err != nil {
		return fmt.Errorf("metadata directory %s: %w", metadataLog, err)
	}
	identityDirs := slices.Clone(cfg.LogDirs)
	if !slices.ContainsFunc(cfg.LogDirs, func(d string) bool { return filepath.Clean(d) == filepath.Clean(metadataDir) }) {
		identityDirs = append(identityDirs, metadataDir)
	}
	// A controller joining a dynamic quorum starts without metadata of its own, on
	// directories `sluice format` may have claimed for the cluster already: it cannot make a
	// new cluster (it is in no configuration), so a meta.properties there is expected.
	joiner := joinsDynamicQuorum(cfg, hasMetadata)
	// A new log starts with what `sluice format --add-scram` left (bootstrap.records): the
	// directories are then formatted for a new cluster, not the remains of a lost one.
	var bootstrap []controller.Record
	formatted := false
	if !hasMetadata {
		if bootstrap, formatted, err = readBootstrapRecords(metadataDir); err != nil {
			return err
		}
		// Or Kafka's own kafka-storage format prepared the directories (kafka_format.go).
		if !formatted {
			if formatted, err = kafkaFormatted(metadataLog); err != nil {
				return fmt.Errorf("metadata directory %s: %w", metadataLog, err)
			}
			if formatted {
				logger.Info("the log directories were formatted by kafka-storage format: starting a new cluster with their cluster.id",
					"metadata.log.dir", metadataDir)
			}
		}
	}
	metaProps := make([]*broker.MetaProperties, len(identityDirs))
	for i, dir := range identityDirs {
		if metaProps[i], err = broker.CheckLogDir(dir, hasMetadata || joiner || formatted); err != nil {
			return err
		}
	}
	if err := discoverVoters(cfg, joiner, ctrlClient, logger); err != nil {
		return err
	}
	clusterID := ""
	if metaProps[len(metaProps)-1] != nil {
		clusterID = metaProps[len(metaProps)-1].ClusterID
	}
	// KIP-966: the broker epoch of the previous process's clean shutdown, read and removed
	// before anything else touches the logs (-1: it did not shut down cleanly).
	previousEpoch := int64(-1)
	if cfg.HasRole("broker") {
		// Clean only when every log directory says so, with the same epoch.
		for i, dir := range cfg.LogDirs {
			epoch, err := broker.TakeCleanShutdownEpoch(dir)
			if err != nil {
				return fmt.Errorf("log directory %s: %w", dir, err)
			}
			if i == 0 {
				previousEpoch = epoch
			} else if epoch != previousEpoch {
				previousEpoch = -1
			}
		}
		if previousEpoch < 0 {
			logger.Info("no clean shutdown file: the controller will take this broker out of the eligible leader replicas it was in", "log.dir", logDir)
		}
	}
	// Each log directory's ID, registered with the controller before the directory is
	// claimed: the one its meta.properties names, or a new one ClaimLogDir then writes.
	logDirIDs := make([][16]byte, len(cfg.LogDirs))
	for i := range cfg.LogDirs {
		if mp := metaProps[i]; mp != nil && mp.DirectoryID != "" {
			logDirIDs[i], _ = decodeDirectoryID(mp.DirectoryID)
		} else {
			rand.Read(logDirIDs[i][:])
		}
	}
	q, err := startQuorum(cfg, metadataLog, endpoints, memory, limits, joiner, clusterID, bootstrap, ctrlClient, previousEpoch, logDirIDs, logger)
	if err != nil {
		return fmt.Errorf("starting controller: %w", err)
	}
	quorumClosed := false
	defer func() {
		if !quorumClosed {
			q.close(logger)
		}
	}()
	var opsServer *ops.Server
	if *httpAddr != "" {
		// The metadata as this node's broker sees it (its link's image on a cluster); the
		// controller's on a controller-only node.
		image := q.ctrl.Image
		if cfg.HasRole("broker") {
			image = q.metadata().Image
		}
		if opsServer, err = ops.Listen(ops.Config{Addr: *httpAddr, NodeID: cfg.NodeID, Image: image, Quorum: q.ctrl.DescribeQuorum,
			Elections: q.ctrl.LeaderElections,
			Logger:    logger.With("component", "http")}); err != nil {
			return fmt.Errorf("--http-addr: %w", err)
		}
		defer opsServer.Close()
		logger.Info("serving health and metrics", "addr", opsServer.Addr().String())
	}
	if !cfg.HasRole("broker") {
		if opsServer != nil {
			opsServer.SetServing(nil)
		}
		return serveControllerOnly(cfg, q, identityDirs, metaProps, signals, logger)
	}
	if err := q.register(cfg, logger); err != nil {
		return err
	}
	ctrl := q.metadata()
	for i, dir := range identityDirs {
		var id [16]byte
		if i < len(logDirIDs) {
			id = logDirIDs[i]
		}
		if err := broker.ClaimLogDirAs(dir, metaProps[i], ctrl.Image().ClusterID, cfg.NodeID, id); err != nil {
			return err
		}
	}
	bootstrapDone(metadataDir, logger)

	// A broker that cannot go on (a failed log directory it could not report within
	// log.dir.failure.timeout.ms) shuts down as on SIGTERM and exits with its error.
	var fatal atomic.Pointer[error]
	onFatal := func(err error) {
		fatal.CompareAndSwap(nil, &err)
		select {
		case signals <- syscall.SIGTERM:
		default:
		}
	}
	b, err := broker.New(broker.Config{Static: cfg, LogDir: logDir, LogDirs: cfg.LogDirs, OnFatal: onFatal, Logger: logger.With("component", "broker"),
		CacheWindowBytes: *cacheWindow, PeerClientOpts: brokerClient.kgoOpts(), PeerTLS: brokerClient.tls, LogLevels: logLevels}, ctrl)
	if err != nil {
		return fmt.Errorf("starting broker: %w", err)
	}
	brokerClosed := false
	defer func() {
		if !brokerClosed {
			b.Close()
		}
	}()

	// connection_creation_rate of ip quota entities, on the broker listeners (quotas_conn.go).
	ipRates := wire.NewIPConnectionRates(wire.IPConnectionRatesConfig{
		Samples: int(cfg.Int32("quota.window.num")),
		Window:  time.Duration(cfg.Int32("quota.window.size.seconds")) * time.Second,
		Quota:   b.IPConnectionCreationRate,
		Logger:  logger.With("component", "wire"),
	})
	var servers []*wire.Server
	for _, l := range brokerListeners(cfg) {
		sec := security[l.Name]
		withImageScram(sec.sasl, ctrl.Image)
		srv, err := wire.Listen(wire.Config{
			SecurityProtocol:   sec.protocol,
			TLS:                sec.tls,
			PrincipalMapper:    sec.mapper,
			SASL:               sec.sasl,
			Addr:               net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))),
			ListenerName:       l.Name,
			MaxRequestBytes:    cfg.SocketRequestMaxBytes,
			MaxInFlightPerConn: inFlightPerConnection,
			IdleTimeout:        time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
			Versions:           broker.Versions,
			Memory:             memory,
			Limits:             limits,
			IPRates:            ipRates,
			Logger:             logger.With("component", "wire", "listener", l.Name),
			ObserveRequest:     observeRequest(opsServer),
		}, b)
		if err != nil {
			shutdownListeners(servers, b, logger)
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
		servers = append(servers, srv)
		logger.Info("listening", "listener", l.Name, "security.protocol", l.SecurityProtocol, "addr", srv.Addr().String())
	}
	im := ctrl.Image()
	logger.Info("sluice started", "version", buildVersion(), "node.id", cfg.NodeID, "cluster.id", im.ClusterID, "log.dirs", strings.Join(cfg.LogDirs, ","), "metadata.log.dir", metadataDir)

	if opsServer != nil {
		var listeners []ops.Listener
		for i, l := range brokerListeners(cfg) {
			listeners = append(listeners, ops.Listener{Name: l.Name, Connections: servers[i].OpenConnections})
		}
		opsServer.SetServing(b, listeners...)
	}
	if *consoleAddr != "" {
		stopConsole, err := startConsole(*consoleAddr, *consoleWrites, cfg, servers, security, logger)
		if err != nil {
			return fmt.Errorf("--console-addr: %w", err)
		}
		defer stopConsole()
	}

	sig := <-signals
	shutdownStart := time.Now()
	if opsServer != nil {
		opsServer.StopServing()
	}
	logger.Info("shutting down", "signal", sig.String())
	go func() {
		sig := <-signals
		logger.Error("second signal during shutdown; exiting now", "signal", sig.String())
		os.Exit(1)
	}()
	q.controlledShutdown(cfg, logger)
	shutdownListeners(servers, b, logger)
	brokerClosed = true
	if err := b.Close(); err != nil {
		logger.Error("closing the broker", "err", err)
	}
	quorumClosed = true
	q.close(logger)
	logger.Info("shutdown complete", "took", time.Since(shutdownStart))
	if err := fatal.Load(); err != nil {
		return *err
	}
	return nil
}

// shutdownSignals are the signals that start a clean shutdown. SIGHUP is among them: a broker
// whose terminal closes stops cleanly rather than dying at once.
var shutdownSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// inFlightShutdownTimeout bounds how long shutdown waits for requests already read to be
// answered and written; connections still busy then are closed. Parked fetches are answered at
// once (broker.Drain) and wire cuts off a client that stops reading sooner, so only a request
// that is itself slow (a JoinGroup waiting out a rebalance) can take this long.
const inFlightShutdownTimeout = 5 * time.Second

// shutdownListeners stops accepting on every listener, answers parked fetches, and waits (at
// most inFlightShutdownTimeout) for the requests already read to be answered and written.
func shutdownListeners(servers []*wire.Server, b *broker.Broker, logger *slog.Logger) {
	start := time.Now()
	for _, s := range servers {
		s.StopAccepting()
	}
	logger.Info("shutdown phase done", "phase", "listeners", "took", time.Since(start))
	start = time.Now()
	b.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), inFlightShutdownTimeout)
	defer cancel()
	cut := 0
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil {
			cut++
		}
	}
	if cut > 0 {
		logger.Warn("in-flight requests not finished in time; connections closed",
			"timeout", inFlightShutdownTimeout, "listeners", cut)
	}
	logger.Info("shutdown phase done", "phase", "in-flight requests", "took", time.Since(start))
}

// requestLimits builds the request memory pool and the connection quotas every broker listener
// shares, from queued.max.request.bytes and the max.connection* keys, checked as Kafka checks
// them.
func requestLimits(cfg *config.Broker, logger *slog.Logger) (*wire.MemoryPool, *wire.ConnLimits, error) {
	queued := cfg.Int64("queued.max.request.bytes")
	switch {
	case queued <= 0:
		// Kafka's default, -1, is unbounded; sluice keeps a bound (see wire.DefaultQueuedMaxRequestBytes).
		queued = wire.DefaultQueuedMaxRequestBytes(cfg.SocketRequestMaxBytes)
	case queued < int64(cfg.SocketRequestMaxBytes):
		return nil, nil, fmt.Errorf("queued.max.request.bytes (%d) must be at least socket.request.max.bytes (%d), as in Kafka",
			queued, cfg.SocketRequestMaxBytes)
	}
	overrides, err := wire.ParsePerIPOverrides(cfg.String("max.connections.per.ip.overrides"), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("max.connections.per.ip.overrides: %w", err)
	}
	perIP := cfg.Int32("max.connections.per.ip")
	if perIP == 0 && len(overrides) == 0 {
		return nil, nil, errors.New("max.connections.per.ip can be 0 only if max.connections.per.ip.overrides is set, as in Kafka")
	}
	logger.Info("request limits", "queued.max.request.bytes", queued,
		"max.connections", cfg.Int32("max.connections"), "max.connections.per.ip", perIP,
		"max.connections.per.ip.overrides", len(overrides), "max.connection.creation.rate", cfg.Int32("max.connection.creation.rate"))
	memory := wire.NewMemoryPool(queued, logger.With("component", "wire"))
	limits := wire.NewConnLimits(wire.ConnLimitsConfig{
		MaxConnections:      int(cfg.Int32("max.connections")),
		MaxConnectionsPerIP: int(perIP),
		PerIPOverrides:      overrides,
		CreationRate:        int(cfg.Int32("max.connection.creation.rate")),
	})
	return memory, limits, nil
}

// advertisedEndpoints turns advertised.listeners into the endpoints registered with the
// controller; a listener bound to all interfaces advertises this host's name, as Kafka does.
func advertisedEndpoints(cfg *config.Broker) ([]controller.Endpoint, error) {
	var out []controller.Endpoint
	for _, l := range cfg.AdvertisedListeners {
		if slices.Contains(cfg.ControllerListeners, l.Name) {
			continue
		}
		host := l.Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			h, err := os.Hostname()
			if err != nil {
				return nil, err
			}
			host = h
		}
		out = append(out, controller.Endpoint{Listener: l.Name, Host: host, Port: l.Port})
	}
	if len(out) == 0 {
		return nil, errors.New("advertised.listeners: no broker listener")
	}
	return out, nil
}

// lockDir takes an exclusive lock on the log directory so two processes never share it, as
// Kafka's .lock file does.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("log directory %s is in use by another process: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// rack is broker.rack, nil when unset.
func rack(cfg *config.Broker) *string {
	if cfg.BrokerRack == "" {
		return nil
	}
	return &cfg.BrokerRack
}

// serveControllerOnly runs a node with process.roles=controller: a voter serving the
// controller listener only, hosting no partitions and registering no broker. It claims its
// directories once the quorum has a cluster ID, then waits for a signal; the caller closes
// the quorum.
func serveControllerOnly(cfg *config.Broker, q *quorum, identityDirs []string, metaProps []*broker.MetaProperties,
	signals <-chan os.Signal, logger *slog.Logger) error {
	for im := q.ctrl.Image(); im.ClusterID == ""; im = q.ctrl.Image() {
		select {
		case <-im.Changed():
		case sig := <-signals:
			logger.Info("shutting down before the quorum formed", "signal", sig.String())
			return nil
		}
	}
	im := q.ctrl.Image()
	for i, dir := range identityDirs {
		if err := broker.ClaimLogDir(dir, metaProps[i], im.ClusterID, cfg.NodeID); err != nil {
			return err
		}
	}
	bootstrapDone(cfg.MetadataLogDir, logger)
	logger.Info("sluice started", "version", buildVersion(), "node.id", cfg.NodeID, "process.roles", "controller", "cluster.id", im.ClusterID,
		"metadata.log.dir", cfg.MetadataLogDir)
	sig := <-signals
	logger.Info("shutting down", "signal", sig.String())
	return nil
}
