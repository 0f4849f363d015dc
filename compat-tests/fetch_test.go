package compattests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFetchSessionAcrossSegments: a consumer using fetch sessions (KIP-227, franz-go's default)
// reads a partition whose log spans several segments from start to end, while producing goes
// on, without stalling at a segment boundary.
func TestFetchSessionAcrossSegments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := StartBroker(t)
	const topic, partitions, perPartition = "fetch-segments", 2, 6000
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	segmentBytes := "1048576" // Kafka 4's smallest
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, map[string]*string{"segment.bytes": &segmentBytes}, topic); err != nil {
		t.Fatal(err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	// Produce ~1.5 MB per partition of incompressible values, in the background, while the
	// consumer reads.
	produced := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range perPartition {
			for p := range int32(partitions) {
				v := make([]byte, 250)
				for j := range v {
					v[j] = byte(rng.Uint32())
				}
				cl.Produce(ctx, &kgo.Record{Partition: p, Key: []byte(fmt.Sprint(i)), Value: v}, nil)
			}
		}
		produced <- cl.Flush(ctx)
	}()

	readAll(ctx, t, consumer, b.Addr, topic, perPartition, "tailing")
	if err := <-produced; err != nil {
		t.Fatalf("producing: %v", err)
	}
	t.Logf("segments: p0 %s; p1 %s", partitionFiles(b.Dir, topic, 0), partitionFiles(b.Dir, topic, 1))

	// Catching up over a finished log, before and after a restart.
	for _, phase := range []string{"catching up", "catching up after a restart"} {
		if phase == "catching up after a restart" {
			b.Kill()
			b.Restart()
		}
		catchUp, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		readAll(ctx, t, catchUp, b.Addr, topic, perPartition, phase)
		catchUp.Close()
	}
}

// readAll polls consumer until partitions 0 and 1 of topic are read up to n records each,
// checking offsets are dense.
func readAll(ctx context.Context, t *testing.T, consumer *kgo.Client, addr, topic string, n int64, phase string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	next := map[int32]int64{}
	for next[0] < n || next[1] < n {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: consumer stalled at offsets %v of %d; the same partitions read with a fresh client: %s",
				phase, next, n, freshRead(addr, topic, next))
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("%s: fetch %s/%d: %v", phase, topic, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("%s: partition %d: offset %d, want %d", phase, r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
		})
	}
}

// freshRead reports how many records a new client (its own fetch session) gets from each
// partition at the given offsets within a few seconds.
func freshRead(addr, topic string, at map[int32]int64) string {
	offsets := map[int32]kgo.Offset{}
	for p, o := range at {
		offsets[p] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := map[int32]int{}
	for ctx.Err() == nil && len(got) < len(at) {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[r.Partition]++ })
	}
	return fmt.Sprintf("records per partition %v", got)
}
