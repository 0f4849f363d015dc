package compattests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests damage one file of a stopped broker's data directory the way a disk, a crash or
// an operator can, restart the real process and check what clients see: every acknowledged
// record outside the damaged bytes is read back, or the broker refuses to start with a message
// naming the cause.

const damageTimeout = 120 * time.Second

// produceAcked writes n records (value "r<i>" padded to size bytes) to partition 0 of topic
// and returns the value acknowledged at each offset.
func produceAcked(ctx context.Context, t *testing.T, b *Broker, topic string, n, size int) map[int64]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10)) // many batches per segment: a cut loses part of one
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var mu sync.Mutex
	acked := map[int64]string{}
	var firstErr error
	pad := strings.Repeat("x", size)
	for i := range n {
		v := fmt.Sprintf("r%d-%s", i, pad)
		cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			acked[r.Offset] = string(r.Value)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil || len(acked) != n {
		t.Fatalf("%d of %d records acknowledged: %v", len(acked), n, firstErr)
	}
	return acked
}

// readPartition reads partition 0 of topic from the start to end (exclusive) and returns the
// value at each offset.
func readPartition(ctx context.Context, t *testing.T, b *Broker, topic string, end int64) map[int64]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int64]string{}
	last := int64(-1)
	for last < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: reached offset %d of %d before the deadline", topic, last, end)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Offset] = string(r.Value)
			last = r.Offset
		})
	}
	return got
}

func endOffset(ctx context.Context, t *testing.T, b *Broker, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %+v", topic, o)
	}
	return o.Offset
}

func createTopic(ctx context.Context, t *testing.T, b *Broker, topic string, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// segmentBases lists the base offsets of a partition directory's segments, in order.
func segmentBases(t *testing.T, dir string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			base, err := strconv.ParseInt(name, 10, 64)
			if err != nil {
				t.Fatalf("segment name %s: %v", e.Name(), err)
			}
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases
}

// A segment in the middle of the log (the 4th of about 10) is truncated to half its length
// while the broker is stopped. After the restart every acknowledged record outside the lost
// half is read back, including every record of the later segments, and the broker logs the
// damage with the file's name.
func TestDamagedMiddleSegmentKeepsLaterSegmentsRealProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), damageTimeout)
	defer cancel()
	b := StartBroker(t)
	const topic = "damaged-middle"
	segmentBytes := "1048576" // the smallest Kafka 4 allows
	createTopic(ctx, t, b, topic, map[string]*string{"segment.bytes": &segmentBytes})
	acked := produceAcked(ctx, t, b, topic, 20000, 500)
	if !b.Stop() {
		t.Fatal("sluice did not stop on SIGTERM")
	}
	dir := filepath.Join(b.Dir, topic+"-0")
	bases := segmentBases(t, dir)
	if len(bases) < 6 {
		t.Fatalf("want several segments, got %v", bases)
	}
	victim := filepath.Join(dir, fmt.Sprintf("%020d.log", bases[3]))
	info, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(victim, info.Size()/2); err != nil {
		t.Fatal(err)
	}

	b.Restart()
	end := endOffset(ctx, t, b, topic)
	if end != int64(len(acked)) {
		t.Fatalf("log end after restart %d, want %d (later segments lost?)", end, len(acked))
	}
	got := readPartition(ctx, t, b, topic, end)
	lostInDamage := 0
	for off, want := range acked {
		v, ok := got[off]
		inDamaged := off >= bases[3] && off < bases[4]
		switch {
		case ok && v != want:
			t.Fatalf("offset %d reads %.20q, acknowledged %.20q", off, v, want)
		case !ok && !inDamaged:
			t.Fatalf("acknowledged offset %d (outside the damaged segment [%d, %d)) lost", off, bases[3], bases[4])
		case !ok:
			lostInDamage++
		}
	}
	if lostInDamage == 0 || lostInDamage >= int(bases[4]-bases[3]) {
		t.Fatalf("%d records lost in the damaged segment of %d: want only its cut half", lostInDamage, bases[4]-bases[3])
	}
	if !strings.Contains(b.Log(), victim) || !strings.Contains(b.Log(), "level=ERROR") {
		t.Fatalf("the damage was not logged at ERROR naming %s", victim)
	}
	t.Logf("acknowledged %d, lost %d (all in the cut half of %s)", len(acked), lostInDamage, victim)
}

// An empty partition.metadata used to make the restart delete the partition's directory.
func TestEmptyPartitionMetadataKeepsDataRealProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), damageTimeout)
	defer cancel()
	b := StartBroker(t)
	const topic = "empty-meta"
	createTopic(ctx, t, b, topic, nil)
	acked := produceAcked(ctx, t, b, topic, 2000, 100)
	if !b.Stop() {
		t.Fatal("sluice did not stop on SIGTERM")
	}
	if err := os.WriteFile(filepath.Join(b.Dir, topic+"-0", "partition.metadata"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.Restart()
	if end := endOffset(ctx, t, b, topic); end != int64(len(acked)) {
		t.Fatalf("log end after restart %d, want %d", end, len(acked))
	}
	got := readPartition(ctx, t, b, topic, int64(len(acked)))
	for off, want := range acked {
		if got[off] != want {
			t.Fatalf("offset %d reads %.20q, acknowledged %.20q", off, got[off], want)
		}
	}
}

// startExpectingExit runs the broker's binary with its arguments and returns its output once
// it exits; the test fails if it is still running after the deadline (it should have refused).
func startExpectingExit(ctx context.Context, t *testing.T, b *Broker) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, b.bin, b.args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("sluice kept running; want a refusal to start. Output:\n%s", out)
	}
	if err == nil {
		t.Fatalf("sluice exited with status 0; want a refusal. Output:\n%s", out)
	}
	return string(out)
}

// With its metadata log gone, a node used to start a brand-new cluster over the old
// partitions (and a CreateTopics of an old name then wiped that topic's data). It must refuse
// to start and say why, naming the directory — whether or not meta.properties survived.
func TestMissingMetadataWALRefusesStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), damageTimeout)
	defer cancel()
	b := StartBroker(t)
	const topic = "orphaned"
	createTopic(ctx, t, b, topic, nil)
	acked := produceAcked(ctx, t, b, topic, 500, 100)
	if !b.Stop() {
		t.Fatal("sluice did not stop on SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "meta.properties")); err != nil {
		t.Fatalf("no meta.properties written in the log directory: %v", err)
	}
	metadata := filepath.Join(b.Dir, "__cluster_metadata-0")
	saved := filepath.Join(t.TempDir(), "metadata")
	if err := os.Rename(metadata, saved); err != nil {
		t.Fatal(err)
	}

	out := startExpectingExit(ctx, t, b)
	if !strings.Contains(out, b.Dir) || !strings.Contains(out, "metadata log is missing") || !strings.Contains(out, "meta.properties") {
		t.Fatalf("refusal does not name the directory and the cause:\n%s", out)
	}
	if err := os.Remove(filepath.Join(b.Dir, "meta.properties")); err != nil {
		t.Fatal(err)
	}
	out = startExpectingExit(ctx, t, b)
	if !strings.Contains(out, b.Dir) || !strings.Contains(out, topic+"-0") {
		t.Fatalf("refusal does not name the directory and the partition it found:\n%s", out)
	}

	// Restoring the metadata brings the cluster back with its data.
	if err := os.RemoveAll(metadata); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(saved, metadata); err != nil {
		t.Fatal(err)
	}
	b.Restart()
	got := readPartition(ctx, t, b, topic, int64(len(acked)))
	for off, want := range acked {
		if got[off] != want {
			t.Fatalf("offset %d reads %.20q, acknowledged %.20q", off, got[off], want)
		}
	}
}

// A metadata directory restored from an older copy (it lacks a topic created since) must not
// be taken as the truth: the node refuses to start and says why; the newer topic's data stays.
func TestRewoundMetadataWALRefusesStartRealProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), damageTimeout)
	defer cancel()
	b := StartBroker(t)
	createTopic(ctx, t, b, "early", nil)
	if !b.Stop() {
		t.Fatal("sluice did not stop on SIGTERM")
	}
	metadata := filepath.Join(b.Dir, "__cluster_metadata-0")
	old := filepath.Join(t.TempDir(), "old")
	runCmd(t, 30*time.Second, "", "cp", "-a", metadata, old)
	b.Restart()
	createTopic(ctx, t, b, "late", nil)
	acked := produceAcked(ctx, t, b, "late", 200, 100)
	if !b.Stop() {
		t.Fatal("sluice did not stop on SIGTERM")
	}
	if err := os.RemoveAll(metadata); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(old, metadata); err != nil {
		t.Fatal(err)
	}
	out := startExpectingExit(ctx, t, b)
	if !strings.Contains(out, b.Dir) || !strings.Contains(out, "rewound") {
		t.Fatalf("refusal does not name the directory and the cause:\n%s", out)
	}
	segment := filepath.Join(b.Dir, "late-0", "00000000000000000000.log")
	if info, err := os.Stat(segment); err != nil || info.Size() == 0 {
		t.Fatalf("the newer topic's %d acknowledged records are gone: %v", len(acked), err)
	}
}
