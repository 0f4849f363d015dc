package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMetadataRoundTripAllVersions(t *testing.T) {
	srv := startServer(t, Config{}, nil)
	c := dial(t, srv)
	for v := int16(0); v <= 12; v++ {
		resp := c.roundTrip(metadataRequest(v)).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 {
			t.Fatalf("v%d: brokers %+v", v, resp.Brokers)
		}
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "wire-test", "1"
		resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(testVersions()) {
			t.Fatalf("ApiVersions v%d: error %d keys %d", v, resp.ErrorCode, len(resp.ApiKeys))
		}
	}
}

func TestApiVersionsUnsupportedVersionFallsBackToV0(t *testing.T) {
	srv := startServer(t, Config{}, nil)
	c := dial(t, srv)
	// A future ApiVersions version: the header is flexible but only its fixed prefix is read.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	frame := encodeRequest(req, 77)
	binary.BigEndian.PutUint16(frame[6:], 99) // version field
	c.write(frame)

	got := c.readFrame()
	if corr := int32(binary.BigEndian.Uint32(got)); corr != 77 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse() // v0, and header v0: body follows the id directly
	if err := resp.ReadFrom(got[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 35 {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != want[0].ApiKey ||
		resp.ApiKeys[0].MinVersion != want[0].MinVersion || resp.ApiKeys[0].MaxVersion != want[0].MaxVersion {
		t.Fatalf("api keys %+v, want %+v", resp.ApiKeys, want)
	}
	// The connection stays usable: the client retries lower.
	c.roundTrip(metadataRequest(12))
}

func TestUnsupportedRequestsCloseConnection(t *testing.T) {
	srv := startServer(t, Config{}, nil)
	good := dial(t, srv)
	cases := map[string]func() []byte{
		"metadata above max": func() []byte {
			f := encodeRequest(metadataRequest(12), 1)
			binary.BigEndian.PutUint16(f[6:], 13)
			return f
		},
		"produce below min": func() []byte {
			req := produceRequest(1)
			req.SetVersion(2)
			return encodeRequest(req, 1)
		},
		"key not in versions": func() []byte { // Fetch: kmsg knows it, the broker does not
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(4)
			return encodeRequest(req, 1)
		},
		"unknown key": func() []byte {
			f := encodeRequest(metadataRequest(1), 1)
			binary.BigEndian.PutUint16(f[4:], 9999)
			return f
		},
		"negative key": func() []byte {
			f := encodeRequest(metadataRequest(1), 1)
			binary.BigEndian.PutUint16(f[4:], 0xffff)
			return f
		},
		"negative ApiVersions version": func() []byte {
			req := kmsg.NewPtrApiVersionsRequest()
			f := encodeRequest(req, 1)
			binary.BigEndian.PutUint16(f[6:], 0xffff)
			return f
		},
	}
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			c := dial(t, srv)
			c.write(frame())
			if name == "negative ApiVersions version" {
				// Kafka answers any unsupported ApiVersions version with the v0 fallback.
				c.readFrame()
				c.roundTrip(metadataRequest(1))
				return
			}
			c.expectClosed()
			good.roundTrip(metadataRequest(9))
		})
	}
}

// TestAbuseDoesNotDisturbOthers sends broken input on many connections while a well-behaved
// client keeps being served.
func TestAbuseDoesNotDisturbOthers(t *testing.T) {
	srv := startServer(t, Config{MaxRequestBytes: 1 << 20}, nil)
	size := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	withSize := func(b []byte) []byte { return append(size(int32(len(b))), b...) }
	metadataV1 := encodeRequest(metadataRequest(1), 5)
	cases := map[string][]byte{
		"negative size":        size(-1),
		"zero size":            size(0),
		"size below header":    withSize([]byte{0, 3, 0, 1, 0, 0, 0}),
		"huge size":            append(size(1<<30), 1, 2, 3),
		"size just over limit": append(size(1<<20+1), make([]byte, 100)...),
		"garbage":              []byte("GET / HTTP/1.1\r\nHost: sluice\r\n\r\n"),
		"client id overruns":   withSize([]byte{0, 3, 0, 1, 0, 0, 0, 5, 0x7f, 0xff, 'a'}),
		"client id length -2":  withSize([]byte{0, 3, 0, 1, 0, 0, 0, 5, 0xff, 0xfe}),
		"flexible header tags overrun": withSize([]byte{
			0, 3, 0, 12, 0, 0, 0, 5, 0xff, 0xff, // metadata v12, null client id
			1, 0, 50, // one tag of 50 bytes, none present
		}),
		"body truncated": func() []byte {
			req := metadataRequest(1)
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("a-topic-name")}}
			f := encodeRequest(req, 1)
			f = f[:len(f)-4]
			binary.BigEndian.PutUint32(f, uint32(len(f)-4))
			return f
		}(),
		"array count beyond body": withSize(append(metadataV1[4:len(metadataV1)-4:len(metadataV1)-4], 0x7f, 0xff, 0xff, 0xff)),
	}
	good := dial(t, srv)
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			c := dial(t, srv)
			c.write(frame)
			c.expectClosed()
			// The well-behaved connection, open throughout, is still served.
			good.roundTrip(metadataRequest(12))
		})
	}
}

func TestTrailingBytesAfterBodyAreIgnored(t *testing.T) {
	srv := startServer(t, Config{}, nil)
	c := dial(t, srv)
	for _, v := range []int16{1, 12} { // header v1 and v2
		f := encodeRequest(metadataRequest(v), 5)
		f = append(f, 9, 9, 9)
		binary.BigEndian.PutUint32(f, uint32(len(f)-4))
		c.write(f)
		if got, _ := c.recv(metadataRequest(v)); got != 5 {
			t.Fatalf("correlation id %d", got)
		}
	}
}

func TestTruncatedFrameThenHangUp(t *testing.T) {
	srv := startServer(t, Config{}, nil)
	c := dial(t, srv)
	f := encodeRequest(metadataRequest(4), 1)
	c.write(f[:len(f)/2])
	_ = c.nc.(*net.TCPConn).CloseWrite()
	c.expectClosed()
	dial(t, srv).roundTrip(metadataRequest(4))
}

func TestClientHalfCloseStillGetsResponses(t *testing.T) {
	h := newParkingHandler(4)
	srv := startServer(t, Config{}, h)
	c := dial(t, srv)
	first := c.send(metadataRequest(4))
	second := c.send(metadataRequest(4))
	_ = c.nc.(*net.TCPConn).CloseWrite() // as `printf ... | nc` does
	p1, p2 := h.next(t), h.next(t)
	p2.answer()
	p1.answer()
	for _, want := range []int32{first, second} {
		if got, _ := c.recv(metadataRequest(4)); got != want {
			t.Fatalf("correlation id %d, want %d", got, want)
		}
	}
	c.expectClosed()
}

func TestHalfFrameStallIsClosedAfterIdleTimeout(t *testing.T) {
	srv := startServer(t, Config{IdleTimeout: 100 * time.Millisecond}, nil)
	for _, cut := range []int{1, 3, 4, 10} { // inside the size, after it, inside the header
		c := dial(t, srv)
		f := encodeRequest(metadataRequest(4), 1)
		c.write(f[:cut])
		start := time.Now()
		c.expectClosed()
		if time.Since(start) < 100*time.Millisecond/2 {
			t.Fatalf("cut %d: closed before the idle timeout", cut)
		}
	}
	// A connection that sends nothing at all is closed too...
	dial(t, srv).expectClosed()
	// ...while others are served.
	dial(t, srv).roundTrip(metadataRequest(4))
}

func TestClientWaitingOnParkedRequestIsNotIdle(t *testing.T) {
	h := newParkingHandler(4)
	srv := startServer(t, Config{IdleTimeout: 20 * time.Millisecond}, h)
	c := dial(t, srv)
	corr := c.send(metadataRequest(3))
	p := h.next(t)
	// Let the idle deadline pass twice while the request is parked.
	waitFor(t, "idle deadlines passing", func() bool { return srv.idleWhileWaiting.Load() >= 2 })
	p.answer()
	if got, _ := c.recv(metadataRequest(3)); got != corr {
		t.Fatalf("correlation id %d", got)
	}
	// With nothing outstanding the same silence closes the connection.
	c.expectClosed()
}

func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	logs := &recordingLogHandler{}
	var srv *Server
	broker := &fakeBroker{versions: testVersions(), addr: func() net.Addr { return srv.Addr() }}
	srv = startServer(t, Config{Logger: slog.New(logs)}, handlerFunc(func(ctx context.Context, req *Request, respond Respond) {
		if m, ok := req.Body.(*kmsg.MetadataRequest); ok && len(m.Topics) == 1 {
			panic("boom")
		}
		broker.Handle(ctx, req, respond)
	}))
	good := dial(t, srv)
	good.roundTrip(metadataRequest(9))

	bad := dial(t, srv)
	req := metadataRequest(9)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	bad.send(req)
	bad.expectClosed()

	good.roundTrip(metadataRequest(9))
	errs := logs.atLevel(slog.LevelError)
	if len(errs) != 1 {
		t.Fatalf("%d error log lines, want 1", len(errs))
	}
	var key int64 = -1
	errs[0].Attrs(func(a slog.Attr) bool {
		if a.Key == "api_key" {
			key = a.Value.Int64()
		}
		return true
	})
	if key != 3 {
		t.Fatalf("panic log api_key %d, want 3", key)
	}
}

func TestRespondErrorClosesConnection(t *testing.T) {
	srv := startServer(t, Config{}, handlerFunc(func(_ context.Context, _ *Request, respond Respond) {
		respond(nil, errors.New("bad request"))
	}))
	c := dial(t, srv)
	c.send(metadataRequest(1))
	c.expectClosed()
}

func TestResponsesLeaveInRequestOrder(t *testing.T) {
	h := newParkingHandler(16)
	srv := startServer(t, Config{}, h)
	c := dial(t, srv)
	const n = 8
	var sent []int32
	for i := 0; i < n; i++ {
		sent = append(sent, c.send(metadataRequest(int16(i%13))))
	}
	var parked []parkedRequest
	for i := 0; i < n; i++ {
		p := h.next(t)
		if p.req.CorrelationID != sent[i] {
			t.Fatalf("handler saw correlation id %d at position %d, want %d", p.req.CorrelationID, i, sent[i])
		}
		parked = append(parked, p)
	}
	for i := n - 1; i >= 0; i-- { // answer in reverse, from other goroutines
		done := make(chan struct{})
		go func() { parked[i].answer(); close(done) }()
		<-done
	}
	for i := 0; i < n; i++ {
		got, _ := c.recv(metadataRequest(int16(i % 13)))
		if got != sent[i] {
			t.Fatalf("response %d has correlation id %d, want %d", i, got, sent[i])
		}
	}
}

func TestNilResponseSendsNothingAndDoesNotBlockLaterOnes(t *testing.T) {
	h := newParkingHandler(16)
	srv := startServer(t, Config{MaxInFlightPerConn: 2}, h)
	c := dial(t, srv)
	// More acks=0 produces than in-flight slots: each nil response must free its slot.
	var meta []int32
	for i := 0; i < 6; i++ {
		c.send(produceRequest(0))
		if i%2 == 1 {
			meta = append(meta, c.send(metadataRequest(5)))
		}
	}
	for i := 0; i < 9; i++ {
		p := h.next(t)
		if _, ok := p.req.Body.(*kmsg.ProduceRequest); ok {
			p.respond(nil, nil)
		} else {
			p.answer()
		}
	}
	for _, want := range meta {
		if got, _ := c.recv(metadataRequest(5)); got != want {
			t.Fatalf("correlation id %d, want %d", got, want)
		}
	}
}

func TestMaxInFlightBackPressure(t *testing.T) {
	const limit = 2
	var mu sync.Mutex
	handled, answered, maxUnanswered := 0, 0, 0
	parked := make(chan Respond, 100)
	srv := startServer(t, Config{MaxInFlightPerConn: limit}, handlerFunc(func(_ context.Context, req *Request, respond Respond) {
		mu.Lock()
		handled++
		maxUnanswered = max(maxUnanswered, handled-answered)
		mu.Unlock()
		parked <- func(resp kmsg.Response, err error) {
			mu.Lock()
			answered++
			mu.Unlock()
			respond(resp, err)
		}
	}))
	c := dial(t, srv)
	const n = 10
	for i := 0; i < n; i++ {
		c.send(metadataRequest(1))
	}
	// Answer one at a time: each answer lets exactly one more request in.
	for i := 0; i < n; i++ {
		var respond Respond
		select {
		case respond = <-parked:
		case <-time.After(waitLimit):
			t.Fatalf("request %d never reached the handler", i)
		}
		respond(kmsg.NewPtrMetadataResponse(), nil)
		c.recv(metadataRequest(1))
	}
	mu.Lock()
	defer mu.Unlock()
	if maxUnanswered > limit {
		t.Fatalf("%d requests unanswered at once, limit %d", maxUnanswered, limit)
	}
}

func TestWriterBoundedWhenClientDoesNotRead(t *testing.T) {
	// A client that pipelines and never reads must not make the server buffer without bound:
	// with responses unwritten, slots stay taken and the handler sees at most limit requests.
	const limit = 3
	var handled atomic.Int64
	big := kmsg.NewPtrMetadataResponse()
	for i := 0; i < 2000; i++ {
		big.Topics = append(big.Topics, kmsg.MetadataResponseTopic{Topic: kmsg.StringPtr("a-fairly-long-topic-name-to-fill-socket-buffers")})
	}
	srv := startServer(t, Config{MaxInFlightPerConn: limit, IdleTimeout: 200 * time.Millisecond}, handlerFunc(func(_ context.Context, req *Request, respond Respond) {
		handled.Add(1)
		respond(big, nil)
	}))
	c := dial(t, srv)
	_ = c.nc.(*net.TCPConn).SetReadBuffer(4096)
	frame := encodeRequest(metadataRequest(1), 1)
	go func() {
		for i := 0; i < 1000; i++ {
			if _, err := c.nc.Write(frame); err != nil {
				return
			}
		}
	}()
	waitFor(t, "requests handled", func() bool { return handled.Load() >= limit })
	// The stuck write times out after IdleTimeout and the server closes the connection.
	waitFor(t, "connection closed by the server", func() bool { return srv.openConns() == 0 })
	if h := handled.Load(); h >= 1000 {
		t.Fatalf("handled %d requests for a client that read nothing", h)
	}
}

func TestShutdownFinishesInFlightRequests(t *testing.T) {
	h := newParkingHandler(4)
	srv, err := Listen(Config{Addr: "127.0.0.1:0", Versions: testVersions, Logger: discardLogger()}, h)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv)
	corr := c.send(metadataRequest(7))
	p := h.next(t)
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	// Shutdown waits for the parked request...
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	p.answer()
	if got, _ := c.recv(metadataRequest(7)); got != corr {
		t.Fatalf("correlation id %d", got)
	}
	c.expectClosed()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Shutdown did not return")
	}
	if nc, err := net.Dial("tcp", srv.Addr().String()); err == nil {
		nc.Close()
		t.Fatal("still accepting after Shutdown")
	}
}

func TestShutdownDeadlineClosesStuckConnections(t *testing.T) {
	h := newParkingHandler(4)
	srv, err := Listen(Config{Addr: "127.0.0.1:0", Versions: testVersions, Logger: discardLogger()}, h)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv)
	c.send(metadataRequest(7))
	p := h.next(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	c.expectClosed()
	p.answer() // a late answer on a closed connection is harmless
}

// TestConcurrentConnectionsOutOfOrderAnswers runs several pipelining connections whose requests
// are answered from other goroutines in arbitrary order, checking order and ConnInfo.
func TestConcurrentConnectionsOutOfOrderAnswers(t *testing.T) {
	var mu sync.Mutex
	connIDs := map[uint64]bool{}
	active := map[uint64]int{} // Handle calls running per connection: never more than one
	srv := startServer(t, Config{ListenerName: "PLAINTEXT", MaxInFlightPerConn: 7}, handlerFunc(func(_ context.Context, req *Request, respond Respond) {
		mu.Lock()
		connIDs[req.Conn.ID] = true
		active[req.Conn.ID]++
		overlap := active[req.Conn.ID] > 1
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		active[req.Conn.ID]--
		mu.Unlock()
		if overlap {
			respond(nil, errors.New("concurrent Handle calls on one connection"))
			return
		}
		if req.Conn.ListenerName != "PLAINTEXT" || req.Conn.RemoteAddr == nil || req.Conn.LocalAddr == nil {
			respond(nil, errors.New("bad ConnInfo"))
			return
		}
		resp := req.Body.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = req.CorrelationID
		go func() {
			runtime.Gosched()
			respond(resp, nil)
		}()
	}))
	const conns, perConn = 6, 200
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		go func() {
			errs <- func() error {
				nc, err := net.Dial("tcp", srv.Addr().String())
				if err != nil {
					return err
				}
				defer nc.Close()
				go func() {
					for corr := int32(1); corr <= perConn; corr++ {
						if _, err := nc.Write(encodeRequest(metadataRequest(int16(corr%12+1)), corr)); err != nil {
							return
						}
					}
				}()
				br := bufio.NewReader(nc)
				_ = nc.SetReadDeadline(time.Now().Add(waitLimit))
				for corr := int32(1); corr <= perConn; corr++ {
					var size [4]byte
					if _, err := io.ReadFull(br, size[:]); err != nil {
						return err
					}
					frame := make([]byte, binary.BigEndian.Uint32(size[:]))
					if _, err := io.ReadFull(br, frame); err != nil {
						return err
					}
					if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
						return fmt.Errorf("response correlation id %d, want %d", got, corr)
					}
					resp := kmsg.NewPtrMetadataResponse()
					resp.SetVersion(int16(corr%12 + 1))
					body := frame[4:]
					if resp.IsFlexible() {
						body = body[1:]
					}
					if err := resp.ReadFrom(body); err != nil || resp.ControllerID != corr {
						return fmt.Errorf("response %d: controller id %d, err %v", corr, resp.ControllerID, err)
					}
				}
				return nil
			}()
		}()
	}
	for i := 0; i < conns; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(connIDs) != conns {
		t.Fatalf("%d distinct connection ids, want %d", len(connIDs), conns)
	}
}
