package main

import (
	"math"
	"math/bits"
	"time"
)

// histSubBits is the number of mantissa bits kept per power of two: 2^7 = 128 sub-buckets, so
// a recorded value is known to within 1/128 (< 0.8%), like an HDR histogram with two
// significant digits.
const histSubBits = 7

const (
	histSubCount = 1 << histSubBits
	// histBuckets covers every non-negative int64: values below histSubCount are exact, each
	// higher power of two gets histSubCount buckets.
	histBuckets = histSubCount + (63-histSubBits)*histSubCount
)

// hist is a log-bucketed latency histogram of non-negative durations in nanoseconds. It is not
// safe for concurrent use; give each goroutine its own and merge them.
type hist struct {
	counts [histBuckets]uint64
	total  uint64
	sum    float64
	max    int64
}

// histIndex maps a value to its bucket. Values below histSubCount are their own bucket; above,
// the bucket is (power of two, top histSubBits bits below the leading one).
func histIndex(v int64) int {
	if v < histSubCount {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	exp := bits.Len64(uint64(v)) - 1 // >= histSubBits
	shift := exp - histSubBits
	mantissa := int(uint64(v)>>shift) & (histSubCount - 1)
	return histSubCount + shift*histSubCount + mantissa
}

// histBucketLow is the smallest value that maps to bucket i; histBucketLow(i+1)-1 the largest.
func histBucketLow(i int) int64 {
	if i < histSubCount {
		return int64(i)
	}
	shift := (i - histSubCount) / histSubCount
	mantissa := int64((i - histSubCount) % histSubCount)
	return (histSubCount + mantissa) << shift
}

func (h *hist) record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)]++
	h.total++
	h.sum += float64(v)
	if v > h.max {
		h.max = v
	}
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	if o.max > h.max {
		h.max = o.max
	}
}

// quantile returns the value at quantile q in [0,1]: the midpoint of the bucket holding the
// ceil(q*total)-th smallest value, capped at the largest value seen. Zero when empty.
func (h *hist) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low := histBucketLow(i)
			high := histBucketLow(i+1) - 1
			mid := low + (high-low)/2
			return time.Duration(min(mid, h.max))
		}
	}
	return time.Duration(h.max)
}

func (h *hist) mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}
