package main

import (
	"testing"
	"time"
)

func TestHistIndexIsMonotonicAndInvertible(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 123456789, 1 << 40, 1<<62 + 12345} {
		i := histIndex(v)
		if i < prev {
			t.Fatalf("index(%d)=%d below previous %d", v, i, prev)
		}
		prev = i
		if low, next := histBucketLow(i), histBucketLow(i+1); v < low || v >= next {
			t.Fatalf("value %d not in its bucket [%d,%d)", v, low, next)
		}
	}
}

func TestHistQuantilesWithinOnePercent(t *testing.T) {
	var h hist
	for i := 1; i <= 100000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {0.999, 99900 * time.Microsecond}, {1, 100 * time.Millisecond}} {
		got := h.quantile(tc.q)
		if diff := float64(got-tc.want) / float64(tc.want); diff > 0.01 || diff < -0.01 {
			t.Errorf("quantile(%v) = %v, want %v within 1%%", tc.q, got, tc.want)
		}
	}
	var other hist
	other.record(time.Second)
	h.merge(&other)
	if h.total != 100001 || h.quantile(1) != time.Second {
		t.Errorf("after merge: total %d max %v", h.total, h.quantile(1))
	}
}

func TestHistEmpty(t *testing.T) {
	var h hist
	if h.quantile(0.99) != 0 || h.mean() != 0 {
		t.Fatal("empty histogram must report zero")
	}
}
