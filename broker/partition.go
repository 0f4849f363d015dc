package broker

import (
	"sync"
	"sync/atomic"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/logstore"
)

// Partition is one partition replica hosted on this node.
type Partition struct {
	tp      topicPartition
	topicID controller.TopicID
	log     *logstore.Log
	// settings are the topic's resolved configs from the newest applied image.
	settings atomic.Pointer[config.TopicSettings]

	mu struct {
		sync.Mutex
		// leaderEpoch and isLeader come from the newest applied metadata image.
		leaderEpoch int32
		isLeader    bool
		isr         []int32
		// highWatermark: the first offset not yet on every ISR member.
		// Invariant: log start offset <= highWatermark <= log end offset.
		highWatermark int64
		// waiters are parked fetches to wake when the high watermark moves.
		waiters map[*waiter]struct{}
	}
}

func newPartition(tp topicPartition, id controller.TopicID, log *logstore.Log) *Partition {
	p := &Partition{tp: tp, topicID: id, log: log}
	p.mu.waiters = make(map[*waiter]struct{})
	// With this node as the only ISR member everything in the local log is replicated; on
	// restart Kafka likewise moves the HW of a sole-replica leader to its log end offset.
	p.mu.highWatermark = log.LogEndOffset()
	return p
}

// applyMetadata records the leadership described by the image.
func (p *Partition) applyMetadata(info *controller.PartitionInfo, nodeID int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.leaderEpoch = info.LeaderEpoch
	p.mu.isLeader = info.Leader == nodeID
	p.mu.isr = info.ISR
	p.advanceHighWatermarkLocked()
}

// leaderState returns whether this replica leads and its leader epoch.
func (p *Partition) leaderState() (isLeader bool, leaderEpoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.isLeader, p.mu.leaderEpoch
}

// highWatermark returns the current high watermark.
func (p *Partition) highWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.highWatermark
}

// isrSize returns the number of in-sync replicas.
func (p *Partition) isrSize() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.isr)
}

// appended is called after a successful local append: it moves the high watermark as far as
// replication allows and wakes parked fetches.
func (p *Partition) appended() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceHighWatermarkLocked()
	p.wakeWaitersLocked()
}

// advanceHighWatermarkLocked moves the HW to the log end offset when this node is the only ISR
// member. (With followers the HW is the minimum of the ISR's fetch positions; replication
// adds that.)
// REQUIRES: p.mu held.
func (p *Partition) advanceHighWatermarkLocked() {
	if !p.mu.isLeader || len(p.mu.isr) > 1 {
		return
	}
	if leo := p.log.LogEndOffset(); leo > p.mu.highWatermark {
		p.mu.highWatermark = leo
	}
	if start := p.log.LogStartOffset(); start > p.mu.highWatermark {
		p.mu.highWatermark = start
	}
}

// truncatedOrMoved is called after the log start offset moved or the log was truncated, to keep
// the HW invariant and wake fetches whose offsets may now be out of range.
func (p *Partition) truncatedOrMoved() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if start := p.log.LogStartOffset(); start > p.mu.highWatermark {
		p.mu.highWatermark = start
	}
	if leo := p.log.LogEndOffset(); leo < p.mu.highWatermark {
		p.mu.highWatermark = leo
	}
	p.wakeWaitersLocked()
}

// REQUIRES: p.mu held.
func (p *Partition) wakeWaitersLocked() {
	for w := range p.mu.waiters {
		w.wake()
	}
}

func (p *Partition) addWaiter(w *waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.waiters[w] = struct{}{}
}

func (p *Partition) removeWaiter(w *waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.mu.waiters, w)
}

// waiter is a parked request woken by appends to any partition it is registered on. wake must
// not block: partitions call it with their lock held.
type waiter struct {
	wake func()
}
