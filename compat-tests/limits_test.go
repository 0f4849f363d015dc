package compattests

// Resource limits seen from outside: the request memory bound (queued.max.request.bytes) under
// a slowloris of huge frames, and the connection quotas (max.connections.per.ip and its
// overrides, max.connections, max.connection.creation.rate), on raw sockets against a real
// process.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultRequestMemoryBound is sluice's documented queued.max.request.bytes when the key is left
// at Kafka's default of -1 (wire.DefaultQueuedMaxRequestBytes at socket.request.max.bytes =
// 100 MiB): request bytes held at once stay within it.
const defaultRequestMemoryBound = 512 << 20

// rssAllowance is what the broker's resident memory may grow by beyond the request bytes it
// holds while the slowloris runs: goroutine stacks, read buffers and the runtime's own slack.
const rssAllowance = 128 << 20

// TestSlowlorisLargeFramesStayUnderMemoryBound is the regression test for 40 connections each
// sending all but the last byte of a 100 MB frame taking the broker to 5.4 GB: the broker's
// resident memory stays under the documented request memory bound (plus rssAllowance over its
// resident memory before), and a well-behaved client's produce succeeds while the 40 are
// connected and stuck.
func TestSlowlorisLargeFramesStayUnderMemoryBound(t *testing.T) {
	const (
		conns     = 40
		frameSize = 100 << 20 // socket.request.max.bytes, Kafka's default
		writeSize = 1 << 20
	)
	b := StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("honest"),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(value string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr()
	}
	if err := produce("before"); err != nil {
		t.Fatalf("produce before the slowloris: %v", err)
	}
	baseline := processRSS(t, b)

	var written atomic.Int64 // slowloris bytes accepted by the kernel
	var lastProgress atomic.Int64
	lastProgress.Store(time.Now().UnixNano())
	var finished atomic.Int32
	var wg sync.WaitGroup
	var attackers []net.Conn
	for range conns {
		conn := dialRaw(t, b.Addr)
		conn.SetDeadline(time.Time{})
		attackers = append(attackers, conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunk := make([]byte, writeSize)
			binary.BigEndian.PutUint32(chunk, frameSize)
			for left := frameSize + 4 - 1; left > 0; { // everything but the frame's last byte
				n, err := conn.Write(chunk[:min(left, writeSize)])
				written.Add(int64(n))
				lastProgress.Store(time.Now().UnixNano())
				if err != nil {
					return
				}
				left -= n
				clear(chunk[:4])
			}
			finished.Add(1)
		}()
	}
	defer func() {
		for _, c := range attackers {
			c.Close()
		}
		wg.Wait()
	}()

	// Sample the broker's memory until the attack is stuck: every writer done, or none able to
	// write for 3 s (the broker no longer reads their frames).
	var peak atomic.Int64
	sample := func() {
		if rss := processRSS(t, b); rss > peak.Load() {
			peak.Store(rss)
		}
	}
	waitFor(t, 3*time.Minute, "slowloris writers done or stuck", func() error {
		sample()
		if finished.Load() == conns {
			return nil
		}
		if since := time.Since(time.Unix(0, lastProgress.Load())); since < 3*time.Second {
			return fmt.Errorf("%d MiB written, still moving", written.Load()>>20)
		}
		return nil
	})
	t.Logf("slowloris: %d MiB written by %d connections (%d finished their part); broker RSS %d MiB before, peak %d MiB",
		written.Load()>>20, conns, finished.Load(), baseline>>20, peak.Load()>>20)

	// An ordinary client is served while the 40 hold their half frames.
	for i := range 3 {
		if err := produce(fmt.Sprintf("during-%d", i)); err != nil {
			t.Fatalf("produce while the slowloris holds memory: %v", err)
		}
		sample()
	}
	if bound := baseline + defaultRequestMemoryBound + rssAllowance; peak.Load() > bound {
		t.Errorf("broker resident memory peaked at %d MiB, over the bound of %d MiB (%d MiB before + %d MiB request memory + %d MiB allowance)",
			peak.Load()>>20, bound>>20, baseline>>20, defaultRequestMemoryBound>>20, rssAllowance>>20)
	}
	if !strings.Contains(b.Log(), "request memory bound reached") {
		t.Error("the broker never logged that reading paused at the request memory bound")
	}
	if !b.Alive() {
		t.Fatal("sluice died under the slowloris")
	}
}

// apiVersionsOn sends ApiVersions on conn and reports the result.
func apiVersionsOn(conn net.Conn, correlationID int32) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "sluice-compat-tests"
	req.ClientSoftwareVersion = "1"
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := roundTrip(conn, req, resp, correlationID); err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions error %d", resp.ErrorCode)
	}
	return nil
}

// openServed opens n connections that each get an ApiVersions answer. A connection the broker
// refuses is retried: the harness's readiness probe may not be counted out yet.
func openServed(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var out []net.Conn
	for len(out) < n {
		waitFor(t, 20*time.Second, fmt.Sprintf("connection %d served", len(out)+1), func() error {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return err
			}
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if err := apiVersionsOn(conn, 1); err != nil {
				conn.Close()
				return err
			}
			out = append(out, conn)
			return nil
		})
	}
	t.Cleanup(func() {
		for _, c := range out {
			c.Close()
		}
	})
	return out
}

// TestMaxConnectionsPerIP is the regression test for max.connections.per.ip (and its overrides)
// being accepted and ignored: with N open from 127.0.0.1, the N+1st connection is closed at
// once, the N keep working, and once one closes a new one is served.
func TestMaxConnectionsPerIP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []string
		limit    int
	}{
		{"max.connections.per.ip", []string{"max.connections.per.ip=3"}, 3},
		{"overrides", []string{"max.connections.per.ip=50", "max.connections.per.ip.overrides=127.0.0.1:2,10.1.2.3:7"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := StartBroker(t, tc.settings...)
			open := openServed(t, b.Addr, tc.limit)

			extra := dialRaw(t, b.Addr)
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			if err := writeRequest(extra, req, 9); err != nil && !isClosed(err) {
				t.Fatal(err)
			}
			expectClosed(t, extra, fmt.Sprintf("connection %d from one address", tc.limit+1))

			for i, c := range open {
				if err := apiVersionsOn(c, int32(10+i)); err != nil {
					t.Fatalf("connection %d of %d stopped working: %v", i+1, tc.limit, err)
				}
			}
			open[0].Close()
			openServed(t, b.Addr, 1) // a slot freed is a slot usable again
			if !strings.Contains(b.Log(), "connection refused: address already has max.connections.per.ip connections") {
				t.Error("the refusal was not logged")
			}
		})
	}
}

// TestMaxConnectionsWaits is the regression test for max.connections being accepted and
// ignored: at the limit a new connection is not served (the broker stops accepting, as Kafka's
// acceptor blocks) until an open one closes, and then it is.
func TestMaxConnectionsWaits(t *testing.T) {
	b := StartBroker(t, "max.connections=2")
	open := openServed(t, b.Addr, 2)

	waiting := dialRaw(t, b.Addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if err := writeRequest(waiting, req, 5); err != nil {
		t.Fatal(err)
	}
	waiting.SetReadDeadline(time.Now().Add(time.Second))
	var one [1]byte
	if n, err := waiting.Read(one[:]); n > 0 || !isTimeout(err) {
		t.Fatalf("third connection with max.connections=2: read %d bytes, err %v; want no answer yet", n, err)
	}
	open[1].Close()
	waiting.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := readResponse(waiting, resp, 5); err != nil {
		t.Fatalf("third connection once one closed: %v", err)
	}
	if err := apiVersionsOn(open[0], 6); err != nil {
		t.Fatalf("first connection: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// TestMaxConnectionCreationRate is the regression test for max.connection.creation.rate being
// accepted and ignored: at 2 a second (a burst of 2 allowed), 8 connections cannot all be
// served in less than 3 s. (A lower bound only: a slow machine makes it longer, never shorter.)
func TestMaxConnectionCreationRate(t *testing.T) {
	b := StartBroker(t, "max.connection.creation.rate=2")
	// Let the readiness probe's token be spent and refilled: start from a full bucket.
	openServed(t, b.Addr, 1)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			if err := apiVersionsOn(conn, 1); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a throttled connection failed instead of waiting: %v", err)
	}
	if took := time.Since(start); took < 2500*time.Millisecond {
		t.Fatalf("8 connections at max.connection.creation.rate=2 were all served in %v", took)
	}
}

// TestRequestLimitsValidated: the limit keys are checked at start as Kafka checks them.
func TestRequestLimitsValidated(t *testing.T) {
	bin := sluiceBinary(t)
	for _, tc := range []struct{ set, want string }{
		{"queued.max.request.bytes=1000", "queued.max.request.bytes"},
		{"max.connections.per.ip=0", "max.connections.per.ip"},
		{"max.connections.per.ip.overrides=127.0.0.1", "max.connections.per.ip.overrides"},
	} {
		_, stderr, err := runCmdErr(20*time.Second, "", bin, "--set", "log.dirs="+t.TempDir(),
			"--set", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", freePort(t)), "--set", tc.set)
		if err == nil || !strings.Contains(stderr, tc.want) {
			t.Errorf("--set %s: err %v, stderr %q; want a start error naming %s", tc.set, err, stderr, tc.want)
		}
	}
}
