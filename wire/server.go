package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults applied by Listen to zero Config fields.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default.
	DefaultMaxRequestBytes = 104857600
	// DefaultMaxInFlightPerConn bounds pipelined requests per connection. Kafka itself reads one
	// request at a time per connection; clients pipeline up to 5 (Java, franz-go idempotent) or
	// more (librdkafka), so this only caps memory and lets a slow request not stall the reader.
	DefaultMaxInFlightPerConn = 100
	// DefaultMaxInFlightBytesPerConn bounds the request bytes one connection holds (plus one
	// frame). A produce request is appended before the next is needed, so reading more ahead
	// than a frame or two buys no throughput, only memory.
	DefaultMaxInFlightBytesPerConn = 8 << 20
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms default (10 minutes).
	DefaultIdleTimeout = 10 * time.Minute
)

// Accept backoff after a failing Accept (for example EMFILE), as net/http does.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// Server is one listener: it accepts connections and serves each as described in the package
// documentation.
type Server struct {
	cfg        Config // defaults applied; never changes after Listen
	pool       *MemoryPool
	limits     *ConnLimits // nil: no connection quotas
	handler    Handler
	ln         net.Listener
	log        *slog.Logger
	nextConnID atomic.Uint64

	// idleWhileWaiting counts read timeouts forgiven because the client was waiting on us.
	idleWhileWaiting atomic.Uint64
	// budgetWaits counts the times a reader stopped for MaxInFlightBytesPerConn.
	budgetWaits atomic.Uint64
	// refusedPerIP counts connections closed at accept for max.connections.per.ip.
	refusedPerIP atomic.Uint64

	stopAccept chan struct{} // closed by Shutdown
	acceptDone chan struct{} // closed when the accept loop has returned
	conns      sync.WaitGroup

	mu struct {
		sync.Mutex
		// conns holds every open connection. Invariant: once shuttingDown is set no connection is
		// added, so conns.Wait in Shutdown cannot race with conns.Add.
		conns        map[*conn]struct{}
		shuttingDown bool
	}
}

// Listen binds cfg.Addr and starts accepting connections in the background, handing their
// requests to h. Zero limits in cfg take the Default* values; cfg.Versions is required.
func Listen(cfg Config, h Handler) (*Server, error) {
	if h == nil {
		return nil, errors.New("wire: nil Handler")
	}
	if cfg.Versions == nil {
		return nil, errors.New("wire: Config.Versions is nil")
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxInFlightPerConn <= 0 {
		cfg.MaxInFlightPerConn = DefaultMaxInFlightPerConn
	}
	if cfg.MaxInFlightBytesPerConn <= 0 {
		cfg.MaxInFlightBytesPerConn = DefaultMaxInFlightBytesPerConn
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := checkSecurity(&cfg); err != nil {
		return nil, err
	}
	pool := cfg.Memory
	if pool == nil {
		pool = NewMemoryPool(DefaultQueuedMaxRequestBytes(cfg.MaxRequestBytes), cfg.Logger)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("wire: listen %s: %w", cfg.Addr, err)
	}
	s := &Server{
		cfg:        cfg,
		pool:       pool,
		limits:     cfg.Limits,
		handler:    h,
		ln:         ln,
		log:        cfg.Logger,
		stopAccept: make(chan struct{}),
		acceptDone: make(chan struct{}),
	}
	s.mu.conns = make(map[*conn]struct{})
	go s.acceptLoop()
	return s, nil
}

// checkSecurity checks that SecurityProtocol, TLS and SASL agree, and fills defaults.
func checkSecurity(cfg *Config) error {
	if cfg.SecurityProtocol == "" {
		cfg.SecurityProtocol = "PLAINTEXT"
	}
	wantTLS, wantSASL := false, false
	switch cfg.SecurityProtocol {
	case "PLAINTEXT":
	case "SSL":
		wantTLS = true
	case "SASL_PLAINTEXT":
		wantSASL = true
	case "SASL_SSL":
		wantTLS, wantSASL = true, true
	default:
		return fmt.Errorf("wire: unknown security protocol %q", cfg.SecurityProtocol)
	}
	if wantTLS != (cfg.TLS != nil) || wantSASL != (cfg.SASL != nil) {
		return fmt.Errorf("wire: security protocol %s with TLS=%v and SASL=%v", cfg.SecurityProtocol, cfg.TLS != nil, cfg.SASL != nil)
	}
	if cfg.SASL != nil {
		if err := cfg.SASL.validate(); err != nil {
			return err
		}
		if cfg.SASL.MaxReceiveBytes <= 0 {
			cfg.SASL.MaxReceiveBytes = DefaultSASLMaxReceiveBytes
		}
	}
	if cfg.PrincipalMapper == nil {
		cfg.PrincipalMapper = &PrincipalMapper{rules: []principalRule{{isDefault: true}}}
	}
	return nil
}

// now is the server's clock.
func (s *Server) now() time.Time { return s.cfg.Now() }

// Addr is the bound address (useful when Config.Addr used port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// OpenConnections is the number of connections this listener serves now (for metrics).
func (s *Server) OpenConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

// StopAccepting closes the listener and returns once no connection is accepted any more;
// connections already open are served on. Safe to call more than once.
func (s *Server) StopAccepting() {
	s.mu.Lock()
	first := !s.mu.shuttingDown
	s.mu.shuttingDown = true
	s.mu.Unlock()
	if first {
		close(s.stopAccept)
		_ = s.ln.Close()
	}
	<-s.acceptDone
}

// Shutdown stops accepting (StopAccepting), stops reading new requests, lets requests already
// read finish and their responses be written, then closes the connections. A response write
// that makes no progress for drainWriteTimeout (a client that does not read) closes its
// connection. If ctx ends first the remaining connections are closed at once and ctx's error
// is returned. Handlers still running see their connection's context cancelled.
func (s *Server) Shutdown(ctx context.Context) error {
	s.StopAccepting()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.drain()
	}
	allClosed := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(allClosed)
	}()
	select {
	case <-allClosed:
		return nil
	case <-ctx.Done():
		for _, c := range conns {
			c.close(errShutdownTimeout)
		}
		<-allClosed // close is synchronous, so this is immediate
		return ctx.Err()
	}
}

var errShutdownTimeout = errors.New("wire: shutdown deadline passed")

func (s *Server) acceptLoop() {
	defer close(s.acceptDone)
	backoff := time.Duration(0)
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.stopAccept:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			s.log.Warn("wire: accept failed", "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.stopAccept:
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		if s.limits != nil {
			// As Kafka's acceptor does, with the new connection in hand: wait for a slot under
			// max.connections and for the creation rate, then check its address.
			if !s.limits.acquire(s.stopAccept) {
				_ = nc.Close()
				return
			}
			ip := remoteIP(nc.RemoteAddr())
			if ok, limit := s.limits.admit(ip); !ok {
				// As Kafka's acceptor does on TooManyConnectionsException.
				s.refusedPerIP.Add(1)
				s.log.Info("wire: connection refused: address already has max.connections.per.ip connections",
					"remote", nc.RemoteAddr().String(), "max", limit)
				_ = nc.Close()
				continue
			}
		}
		if s.cfg.IPRates != nil {
			ip := remoteIP(nc.RemoteAddr())
			if d := s.cfg.IPRates.throttle(ip); d > 0 {
				// As Kafka's acceptor on ConnectionThrottledException: not served, closed
				// after the throttle time; debug only, as a flood would flood the log.
				s.log.Debug("wire: connection throttled by its address's connection_creation_rate; closing it later",
					"remote", nc.RemoteAddr().String(), "close_in", d)
				if s.limits != nil {
					s.limits.release(ip)
				}
				s.cfg.IPRates.closeAfter(nc, d)
				continue
			}
		}
		if s.cfg.Divert != nil {
			go s.sniff(nc)
			continue
		}
		s.serve(nc)
	}
}

// serve registers nc and starts its goroutines, unless the server is shutting down.
func (s *Server) serve(nc net.Conn) {
	id := s.nextConnID.Add(1)
	c := newConn(s, nc, id)
	s.mu.Lock()
	if s.mu.shuttingDown {
		s.mu.Unlock()
		_ = nc.Close()
		if s.limits != nil {
			s.limits.release(c.remoteIP)
		}
		return
	}
	s.mu.conns[c] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	c.start()
}

// forget removes a closed connection. Called exactly once per registered connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.mu.Unlock()
	if s.limits != nil {
		s.limits.release(c.remoteIP)
	}
	s.conns.Done()
}
