package broker

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

// testWait bounds every wait in these tests. It is generous: a test fails because a condition
// never held, never because the machine is slow.
const testWait = 30 * time.Second

// testBroker is a complete single-node sluice (controller, broker, one PLAINTEXT listener on
// 127.0.0.1) with franz-go clients connected to it. Everything is closed at test cleanup.
type testBroker struct {
	Addr   string
	Dir    string // the log directory
	Static *config.Broker
	Ctrl   *controller.Controller
	Broker *Broker
	Client *kgo.Client
	Admin  *kadm.Client
	// handler serves the listener's requests with the current Broker (restartBroker).
	handler *lateHandler
}

// lateHandler forwards to a Broker set after the listener is up: the listener's port must be
// known before the controller registers this broker's endpoint, and the Broker needs the
// controller.
type lateHandler struct {
	b atomic.Pointer[Broker]
	// observe, when set, sees every request the listener hands on (which versions a client
	// sends).
	observe atomic.Pointer[func(*wire.Request)]
}

func (h *lateHandler) Handle(ctx context.Context, req *wire.Request, respond wire.Respond) {
	if f := h.observe.Load(); f != nil {
		(*f)(req)
	}
	b := h.b.Load()
	if b == nil {
		respond(nil, errUnexpectedBody)
		return
	}
	b.Handle(ctx, req, respond)
}

// startTestBroker starts a single-node cluster. props are extra server.properties keys
// (node.id, log.dirs and listeners are set here unless given).
func startTestBroker(t testing.TB, props map[string]string, opts ...kgo.Opt) *testBroker {
	t.Helper()
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)

	h := &lateHandler{}
	srv, err := wire.Listen(wire.Config{
		Addr:         "127.0.0.1:0",
		ListenerName: "PLAINTEXT",
		Versions:     Versions,
		Logger:       logger,
	}, h)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := srv.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)

	all := map[string]string{
		"node.id":   "1",
		"log.dirs":  filepath.Join(dir, "data"),
		"listeners": "PLAINTEXT://" + addr,
	}
	for k, v := range props {
		all[k] = v
	}
	static, err := config.ParseBroker(all)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logDir := static.LogDirs[0]

	ctrl, err := controller.Start(controller.Config{
		NodeID:    static.NodeID,
		Dir:       filepath.Join(logDir, "__cluster_metadata-0"),
		Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: int32(port)}},
		Logger:    logger,
	})
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	t.Cleanup(func() { _ = ctrl.Close() })

	b, err := New(Config{Static: static, LogDir: logDir, LogDirs: static.LogDirs, Logger: logger}, ctrl)
	if err != nil {
		t.Fatalf("broker: %v", err)
	}
	h.b.Store(b)
	t.Cleanup(func() {
		if b := h.b.Load(); b != nil {
			_ = b.Close()
		}
	})

	base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close) // runs first: clients go before the listener

	return &testBroker{Addr: addr, Dir: logDir, Static: static, Ctrl: ctrl, Broker: b, Client: cl, Admin: kadm.NewClient(cl), handler: h}
}

// testContext is a context bounded by testWait and cancelled at cleanup.
func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic through the API and fails the test on any error.
func (tb *testBroker) createTopic(t testing.TB, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := tb.Admin.CreateTopic(testContext(t), partitions, 1, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v (%s)", name, err, resp.Err, resp.ErrMessage)
	}
}

// produce writes n records with values "v0", "v1", ... to one partition, synchronously.
func (tb *testBroker) produce(t testing.TB, topic string, partition int32, n int) {
	t.Helper()
	ctx := testContext(t)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte("v" + strconv.Itoa(i))}
		if err := tb.Client.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to %s/%d: %v", topic, partition, err)
		}
	}
}

// serveDirect hands req to the broker as the wire layer would; its response arrives on the
// returned channel.
func (tb *testBroker) serveDirect(ctx context.Context, t testing.TB, req kmsg.Request) <-chan kmsg.Response {
	done := make(chan kmsg.Response, 1)
	conn := &wire.ConnInfo{ListenerName: "PLAINTEXT"}
	tb.Broker.Handle(ctx, &wire.Request{Key: req.Key(), Version: req.GetVersion(), Body: req, Conn: conn}, func(resp kmsg.Response, err error) {
		if err != nil {
			t.Errorf("handler error: %v", err)
		}
		done <- resp
	})
	return done
}

// direct serves req on the broker without a network or a client, at req's own version: for
// versions kgo would not pick and for requests kgo would route elsewhere (a broker resource
// naming another node).
func (tb *testBroker) direct(t testing.TB, req kmsg.Request) kmsg.Response {
	t.Helper()
	select {
	case resp := <-tb.serveDirect(testContext(t), t, req):
		if resp == nil {
			t.Fatalf("no response to %s", kmsg.NameForKey(req.Key()))
		}
		return resp
	case <-time.After(testWait):
		t.Fatalf("no response to %s within %v", kmsg.NameForKey(req.Key()), testWait)
		return nil
	}
}
