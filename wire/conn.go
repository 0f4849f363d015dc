package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	readBufferSize = 32 << 10
	// writeFlushBytes: the writer coalesces ready responses into one Write until this many bytes.
	writeFlushBytes = 64 << 10
	// writeChunkBytes bounds one Write call, so the write deadline measures progress, not the
	// time to send a whole large response.
	writeChunkBytes = 1 << 20
	// writeBufferKeep: a write buffer that grew past this (a large response) is dropped after use
	// instead of being kept for the life of the connection.
	writeBufferKeep = 1 << 20
	// drainWriteTimeout replaces IdleTimeout as the write deadline once the server shuts down: a
	// client that stops reading its responses then holds up shutdown this long, not 10 minutes.
	drainWriteTimeout = 2 * time.Second
)

var (
	errIdle     = errors.New("wire: connection idle timeout")
	errDraining = errors.New("wire: server shutting down")
)

// pending is one request from the time it is read until its response is written or dropped.
type pending struct {
	key           int16
	version       int16 // the version the response is encoded at
	correlationID int32
	req           *Request // nil for a request refused before decoding (ApiVersions fallback); set before it is queued

	// rawToken is the token of a raw SASL frame (key keyRawSASLToken, after SaslHandshake v0).
	rawToken []byte
	// saslGate: read before the connection authenticated; the reader waits until the handler
	// is done with it before it reads on (stepDone).
	saslGate bool

	// Guarded by conn.mu.
	answered bool
	resp     kmsg.Response // nil with answered set: nothing to send (acks=0)
	// raw, with answered set, is sent as a bare size-prefixed frame (a raw SASL token).
	raw   []byte
	isRaw bool
	// closeAfter closes the connection once this response is written (failed authentication).
	closeAfter bool
}

// conn is one client connection, served by three goroutines: readLoop, handleLoop, writeLoop.
type conn struct {
	srv    *Server
	nc     net.Conn
	info   *ConnInfo
	vt     *versionTable // snapshot of Config.Versions taken at accept
	log    *slog.Logger
	ctx    context.Context // passed to Handle; cancelled when the connection closes
	cancel context.CancelFunc
	br     *bufio.Reader

	// slots holds one token per request that has been read (or is being read) and whose
	// response is not yet written or dropped. Capacity MaxInFlightPerConn: the reader takes a
	// token before reading a frame, so a full slots stops reading the connection.
	slots chan struct{}
	// requests carries decoded requests from readLoop to handleLoop in read order. Its capacity
	// equals slots', and each entry holds a token, so a send never waits on handleLoop for long.
	// Closed by readLoop when it stops.
	requests chan *pending
	// wake (capacity 1) tells writeLoop to look at the queue again.
	wake chan struct{}

	// heldBytes is the size of the frames read and not yet released (Request.ReleaseFrame) or
	// taken by the writer. The reader starts no frame while it is at MaxInFlightBytesPerConn.
	heldBytes atomic.Int64
	// bytesFreed (capacity 1) tells a reader waiting on heldBytes to look again.
	bytesFreed chan struct{}

	draining  atomic.Bool // set by drain before drainCh is closed and the read deadline is forced
	drainCh   chan struct{}
	drainOnce sync.Once
	closeOnce sync.Once

	// frameStarted is true while readLoop is inside a frame. Only readLoop touches it.
	frameStarted bool
	// reserved is what the frame being read holds of the server's MemoryPool. Only readLoop
	// touches it. Once a frame is read it holds frameCharge(len(frame)), given back by
	// releaseFrame.
	reserved int64
	// remoteIP is the address the connection counts against in the server's ConnLimits.
	remoteIP netip.Addr

	// tlsConn is nc as a TLS server connection (nil on PLAINTEXT and SASL_PLAINTEXT
	// listeners); readLoop completes its handshake before it reads a frame.
	tlsConn *tls.Conn
	// sasl is the SASL state on SASL listeners, nil otherwise. Only handleLoop touches it.
	sasl *saslSession
	// authenticated is set once SASL authentication succeeded; until then the reader bounds
	// frames by SASLConfig.MaxReceiveBytes and reads one request at a time.
	authenticated atomic.Bool
	// saslRaw: the next frame is a raw SASL token (SaslHandshake v0 was accepted).
	saslRaw atomic.Bool
	// saslFailed: authentication failed; the reader reads nothing more.
	saslFailed atomic.Bool
	// stepDone (capacity 1) tells the reader the handler is done with a saslGate request.
	stepDone chan struct{}

	mu struct {
		sync.Mutex
		// queue is every request read and not yet written, in read order; the writer sends
		// queue[0] once it is answered. Invariant: len(queue) <= cap(slots).
		queue []*pending
		// readerDone: readLoop has stopped; nothing more will be queued.
		readerDone bool
	}
}

func newConn(s *Server, nc net.Conn, id uint64) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		srv: s,
		nc:  nc,
		info: &ConnInfo{
			ID:               id,
			ListenerName:     s.cfg.ListenerName,
			SecurityProtocol: s.cfg.SecurityProtocol,
			LocalAddr:        nc.LocalAddr(),
			RemoteAddr:       nc.RemoteAddr(),
		},
		vt:       newVersionTable(s.cfg.Versions()),
		remoteIP: remoteIP(nc.RemoteAddr()),
		log:      s.log.With("conn", id, "remote", nc.RemoteAddr().String()),
		ctx:      ctx,
		cancel:   cancel,
		slots:    make(chan struct{}, s.cfg.MaxInFlightPerConn),
		requests: make(chan *pending, s.cfg.MaxInFlightPerConn),
		wake:     make(chan struct{}, 1),
		drainCh:  make(chan struct{}),

		bytesFreed: make(chan struct{}, 1),
		stepDone:   make(chan struct{}, 1),
	}
	if pc, ok := nc.(*prefixedConn); ok && pc.tls != nil {
		c.tlsConn = pc.tls // sniffed: the handshake is done and nc replays what was read
	} else if s.cfg.TLS != nil {
		c.tlsConn = tls.Server(nc, s.cfg.TLS)
		c.nc = c.tlsConn
	}
	if s.cfg.SASL != nil {
		c.sasl = &saslSession{cfg: s.cfg.SASL, now: s.now}
	}
	c.br = bufio.NewReaderSize(idleReader{c}, readBufferSize)
	return c
}

func (c *conn) start() {
	go c.readLoop()
	go c.handleLoop()
	go c.writeLoop()
}

// close closes the connection once, for reason (nil for an orderly end). Safe from any goroutine.
func (c *conn) close(reason error) {
	c.closeOnce.Do(func() {
		if reason != nil {
			c.log.Debug("wire: closing connection", "reason", reason)
		}
		c.cancel()
		_ = c.nc.Close()
		c.releaseQueued()
		c.srv.forget(c)
		c.info.runCloseHooks()
	})
}

// releaseQueued gives back the memory of every request still queued on a closed connection;
// they will not be written. (A handler still running on one may go on reading its body: the
// buffer is left to the garbage collector, only its accounting ends.)
func (c *conn) releaseQueued() {
	c.mu.Lock()
	queued := append([]*pending(nil), c.mu.queue...)
	c.mu.Unlock()
	for _, p := range queued {
		if p.req != nil {
			c.releaseFrame(p.req, false)
		}
	}
}

// drain stops reading new requests; writeLoop closes the connection once every request already
// read has been answered and written.
func (c *conn) drain() {
	c.drainOnce.Do(func() {
		c.draining.Store(true)
		close(c.drainCh)
		// Wake a reader blocked in Read. idleReader re-checks draining after it sets its own
		// deadline, so it cannot push this one back.
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
		// Bound a write blocked on a client that does not read; setWriteDeadline likewise
		// re-checks draining after setting its own.
		_ = c.nc.SetWriteDeadline(time.Now().Add(drainWriteTimeout))
	})
}

// setWriteDeadline gives the next write IdleTimeout to make progress, or drainWriteTimeout
// once the server is shutting down.
func (c *conn) setWriteDeadline() {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	if c.draining.Load() {
		_ = c.nc.SetWriteDeadline(time.Now().Add(drainWriteTimeout))
	}
}

// admit reserves memory for a frame of size bytes from the server's pool (readFrame's admit),
// waiting with the connection muted while there is none, at most IdleTimeout, as Kafka closes a
// muted connection that stays idle that long.
func (c *conn) admit(size int) error {
	n, err := c.srv.pool.reserve(size, c.drainCh, c.ctx.Done(), c.srv.cfg.IdleTimeout)
	c.reserved = n
	return err
}

func (c *conn) signalWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) readLoop() {
	defer func() {
		c.mu.Lock()
		c.mu.readerDone = true
		c.mu.Unlock()
		close(c.requests)
		c.signalWriter()
	}()
	if c.tlsConn != nil {
		if err := c.tlsHandshake(); err != nil {
			c.close(err)
			return
		}
	}
	for {
		maxBytes := c.srv.cfg.MaxRequestBytes
		gate := c.sasl != nil && !c.authenticated.Load()
		if gate {
			// As Kafka's SaslServerAuthenticator: sasl.server.max.receive.size bounds every
			// frame until the client has authenticated.
			maxBytes = min(maxBytes, c.srv.cfg.SASL.MaxReceiveBytes)
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.ctx.Done():
			return
		case <-c.drainCh:
			return
		}
		for c.heldBytes.Load() >= int64(c.srv.cfg.MaxInFlightBytesPerConn) {
			c.srv.budgetWaits.Add(1)
			select {
			case <-c.bytesFreed:
			case <-c.ctx.Done():
				return
			case <-c.drainCh:
				return
			}
		}
		c.frameStarted = false
		c.reserved = 0
		minBytes := int32(minFrameSize)
		rawToken := gate && c.saslRaw.Load()
		if rawToken {
			minBytes = 1
		}
		frame, err := readSizedFrame(c.br, minBytes, maxBytes, func() { c.frameStarted = true }, c.admit)
		if err != nil {
			c.srv.pool.release(c.reserved)
			c.reserved = 0
			switch {
			case errors.Is(err, errConnClosed):
			case errors.Is(err, errDraining), errors.Is(err, io.EOF):
				// Orderly: shutdown, or the client closed (perhaps only its sending side)
				// between frames. writeLoop sends what is owed, then closes; if the client is
				// gone entirely that write fails and closes sooner.
			default:
				c.close(fmt.Errorf("read: %w", err))
			}
			return
		}
		// A large frame was reserved at twice its size while its chunks were assembled.
		c.srv.pool.release(c.reserved - frameCharge(len(frame)))
		c.reserved = 0
		if rawToken {
			// A raw SASL token (SaslHandshake v0): not a Kafka request.
			p := &pending{key: keyRawSASLToken, rawToken: append([]byte(nil), frame...), saslGate: true}
			c.srv.pool.release(frameCharge(len(frame)))
			putFrame(frame)
			if !c.passGated(p) {
				return
			}
			continue
		}
		req, err := decodeRequest(frame, c.vt)
		if err != nil {
			c.srv.pool.release(frameCharge(len(frame))) // the frame is dropped
			var unsupported *UnsupportedError
			if errors.As(err, &unsupported) && unsupported.Key == keyApiVersions {
				c.enqueue(&pending{
					key:           keyApiVersions,
					correlationID: unsupported.CorrelationID,
					answered:      true,
					resp:          unsupportedApiVersionsResponse(c.vt),
				})
				c.signalWriter()
				continue
			}
			c.close(err)
			return
		}
		req.Conn = c.info
		req.frame, req.release = frame, c.releaseFrame
		c.heldBytes.Add(int64(len(frame)))
		p := &pending{key: req.Key, version: req.Version, correlationID: req.CorrelationID, req: req, saslGate: gate}
		if gate {
			if !c.passGated(p) {
				return
			}
			continue
		}
		c.enqueue(p)
		if c.ctx.Err() != nil {
			// Closed meanwhile: close may have released the queue before p was in it.
			c.releaseFrame(req, false)
			return
		}
		select {
		case c.requests <- p:
		case <-c.ctx.Done():
			return
		}
	}
}

// passGated queues a request read before authentication and waits until the handler is done
// with it, so the SASL exchange is served one step at a time, as Kafka's authenticator reads
// it. It reports whether the reader should go on.
func (c *conn) passGated(p *pending) bool {
	c.enqueue(p)
	if c.ctx.Err() != nil {
		if p.req != nil {
			c.releaseFrame(p.req, false)
		}
		return false
	}
	select {
	case c.requests <- p:
	case <-c.ctx.Done():
		return false
	}
	select {
	case <-c.stepDone:
	case <-c.ctx.Done():
		return false
	}
	return !c.saslFailed.Load()
}

// releaseFrame stops counting r's frame against the connection, once, and with recycle (the
// handler's ReleaseFrame: nothing aliases it) returns the buffer to its pool.
func (c *conn) releaseFrame(r *Request, recycle bool) {
	if !r.frameDone.CompareAndSwap(false, true) {
		return
	}
	n := int64(len(r.frame))
	if recycle {
		putFrame(r.frame)
	}
	r.frame = nil
	c.srv.pool.release(frameCharge(int(n)))
	if c.heldBytes.Add(-n) < int64(c.srv.cfg.MaxInFlightBytesPerConn) {
		select {
		case c.bytesFreed <- struct{}{}:
		default:
		}
	}
}

func (c *conn) enqueue(p *pending) {
	c.mu.Lock()
	c.mu.queue = append(c.mu.queue, p)
	c.mu.Unlock()
}

func (c *conn) hasUnanswered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.queue) > 0
}

func (c *conn) handleLoop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case p, ok := <-c.requests:
			if !ok {
				return
			}
			c.handle(p)
		}
	}
}

// handle runs the Handler for one request. A panic closes this connection only.
func (c *conn) handle(p *pending) {
	req := p.req
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("wire: handler panic; closing connection",
				"api_key", p.key, "api_version", p.version, "panic", r, "stack", string(debug.Stack()))
			c.close(fmt.Errorf("handler panic: %v", r))
		}
		if p.saslGate {
			c.stepDone <- struct{}{} // capacity 1, and the reader waits for exactly this one
		}
	}()
	if c.sasl != nil && c.handleSASL(p) {
		return
	}
	respond := func(resp kmsg.Response, err error) { c.answer(p, resp, err) }
	if observe := c.srv.cfg.ObserveRequest; observe != nil {
		start := time.Now()
		respond = func(resp kmsg.Response, err error) {
			observe(p.key, p.version, time.Since(start))
			c.answer(p, resp, err)
		}
	}
	c.srv.handler.Handle(c.ctx, req, respond)
}

// answer is Respond for p.
func (c *conn) answer(p *pending, resp kmsg.Response, err error) {
	if err != nil {
		c.close(fmt.Errorf("handler error for api key %d: %w", p.key, err))
		return
	}
	if resp != nil && resp.Key() != p.key {
		c.close(fmt.Errorf("handler answered api key %d with a key %d response", p.key, resp.Key()))
		return
	}
	c.mu.Lock()
	if p.answered {
		c.mu.Unlock()
		c.log.Debug("wire: respond called twice", "api_key", p.key)
		return
	}
	p.answered, p.resp = true, resp
	head := len(c.mu.queue) > 0 && c.mu.queue[0] == p
	c.mu.Unlock()
	if head {
		c.signalWriter()
	}
}

// answerRaw answers p with a bare size-prefixed token (SASL after SaslHandshake v0).
func (c *conn) answerRaw(p *pending, token []byte) {
	c.mu.Lock()
	p.answered, p.isRaw, p.raw = true, true, token
	head := len(c.mu.queue) > 0 && c.mu.queue[0] == p
	c.mu.Unlock()
	if head {
		c.signalWriter()
	}
}

// popReady removes and returns the queue head if it is answered. done reports that the reader
// has stopped and the queue is empty: the connection has nothing left to send.
func (c *conn) popReady() (p *pending, done bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.queue) == 0 {
		return nil, c.mu.readerDone
	}
	if !c.mu.queue[0].answered {
		return nil, false
	}
	p = c.mu.queue[0]
	c.mu.queue[0] = nil
	c.mu.queue = c.mu.queue[1:]
	if len(c.mu.queue) == 0 {
		c.mu.queue = c.mu.queue[:0:0] // let the backing array go rather than creep forward
	}
	return p, false
}

// writeLoop writes answered responses in request order, coalescing those that are ready into
// one Write, and frees their slots once written.
func (c *conn) writeLoop() {
	var buf []byte
	written := 0 // slots to free after the next flush
	flush := func() bool {
		if err := c.writeAll(buf); err != nil {
			c.close(fmt.Errorf("write: %w", err))
			return false
		}
		for ; written > 0; written-- {
			<-c.slots
		}
		if cap(buf) > writeBufferKeep {
			buf = nil
		}
		buf = buf[:0]
		return true
	}
	for {
		p, done := c.popReady()
		if p == nil {
			if !flush() {
				return
			}
			if done {
				c.close(nil) // the reader stopped in order and everything owed is sent
				return
			}
			select {
			case <-c.wake:
			case <-c.ctx.Done():
				return
			}
			continue
		}
		written++
		if p.req != nil {
			// Answered: the frame no longer counts against the connection. It is not reused
			// (the response may alias it) unless the handler released it.
			c.releaseFrame(p.req, false)
		}
		if p.isRaw {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(p.raw)))
			buf = append(buf, p.raw...)
			p.raw = nil
			continue
		}
		if p.resp == nil {
			continue // acks=0: nothing to send
		}
		p.resp.SetVersion(p.version)
		var err error
		if spliced, ok := p.resp.(SplicedResponse); ok {
			buf, err = c.writeSpliced(buf, p.correlationID, spliced)
		} else {
			buf, err = appendResponse(buf, p.correlationID, p.resp)
		}
		if err != nil {
			c.close(err)
			return
		}
		p.resp = nil
		if p.closeAfter {
			if flush() {
				c.close(errors.New("authentication failed"))
			}
			return
		}
		if len(buf) >= writeFlushBytes && !flush() {
			return
		}
	}
}

// writeAll writes b in chunks of at most writeChunkBytes, each with a fresh IdleTimeout write
// deadline: a slow client that keeps reading is served, one that stops reading is cut off.
func (c *conn) writeAll(b []byte) error {
	for len(b) > 0 {
		chunk := b[:min(len(b), writeChunkBytes)]
		c.setWriteDeadline()
		n, err := c.nc.Write(chunk)
		b = b[n:]
		if err != nil {
			return err
		}
	}
	return nil
}

// idleReader reads from the connection with a fresh IdleTimeout read deadline per Read, so a
// client that sends nothing for that long — between frames or in the middle of one — is cut
// off. Waiting for our own responses does not count as idle.
type idleReader struct{ c *conn }

func (r idleReader) Read(p []byte) (int, error) {
	c := r.c
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
		if c.draining.Load() {
			return 0, errDraining
		}
		n, err := c.nc.Read(p)
		if n > 0 || err == nil {
			return n, err
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return 0, err
		}
		if c.draining.Load() {
			return 0, errDraining
		}
		// Kafka counts its own sends as activity; a client waiting for a parked request (long
		// fetch, acks=all) between frames is not idle.
		if !c.frameStarted && c.hasUnanswered() {
			c.srv.idleWhileWaiting.Add(1)
			continue
		}
		return 0, errIdle
	}
}
