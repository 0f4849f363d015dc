package replica

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Operation is a delayed operation (Kafka's DelayedOperation): a request that waits for
// something to happen on some partitions, or for its timeout.
type Operation interface {
	// TryComplete answers the operation if it can and reports whether it did. expired is true
	// once its timeout passed or the purgatory is closing: then it must answer with what it
	// has. It is called by one goroutine at a time, never again after it returned true.
	TryComplete(expired bool) bool
}

// Purgatory holds delayed operations keyed by what they wait on (a partition). Wake(key),
// a timeout, or Delayed.Wake queues the operations for one worker (Run), which calls
// TryComplete; no goroutine waits per operation, and the callers of Wake (appenders holding
// locks) never run an operation's work. An operation is queued at most once at a time, so the
// queue is bounded by the operations held, which the broker bounds by connections ×
// in-flight requests per connection.
type Purgatory[K comparable] struct {
	clock  Clock
	signal chan struct{} // capacity 1: a wake-up is never lost and never blocks
	// held counts operations not yet completed, so Wake costs nothing while none waits.
	held atomic.Int64
	mu   struct {
		sync.Mutex
		closed   bool
		watchers map[K]map[*Delayed[K]]struct{}
		all      map[*Delayed[K]]struct{}
		queue    []*Delayed[K]
	}
}

// Delayed is an operation held by a purgatory.
type Delayed[K comparable] struct {
	p       *Purgatory[K]
	op      Operation
	keys    []K
	timer   Timer // guarded by p.mu
	queued  atomic.Bool
	expired atomic.Bool
	done    atomic.Bool
}

// NewPurgatory returns an empty purgatory whose timeouts run on clock.
func NewPurgatory[K comparable](clock Clock) *Purgatory[K] {
	if clock == nil {
		clock = SystemClock{}
	}
	p := &Purgatory[K]{clock: clock, signal: make(chan struct{}, 1)}
	p.mu.watchers = make(map[K]map[*Delayed[K]]struct{})
	p.mu.all = make(map[*Delayed[K]]struct{})
	return p
}

// Add holds op until it completes, watching keys, with the given timeout; it is evaluated once
// more by the worker right away, in case what it waits for happened before it was watched.
// After Close, op is completed at once (expired) on the caller's goroutine and Add returns nil.
func (p *Purgatory[K]) Add(op Operation, keys []K, timeout time.Duration) *Delayed[K] {
	d := &Delayed[K]{p: p, op: op, keys: keys}
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		d.done.Store(true)
		op.TryComplete(true)
		return nil
	}
	p.held.Add(1)
	p.mu.all[d] = struct{}{}
	for _, k := range keys {
		w := p.mu.watchers[k]
		if w == nil {
			w = make(map[*Delayed[K]]struct{})
			p.mu.watchers[k] = w
		}
		w[d] = struct{}{}
	}
	d.timer = p.clock.AfterFunc(timeout, func() {
		d.expired.Store(true)
		d.Wake()
	})
	p.mu.Unlock()
	d.Wake()
	return d
}

// Wake queues the operations watching key. It never blocks and never runs an operation.
func (p *Purgatory[K]) Wake(key K) {
	if p.held.Load() == 0 {
		return
	}
	p.mu.Lock()
	n := 0
	for d := range p.mu.watchers[key] {
		if d.queued.CompareAndSwap(false, true) {
			p.mu.queue = append(p.mu.queue, d)
			n++
		}
	}
	p.mu.Unlock()
	if n > 0 {
		p.kick()
	}
}

// Wake queues d for evaluation (its context ended, say). It never blocks.
func (d *Delayed[K]) Wake() {
	if d == nil || d.done.Load() || !d.queued.CompareAndSwap(false, true) {
		return
	}
	p := d.p
	p.mu.Lock()
	p.mu.queue = append(p.mu.queue, d)
	p.mu.Unlock()
	p.kick()
}

func (p *Purgatory[K]) kick() {
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

// ExpireWhere ends the wait of every held operation that match selects: it is queued for the
// worker as if its timeout had passed. It never blocks and never runs an operation.
func (p *Purgatory[K]) ExpireWhere(match func(Operation) bool) {
	p.mu.Lock()
	var chosen []*Delayed[K]
	for d := range p.mu.all {
		if match(d.op) {
			chosen = append(chosen, d)
		}
	}
	p.mu.Unlock()
	for _, d := range chosen {
		d.expired.Store(true)
		d.Wake()
	}
}

// Len is the number of operations held.
func (p *Purgatory[K]) Len() int { return int(p.held.Load()) }

// RunPending evaluates every queued operation once, on the caller's goroutine. Run calls it;
// tests call it directly instead of running a worker.
func (p *Purgatory[K]) RunPending() {
	p.mu.Lock()
	batch := p.mu.queue
	p.mu.queue = nil
	p.mu.Unlock()
	for _, d := range batch {
		d.queued.Store(false)
		p.evaluate(d, d.expired.Load())
	}
}

func (p *Purgatory[K]) evaluate(d *Delayed[K], expired bool) {
	if d.done.Load() || !d.op.TryComplete(expired) {
		return
	}
	d.done.Store(true)
	p.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	if _, ok := p.mu.all[d]; ok {
		delete(p.mu.all, d)
		p.held.Add(-1)
	}
	for _, k := range d.keys {
		if w := p.mu.watchers[k]; w != nil {
			delete(w, d)
			if len(w) == 0 {
				delete(p.mu.watchers, k)
			}
		}
	}
	p.mu.Unlock()
}

// Run is the worker: it evaluates woken operations until stop is closed, then closes the
// purgatory, completing every held operation.
func (p *Purgatory[K]) Run(stop <-chan struct{}) {
	for {
		select {
		case <-p.signal:
			p.RunPending()
		case <-stop:
			p.Close()
			return
		}
	}
}

// Close completes every held operation (expired) and makes later Adds complete at once.
// REQUIRES: no worker running (Run calls it as it ends).
func (p *Purgatory[K]) Close() {
	p.mu.Lock()
	p.mu.closed = true
	all := make([]*Delayed[K], 0, len(p.mu.all))
	for d := range p.mu.all {
		all = append(all, d)
	}
	p.mu.queue = nil
	p.mu.Unlock()
	for _, d := range all {
		p.evaluate(d, true)
	}
}

// AckWait is one partition's part of an acks=all produce (Kafka's DelayedProduce keeps one
// per partition): the records up to Required-1 were appended at AppendEpoch and wait for the
// HW to reach Required.
type AckWait struct {
	Replica     *Replica
	Required    int64
	AppendEpoch int32
	MinInsync   int32
	// Done and Err are the outcome once checked: Err is nil (replicated),
	// NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER, or REQUEST_TIMED_OUT.
	Done bool
	Err  error
}

// Check updates the outcome and reports whether it is settled; expired settles it with
// REQUEST_TIMED_OUT when the HW has not reached Required.
func (w *AckWait) Check(expired bool) bool {
	if w.Done {
		return true
	}
	w.Done, w.Err = w.Replica.CheckEnoughReplicasReachOffset(w.Required, w.AppendEpoch, w.MinInsync)
	if !w.Done && expired {
		w.Done, w.Err = true, kerr.RequestTimedOut
	}
	return w.Done
}

// DeleteRecordsWait is one partition's part of a DeleteRecords request (Kafka's
// DelayedDeleteRecords keeps one status per partition): the leader moved its log start to
// Required and the request waits for the low watermark — every live replica's log start —
// to reach it.
type DeleteRecordsWait struct {
	Replica  *Replica
	Required int64
	// LowWatermark is the answer's low watermark: the one of the leader's move until the
	// wait completes, then the one that completed it (-1 on NOT_LEADER_OR_FOLLOWER).
	LowWatermark int64
	// Done and Err are the outcome once checked: Err is nil (every replica moved),
	// NOT_LEADER_OR_FOLLOWER, or REQUEST_TIMED_OUT.
	Done bool
	Err  error
}

// Check updates the outcome and reports whether it is settled; expired settles it with
// REQUEST_TIMED_OUT (and the low watermark of the leader's move) when the low watermark has
// not reached Required, as Kafka's DelayedDeleteRecords.onExpiration does.
func (w *DeleteRecordsWait) Check(expired bool) bool {
	if w.Done {
		return true
	}
	low, err := w.Replica.LowWatermark()
	switch {
	case err != nil:
		w.Done, w.Err, w.LowWatermark = true, err, -1
	case low >= w.Required:
		w.Done, w.LowWatermark = true, low
	case expired:
		w.Done, w.Err = true, kerr.RequestTimedOut
	}
	return w.Done
}
