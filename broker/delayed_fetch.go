package broker

// Delayed fetches, Kafka's fetch purgatory: a fetch that finds less than MinBytes parks on its
// partitions. An append (or high watermark move) to any of them, its timeout, its connection
// closing, or the broker draining for shutdown (Drain) queues it for one worker goroutine, which
// re-reads and answers once enough is there or the wait is over. Once draining, a fetch is
// answered with what there is instead of parking, so a long poll (MaxWait 60 s) never holds up
// shutdown. No goroutine waits per request; the queue
// holds each parked fetch at most once, so it is bounded by the parked fetches, themselves
// bounded by connections × in-flight requests per connection.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

// parkedFetch is one fetch waiting for data.
type parkedFetch struct {
	ctx         context.Context
	req         *kmsg.FetchRequest
	targets     []*fetchTarget
	session     *fetchSession
	sessionID   int32
	incremental bool
	respond     wire.Respond
	deadline    time.Time
	parts       []*Partition // where its waiter is registered

	timer      *time.Timer
	stopCtx    func() bool
	unregister func()
	ready      atomic.Bool // registered everywhere; wake-ups before that are covered by park's own
	queued     atomic.Bool // in the purgatory's queue
	answered   atomic.Bool
}

// fetchPurgatory queues woken parked fetches for its worker.
type fetchPurgatory struct {
	signal chan struct{} // capacity 1: a wake-up is never lost and never blocks
	mu     struct {
		sync.Mutex
		queue  []*parkedFetch
		parked map[*parkedFetch]struct{} // every fetch not yet answered
	}
}

func newFetchPurgatory() *fetchPurgatory {
	q := &fetchPurgatory{signal: make(chan struct{}, 1)}
	q.mu.parked = make(map[*parkedFetch]struct{})
	return q
}

// wake queues f for evaluation unless it is queued already. It never blocks, so partitions may
// call it with their locks held.
func (q *fetchPurgatory) wake(f *parkedFetch) {
	if !f.ready.Load() || f.answered.Load() || !f.queued.CompareAndSwap(false, true) {
		return
	}
	q.mu.Lock()
	q.mu.queue = append(q.mu.queue, f)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// park registers f on its partitions, its timer and its context, then evaluates it once more
// in case data arrived before it was registered.
func (b *Broker) park(f *parkedFetch) {
	q := b.purgatory
	w := &waiter{wake: func() { q.wake(f) }}
	f.unregister = func() {
		for _, p := range f.parts {
			p.removeWaiter(w)
		}
	}
	for _, p := range f.parts {
		p.addWaiter(w)
	}
	f.timer = time.AfterFunc(time.Until(f.deadline), func() { q.wake(f) })
	f.stopCtx = context.AfterFunc(f.ctx, func() { q.wake(f) })
	q.mu.Lock()
	q.mu.parked[f] = struct{}{}
	q.mu.Unlock()
	f.ready.Store(true)
	select {
	case <-b.draining:
		// The worker may be gone: answer now with what there is.
		f.queued.Store(true)
		b.evaluateParked(f, true)
	default:
		q.wake(f)
	}
}

// purgatoryLoop is the worker that re-evaluates woken fetches; once the broker drains it
// answers every parked fetch with what is there and stops.
func (b *Broker) purgatoryLoop() {
	defer b.done.Done()
	q := b.purgatory
	for {
		closing := false
		select {
		case <-q.signal:
		case <-b.draining:
			closing = true
		}
		q.mu.Lock()
		batch := q.mu.queue
		q.mu.queue = nil
		if closing {
			batch = batch[:0]
			for f := range q.mu.parked {
				batch = append(batch, f)
			}
		}
		q.mu.Unlock()
		for _, f := range batch {
			f.queued.Store(false)
			b.evaluateParked(f, closing)
		}
		if closing {
			return
		}
	}
}

// evaluateParked answers f if enough data is there, its wait is over, or it must end now.
func (b *Broker) evaluateParked(f *parkedFetch, force bool) {
	if f.answered.Load() {
		return
	}
	results, readBytes, anyError := b.readTargets(f.req, b.ctrl.Image(), f.targets)
	if !force && readBytes < int64(f.req.MinBytes) && !anyError && time.Now().Before(f.deadline) && f.ctx.Err() == nil {
		return
	}
	if !f.answered.CompareAndSwap(false, true) {
		return // answered by the other evaluator at shutdown
	}
	f.timer.Stop()
	f.stopCtx()
	f.unregister()
	q := b.purgatory
	q.mu.Lock()
	delete(q.mu.parked, f)
	q.mu.Unlock()
	f.respond(b.fetchResponse(f.req, f.sessionID, f.session, f.incremental, f.targets, results), nil)
}
