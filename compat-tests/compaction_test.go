package compattests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactedTopicKeepsLatestValuePerKey: a compacted topic with small segments, fed many
// records over few keys, ends — once the cleaner has run — with every key's latest value
// readable from the beginning, at most one record per key below the active segment, offsets
// only growing, and the superseded values gone from the segment files. A record without a key
// is refused with INVALID_RECORD, as Kafka does.
func TestCompactedTopicKeepsLatestValuePerKey(t *testing.T) {
	b := StartBroker(t, "log.cleaner.backoff.ms=100")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("changelog"),
		kgo.ProducerLinger(0), kgo.RecordRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	compact, segment, ratio := "compact", "4096", "0.01"
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": &compact, "internal.segment.bytes": &segment, "min.cleanable.dirty.ratio": &ratio}, "changelog")
	if err != nil || resp.Err != nil {
		t.Fatalf("create compacted topic: %v %v %q", err, resp.Err, resp.ErrMessage)
	}

	const keys, rounds = 8, 250
	latest := map[string]string{}
	pad := strings.Repeat("x", 60)
	for r := 0; r < rounds; r++ {
		var recs []*kgo.Record
		for k := 0; k < keys; k++ {
			key, value := fmt.Sprintf("key-%d", k), fmt.Sprintf("key-%d-round-%04d-%s", k, r, pad)
			recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(value)})
			latest[key] = value
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", r, err)
		}
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}

	dir := filepath.Join(b.Dir, "changelog-0")
	waitFor(t, 60*time.Second, "the cleaner compacting every segment but the active one", func() error {
		segs := segmentBases(t, dir)
		if len(segs) < 3 {
			return fmt.Errorf("only %d segments", len(segs))
		}
		activeBase := segs[len(segs)-1]
		recs, err := readChangelog(ctx, b.Addr, "changelog")
		if err != nil {
			return err
		}
		seen := map[string]int64{}
		newest := map[string]string{}
		last := int64(-1)
		for _, r := range recs {
			if r.Offset <= last {
				return fmt.Errorf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			k := string(r.Key)
			if prev, ok := seen[k]; ok && r.Offset < activeBase {
				return fmt.Errorf("key %s at offsets %d and %d below the active segment (base %d)", k, prev, r.Offset, activeBase)
			}
			seen[k] = r.Offset
			newest[k] = string(r.Value)
		}
		for k, v := range latest {
			if newest[k] != v {
				return fmt.Errorf("key %s: latest read %q, want %q", k, newest[k], v)
			}
		}
		// The bytes of superseded values are gone from the cleaned segments' files.
		for _, base := range segs[:len(segs)-1] {
			data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
			if err != nil {
				return err
			}
			for k := 0; k < keys; k++ {
				if n := strings.Count(string(data), fmt.Sprintf("key-%d-round-", k)); n > 1 {
					return fmt.Errorf("segment %d still holds %d values of key-%d", base, n, k)
				}
			}
		}
		return nil
	})
	if !strings.Contains(b.Log(), "log cleaner: cleaned") {
		t.Fatal("no cleaner log line")
	}
}

// readChangelog reads partition 0 of topic from the beginning to its current end with a fresh
// client, as a Kafka Streams app restoring a changelog does.
func readChangelog(ctx context.Context, addr, topic string) ([]*kgo.Record, error) {
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err != nil {
		return nil, err
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("end offset: %v", end.Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for {
		if len(recs) > 0 && recs[len(recs)-1].Offset >= end.Offset-1 {
			return recs, nil
		}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fetches := cl.PollFetches(fctx)
		cancel()
		if err := fetches.Err0(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return recs, fmt.Errorf("read %d records, not reaching the end offset %d", len(recs), end.Offset)
			}
			return nil, err
		}
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
}
