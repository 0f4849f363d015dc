package compattests

// request_percentage and connection_creation_rate quotas set with Apache Kafka's kafka-configs
// (kafka.admin.ConfigCommand): a franz-go client whose client id has a tiny
// request_percentage is answered throttle_time_ms (and waits it out, as a KIP-219 client does)
// while another client id sending the same requests is not; with connection_creation_rate on
// --entity-type ips for 127.0.0.1, connections past the rate are closed unserved, and once
// the quota is removed new connections are served again.

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startShortWindowBroker is a sluice whose quota windows are short (two of one second).
func startShortWindowBroker(t *testing.T) *Broker {
	t.Helper()
	return StartBroker(t, "quota.window.num=2", "quota.window.size.seconds=1")
}

func TestRequestPercentageQuota(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	b := startShortWindowBroker(t)
	// 0.01% of a thread is 100 µs of handling a second. sluice answers a Metadata request on
	// an empty cluster in a few µs, so how many requests exceed it depends on the machine (40
	// of them on a loaded one used less than 100 µs and were rightly not throttled): greedy
	// sends requests back to back until one is answered with a throttle, with a deadline.
	out, _ := javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter",
		"--entity-type", "clients", "--entity-name", "greedy", "--add-config", "request_percentage=0.01")
	if !strings.Contains(out, "Completed updating config for client greedy.") {
		t.Errorf("--alter printed %q", out)
	}
	out, _ = javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--describe", "--entity-type", "clients", "--entity-name", "greedy")
	if !strings.Contains(out, "request_percentage=0.01") {
		t.Errorf("--describe does not show the quota:\n%s", out)
	}
	// metadataLoop sends Metadata requests one after another as clientID until one is
	// throttled (untilThrottled) or n were sent, and returns how many it sent.
	metadataLoop := func(clientID string, n int, untilThrottled bool) (*throttleCounter, int) {
		tc := &throttleCounter{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID(clientID), kgo.WithHooks(tc))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sent := 0
		for ; sent < n && !(untilThrottled && tc.n.Load() > 0); sent++ {
			req := kmsg.NewPtrMetadataRequest()
			if _, err := cl.Request(ctx, req); err != nil {
				if untilThrottled && ctx.Err() != nil {
					break // the deadline: the caller reports no throttle
				}
				t.Fatalf("%s: metadata %d: %v", clientID, sent, err)
			}
		}
		return tc, sent
	}
	// A million requests of even 1 µs each are 10 000 times the quota: greedy must be
	// throttled long before, whatever the load.
	const most = 1_000_000
	start := time.Now()
	greedy, sent := metadataLoop("greedy", most, true)
	if greedy.n.Load() == 0 {
		t.Fatalf("greedy: %d requests in %v, none throttled", sent, time.Since(start))
	}
	// Bounded by one quota window (1 s), as Kafka bounds request throttles.
	if ms := greedy.maxMillis.Load(); ms <= 0 || ms > 1000 {
		t.Fatalf("greedy: largest throttle %d ms, want 1..1000", ms)
	}
	// The same requests from a client id without a quota are never throttled.
	if polite, _ := metadataLoop("polite", sent, false); polite.n.Load() != 0 {
		t.Fatalf("polite (no quota): %d throttles in %d requests", polite.n.Load(), sent)
	}
	t.Logf("greedy: throttled %d ms after %d requests in %v", greedy.maxMillis.Load(), sent, time.Since(start))
}

// servedOnNewConnection opens a connection to addr and reports whether an ApiVersions request on it
// was answered (false: closed without an answer).
func servedOnNewConnection(t *testing.T, addr string) bool {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-compat", "1"
	return roundTrip(conn, req, req.ResponseKind(), 1) == nil
}

func TestConnectionCreationRateQuota(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	b := startShortWindowBroker(t)
	out, _ := javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter",
		"--entity-type", "ips", "--entity-name", "127.0.0.1", "--add-config", "connection_creation_rate=2")
	if !strings.Contains(out, "Completed updating config for ip 127.0.0.1.") {
		t.Errorf("--alter printed %q", out)
	}
	// 2 connections a second over a span of at least one second: of 10 opened at once, at
	// most 2 (plus the ones the span lets in while the attempts last) are served.
	served, refused := 0, 0
	for range 10 {
		if servedOnNewConnection(t, b.Addr) {
			served++
		} else {
			refused++
		}
	}
	if refused == 0 || served == 0 {
		t.Fatalf("%d served, %d refused: want both", served, refused)
	}
	t.Logf("connection_creation_rate=2: %d of 10 connections served, %d closed unserved", served, refused)
	// Removed, new connections are served again (once the image has it).
	javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter",
		"--entity-type", "ips", "--entity-name", "127.0.0.1", "--delete-config", "connection_creation_rate")
	waitFor(t, 30*time.Second, "connections served after the quota is removed", func() error {
		for range 10 {
			if !servedOnNewConnection(t, b.Addr) {
				return errRefused
			}
		}
		return nil
	})
}

var errRefused = errors.New("a connection was closed unserved")
