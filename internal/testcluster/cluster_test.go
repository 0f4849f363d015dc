package testcluster

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBuilt()
	os.Exit(code)
}

// TestClusterLifecycle: three nodes start and agree on an active controller; a topic's leaders
// are found; the controller killed with SIGKILL is replaced and, restarted on its data, serves
// again; a paused node is alive but paused until resumed; Close stops every node.
func TestClusterLifecycle(t *testing.T) {
	c, err := Start(Options{Nodes: 3, Settings: []string{"broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=500"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, err := c.WaitQuorumLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm, cl, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	leaders, err := c.PartitionLeaders(ctx, "t")
	if err != nil || len(leaders) != 3 {
		t.Fatalf("leaders %v, %v", leaders, err)
	}

	if err := c.Node(first).Kill(); err != nil {
		t.Fatal(err)
	}
	if c.Node(first).Alive() {
		t.Fatal("alive after Kill")
	}
	// The survivors name the dead controller until they elect another.
	next := first
	for next == first {
		if next, err = c.WaitQuorumLeader(ctx); err != nil {
			t.Fatalf("after killing controller %d: %v", first, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no controller but %d elected: %v", first, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := c.Node(first).Restart(); err != nil {
		t.Fatal(err)
	}

	paused := c.Node(next)
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	if !paused.Alive() || !paused.Paused() {
		t.Fatal("a paused node is alive and paused")
	}
	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	if paused.Paused() {
		t.Fatal("still paused after Resume")
	}
	if err := paused.WaitReady(StartDeadline); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, n := range c.Nodes {
		if n.Alive() {
			t.Fatalf("node %d alive after Close", n.ID)
		}
	}
}
