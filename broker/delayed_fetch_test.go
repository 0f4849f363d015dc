package broker

import (
	"testing"
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
