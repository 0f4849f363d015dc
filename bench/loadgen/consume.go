package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeResult is what one backlog read measured.
type consumeResult struct {
	Records int64
	Bytes   int64
	// Elapsed runs from the partition assignment to the last record, excluding the group
	// join, as kafka-consumer-perf-test's fetch.* columns do.
	Elapsed time.Duration
	// Join is client start to partition assignment.
	Join time.Duration
}

// runConsume reads want records of topic from the start as a member of a fresh consumer group.
// noSessions turns off incremental fetch sessions (KIP-227): every fetch is a full one.
func runConsume(ctx context.Context, brokers []string, topic, group string, want int64, timeout time.Duration, noSessions bool) (*consumeResult, error) {
	var assigned atomic.Int64 // unix nanos of the first assignment
	var extra []kgo.Opt
	if noSessions {
		extra = append(extra, kgo.DisableFetchSessions())
	}
	cl, err := kgo.NewClient(append(extra,
		kgo.SeedBrokers(brokers...),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			assigned.CompareAndSwap(0, time.Now().UnixNano())
		}),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DisableAutoCommit(),
	)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var last time.Time
	res := &consumeResult{}
	for res.Records < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return res, fmt.Errorf("read %d of %d records: %w", res.Records, want, ctx.Err())
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("%s/%d: %w", t, p, err) })
		if ferr != nil {
			return res, ferr
		}
		n := int64(0)
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			res.Bytes += int64(len(r.Value))
		})
		if n > 0 {
			res.Records += n
			last = time.Now()
		}
	}
	assignedAt := time.Unix(0, assigned.Load())
	if assigned.Load() == 0 {
		assignedAt = start
	}
	res.Join = assignedAt.Sub(start)
	res.Elapsed = last.Sub(assignedAt)
	return res, nil
}
