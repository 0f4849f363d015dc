package wire

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMemoryPoolAdmission(t *testing.T) {
	const capacity = 64 << 20 // frames over 1 MiB may fill 48 MiB of it
	large := pooledFrameMax + 1
	for _, tc := range []struct {
		name string
		used int64
		size int
		want bool
	}{
		{"anything alone", 0, 100 << 20, true},
		{"ordinary fits", 63 << 20, 1 << 20, true},
		{"ordinary over capacity", 63<<20 + 1, 1 << 20, false},
		{"pooled over 1 MiB past three quarters", 45 << 20, 4 << 20, false},
		{"pooled over 1 MiB within three quarters", 44 << 20, 4 << 20, true},
		{"large within three quarters", 20 << 20, large, true},
		{"large past three quarters", 40 << 20, large, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewMemoryPool(capacity, discardLogger())
			p.mu.used = tc.used
			if got := p.fitsLocked(reservation(tc.size), tc.size); got != tc.want {
				t.Fatalf("fits(used %d, size %d) = %v, want %v", tc.used, tc.size, got, tc.want)
			}
		})
	}
	if reservation(large) != 2*int64(large) || reservation(1000) != 1000 {
		t.Fatal("a large frame reserves twice its size while assembled, a small one its size")
	}
}

func TestMemoryPoolWaitsAndWakes(t *testing.T) {
	p := NewMemoryPool(10, discardLogger())
	n, err := p.reserve(8, nil, nil, waitLimit)
	if err != nil || n != 8 {
		t.Fatalf("reserve: %d, %v", n, err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := p.reserve(5, nil, nil, waitLimit)
		got <- err
	}()
	waitFor(t, "second reservation waiting", func() bool { return p.Waits() == 1 })
	p.release(8)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if p.Used() != 5 {
		t.Fatalf("used %d, want 5", p.Used())
	}
	// A waiter gives up on drain, on its connection closing and after its timeout.
	drain, stopped := make(chan struct{}), make(chan struct{})
	close(drain)
	if _, err := p.reserve(9, drain, nil, waitLimit); err != errDraining {
		t.Fatalf("drain: %v", err)
	}
	close(stopped)
	if _, err := p.reserve(9, nil, stopped, waitLimit); err != errConnClosed {
		t.Fatalf("closed: %v", err)
	}
	if _, err := p.reserve(9, nil, nil, time.Millisecond); err != errPoolWaitTimeout {
		t.Fatalf("timeout: %v", err)
	}
	if p.Used() != 5 {
		t.Fatalf("failed reservations left used at %d", p.Used())
	}
}

// TestSlowlorisDoesNotStarveOrdinaryRequests: clients that declare frames larger than the
// pool's large-frame share and send them partly wait with their connections muted; an ordinary
// request is still served; once they go away the memory is back.
func TestSlowlorisDoesNotStarveOrdinaryRequests(t *testing.T) {
	const frame = pooledFrameMax + 1 // reserves 2 × 8 MiB
	pool := NewMemoryPool(24<<20, discardLogger())
	srv := startServer(t, Config{Memory: pool, MaxRequestBytes: 64 << 20}, nil)
	var loris []*rawClient
	for range 3 {
		c := dial(t, srv)
		head := binary.BigEndian.AppendUint32(nil, frame)
		c.write(append(head, make([]byte, 1<<20)...))
		loris = append(loris, c)
	}
	// The first is admitted alone; the others wait for memory.
	waitFor(t, "two large frames waiting", func() bool { return pool.Waits() >= 2 })
	if used := pool.Used(); used != 2*frame {
		t.Fatalf("used %d, want one large frame's %d", used, 2*frame)
	}
	ok := dial(t, srv)
	if resp := ok.roundTrip(metadataRequest(7)).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatalf("ordinary request during the slowloris: %+v", resp)
	}
	for _, c := range loris {
		c.nc.Close()
	}
	waitFor(t, "memory given back", func() bool { return pool.Used() == 0 })
}

// TestLargeFrameServedUnderPool: a frame above pooledFrameMax is read in chunks and arrives
// whole, and its memory is given back once answered.
func TestLargeFrameServedUnderPool(t *testing.T) {
	pool := NewMemoryPool(64<<20, discardLogger())
	srv := startServer(t, Config{Memory: pool, MaxRequestBytes: 64 << 20}, nil)
	c := dial(t, srv)
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	req.TimeoutMillis = 1000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: make([]byte, pooledFrameMax+3*largeFrameChunk+17)}}}}
	c.roundTrip(req)
	waitFor(t, "memory given back", func() bool { return pool.Used() == 0 })
}

// TestShutdownCutsOffClientThatDoesNotRead is the regression test for Shutdown waiting its whole
// deadline on a connection whose client stopped reading: the stalled write is cut after
// drainWriteTimeout and Shutdown returns without its context ending.
func TestShutdownCutsOffClientThatDoesNotRead(t *testing.T) {
	big := kmsg.NewPtrMetadataResponse()
	for range 20000 {
		big.Topics = append(big.Topics, kmsg.MetadataResponseTopic{Topic: kmsg.StringPtr("a-fairly-long-topic-name-to-fill-socket-buffers")})
	}
	var srv *Server
	srv, err := Listen(Config{Addr: "127.0.0.1:0", Versions: testVersions, Logger: discardLogger()},
		handlerFunc(func(_ context.Context, req *Request, respond Respond) { respond(big, nil) }))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv)
	_ = c.nc.(*net.TCPConn).SetReadBuffer(4096)
	for range 10 {
		c.send(metadataRequest(1))
	}
	waitFor(t, "writer stalled", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for conn := range srv.mu.conns {
			conn.mu.Lock()
			stalled := len(conn.mu.queue) > 0
			conn.mu.Unlock()
			if stalled {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (a client that does not read held it until its deadline)", err)
	}
}

func TestConnLimitsPerIP(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	l := NewConnLimits(ConnLimitsConfig{MaxConnections: 1<<31 - 1, MaxConnectionsPerIP: 2,
		PerIPOverrides: map[netip.Addr]int{b: 0}, CreationRate: 1<<31 - 1})
	admit := func(addr netip.Addr) bool {
		if !l.acquire(nil) {
			t.Fatal("acquire")
		}
		ok, _ := l.admit(addr)
		return ok
	}
	if !admit(a) || !admit(a) {
		t.Fatal("two from one address refused")
	}
	if admit(a) {
		t.Fatal("third from one address admitted over max.connections.per.ip=2")
	}
	if admit(b) {
		t.Fatal("address with override 0 admitted")
	}
	if l.Open() != 2 {
		t.Fatalf("open %d, want 2 (refusals give their slot back)", l.Open())
	}
	l.release(a)
	if !admit(a) {
		t.Fatal("refused after one closed")
	}
}

func TestConnLimitsMaxConnectionsBlocksAccept(t *testing.T) {
	l := NewConnLimits(ConnLimitsConfig{MaxConnections: 1, MaxConnectionsPerIP: 1<<31 - 1, CreationRate: 1<<31 - 1})
	a := netip.MustParseAddr("10.0.0.1")
	if !l.acquire(nil) {
		t.Fatal("acquire")
	}
	l.admit(a)
	got := make(chan bool, 1)
	stop := make(chan struct{})
	go func() { got <- l.acquire(stop) }()
	select {
	case <-got:
		t.Fatal("acquire past max.connections did not wait")
	case <-time.After(50 * time.Millisecond): // a negative check: it has not returned yet
	}
	l.release(a)
	if !<-got {
		t.Fatal("acquire after a release failed")
	}
	go func() { got <- l.acquire(stop) }()
	close(stop)
	if <-got {
		t.Fatal("acquire returned true after stop")
	}
}

func TestConnLimitsCreationRate(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewConnLimits(ConnLimitsConfig{MaxConnections: 1<<31 - 1, MaxConnectionsPerIP: 1<<31 - 1, CreationRate: 4,
		Now: func() time.Time { return now }})
	for i := range 4 {
		if w := l.takeTokenLocked(now); w != 0 {
			t.Fatalf("connection %d of the burst waits %v", i, w)
		}
	}
	if w := l.takeTokenLocked(now); w != 250*time.Millisecond {
		t.Fatalf("fifth waits %v, want 250ms", w)
	}
	now = now.Add(250 * time.Millisecond)
	if w := l.takeTokenLocked(now); w != 0 {
		t.Fatalf("after 250ms waits %v", w)
	}
	now = now.Add(time.Hour)
	for range 4 {
		l.takeTokenLocked(now)
	}
	if w := l.takeTokenLocked(now); w == 0 {
		t.Fatal("the burst after an idle hour exceeded one second's worth")
	}
}

func TestParsePerIPOverrides(t *testing.T) {
	lookup := func(host string) ([]net.IP, error) {
		if host == "broker.example" {
			return []net.IP{net.ParseIP("192.0.2.7")}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host}
	}
	got, err := ParsePerIPOverrides(" 127.0.0.1:5, [::1]:3 ,broker.example:0,", lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]int{
		netip.MustParseAddr("127.0.0.1"): 5,
		netip.MustParseAddr("::1"):       3,
		netip.MustParseAddr("192.0.2.7"): 0,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"127.0.0.1", "127.0.0.1:x", "127.0.0.1:-1", "nowhere.example:3"} {
		if _, err := ParsePerIPOverrides(bad, lookup); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
