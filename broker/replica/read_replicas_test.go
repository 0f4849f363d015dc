package replica

import (
	"slices"
	"testing"
	"time"

	"sluice/logstore"
)

// TestInSyncFollowers: the leader reports the committed ISR's followers with the log ends
// their fetches gave, not a follower that is only being proposed into the ISR, and nothing
// once it follows.
func TestInSyncFollowers(t *testing.T) {
	clock := NewManualClock(time.Unix(100, 0))
	log, err := logstore.Open(t.TempDir(), testLogConfig(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	r := New(log, Options{NodeID: 1, Clock: clock, ReplicaLagTimeMax: time.Second, CheckpointedHighWatermark: -1})
	if err := r.BecomeLeader(1, []int32{1, 2}, []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AppendAsLeader(OriginClient, testBatch(3), AppendOptions{RequiredAcks: 1, MinInsync: 1, LeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := r.UpdateFollowerFetch(2, -1, 3, -1, clock.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := r.UpdateFollowerFetch(3, -1, 3, -1, clock.Now()) // caught up: proposed, not yet committed
	if err != nil || res.Proposal == nil {
		t.Fatalf("follower 3 at the log end: proposal %v, err %v", res.Proposal, err)
	}
	got, leaderEnd, ok := r.InSyncFollowers()
	want := []InSyncFollower{{ID: 2, LogEnd: 3, LastCaughtUp: clock.Now()}}
	if !ok || leaderEnd != 3 || !slices.Equal(got, want) {
		t.Fatalf("InSyncFollowers = %+v, %d, %v; want %+v, 3, true", got, leaderEnd, ok, want)
	}
	if err := r.BecomeLeader(1, []int32{1, 2, 3}, []int32{1, 2, 3}); err != nil { // the expansion committed
		t.Fatal(err)
	}
	if got, _, _ := r.InSyncFollowers(); len(got) != 2 || got[1].ID != 3 || got[1].LogEnd != 3 {
		t.Fatalf("after the expansion: %+v", got)
	}
	if err := r.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if got, _, ok := r.InSyncFollowers(); ok || got != nil {
		t.Fatalf("a follower reports followers %+v (ok %v)", got, ok)
	}
}
