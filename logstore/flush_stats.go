package logstore

import (
	"sync/atomic"
	"time"
)

// FlushBuckets are the upper bounds, in seconds, of the fsync latency histogram
// (FlushLatencies).
var FlushBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// flushStats is the process-wide histogram of log fsyncs: the group-committed data fsyncs of
// flush.messages and the background fsyncs of rolled segments (Kafka's LogFlushRateAndTimeMs).
var flushStats struct {
	buckets [14]atomic.Uint64 // len(FlushBuckets)+1: the last counts what is above every bound
	count   atomic.Uint64
	nanos   atomic.Uint64
}

// observeFlush records one fsync that took d.
func observeFlush(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(FlushBuckets) && s > FlushBuckets[i] {
		i++
	}
	flushStats.buckets[i].Add(1)
	flushStats.count.Add(1)
	flushStats.nanos.Add(uint64(d.Nanoseconds()))
}

// FlushLatencies returns the fsync histogram since the process started: per bucket of
// FlushBuckets the cumulative count of fsyncs at or below its bound, the total count and
// the total seconds.
func FlushLatencies() (cumulative []uint64, count uint64, seconds float64) {
	cumulative = make([]uint64, len(FlushBuckets))
	var run uint64
	for i := range FlushBuckets {
		run += flushStats.buckets[i].Load()
		cumulative[i] = run
	}
	return cumulative, flushStats.count.Load(), float64(flushStats.nanos.Load()) / 1e9
}
