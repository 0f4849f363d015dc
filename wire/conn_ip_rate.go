package wire

// Per-IP connection creation rates (the connection_creation_rate client quota of an ip
// entity), as Kafka's ConnectionQuotas enforces them (KIP-612): each accepted connection is
// recorded in its address's rate, measured as Kafka's Rate over quota.window.num samples of
// quota.window.size.seconds. A connection that takes the rate over the address's quota is not
// counted, is not served (nothing is read from it), and is closed once the throttle time
// has passed — (rate − quota) / quota × the measured span, at most one quota window — so the
// client does not reconnect at once, as Kafka's acceptor delays closing it. The listener's
// accept loop goes on at once: other addresses are not held up.

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// maxDelayedCloses bounds the throttled connections held open until their close; past it a
// throttled connection is closed at once.
const maxDelayedCloses = 1024

// IPConnectionRatesConfig configures IPConnectionRates.
type IPConnectionRatesConfig struct {
	// Samples and Window are quota.window.num and quota.window.size.seconds.
	Samples int
	Window  time.Duration
	// Quota returns the connection_creation_rate (connections per second) for an address;
	// ok is false when none applies. It is called once per accepted connection and must be
	// safe for concurrent use.
	Quota func(addr netip.Addr) (rate float64, ok bool)
	// Now is the clock the rates are measured with (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// IPConnectionRates enforces per-address connection creation quotas for the listeners that
// share it. Safe for concurrent use.
type IPConnectionRates struct {
	cfg IPConnectionRatesConfig
	// throttled counts the connections closed for their address's rate.
	throttled atomic.Uint64
	// delayed counts the throttled connections waiting for their close.
	// Invariant: delayed <= maxDelayedCloses.
	delayed atomic.Int64
	mu      struct {
		sync.Mutex
		// meters holds the rate of each address recorded within the kept span; sweepLocked
		// drops the idle ones (bounded by the addresses that connected in the last span).
		meters    map[netip.Addr]*connRate
		lastSweep time.Time
	}
}

// connRate is one address's sampled rate. Guarded by IPConnectionRates.mu.
type connRate struct {
	// Invariant: len(ring) <= samples, starts increasing.
	ring     []connSample
	lastUsed time.Time
}

type connSample struct {
	start time.Time
	count float64
}

// NewIPConnectionRates returns the per-address quotas of cfg.
func NewIPConnectionRates(cfg IPConnectionRatesConfig) *IPConnectionRates {
	cfg.Samples = max(cfg.Samples, 2)
	if cfg.Window <= 0 {
		cfg.Window = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &IPConnectionRates{cfg: cfg}
	r.mu.meters = map[netip.Addr]*connRate{}
	return r
}

// Throttled returns how many connections were closed for their address's creation rate.
func (r *IPConnectionRates) Throttled() uint64 { return r.throttled.Load() }

// throttle records a connection from addr and returns 0 when it may be served, or how long to
// hold it before closing it (it is then not counted).
func (r *IPConnectionRates) throttle(addr netip.Addr) time.Duration {
	bound, ok := r.cfg.Quota(addr)
	if !ok {
		return 0
	}
	if bound <= 0 {
		return r.cfg.Window // a quota of 0 admits nothing
	}
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(now)
	m := r.mu.meters[addr]
	if m == nil {
		m = &connRate{}
		r.mu.meters[addr] = m
	}
	m.lastUsed = now
	r.addLocked(m, now, 1)
	rate, span := r.measureLocked(m, now)
	if rate <= bound {
		return 0
	}
	r.addLocked(m, now, -1) // not accepted, so not counted, as Kafka un-records it
	d := time.Duration((rate - bound) / bound * float64(span))
	return max(min(d, r.cfg.Window), time.Millisecond)
}

// REQUIRES: r.mu held.
func (r *IPConnectionRates) purgeLocked(m *connRate, now time.Time) {
	keep := time.Duration(r.cfg.Samples) * r.cfg.Window
	i := 0
	for i < len(m.ring) && now.Sub(m.ring[i].start) >= keep {
		i++
	}
	if i > 0 {
		m.ring = append(m.ring[:0], m.ring[i:]...)
	}
}

// REQUIRES: r.mu held.
func (r *IPConnectionRates) addLocked(m *connRate, now time.Time, n float64) {
	r.purgeLocked(m, now)
	if k := len(m.ring); k > 0 && now.Sub(m.ring[k-1].start) < r.cfg.Window {
		m.ring[k-1].count += n
		return
	}
	if len(m.ring) == r.cfg.Samples {
		m.ring = append(m.ring[:0], m.ring[1:]...)
	}
	m.ring = append(m.ring, connSample{start: now, count: n})
}

// measureLocked is Kafka's Rate: the samples' total over the time they span, at least
// samples-1 windows. REQUIRES: r.mu held.
func (r *IPConnectionRates) measureLocked(m *connRate, now time.Time) (float64, time.Duration) {
	r.purgeLocked(m, now)
	span := time.Duration(r.cfg.Samples-1) * r.cfg.Window
	if len(m.ring) == 0 {
		return 0, span
	}
	var total float64
	for _, s := range m.ring {
		total += s.count
	}
	span = max(now.Sub(m.ring[0].start), span)
	return total / span.Seconds(), span
}

// sweepLocked drops the meters idle for the whole kept span, at most once a window.
// REQUIRES: r.mu held.
func (r *IPConnectionRates) sweepLocked(now time.Time) {
	if now.Sub(r.mu.lastSweep) < r.cfg.Window {
		return
	}
	r.mu.lastSweep = now
	idle := time.Duration(r.cfg.Samples) * r.cfg.Window
	for a, m := range r.mu.meters {
		if now.Sub(m.lastUsed) >= idle {
			delete(r.mu.meters, a)
		}
	}
}

// closeAfter closes a throttled connection after d, unserved; past maxDelayedCloses at once.
func (r *IPConnectionRates) closeAfter(nc net.Conn, d time.Duration) {
	r.throttled.Add(1)
	if r.delayed.Add(1) > maxDelayedCloses {
		r.delayed.Add(-1)
		_ = nc.Close()
		return
	}
	time.AfterFunc(d, func() {
		_ = nc.Close()
		r.delayed.Add(-1)
	})
}
