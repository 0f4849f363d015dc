package broker

// Delayed operations, Kafka's purgatories: a fetch that finds less than MinBytes, and an
// acks=all produce whose records are not yet below the high watermark, are held in the
// broker's replica.Purgatory, keyed by their partitions. A change of a partition's offsets or
// leadership (the replica's OnChange: appends, HW moves, log start moves, role changes), the
// operation's timeout, its connection closing, or the broker shutting down queue it for one
// worker goroutine, which re-checks and answers once it can or its wait is over. Draining for
// shutdown (Drain) answers every held fetch with what it has, and a fetch then answers at once
// instead of being held, so a long poll (MaxWait 60 s) never holds up shutdown. No goroutine
// waits per request; each operation is queued at most once, so the queue is bounded by the
// held operations, themselves bounded by connections × in-flight requests per connection.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/wire"
)

// delayedFetch is one fetch waiting for data.
type delayedFetch struct {
	b           *Broker
	ctx         context.Context
	req         *kmsg.FetchRequest
	listener    string // the listener the fetch arrived on (KIP-392's replica choice)
	targets     []*fetchTarget
	denied      map[*fetchTarget]bool // targets the fetcher may not read (authorize.go)
	session     *fetchSession
	sessionID   int32
	incremental bool
	respond     wire.Respond
	stopCtx     func() bool
}

// TryComplete implements replica.Operation: the fetch answers once MinBytes are ready, a
// partition has an error, its connection is gone, or it expired.
func (f *delayedFetch) TryComplete(expired bool) bool {
	b := f.b
	results, readBytes, anyError := b.readTargets(f.req, f.listener, b.ctrl.Image(), f.targets, f.denied)
	if !expired && readBytes < int64(f.req.MinBytes) && !anyError && f.ctx.Err() == nil && !b.isDraining() {
		return false
	}
	if f.stopCtx != nil {
		f.stopCtx()
	}
	f.respond(b.fetchResponse(f.req, f.sessionID, f.session, f.incremental, f.targets, results), nil)
	return true
}

// parkFetch holds f until it can answer, for at most wait; once the broker drains, it answers
// at once with what there is.
func (b *Broker) parkFetch(f *delayedFetch, wait time.Duration) {
	if b.isDraining() {
		f.TryComplete(true)
		return
	}
	keys := make([]topicPartition, 0, len(f.targets))
	for _, t := range f.targets {
		keys = append(keys, topicPartition{t.topic, t.partition})
	}
	// A closed connection answers (into the void) at once rather than at the timeout.
	var held atomic.Pointer[replica.Delayed[topicPartition]]
	f.stopCtx = context.AfterFunc(f.ctx, func() { held.Load().Wake() })
	held.Store(b.purgatory.Add(f, keys, wait))
	if f.ctx.Err() != nil {
		held.Load().Wake() // ended before it was held
	}
}

// purgatoryLoop is the worker of the purgatory; at shutdown it answers every held operation
// with what is there.
func (b *Broker) purgatoryLoop() {
	defer b.done.Done()
	b.purgatory.Run(b.closing)
}

// delayedProduce is an acks=all produce whose records wait to be on every ISR member.
type delayedProduce struct {
	resp    *kmsg.ProduceResponse
	respond wire.Respond
	waits   []ackWait
}

// ackWait is one partition's wait, with its place in the response.
type ackWait struct {
	replica.AckWait
	key              topicPartition
	topic, partition int
}

// TryComplete implements replica.Operation.
func (d *delayedProduce) TryComplete(expired bool) bool {
	for i := range d.waits {
		if !d.waits[i].Check(expired) {
			return false
		}
	}
	for i := range d.waits {
		w := &d.waits[i]
		if w.Err != nil {
			p := &d.resp.Topics[w.topic].Partitions[w.partition]
			p.ErrorCode = appendErrorCode(w.Err)
			if p.ErrorCode == kerr.RequestTimedOut.Code || p.ErrorCode == kerr.NotLeaderForPartition.Code {
				p.BaseOffset = -1
			}
		}
	}
	d.respond(d.resp, nil)
	return true
}
