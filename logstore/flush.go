package logstore

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// flushState implements group commit: appenders that need durability wait in syncTo; one of
// them fsyncs the active segment while the others wait, and every append published before
// that fsync started is covered by it. So N concurrent appenders share roughly N/k fsyncs.
type flushState struct {
	mu   sync.Mutex
	cond sync.Cond // L = &mu; broadcast after every fsync and on close
	// syncing is true while one goroutine runs an fsync outside mu.
	syncing bool
	// flushedOffset: every offset below it is durable. Invariant: <= Log.mu.logEnd except
	// transiently during truncation, which lowers it and bumps gen.
	flushedOffset int64
	// gen changes whenever the log shrinks (truncation), so an fsync that started before the
	// truncation cannot mark the rewritten offsets durable.
	gen uint64
	// entered and completed count group-commit appends that started and that finished
	// writing. Before an fsync the leader waits for the appends that were in flight when it
	// took the lead (completed >= entered-at-start), so that one fsync covers them too rather
	// than leaving them to the next. Appends take microseconds and fsyncs milliseconds, and the
	// wait is bounded by the appends already in flight, so it cannot starve.
	entered, completed uint64
	// syncs counts group-commit fsyncs (for benchmarks and metrics).
	syncs uint64
	// settledGen is gen as of the last completed truncation.
	settledGen uint64
	// incarnation counts Reopens: an append made before one is never reported durable after
	// it (its fsync may have been the one that failed).
	incarnation uint64
}

// groupCommitEnter/Exit bracket an append that will wait for an fsync.
func (l *Log) groupCommitEnter() {
	l.flush.mu.Lock()
	l.flush.entered++
	l.flush.mu.Unlock()
}

func (l *Log) groupCommitExit() {
	l.flush.mu.Lock()
	l.flush.completed++
	if l.flush.syncing {
		l.flush.cond.Broadcast()
	}
	l.flush.mu.Unlock()
}

func (l *Log) flushedOffset() int64 {
	l.flush.mu.Lock()
	defer l.flush.mu.Unlock()
	return l.flush.flushedOffset
}

func (l *Log) flushGen() uint64 {
	l.flush.mu.Lock()
	defer l.flush.mu.Unlock()
	return l.flush.gen
}

func (l *Log) flushGenIncarnation() (gen, incarnation uint64) {
	l.flush.mu.Lock()
	defer l.flush.mu.Unlock()
	return l.flush.gen, l.flush.incarnation
}

// errReopenedBeforeDurable answers a wait for an append made before a Reopen.
var errReopenedBeforeDurable = fmt.Errorf("%w: %w: the log failed before the append was durable", ErrClosed, ErrStorage)

// markFlushed records that offsets below upto are durable.
func (l *Log) markFlushed(upto int64) {
	l.flush.mu.Lock()
	if upto > l.flush.flushedOffset {
		l.flush.flushedOffset = upto
	}
	l.flush.cond.Broadcast()
	l.flush.mu.Unlock()
}

func (l *Log) markFlushedGen(upto int64, gen uint64) {
	l.flush.mu.Lock()
	if gen == l.flush.gen && upto > l.flush.flushedOffset {
		l.flush.flushedOffset = upto
	}
	l.flush.cond.Broadcast()
	l.flush.mu.Unlock()
}

// resetFlushed lowers the flushed offset when the log starts to shrink; an fsync already
// running cannot mark anything durable any more (gen changes).
// REQUIRES: appendMu held; followed by settleTruncation once the cut is durable.
func (l *Log) resetFlushed(upto int64) {
	l.flush.mu.Lock()
	l.flush.gen++
	if l.flush.flushedOffset > upto {
		l.flush.flushedOffset = upto
	}
	l.flush.mu.Unlock()
}

// settleTruncation records that a truncation finished and its result is durable at logEnd.
// Appenders still waiting for an fsync from before it are released: what remains of their
// batches is durable, and what was cut is gone (as with acks=1 in Kafka).
// REQUIRES: appendMu held.
func (l *Log) settleTruncation(logEnd int64) {
	l.flush.mu.Lock()
	l.flush.settledGen = l.flush.gen
	if logEnd > l.flush.flushedOffset {
		l.flush.flushedOffset = logEnd
	}
	l.flush.cond.Broadcast()
	l.flush.mu.Unlock()
}

// syncTo returns once every offset below target (appended when the flush generation was gen)
// is durable, fsyncing if needed, or once a later truncation settled. Called without appendMu
// so that concurrent appenders share one fsync.
func (l *Log) syncTo(target int64, gen, incarnation uint64) error {
	l.flush.mu.Lock()
	defer l.flush.mu.Unlock()
	for l.flush.flushedOffset < target && l.flush.settledGen <= gen {
		if p := l.failure.Load(); p != nil {
			return *p
		}
		if l.flush.incarnation != incarnation {
			return errReopenedBeforeDurable
		}
		if l.flush.syncing {
			l.flush.cond.Wait()
			continue
		}
		l.flush.syncing = true
		syncGen := l.flush.gen
		// Let appenders just released by the previous fsync (runnable, not yet running) enter,
		// then wait for every append in flight: one fsync covers them all.
		l.flush.mu.Unlock()
		runtime.Gosched()
		l.flush.mu.Lock()
		for inFlight := l.flush.entered; l.flush.completed < inFlight; {
			l.flush.cond.Wait()
		}
		l.flush.mu.Unlock()

		l.mu.RLock()
		closed := l.mu.closed
		var f File
		upto := l.mu.logEnd
		if !closed {
			f = l.active().log
		}
		// Loaded after the active segment: rolled segments before it are covered by rs.
		rs := l.pendingRoll.Load()
		l.mu.RUnlock()
		var err error
		if closed {
			err = ErrClosed
		} else {
			began := time.Now()
			if err = l.syncCreated(); err == nil {
				err = f.Sync()
			}
			observeFlush(time.Since(began))
		}
		if err == nil && rs != nil {
			<-rs.done
			if rs.err != nil {
				l.flush.mu.Lock()
				l.flush.syncing = false
				l.flush.cond.Broadcast()
				return rs.err
			}
		}

		l.flush.mu.Lock()
		l.flush.syncs++
		l.flush.syncing = false
		l.flush.cond.Broadcast()
		if err != nil {
			if syncGen != l.flush.gen || errors.Is(err, os.ErrClosed) {
				continue // the segment was truncated away or replaced meanwhile; retry
			}
			if errors.Is(err, ErrClosed) {
				return err
			}
			l.flush.mu.Unlock()
			err = l.fail(err)
			l.flush.mu.Lock()
			return err
		}
		if syncGen == l.flush.gen && upto > l.flush.flushedOffset {
			l.flush.flushedOffset = upto
		}
	}
	if l.flush.incarnation != incarnation {
		return errReopenedBeforeDurable
	}
	return nil
}
