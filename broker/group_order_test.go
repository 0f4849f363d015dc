package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

// TestGroupCallsOfAConnectionRunInOrder is the regression test for franz-go's TestGroupETL
// KIP-848 cases on three nodes: an OffsetCommit pipelined before a ConsumerGroupHeartbeat on
// one connection could reach the coordinator after it (each ran on its own goroutine), so the
// heartbeat released partitions the commit named and the commit was refused. A connection's
// second call must not start before its first is answered; another connection's may.
func TestGroupCallsOfAConnectionRunInOrder(t *testing.T) {
	ctx := context.Background()
	connA, connB := &wire.ConnInfo{ID: 1}, &wire.ConnInfo{ID: 2}
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	answered := make(chan string, 3)
	respond := func(name string) wire.Respond {
		return func(kmsg.Response, error) { answered <- name }
	}

	secondStarted, otherConnRan := make(chan struct{}), make(chan struct{})
	serveInConnOrder(ctx, connA, func() (kmsg.Response, error) {
		// The first call waits for the other connection's call, which must not be held up,
		// then gives this connection's second call a bounded chance to start too early.
		<-otherConnRan
		select {
		case <-secondStarted:
			note("second started before the first was answered")
		case <-time.After(100 * time.Millisecond):
		}
		note("first")
		return nil, nil
	}, respond("first"))
	serveInConnOrder(ctx, connA, func() (kmsg.Response, error) {
		close(secondStarted)
		note("second")
		return nil, nil
	}, respond("second"))
	serveInConnOrder(ctx, connB, func() (kmsg.Response, error) {
		close(otherConnRan)
		return nil, nil
	}, respond("other"))

	deadline := time.After(30 * time.Second)
	for range 3 {
		select {
		case <-answered:
		case <-deadline:
			t.Fatal("calls not answered")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 || order[0] != "first" || order[1] != "second" {
		t.Fatalf("connection A's calls ran as %v, want [first second]", order)
	}
	groupCallOrder.Lock()
	defer groupCallOrder.Unlock()
	if len(groupCallOrder.last) != 0 {
		t.Fatalf("%d connections still tracked after all their calls were answered", len(groupCallOrder.last))
	}
}
