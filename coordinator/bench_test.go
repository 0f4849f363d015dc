package coordinator

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func BenchmarkOffsetCommit(b *testing.B) {
	h := newHarness(b, nil)
	h.load("g")
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = "g"
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "topic"
	for p := int32(0); p < 10; p++ {
		tp := kmsg.NewOffsetCommitRequestTopicPartition()
		tp.Partition = p
		t.Partitions = append(t.Partitions, tp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[j].Offset = int64(i)
		}
		if _, err := h.c.OffsetCommit(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOffsetFetch(b *testing.B) {
	h := newHarness(b, nil)
	h.load("g")
	h.commit("g", -1, "", 8, "topic", map[int32]int64{0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7, 7: 8, 8: 9, 9: 10})
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.c.OffsetFetch(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad replays a partition of 1000 groups × 100 committed offsets.
func BenchmarkLoad(b *testing.B) {
	l := &fakeLog{}
	for g := 0; g < 1000; g++ {
		var recs []record
		for p := int32(0); p < 100; p++ {
			recs = append(recs, offsetRecord(fmt.Sprintf("group-%d", g), "topic", p, &offsetEntry{offset: int64(p), leaderEpoch: -1, expireTimestamp: -1}))
		}
		l.Append(encodeBatch(0, recs), func(int64, error) {})
	}
	cfg := DefaultConfig()
	cfg.Clock = newManualClock()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	b.ReportAllocs()
	for b.Loop() {
		c := New(cfg)
		if err := c.Load(0, l); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.ReportMetric(100000, "records/op")
}
