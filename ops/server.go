package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sluice/broker"
	"sluice/controller"
)

// Config configures a Server.
type Config struct {
	// Addr is the host:port to listen on (port 0 picks one).
	Addr   string
	NodeID int32
	// Image returns the newest metadata image this node knows (the controller's or the
	// broker's link to it).
	Image func() *controller.Image
	// Quorum, if set, describes this node's view of the metadata quorum (raft term, commit
	// index, voters' progress when leading); a scrape waits at most groupOffsetsTimeout.
	Quorum func(ctx context.Context) (controller.QuorumDescription, error)
	// Elections, if set, are the leader elections (and of them the unclean ones) this node
	// applied from the metadata log (controller.Controller.LeaderElections).
	Elections func() (all, unclean int64)
	Logger    *slog.Logger
}

// Server is the operator HTTP listener.
type Server struct {
	cfg      Config
	ln       net.Listener
	http     *http.Server
	registry *prometheus.Registry
	requests *requestMetrics
	// broker is the broker once it serves clients (SetServing); nil before, and always on a
	// controller-only node.
	broker atomic.Pointer[broker.Broker]
	// serving is set once the client listeners are open.
	serving atomic.Bool
	// listeners are the client listeners' connection counts, set once by SetServing.
	listeners atomic.Pointer[[]Listener]
}

// Listener names a client listener and reads its open connections (wire.Server).
type Listener struct {
	Name        string
	Connections func() int
}

// Listen binds cfg.Addr and serves the endpoints in the background. /healthz answers at once;
// /readyz answers 503 until SetServing.
func Listen(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, registry: prometheus.NewRegistry()}
	s.requests = newRequestMetrics()
	s.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		s.requests.duration,
		&brokerCollector{s: s},
		&telemetryCollector{s: s},
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", s.serveReady)
	mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorLog: slogErrorLog{cfg.Logger}}))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Warn("http listener stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// SetServing records that the client listeners are open; b (nil on a controller-only node) is
// the broker the partition and group metrics read, listeners the listeners it serves on.
func (s *Server) SetServing(b *broker.Broker, listeners ...Listener) {
	if b != nil {
		s.broker.Store(b)
	}
	s.listeners.Store(&listeners)
	s.serving.Store(true)
}

// StopServing makes /readyz fail from now on (shutdown has begun).
func (s *Server) StopServing() { s.serving.Store(false) }

// Close stops the listener.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.http.Shutdown(ctx)
}

// ObserveRequest records one answered request; it is wire.Config.ObserveRequest.
func (s *Server) ObserveRequest(key, version int16, elapsed time.Duration) {
	s.requests.observe(key, version, elapsed)
}

// notReady returns why the node does not serve yet, or "" when it does.
func (s *Server) notReady() string {
	if !s.serving.Load() {
		return "client listeners are not open (starting or shutting down)"
	}
	b := s.broker.Load()
	if b == nil {
		return "" // controller-only: serving its controller listener is all it does
	}
	im := s.cfg.Image()
	info := im.Brokers[s.cfg.NodeID]
	switch {
	case info == nil:
		return fmt.Sprintf("broker %d is not registered in the metadata", s.cfg.NodeID)
	case info.Fenced:
		return fmt.Sprintf("broker %d is fenced (not caught up with the metadata log yet)", s.cfg.NodeID)
	case info.InControlledShutdown:
		return fmt.Sprintf("broker %d is in controlled shutdown", s.cfg.NodeID)
	}
	if applied := b.AppliedMetadataOffset(); applied < info.RegisteredOffset {
		return fmt.Sprintf("broker has applied metadata up to offset %d, registration is at %d", applied, info.RegisteredOffset)
	}
	return ""
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if why := s.notReady(); why != "" {
		http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// slogErrorLog adapts the logger to promhttp's error log.
type slogErrorLog struct{ l *slog.Logger }

func (e slogErrorLog) Println(v ...any) {
	e.l.Warn("metrics scrape", "err", strings.TrimSpace(fmt.Sprintln(v...)))
}
