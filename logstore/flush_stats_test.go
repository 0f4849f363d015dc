package logstore

import (
	"testing"
	"time"
)

func TestFlushLatenciesAreCumulative(t *testing.T) {
	before, n0, s0 := FlushLatencies()
	observeFlush(700 * time.Microsecond) // the 0.001 bucket
	observeFlush(3 * time.Millisecond)   // the 0.005 bucket
	observeFlush(10 * time.Second)       // above every bound
	after, n1, s1 := FlushLatencies()
	if n1-n0 != 3 || s1-s0 < 10 {
		t.Fatalf("count %d→%d, seconds %v→%v", n0, n1, s0, s1)
	}
	wantAdded := map[float64]uint64{0.0005: 0, 0.001: 1, 0.0025: 1, 0.005: 2, 5: 2}
	for i, bound := range FlushBuckets {
		if want, ok := wantAdded[bound]; ok && after[i]-before[i] != want {
			t.Errorf("bucket ≤%v grew by %d, want %d", bound, after[i]-before[i], want)
		}
	}
}
