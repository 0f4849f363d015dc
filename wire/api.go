package wire

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded Kafka request as the broker sees it.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	// Body is the decoded request; Body.GetVersion() == Version.
	Body kmsg.Request
	Conn *ConnInfo

	// frame is the buffer Body aliases; release hands it back (ReleaseFrame).
	frame   []byte
	release func(r *Request, recycle bool)
	// frameDone is set once the frame's bytes stopped counting against the connection.
	frameDone atomic.Bool
}

// ReleaseFrame tells the wire layer that neither the handler nor anything it called still
// refers to the request's bytes (Body's byte slices, such as produce records, alias them), so
// the buffer can be reused for a later request and stops counting against the connection's
// in-flight bytes. Body must not be used afterwards. Optional: without it the buffer is left to
// the garbage collector once the response is written. Safe to call more than once.
func (r *Request) ReleaseFrame() {
	if r.release != nil {
		r.release(r, true)
	}
}

// ConnInfo describes the connection a request arrived on.
type ConnInfo struct {
	ID           uint64
	ListenerName string
	// SecurityProtocol is the listener's: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	LocalAddr        net.Addr
	RemoteAddr       net.Addr

	// principal is set once the connection authenticated (TLS client certificate or SASL),
	// and again on a KIP-368 re-authentication; nil means User:ANONYMOUS.
	principal atomic.Pointer[string]
	// clientSoftware is the name and version the client sent in ApiVersions v3+ (KIP-511).
	clientSoftware atomic.Pointer[[2]string]
}

// SetClientSoftware records the client's software name and version from its ApiVersions.
func (c *ConnInfo) SetClientSoftware(name, version string) {
	c.clientSoftware.Store(&[2]string{name, version})
}

// ClientSoftware is the client's software name and version, "" when it sent none.
func (c *ConnInfo) ClientSoftware() (name, version string) {
	if p := c.clientSoftware.Load(); p != nil {
		return p[0], p[1]
	}
	return "", ""
}

// Principal is the connection's authenticated principal, "User:name", or AnonymousPrincipal.
// Requests are only handed to the broker on a SASL listener once it authenticated.
func (c *ConnInfo) Principal() string {
	if p := c.principal.Load(); p != nil {
		return *p
	}
	return AnonymousPrincipal
}

func (c *ConnInfo) setPrincipal(p string) { c.principal.Store(&p) }

// Respond finishes one request. It must be called exactly once per request, from any goroutine,
// before or after Handle returns. A nil response with a nil error sends nothing (acks=0
// produce). A non-nil error closes the connection (the Go error channel of CONVENTIONS.md);
// Kafka-level problems belong in the response's error codes instead. A response passed to
// Respond belongs to the wire layer from then on: it sets the response's version to the
// request's and encodes it later on the connection's writer goroutine, so it must not be
// modified afterwards or shared with another connection.
type Respond func(kmsg.Response, error)

// Handler processes requests.
//
// The wire layer calls Handle for one connection's requests one at a time, in the order the
// client sent them, so a connection's produce requests append in the order they were sent, as
// with Kafka. A request that must wait (long-poll fetch, acks=all produce) should not block
// Handle: it parks and calls respond later, and the connection moves on to its next request.
// Responses leave the connection in request order whatever order respond is called in. At most
// Config.MaxInFlightPerConn requests per connection are unanswered at once; past that the
// connection is not read.
type Handler interface {
	Handle(ctx context.Context, req *Request, respond Respond)
}

// VersionRange is one API's supported request versions.
type VersionRange struct {
	Key, Min, Max int16
}

// Config configures a listener.
type Config struct {
	// Addr is the host:port to listen on; port 0 picks a free port.
	Addr         string
	ListenerName string
	// MaxRequestBytes is socket.request.max.bytes (Kafka default 104857600): a frame that
	// declares more is not read and its connection is closed.
	MaxRequestBytes int32
	// MaxInFlightPerConn bounds requests being processed at once on one connection.
	MaxInFlightPerConn int
	// MaxInFlightBytesPerConn bounds the request bytes a connection holds: the reader does not
	// start a new frame while the frames read and not yet released (ReleaseFrame) or answered
	// and written add up to this much. One frame is always allowed, so a connection holds at
	// most this plus one frame (MaxRequestBytes).
	MaxInFlightBytesPerConn int
	// IdleTimeout is connections.max.idle.ms: a connection with no request for this long is closed.
	IdleTimeout time.Duration
	// Versions lists the APIs and versions the broker implements. A request for an unknown key
	// or a version outside its range is refused as Kafka refuses it: ApiVersions is answered at
	// v0 with UNSUPPORTED_VERSION and this list's ApiVersions entry (KIP-511), anything else
	// closes the connection. It is called once per accepted connection.
	Versions func() []VersionRange
	// Memory bounds the request bytes held at once (queued.max.request.bytes); listeners that
	// share one share the bound. nil gives this listener its own pool of
	// DefaultQueuedMaxRequestBytes(MaxRequestBytes).
	Memory *MemoryPool
	// Limits are the connection quotas (max.connections, max.connections.per.ip and its
	// overrides, max.connection.creation.rate), shared by the listeners given the same one; nil
	// means none.
	Limits *ConnLimits
	// IPRates are the per-address connection_creation_rate quotas (conn_ip_rate.go), shared
	// by the listeners given the same one; nil means none.
	IPRates *IPConnectionRates
	// Divert, when set, sees the first 4 bytes of every new connection; a connection it claims
	// is handed to DivertConn (those bytes still to be read) and is no longer this server's.
	// The controller listener uses it to give raft connections (which start with a magic that
	// no Kafka frame size can equal) to the raft transport. Both or neither must be set.
	Divert     func(prefix [4]byte) bool
	DivertConn func(net.Conn)
	Logger     *slog.Logger

	// SecurityProtocol is the listener's protocol, for ConnInfo; "" means PLAINTEXT. It must
	// agree with TLS and SASL: SSL and SASL_SSL need TLS, SASL_* need SASL.
	SecurityProtocol string
	// TLS, when set, makes every connection a TLS server connection (SSL, SASL_SSL). A
	// handshake that fails, or takes longer than tlsHandshakeTimeout, closes the connection.
	TLS *tls.Config
	// PrincipalMapper maps a verified client certificate's subject to the connection's
	// principal (ssl.principal.mapping.rules) on an SSL listener; nil means DEFAULT. On a
	// SASL_SSL listener the SASL user is the principal, as in Kafka.
	PrincipalMapper *PrincipalMapper
	// SASL, when set, requires every connection to authenticate (SASL_PLAINTEXT, SASL_SSL)
	// before anything but ApiVersions, SaslHandshake and SaslAuthenticate is served.
	SASL *SASLConfig
	// Now is the clock for SASL session lifetimes; nil means time.Now.
	Now func() time.Time
	// ObserveRequest, when set, is called once per request the handler answers, with the
	// request's key and version and the time from handing it to the handler to its answer
	// (not the write). The operator metrics (package ops) record it; it must not block.
	ObserveRequest func(key, version int16, elapsed time.Duration)
}
