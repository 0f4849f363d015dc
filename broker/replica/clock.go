package replica

import (
	"sort"
	"sync"
	"time"
)

// Clock is the only source of time for replicas and the purgatory. Production code uses
// SystemClock; tests use a ManualClock whose timers fire when the test advances it, so no test
// sleeps.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has elapsed, on a goroutine of the clock's choosing. f must not
	// be called once Stop returned true.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc implements Clock.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock is a Clock that moves only when Advance is called. Timers that come due fire on
// Advance's goroutine, in deadline order (then in creation order), after the clock moved.
type ManualClock struct {
	mu struct {
		sync.Mutex
		now    time.Time
		seq    uint64
		timers map[*manualTimer]struct{}
	}
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	c := &ManualClock{}
	c.mu.now = start
	c.mu.timers = make(map[*manualTimer]struct{})
	return c
}

type manualTimer struct {
	c    *ManualClock
	at   time.Time
	seq  uint64
	f    func()
	done bool // fired or stopped; guarded by c.mu
}

// Now implements Clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.now
}

// AfterFunc implements Clock. It never fires f itself, even for d <= 0: the next Advance does.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.seq++
	t := &manualTimer{c: c, at: c.mu.now.Add(d), seq: c.mu.seq, f: f}
	c.mu.timers[t] = struct{}{}
	return t
}

// Stop implements Timer.
func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	delete(t.c.mu.timers, t)
	return true
}

// Advance moves the clock by d and fires every timer that came due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.mu.now = c.mu.now.Add(d)
	var due []*manualTimer
	for t := range c.mu.timers {
		if !t.at.After(c.mu.now) {
			due = append(due, t)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].at.Equal(due[j].at) {
			return due[i].at.Before(due[j].at)
		}
		return due[i].seq < due[j].seq
	})
	for _, t := range due {
		t.done = true
		delete(c.mu.timers, t)
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}
