package main

// The data half of `loadgen scale`'s restart goal: "restart with 100,000 partitions and 10 GB
// of data (clean and after kill -9)". Before the restarts a topic of its own is filled with
// -data-gib GiB of 1 KiB records, and a restart counts as done only when every partition is led
// and that topic's end offsets are back where they were, so a broker that comes up without its
// data (or before it has recovered it) does not finish early.

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dataLoad is what was written before the restarts.
type dataLoad struct {
	Topic      string  `json:"topic"`
	Partitions int     `json:"partitions"`
	Bytes      int64   `json:"bytes"`
	Records    int64   `json:"records"`
	Seconds    float64 `json:"seconds"`
	endOffsets map[int32]int64
}

const dataRecordBytes = 1024

// loadData creates topic with partitions partitions and writes gib GiB of 1 KiB records into it
// (acks=1, no compression, values from one random buffer), then reads back its end offsets.
func loadData(ctx context.Context, addr, topic string, partitions int, gib float64) (*dataLoad, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.RequestTimeoutOverhead(time.Minute), kgo.UnknownTopicRetries(-1))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, int32(partitions), 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1073741824")}, topic)
	if err != nil {
		return nil, err
	}
	if created.Err != nil {
		return nil, created.Err
	}
	// Kafka answers CreateTopics before its partitions have leaders; producing at once would
	// run into UNKNOWN_TOPIC_OR_PARTITION.
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if t, ok := md.Topics[topic]; ok && t.Err == nil && len(t.Partitions) == partitions && ledAll(t.Partitions) {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	pool := make([]byte, 1<<20)
	if _, err := rand.Read(pool); err != nil {
		return nil, err
	}
	want := int64(gib * (1 << 30) / dataRecordBytes)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for i := int64(0); i < want && failed.Load() == nil && ctx.Err() == nil; i++ {
		off := (i * 97) % int64(len(pool)-dataRecordBytes)
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: pool[off : off+dataRecordBytes]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		return nil, fmt.Errorf("producing the data: %w", *p)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	d := &dataLoad{Topic: topic, Partitions: partitions, Records: want, Bytes: want * dataRecordBytes, Seconds: time.Since(start).Seconds()}
	if d.endOffsets, err = endOffsets(ctx, adm, topic); err != nil {
		return nil, err
	}
	var sum int64
	for _, o := range d.endOffsets {
		sum += o
	}
	if sum != want {
		return nil, fmt.Errorf("the data topic's end offsets sum to %d, %d records were acknowledged", sum, want)
	}
	slog.Info("data loaded", "topic", topic, "gib", gib, "seconds", d.Seconds)
	return d, nil
}

// endOffsets lists topic's end offsets.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var perr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && perr == nil {
			perr = o.Err
		}
		out[o.Partition] = o.Offset
	})
	return out, perr
}

// dataBack says whether every partition of d's topic has its end offset back, asking through
// cl (the restart's client, reused on every poll).
func (d *dataLoad) dataBack(ctx context.Context, cl *kgo.Client) bool {
	if d == nil {
		return true
	}
	got, err := endOffsets(ctx, kadm.NewClient(cl), d.Topic)
	return err == nil && maps.Equal(got, d.endOffsets)
}

func ledAll(ps kadm.PartitionDetails) bool {
	for _, p := range ps {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}
