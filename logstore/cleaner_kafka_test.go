//go:build linux

package logstore

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSluiceOpensKafkaCompactedLog: a partition directory that Apache Kafka's own log cleaner
// compacted (a real broker, started from the fetched jars, with a compacted topic, 1 MiB
// segments and min.cleanable.dirty.ratio=0.01) opens in logstore after Kafka stops, and reads
// back exactly the records a consumer of that Kafka broker read from the beginning, at the
// same offsets, tombstones included; sluice's cleaner then cleans it again without losing any
// key's newest record.
func TestSluiceOpensKafkaCompactedLog(t *testing.T) {
	lib := kafkaLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := startKafka(t, ctx, lib, "log.cleanup.policy=compact", "log.cleaner.min.cleanable.ratio=0.01",
		"log.cleaner.backoff.ms=100", "log.cleaner.dedupe.buffer.size=16777216")
	const topic, keys, rounds = "kafka-compacted", 1000, 30
	addr := fmt.Sprintf("127.0.0.1:%d", k.port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	newest := map[string]string{}
	pad := strings.Repeat("v", 100)
	for r := range rounds {
		var recs []*kgo.Record
		for i := range keys {
			key := fmt.Sprintf("key-%04d", i)
			v := fmt.Sprintf("%s-round-%02d-%s", key, r, pad)
			if r == rounds-1 && i%10 == 0 {
				v = "" // the last round deletes every 10th key
				recs = append(recs, &kgo.Record{Key: []byte(key)})
			} else {
				recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(v)})
			}
			newest[key] = v
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v\n%s", r, err, k.log())
		}
	}
	produced := int64(keys * rounds)

	// Kafka's cleaner checkpoints the partition in its log directory's
	// cleaner-offset-checkpoint once it has cleaned it; wait until it has cleaned everything
	// but the active segment, after which it has nothing left to clean (so what a consumer
	// reads now is what the files hold when Kafka stops).
	partDir := filepath.Join(k.logDir, topic+"-0")
	activeBase := func() int64 {
		names, _ := filepath.Glob(filepath.Join(partDir, "*.log"))
		var base int64 = -1
		for _, n := range names {
			if b, ok := parseOffsetName(filepath.Base(n), logSuffix); ok {
				base = max(base, b)
			}
		}
		return base
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		data, _ := os.ReadFile(filepath.Join(k.logDir, "cleaner-offset-checkpoint"))
		var cleanedTo int64
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == topic && f[1] == "0" {
				cleanedTo, _ = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if active := activeBase(); cleanedTo > produced/2 && cleanedTo == active {
			t.Logf("Kafka's cleaner checkpointed the partition clean up to %d of %d, the active segment's base", cleanedTo, produced)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Kafka's cleaner did not clean %s within 2 minutes (checkpoint %q)\n%s", partDir, data, k.log())
		}
		time.Sleep(100 * time.Millisecond) // polling a file another process writes, with a deadline
	}

	// What a consumer of Kafka reads from the beginning.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	var fromKafka []logRecord
	for len(fromKafka) == 0 || fromKafka[len(fromKafka)-1].offset < produced-1 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			consumer.Close()
			t.Fatalf("consume from Kafka: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if r.Value == nil {
				v = tombstone
			}
			fromKafka = append(fromKafka, logRecord{offset: r.Offset, key: string(r.Key), value: v})
		})
	}
	consumer.Close()
	if int64(len(fromKafka)) >= produced {
		t.Fatalf("Kafka's cleaner removed nothing: %d records read of %d produced", len(fromKafka), produced)
	}
	k.stop()

	dir := filepath.Join(t.TempDir(), topic+"-0")
	copyDir(t, partDir, dir)
	cfg := DefaultConfig()
	cfg.Compact, cfg.RetentionMs, cfg.MinCleanableDirtyRatio = true, -1, 0.01
	l, err := Open(dir, cfg, Options{Logger: quietLogger})
	if err != nil {
		t.Fatalf("open Kafka's compacted partition directory: %v", err)
	}
	defer l.Close()
	got, _ := readRecords(t, l)
	if len(got) != len(fromKafka) {
		t.Fatalf("sluice read %d records from Kafka's compacted files, Kafka served %d", len(got), len(fromKafka))
	}
	for i := range got {
		if got[i] != fromKafka[i] {
			t.Fatalf("record %d: sluice read %+v, Kafka served %+v", i, got[i], fromKafka[i])
		}
	}
	if l.LogEndOffset() != produced {
		t.Fatalf("log end %d, want %d", l.LogEndOffset(), produced)
	}
	t.Logf("sluice read the %d records Kafka kept of %d (from %d segments)", len(got), produced, l.NumSegments())

	// sluice's cleaner takes over Kafka's log: every key's newest record (a tombstone for the
	// deleted keys, delete.retention.ms being a day) stays at its offset.
	want := map[string]logRecord{}
	for _, r := range fromKafka {
		want[r.key] = r
	}
	if _, err := l.Clean(CleanOptions{MapBytes: 16 << 20, UpTo: math.MaxInt64}); err != nil {
		t.Fatalf("sluice's clean of Kafka's log: %v", err)
	}
	after, _ := readRecords(t, l)
	have := map[logRecord]bool{}
	for _, r := range after {
		have[r] = true
	}
	for key, r := range want {
		if !have[r] {
			t.Fatalf("after sluice's clean: the newest record of %s (%+v) is gone", key, r)
		}
		if v := newest[key]; r.value != v && !(v == "" && r.value == tombstone) {
			t.Fatalf("Kafka served %q as the newest value of %s, the producer wrote %q", r.value, key, v)
		}
	}
}
