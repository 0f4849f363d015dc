package broker

import (
	"testing"
	"time"
)

// TestLongPollFetchWokenByProduce parks a fetch whose wait (5 minutes) far exceeds the test's
// deadline: only the produce can answer it in time.
func TestLongPollFetchWokenByProduce(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "lp", 2, nil)
	req := fetchReq(0, -1, "lp", map[int32]int64{0: 0, 1: 0})
	req.MinBytes, req.MaxWaitMillis = 1, 300_000
	answered := make(chan map[int32]int, 1)
	go func() { answered <- partitionsIn(t, tb.direct(t, req)) }()
	tb.produce(t, "lp", 1, 1)
	got := <-answered
	if got[1] == 0 {
		t.Fatalf("woken fetch answered %v, want records in partition 1", got)
	}
}

// TestLongPollFetchTimesOut answers an unsatisfied fetch empty once MaxWaitMillis passes.
func TestLongPollFetchTimesOut(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "lp", 1, nil)
	req := fetchReq(0, -1, "lp", map[int32]int64{0: 0})
	req.MinBytes, req.MaxWaitMillis = 1, 50
	got := partitionsIn(t, tb.direct(t, req))
	if n, ok := got[0]; !ok || n != 0 {
		t.Fatalf("expired fetch answered %v, want partition 0 without records", got)
	}
}

// TestDrainAnswersParkedFetches is the regression test for shutdown waiting out parked long
// polls: Drain answers a parked fetch (MaxWait 5 minutes) at once, and a fetch that arrives
// while draining is answered without parking.
func TestDrainAnswersParkedFetches(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "lp", 1, nil)
	req := fetchReq(0, -1, "lp", map[int32]int64{0: 0})
	req.MinBytes, req.MaxWaitMillis = 1, 300_000
	answered := make(chan map[int32]int, 1)
	go func() { answered <- partitionsIn(t, tb.direct(t, req)) }()
	deadline := time.Now().Add(testWait)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for parked := 0; parked == 0; <-poll.C { // a condition with a deadline, polled
		parked = tb.Broker.purgatory.Len()
		if time.Now().After(deadline) {
			t.Fatal("the fetch never parked")
		}
	}
	tb.Broker.Drain()
	if got := <-answered; got[0] != 0 {
		t.Fatalf("drained fetch answered %v, want partition 0 without records", got)
	}
	if got := partitionsIn(t, tb.direct(t, req)); got[0] != 0 {
		t.Fatalf("fetch while draining answered %v", got)
	}
}
