package replica

import (
	"testing"
	"time"
)

// countOp completes once ready is set, or when expired.
type countOp struct {
	ready             bool
	calls             int
	answered, expired bool
}

func (o *countOp) TryComplete(expired bool) bool {
	o.calls++
	if !o.ready && !expired {
		return false
	}
	o.answered, o.expired = true, expired
	return true
}

func TestPurgatoryWakesByKeyAndExpires(t *testing.T) {
	clock := NewManualClock(time.Unix(0, 0))
	p := NewPurgatory[string](clock)
	a, b := &countOp{}, &countOp{}
	p.Add(a, []string{"x"}, time.Second)
	p.Add(b, []string{"y"}, 2*time.Second)
	p.RunPending() // the first evaluation after watching
	if a.calls != 1 || b.calls != 1 || p.Len() != 2 {
		t.Fatalf("after add: calls %d %d, held %d", a.calls, b.calls, p.Len())
	}
	a.ready = true
	p.Wake("y") // not a's key
	p.RunPending()
	if a.answered {
		t.Fatal("woken by another key")
	}
	p.Wake("x")
	p.Wake("x") // queued once
	p.RunPending()
	if !a.answered || a.expired || a.calls != 2 {
		t.Fatalf("a: answered %v expired %v calls %d", a.answered, a.expired, a.calls)
	}
	clock.Advance(2 * time.Second)
	p.RunPending()
	if !b.answered || !b.expired || p.Len() != 0 {
		t.Fatalf("b: answered %v expired %v, held %d", b.answered, b.expired, p.Len())
	}
	p.Wake("x")
	p.RunPending()
	if a.calls != 2 {
		t.Fatal("evaluated after it completed")
	}
}

func TestPurgatoryCloseAnswersEverything(t *testing.T) {
	p := NewPurgatory[string](NewManualClock(time.Unix(0, 0)))
	held := &countOp{}
	p.Add(held, []string{"x"}, time.Hour)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { p.Run(stop); close(done) }()
	close(stop)
	<-done
	if !held.answered || !held.expired {
		t.Fatal("a held operation was not answered at close")
	}
	late := &countOp{}
	if d := p.Add(late, []string{"x"}, time.Hour); d != nil || !late.answered {
		t.Fatal("an operation added after close was not answered at once")
	}
}
