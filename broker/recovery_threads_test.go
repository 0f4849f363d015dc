package broker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Partitions used to be opened (and recovered) one after another whatever
// num.recovery.threads.per.data.dir said. runBounded, which reconcile opens them with, runs
// exactly that many at once: all of them reach the barrier together, and never more.
func TestRecoveryThreadsRunInParallelBounded(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		var inFlight, peak atomic.Int32
		arrived := make(chan struct{}, 64)
		release := make(chan struct{})
		var once sync.Once
		done := make(chan struct{})
		go func() {
			runBounded(workers, 20, func(int) {
				n := inFlight.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				arrived <- struct{}{}
				<-release
				inFlight.Add(-1)
			})
			close(done)
		}()
		// The first `workers` calls must all be running at the same time.
		for range workers {
			select {
			case <-arrived:
			case <-time.After(testWait):
				t.Fatalf("workers=%d: fewer than %d opens ran at once", workers, workers)
			}
		}
		once.Do(func() { close(release) })
		select {
		case <-done:
		case <-time.After(testWait):
			t.Fatalf("workers=%d: runBounded did not return", workers)
		}
		if got := peak.Load(); got != int32(workers) {
			t.Fatalf("workers=%d: %d ran at once", workers, got)
		}
	}
}
