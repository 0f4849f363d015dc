package wire

import (
	"net/netip"
	"testing"
	"time"
)

func TestIPConnectionRateThrottle(t *testing.T) {
	clock := newFakeClock()
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	r := NewIPConnectionRates(IPConnectionRatesConfig{Samples: 2, Window: time.Second, Now: clock.now,
		Quota: func(addr netip.Addr) (float64, bool) {
			switch addr {
			case a:
				return 2, true
			case netip.MustParseAddr("10.0.0.3"):
				return 0, true
			}
			return 0, false
		}})
	// A rate of 2/s over a span of at least one second: two are accepted, the third would
	// make it 3/s, (3-2)/2 × 1 s = 500 ms, and is not counted.
	for i := range 2 {
		if d := r.throttle(a); d != 0 {
			t.Fatalf("connection %d throttled %v", i, d)
		}
	}
	if d := r.throttle(a); d != 500*time.Millisecond {
		t.Fatalf("third connection: %v, want 500ms", d)
	}
	if d := r.throttle(a); d != 500*time.Millisecond {
		t.Fatalf("fourth connection (the third was not counted): %v, want 500ms", d)
	}
	// Another address has its own rate (and no quota).
	for range 10 {
		if d := r.throttle(b); d != 0 {
			t.Fatalf("unquoted address throttled %v", d)
		}
	}
	// A quota of 0 admits nothing.
	if d := r.throttle(netip.MustParseAddr("10.0.0.3")); d != time.Second {
		t.Fatalf("quota 0: %v, want one window", d)
	}
	// Once the samples aged out, connections are accepted again.
	clock.advance(2 * time.Second)
	if d := r.throttle(a); d != 0 {
		t.Fatalf("after the window: throttled %v", d)
	}
}

// TestIPConnectionRateAtAccept: on a listener, a connection over its address's rate is not
// served (a request gets no answer) and is closed; the accepted ones are served.
func TestIPConnectionRateAtAccept(t *testing.T) {
	clock := newFakeClock() // the rate does not depend on how fast the machine is
	rates := NewIPConnectionRates(IPConnectionRatesConfig{Samples: 2, Window: time.Second, Now: clock.now,
		Quota: func(netip.Addr) (float64, bool) { return 1, true }})
	srv := startServer(t, Config{IPRates: rates}, nil)
	first := dial(t, srv)
	first.roundTrip(metadataRequest(1))
	second := dial(t, srv)
	second.send(metadataRequest(1))
	second.expectClosed()
	if n := rates.Throttled(); n != 1 {
		t.Fatalf("%d throttled, want 1", n)
	}
	first.roundTrip(metadataRequest(1)) // the accepted connection is still served
}
