package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkCreateTopic measures one CreateTopics round trip (validate, propose, WAL fsync,
// apply, publish) for a one-partition topic.
func BenchmarkCreateTopic(b *testing.B) {
	c := startTest(b, testConfig(b.TempDir()))
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := c.CreateTopics(ctx, []CreateTopic{{Name: fmt.Sprintf("t%d", i), NumPartitions: 1, ReplicationFactor: 1}}, false)
		if err != nil {
			b.Fatal(err)
		} else if res[0].Err != nil {
			b.Fatal(res[0].Err)
		}
	}
}

// BenchmarkCreateTopicParallel shows group commit: concurrent proposals share fsyncs.
func BenchmarkCreateTopicParallel(b *testing.B) {
	c := startTest(b, testConfig(b.TempDir()))
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := c.CreateTopics(ctx, []CreateTopic{{Name: fmt.Sprintf("t%d", n.Add(1)), NumPartitions: 1, ReplicationFactor: 1}}, false)
			if err != nil {
				b.Fatal(err)
			} else if res[0].Err != nil {
				b.Fatal(res[0].Err)
			}
		}
	})
}

// BenchmarkApplyTopic measures the state machine applying one new topic with 10 partitions
// to an image that already holds many topics (copy-on-write cost grows with the topic count).
func BenchmarkApplyTopic(b *testing.B) {
	for _, existing := range []int{100, 10000} {
		b.Run(fmt.Sprintf("existing-%d", existing), func(b *testing.B) {
			img := emptyImage()
			var recs []Record
			for i := 0; i < existing; i++ {
				id := newTopicID()
				recs = append(recs, &TopicRecord{Name: fmt.Sprintf("t%d", i), TopicID: id})
				recs = append(recs, partitionRecords(id, 0, [][]int32{{1}})...)
			}
			img, _ = applyRecords(img, 1, recs)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := newTopicID()
				batch := append([]Record{&TopicRecord{Name: "new", TopicID: id}}, partitionRecords(id, 0, make10(1))...)
				applyRecords(img, 2, batch)
			}
		})
	}
}

func make10(broker int32) [][]int32 {
	out := make([][]int32, 10)
	for i := range out {
		out[i] = []int32{broker}
	}
	return out
}
