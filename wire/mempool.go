package wire

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueuedMaxRequestBytes is the request memory bound sluice uses when
// queued.max.request.bytes is Kafka's default, -1 (unbounded): 512 MiB, or twice the largest
// request (socket.request.max.bytes) if that is more, so that a large frame can always be read.
// A broker reading requests holds at most this many bytes of them, whatever its clients do.
func DefaultQueuedMaxRequestBytes(maxRequestBytes int32) int64 {
	return max(512<<20, 2*int64(maxRequestBytes))
}

// MemoryPool bounds the request bytes held across every connection that shares it, as Kafka's
// memory pool (queued.max.request.bytes) does: a frame's memory is reserved once its size is
// read and before any of its body is (at its buffer's capacity), and given back when the
// request no longer holds it (Request.ReleaseFrame, or its response written). A frame that does not fit waits with its
// connection muted, its bytes left in the kernel; nothing is failed for want of memory.
//
// Unlike Kafka's pool, a quarter of the capacity is kept for frames of at most ordinaryFrameMax
// (1 MiB, the Java producer's and librdkafka's default request size): clients that declare big
// frames and send them slowly (a slowloris) mute each other, not the producers and consumers
// beside them. A frame
// larger than that is reserved at twice its size until its bytes are assembled (it is read in
// chunks as they arrive and copied into one buffer at the end), then at its size.
//
// Safe for concurrent use.
type MemoryPool struct {
	capacity   int64 // > 0
	largeLimit int64 // frames above ordinaryFrameMax are admitted while used stays within this
	log        *slog.Logger

	waits atomic.Uint64 // reservations that had to wait

	mu struct {
		sync.Mutex
		// used is the bytes reserved. Invariant: 0 <= used; used <= capacity except for a
		// frame admitted alone (used was 0) that is larger than the capacity allows.
		used int64
		// freed is closed (and replaced) when used drops while someone waits (waiting set).
		freed   chan struct{}
		waiting bool
		// exhausted is set while some reservation waits, so the warning is logged once per
		// episode; cleared when used falls to half the capacity.
		exhausted bool
	}
}

// NewMemoryPool returns a pool of capacity bytes (at least 1).
func NewMemoryPool(capacity int64, log *slog.Logger) *MemoryPool {
	if log == nil {
		log = slog.Default()
	}
	capacity = max(capacity, 1)
	p := &MemoryPool{capacity: capacity, largeLimit: capacity - capacity/4, log: log}
	p.mu.freed = make(chan struct{})
	return p
}

// Capacity is the pool's bound in bytes.
func (p *MemoryPool) Capacity() int64 { return p.capacity }

// Used is the bytes reserved now.
func (p *MemoryPool) Used() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.used
}

// Waits counts reservations that had to wait for memory.
func (p *MemoryPool) Waits() uint64 { return p.waits.Load() }

// frameCharge is what a frame of size bytes holds of the pool once read: the capacity of its
// buffer (a pooled frame's buffer is its size class, up to twice its size).
func frameCharge(size int) int64 {
	if c := frameClass(size); c >= 0 {
		return 1 << (c + minPooledShift)
	}
	return int64(size)
}

// reservation is what a frame of size bytes reserves while it is read: its charge, or for a
// frame larger than pooledFrameMax twice its size, its chunks and the buffer they are copied
// into.
func reservation(size int) int64 {
	if size > pooledFrameMax {
		return 2 * int64(size)
	}
	return frameCharge(size)
}

// ordinaryFrameMax is the largest frame that may use the quarter of a MemoryPool kept from
// larger ones.
const ordinaryFrameMax = 1 << 20

var errPoolWaitTimeout = errors.New("wire: waited too long for request memory")

// fitsLocked reports whether a reservation of n bytes for a frame of size bytes is admitted now.
// REQUIRES: p.mu held.
func (p *MemoryPool) fitsLocked(n int64, size int) bool {
	if p.mu.used == 0 {
		return true // alone it is always read, so any frame up to MaxRequestBytes is served
	}
	limit := p.capacity
	if size > ordinaryFrameMax {
		limit = p.largeLimit
	}
	return p.mu.used+n <= limit
}

// reserve reserves memory for a frame of size bytes, waiting while it does not fit. It gives up
// with errDraining when drain is closed, with stopped's reason when stopped is closed, and with
// errPoolWaitTimeout after timeout.
func (p *MemoryPool) reserve(size int, drain, stopped <-chan struct{}, timeout time.Duration) (int64, error) {
	n := reservation(size)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	counted := false
	for {
		p.mu.Lock()
		if p.fitsLocked(n, size) {
			p.mu.used += n
			p.mu.Unlock()
			return n, nil
		}
		if !p.mu.exhausted {
			p.mu.exhausted = true
			p.log.Warn("wire: request memory bound reached; connections whose next request does not fit are paused until memory is freed",
				"queued.max.request.bytes", p.capacity, "used", p.mu.used)
		}
		p.mu.waiting = true
		freed := p.mu.freed
		p.mu.Unlock()
		if !counted {
			counted = true
			p.waits.Add(1)
		}
		if timer == nil {
			timer = time.NewTimer(timeout)
		}
		select {
		case <-freed:
		case <-drain:
			return 0, errDraining
		case <-stopped:
			return 0, errConnClosed
		case <-timer.C:
			return 0, errPoolWaitTimeout
		}
	}
}

var errConnClosed = errors.New("wire: connection closed")

// release gives back n reserved bytes.
func (p *MemoryPool) release(n int64) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.mu.used -= n
	if p.mu.used < 0 {
		p.mu.used = 0 // cannot happen; never let accounting wrap
	}
	if p.mu.exhausted && p.mu.used <= p.capacity/2 {
		p.mu.exhausted = false
	}
	if p.mu.waiting {
		p.mu.waiting = false
		close(p.mu.freed)
		p.mu.freed = make(chan struct{})
	}
	p.mu.Unlock()
}
