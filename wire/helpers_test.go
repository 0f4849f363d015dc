package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitLimit bounds every wait on a condition in these tests. It is generous: a test never fails
// because the machine is slow, only because the condition never held.
const waitLimit = 20 * time.Second

// testVersions is what the fake broker claims to implement.
func testVersions() []VersionRange {
	return []VersionRange{
		{Key: 0, Min: 3, Max: 11}, // Produce
		{Key: 3, Min: 0, Max: 12}, // Metadata
		{Key: 18, Min: 0, Max: 4}, // ApiVersions
		{Key: 32, Min: 0, Max: 4}, // DescribeConfigs
		{Key: 60, Min: 0, Max: 0}, // DescribeCluster
	}
}

type handlerFunc func(ctx context.Context, req *Request, respond Respond)

func (f handlerFunc) Handle(ctx context.Context, req *Request, respond Respond) { f(ctx, req, respond) }

// fakeBroker answers ApiVersions from its version list, Metadata with itself as the only broker,
// and Produce with an empty response (or nothing for acks=0).
type fakeBroker struct {
	versions []VersionRange
	addr     func() net.Addr
}

func (b *fakeBroker) Handle(_ context.Context, req *Request, respond Respond) {
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := body.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, v := range b.versions {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
		}
		respond(resp, nil)
	case *kmsg.MetadataRequest:
		resp := body.ResponseKind().(*kmsg.MetadataResponse)
		host, port, _ := net.SplitHostPort(b.addr().String())
		p, _ := strconv.Atoi(port)
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: host, Port: int32(p)}}
		resp.ClusterID = kmsg.StringPtr("sluice-wire-test")
		resp.ControllerID = 1
		respond(resp, nil)
	case *kmsg.ProduceRequest:
		if body.Acks == 0 {
			respond(nil, nil)
			return
		}
		respond(body.ResponseKind(), nil)
	default:
		respond(nil, errors.New("fake broker: unexpected request"))
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startServer starts a Server on 127.0.0.1 with test versions and shuts it down at cleanup.
// A nil h serves a fakeBroker.
func startServer(t testing.TB, cfg Config, h Handler) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Versions == nil {
		cfg.Versions = testVersions
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	var srv *Server
	if h == nil {
		h = &fakeBroker{versions: cfg.Versions(), addr: func() net.Addr { return srv.Addr() }}
	}
	srv, err := Listen(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return srv
}

// rawClient speaks the protocol by hand over one TCP connection.
type rawClient struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func dial(t testing.TB, srv *Server) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// encodeRequest is a full request frame as a client sends it.
func encodeRequest(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("wire-test")).AppendRequest(nil, req, corr)
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes req (at its set version) and returns its correlation id.
func (c *rawClient) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	c.write(encodeRequest(req, c.corr))
	return c.corr
}

// readFrame reads one response frame, failing the test if none arrives within waitLimit.
func (c *rawClient) readFrame() []byte {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(waitLimit))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		c.t.Fatalf("read response size: %v", err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.br, frame); err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	return frame
}

// recv reads one response to a request of req's kind and version, returning its correlation id.
func (c *rawClient) recv(req kmsg.Request) (int32, kmsg.Response) {
	c.t.Helper()
	frame := c.readFrame()
	corr := int32(binary.BigEndian.Uint32(frame))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != keyApiVersions {
		var ok bool
		if body, ok = skipTags(body); !ok {
			c.t.Fatalf("bad response header tags")
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %T v%d: %v", resp, req.GetVersion(), err)
	}
	return corr, resp
}

// roundTrip sends req and checks the response carries its correlation id.
func (c *rawClient) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	got, resp := c.recv(req)
	if got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	return resp
}

// expectClosed waits (up to waitLimit) for the server to close the connection, discarding
// anything it sends first.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(waitLimit))
	_, err := io.Copy(io.Discard, c.br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection still open after %v", waitLimit)
	}
}

func metadataRequest(version int16) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(version)
	return req
}

func produceRequest(acks int16) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = 1000
	return req
}

// parkingHandler queues every request for the test to answer.
type parkingHandler struct {
	parked chan parkedRequest
}

type parkedRequest struct {
	req     *Request
	respond Respond
}

func newParkingHandler(capacity int) *parkingHandler {
	return &parkingHandler{parked: make(chan parkedRequest, capacity)}
}

func (h *parkingHandler) Handle(_ context.Context, req *Request, respond Respond) {
	h.parked <- parkedRequest{req, respond}
}

func (h *parkingHandler) next(t testing.TB) parkedRequest {
	t.Helper()
	select {
	case p := <-h.parked:
		return p
	case <-time.After(waitLimit):
		t.Fatal("no request reached the handler")
		return parkedRequest{}
	}
}

// answer responds to a parked request with an empty response of its kind.
func (p parkedRequest) answer() {
	resp := p.req.Body.ResponseKind()
	p.respond(resp, nil)
}

// recordingLogHandler counts log records by level, for asserting "logged once".
type recordingLogHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingLogHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingLogHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordingLogHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingLogHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingLogHandler) atLevel(level slog.Level) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.records {
		if r.Level == level {
			out = append(out, r)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (s *Server) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}
