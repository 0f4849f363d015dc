package wire

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ConnLimitsConfig holds Kafka's connection quotas (SocketServer's ConnectionQuotas). A negative
// value or math.MaxInt32 (Kafka's default for each) means no limit.
type ConnLimitsConfig struct {
	// MaxConnections is max.connections: the most connections open at once across every
	// listener sharing the ConnLimits. At the limit each listener holds the connection it just
	// accepted unserved and accepts no more (the rest wait in the kernel's backlog) until one
	// closes, as Kafka's acceptor blocks.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip: a connection from an address that already
	// has this many is closed at once, as Kafka closes it. 0 is allowed only with overrides
	// (Kafka's rule): every address not named there is refused.
	MaxConnectionsPerIP int
	// PerIPOverrides is max.connections.per.ip.overrides, by address.
	PerIPOverrides map[netip.Addr]int
	// CreationRate is max.connection.creation.rate: new connections per second across the
	// listeners. Past it, accepting waits; a burst of up to one second's worth is accepted at
	// once. 0 accepts one a second, as Kafka's throttle (capped at one quota window) does.
	CreationRate int
	// Now is the clock (tests inject one); nil means time.Now.
	Now func() time.Time
}

// ConnLimits enforces connection quotas across the listeners that share it. Safe for concurrent
// use.
type ConnLimits struct {
	maxConns  int // -1: unlimited; 0 accepts nothing, as in Kafka
	perIP     int // -1: unlimited
	overrides map[netip.Addr]int
	rate      float64 // connections per second; 0: unlimited
	now       func() time.Time

	mu struct {
		sync.Mutex
		// total counts the slots taken by acquire and not yet given back.
		// Invariant: total <= maxConns when maxConns >= 0.
		total int
		// byIP counts registered connections per address. Invariant: sum(byIP) <= total.
		byIP map[netip.Addr]int
		// slotFreed is closed (and replaced) when total drops.
		slotFreed chan struct{}
		// tokens is the creation-rate bucket (at most rate, one second's burst), as of tokensAt.
		tokens   float64
		tokensAt time.Time
	}
}

// unlimited reports whether a Kafka limit value means "no limit".
func unlimited(n int) bool { return n >= math.MaxInt32 }

// NewConnLimits returns the quotas of cfg.
func NewConnLimits(cfg ConnLimitsConfig) *ConnLimits {
	l := &ConnLimits{overrides: cfg.PerIPOverrides, now: cfg.Now, maxConns: -1, perIP: -1}
	if l.now == nil {
		l.now = time.Now
	}
	if !unlimited(cfg.MaxConnections) && cfg.MaxConnections >= 0 {
		l.maxConns = cfg.MaxConnections
	}
	if !unlimited(cfg.MaxConnectionsPerIP) && cfg.MaxConnectionsPerIP >= 0 {
		l.perIP = cfg.MaxConnectionsPerIP
	}
	if !unlimited(cfg.CreationRate) {
		l.rate = max(float64(cfg.CreationRate), 1)
	}
	l.mu.byIP = make(map[netip.Addr]int)
	l.mu.slotFreed = make(chan struct{})
	l.mu.tokens = l.rate
	l.mu.tokensAt = l.now()
	return l
}

// acquire takes a connection slot for a connection just accepted: it waits while
// max.connections are open and while the creation rate is spent. It returns false, holding
// nothing, when stop is closed.
func (l *ConnLimits) acquire(stop <-chan struct{}) bool {
	for {
		l.mu.Lock()
		if l.maxConns >= 0 && l.mu.total >= l.maxConns {
			freed := l.mu.slotFreed
			l.mu.Unlock()
			select {
			case <-freed:
				continue
			case <-stop:
				return false
			}
		}
		wait := l.takeTokenLocked(l.now())
		if wait == 0 {
			l.mu.total++
			l.mu.Unlock()
			return true
		}
		l.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return false
		}
	}
}

// takeTokenLocked takes one connection from the creation-rate bucket as of now, or returns how
// long until one is there (taking nothing).
// REQUIRES: l.mu held.
func (l *ConnLimits) takeTokenLocked(now time.Time) time.Duration {
	if l.rate == 0 {
		return 0
	}
	if elapsed := now.Sub(l.mu.tokensAt); elapsed > 0 {
		l.mu.tokens = min(l.rate, l.mu.tokens+elapsed.Seconds()*l.rate)
		l.mu.tokensAt = now
	}
	if l.mu.tokens >= 1 {
		l.mu.tokens--
		return 0
	}
	return max(time.Duration((1-l.mu.tokens)/l.rate*float64(time.Second)), time.Millisecond)
}

// admit registers an accepted connection from addr under the slot acquire took. Over
// max.connections.per.ip for addr it gives the slot back and returns false with the limit:
// the caller closes the connection.
func (l *ConnLimits) admit(addr netip.Addr) (ok bool, limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit = l.perIP
	if n, ok := l.overrides[addr]; ok {
		limit = n
	}
	if limit >= 0 && !unlimited(limit) && l.mu.byIP[addr] >= limit {
		l.mu.total--
		l.freedLocked()
		return false, limit
	}
	l.mu.byIP[addr]++
	return true, limit
}

// release forgets a connection admit registered.
func (l *ConnLimits) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.byIP[addr]--; l.mu.byIP[addr] <= 0 {
		delete(l.mu.byIP, addr)
	}
	l.mu.total--
	l.freedLocked()
}

// REQUIRES: l.mu held.
func (l *ConnLimits) freedLocked() {
	close(l.mu.slotFreed)
	l.mu.slotFreed = make(chan struct{})
}

// Open returns the number of connections open (or being accepted) under l.
func (l *ConnLimits) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.total
}

// remoteIP is the address a connection's per-IP count is kept under.
func remoteIP(a net.Addr) netip.Addr {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// ParsePerIPOverrides parses max.connections.per.ip.overrides: comma-separated host:count
// pairs, where host is an address or a name (resolved now, every address it has, as Kafka
// resolves it when the quota is configured). An IPv6 address may be written bare or in
// brackets; the count follows the last colon.
func ParsePerIPOverrides(s string, lookup func(host string) ([]net.IP, error)) (map[netip.Addr]int, error) {
	out := make(map[netip.Addr]int)
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		i := strings.LastIndexByte(entry, ':')
		if i <= 0 {
			return nil, fmt.Errorf("entry %q is not host:count", entry)
		}
		host := strings.Trim(strings.TrimSpace(entry[:i]), "[]")
		count, err := strconv.Atoi(strings.TrimSpace(entry[i+1:]))
		if err != nil || count < 0 {
			return nil, fmt.Errorf("entry %q: count must be a non-negative integer", entry)
		}
		if addr, err := netip.ParseAddr(host); err == nil {
			out[addr.Unmap()] = count
			continue
		}
		if lookup == nil {
			lookup = net.LookupIP
		}
		ips, err := lookup(host)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("entry %q: cannot resolve %q: %v", entry, host, err)
		}
		for _, ip := range ips {
			if addr, ok := netip.AddrFromSlice(ip); ok {
				out[addr.Unmap()] = count
			}
		}
	}
	return out, nil
}
