package compattests

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bounds of TestDurabilityKill9: record counts and time.
const (
	durProducers       = 3     // each owns two of the six partitions
	durPartitions      = 6     //
	durMaxPerProducer  = 30000 // hard cap on records each producer attempts
	durAcksBeforeKill  = 3000  // acknowledged records (all producers) before SIGKILL
	durAcksAfterResume = 3000  // acknowledged records after each restart before going on
	durKills           = 3     // SIGKILL + restart cycles
	durTestTimeout     = 120 * time.Second
	durReadBackTimeout = 30 * time.Second // reading everything back after the last restart
)

// ackedRecord is what a produce promise reported for one acknowledged record.
type ackedRecord struct {
	partition int32
	offset    int64
}

// durProducer is one idempotent franz-go producer and what its promises reported.
type durProducer struct {
	id     int
	client *kgo.Client
	mu     struct {
		sync.Mutex
		acked  map[int]ackedRecord // seq -> where the ack said it landed
		failed map[int]error       // seq -> promise error
	}
}

// partitionFor spreads producer id's records over its own two partitions, so each partition
// has exactly one producer and "order of production" per partition is that producer's seq order.
func partitionFor(id, seq int) int32 { return int32(id*2 + seq%2) }

// durValue is a 200-byte value that compresses poorly, so segments fill at a known pace.
func durValue(rng *rand.Rand, id, seq int) []byte {
	v := fmt.Appendf(nil, "producer %d record %d ", id, seq)
	for len(v) < 200 {
		v = binary.LittleEndian.AppendUint64(v, rng.Uint64())
	}
	return v
}

func durKey(id, seq int) string { return fmt.Sprintf("p%d-%06d", id, seq) }

func parseDurKey(key string) (id, seq int, err error) {
	a, b, ok := strings.Cut(strings.TrimPrefix(key, "p"), "-")
	if !ok {
		return 0, 0, fmt.Errorf("bad key %q", key)
	}
	if id, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	seq, err = strconv.Atoi(b)
	return id, seq, err
}

// TestDurabilityKill9: idempotent acks=all producers write numbered records to six partitions;
// the broker is SIGKILLed mid-stream (durKills times) and restarted on the same data dir while the producers keep
// retrying. Afterwards every acknowledged record is read back exactly once, at the offset its
// ack reported, and each partition holds its producer's records in production order.
func TestDurabilityKill9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), durTestTimeout)
	defer cancel()
	b := StartBroker(t)
	const topic = "durability"

	admClient, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admClient.Close()
	adm := kadm.NewClient(admClient)
	// The smallest segment Kafka 4 allows, so segments roll (and recovery spans several) while
	// the broker is being killed.
	segmentBytes := "1048576"
	if _, err := adm.CreateTopic(ctx, durPartitions, 1, map[string]*string{"segment.bytes": &segmentBytes}, topic); err != nil {
		t.Fatalf("creating topic: %v", err)
	}

	var totalAcked, totalHanded atomic.Int64 // records acked; records handed to Produce
	var stop atomic.Bool
	producers := make([]*durProducer, durProducers)
	var wg sync.WaitGroup
	for i := range producers {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(b.Addr),
			kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is on by default
			kgo.RecordDeliveryTimeout(90*time.Second),
			kgo.MaxBufferedRecords(2000),
			kgo.ProducerLinger(2*time.Millisecond),
			kgo.RetryTimeout(60*time.Second),
		)
		if err != nil {
			t.Fatal(err)
		}
		p := &durProducer{id: i, client: cl}
		p.mu.acked = map[int]ackedRecord{}
		p.mu.failed = map[int]error{}
		producers[i] = p
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p.id), 1))
			for seq := 0; seq < durMaxPerProducer && !stop.Load() && ctx.Err() == nil; seq++ {
				rec := &kgo.Record{
					Key:       []byte(durKey(p.id, seq)),
					Value:     durValue(rng, p.id, seq),
					Partition: partitionFor(p.id, seq),
				}
				totalHanded.Add(1)
				p.client.Produce(ctx, rec, func(r *kgo.Record, err error) {
					p.mu.Lock()
					defer p.mu.Unlock()
					if err != nil {
						p.mu.failed[seq] = err
						return
					}
					p.mu.acked[seq] = ackedRecord{partition: r.Partition, offset: r.Offset}
					totalAcked.Add(1)
				})
			}
		}()
	}

	waitFor(t, 60*time.Second, fmt.Sprintf("%d acks before the first kill", durAcksBeforeKill), func() error {
		if n := totalAcked.Load(); n < durAcksBeforeKill {
			return fmt.Errorf("%d acked", n)
		}
		return nil
	})
	var killNotes []string
	for kill := 1; kill <= durKills; kill++ {
		b.Kill()
		ackedAtKill := totalAcked.Load()
		// Records handed over but unacknowledged when the broker died: these are retried into
		// the restarted broker, and idempotence must keep them from landing twice.
		killNotes = append(killNotes, fmt.Sprintf("kill %d: %d acked, %d in flight or buffered",
			kill, ackedAtKill, totalHanded.Load()-ackedAtKill))
		b.Restart()
		waitFor(t, 60*time.Second, fmt.Sprintf("%d more acks after restart %d", durAcksAfterResume, kill), func() error {
			if n := totalAcked.Load(); n < ackedAtKill+durAcksAfterResume {
				return fmt.Errorf("%d acked, %d at the kill", n, ackedAtKill)
			}
			return nil
		})
	}
	stop.Store(true)
	wg.Wait()
	for _, p := range producers {
		if err := p.client.Flush(ctx); err != nil {
			t.Fatalf("flushing producer %d: %v", p.id, err)
		}
	}

	// Read everything back up to each partition's end offset.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("listing end offsets: %v", err)
	}
	endOf := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("end offset of partition %d: %v", o.Partition, o.Err)
		}
		endOf[o.Partition] = o.Offset
	})
	if len(endOf) != durPartitions {
		t.Fatalf("end offsets for %d partitions, want %d", len(endOf), durPartitions)
	}
	starts := map[int32]kgo.Offset{}
	for p := range int32(durPartitions) {
		starts[p] = kgo.NewOffset().AtStart()
	}
	// Full fetches, no KIP-227 sessions: this pass is about what the log holds. A second pass
	// below reads with franz-go's defaults (fetch sessions).
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}), kgo.DisableFetchSessions())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	type seen struct {
		partition int32
		offset    int64
	}
	found := map[string]seen{}
	duplicates := 0
	nextOffset := map[int32]int64{}
	lastSeq := map[int32]int{}
	done := func() bool {
		for p, end := range endOf {
			if nextOffset[p] < end {
				return false
			}
		}
		return true
	}
	readCtx, readCancel := context.WithTimeout(ctx, durReadBackTimeout)
	defer readCancel()
	for !done() {
		fetches := consumer.PollFetches(readCtx)
		if readCtx.Err() != nil {
			for p, end := range endOf {
				if nextOffset[p] < end {
					t.Logf("partition %d stuck at offset %d of %d: %s", p, nextOffset[p], end, rawFetchSummary(t, b.Addr, topic, p, nextOffset[p]))
					t.Logf("partition %d files: %s", p, partitionFiles(b.Dir, topic, p))
				}
			}
			t.Fatalf("reading back: %v; positions %v, ends %v", readCtx.Err(), nextOffset, endOf)
		}
		fetches.EachError(func(topic string, p int32, err error) {
			t.Errorf("fetch %s/%d: %v", topic, p, err)
		})
		if t.Failed() {
			t.FailNow()
		}
		fetches.EachRecord(func(r *kgo.Record) {
			key := string(r.Key)
			if r.Offset < nextOffset[r.Partition] {
				t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, nextOffset[r.Partition]-1)
			}
			nextOffset[r.Partition] = r.Offset + 1
			id, seq, err := parseDurKey(key)
			if err != nil {
				t.Errorf("partition %d offset %d: %v", r.Partition, r.Offset, err)
				return
			}
			if want := partitionFor(id, seq); want != r.Partition {
				t.Errorf("%s found in partition %d, produced to %d", key, r.Partition, want)
			}
			if prev, ok := lastSeq[r.Partition]; ok && seq <= prev {
				t.Errorf("partition %d offset %d: %s follows seq %d (out of production order)", r.Partition, r.Offset, key, prev)
			}
			lastSeq[r.Partition] = seq
			if prev, ok := found[key]; ok {
				duplicates++
				if duplicates <= 10 {
					t.Errorf("%s read twice: partition %d offsets %d and %d", key, r.Partition, prev.offset, r.Offset)
				}
				return
			}
			found[key] = seen{r.Partition, r.Offset}
		})
	}

	var acked, failed, unackedPresent, missing, moved int
	var failReasons []string
	for _, p := range producers {
		p.mu.Lock()
		for seq, a := range p.mu.acked {
			acked++
			got, ok := found[durKey(p.id, seq)]
			switch {
			case !ok:
				missing++
				if missing <= 10 {
					t.Errorf("acked record %s (partition %d offset %d) is missing", durKey(p.id, seq), a.partition, a.offset)
				}
			case got.partition != a.partition || got.offset != a.offset:
				moved++
				if moved <= 10 {
					t.Errorf("acked record %s: ack said %d/%d, read at %d/%d", durKey(p.id, seq), a.partition, a.offset, got.partition, got.offset)
				}
			}
		}
		for seq, err := range p.mu.failed {
			failed++
			if _, ok := found[durKey(p.id, seq)]; ok {
				unackedPresent++
			}
			if len(failReasons) < 5 && !errors.Is(err, context.Canceled) {
				failReasons = append(failReasons, fmt.Sprintf("%s: %v", durKey(p.id, seq), err))
			}
		}
		p.mu.Unlock()
	}
	t.Logf("%s", strings.Join(killNotes, "; "))
	t.Logf("acked %d, failed %d (%d of those present in the log), read %d, missing %d, moved %d, duplicates %d",
		acked, failed, unackedPresent, len(found), missing, moved, duplicates)
	segments, _ := filepath.Glob(filepath.Join(b.Dir, topic+"-*", "*.log"))
	t.Logf("%d segment files across %d partitions", len(segments), durPartitions)
	if len(failReasons) > 0 {
		t.Logf("some failed produces: %s", strings.Join(failReasons, "; "))
	}

	readToEndsWithSessions(t, b, topic, endOf)

	// A clean SIGTERM restart keeps every partition's start and end offsets.
	startsBefore, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("listing start offsets: %v", err)
	}
	consumer.Close()
	for _, p := range producers {
		p.client.Close()
	}
	admClient.Close()
	if !b.Stop() {
		t.Fatal("sluice did not exit on SIGTERM")
	}
	if err := b.ExitErr(); err != nil {
		t.Fatalf("sluice exit after SIGTERM: %v", err)
	}
	b.Restart()
	after, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	adm = kadm.NewClient(after)
	endsAfter, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("listing end offsets after the clean restart: %v", err)
	}
	startsAfter, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("listing start offsets after the clean restart: %v", err)
	}
	for p := range int32(durPartitions) {
		e, _ := endsAfter.Lookup(topic, p)
		s0, _ := startsBefore.Lookup(topic, p)
		s1, _ := startsAfter.Lookup(topic, p)
		if e.Err != nil || s1.Err != nil || e.Offset != endOf[p] || s1.Offset != s0.Offset {
			t.Errorf("partition %d after a clean restart: offsets [%d, %d) (errors %v, %v), before [%d, %d)",
				p, s1.Offset, e.Offset, s1.Err, e.Err, s0.Offset, endOf[p])
		}
	}
}

// rawFetchSummary fetches one partition at offset with a raw Fetch v11 and describes the answer:
// error code, watermarks, and the base offsets and lengths of the batches returned.
func rawFetchSummary(t *testing.T, addr, topic string, partition int32, offset int64) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrFetchResponse()
	if err := roundTrip(conn, req, resp, 1); err != nil {
		return "raw fetch: " + err.Error()
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Sprintf("raw fetch: %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	var batches []string
	for rb := p.RecordBatches; len(rb) >= 12 && len(batches) < 5; {
		base := int64(binary.BigEndian.Uint64(rb[0:8]))
		length := int(binary.BigEndian.Uint32(rb[8:12]))
		if length < 49 || 12+length > len(rb) {
			batches = append(batches, fmt.Sprintf("base %d length %d (partial)", base, length))
			break
		}
		batch := rb[:12+length]
		crcOK := binary.BigEndian.Uint32(batch[17:21]) == crc32.Checksum(batch[21:], crc32c)
		batches = append(batches, fmt.Sprintf("base %d length %d epoch %d magic %d crc-ok %v attrs %#x lastDelta %d pid %d seq %d count %d",
			base, length, int32(binary.BigEndian.Uint32(batch[12:16])), batch[16], crcOK,
			binary.BigEndian.Uint16(batch[21:23]), int32(binary.BigEndian.Uint32(batch[23:27])),
			int64(binary.BigEndian.Uint64(batch[43:51])), int32(binary.BigEndian.Uint32(batch[53:57])),
			int32(binary.BigEndian.Uint32(batch[57:61]))))
		rb = rb[12+length:]
	}
	return fmt.Sprintf("raw fetch at %d: error %d, hw %d, log start %d, %d record bytes, batches [%s]",
		offset, p.ErrorCode, p.HighWatermark, p.LogStartOffset, len(p.RecordBatches), strings.Join(batches, "; "))
}

// partitionFiles lists a partition directory's files with their sizes.
func partitionFiles(dataDir, topic string, partition int32) string {
	dir := filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, partition))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			out = append(out, fmt.Sprintf("%s=%d", e.Name(), info.Size()))
		}
	}
	return strings.Join(out, " ")
}

// readToEndsWithSessions reads every partition from its start to endOf with a default franz-go
// consumer, which uses incremental fetch sessions (KIP-227), and reports a partition that
// stalls, with what a sessionless raw fetch at the same offset returns.
func readToEndsWithSessions(t *testing.T, b *Broker, topic string, endOf map[int32]int64) {
	t.Helper()
	starts := map[int32]kgo.Offset{}
	for p := range endOf {
		starts[p] = kgo.NewOffset().AtStart()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), durReadBackTimeout)
	defer cancel()
	next := map[int32]int64{}
	behind := func() bool {
		for p, end := range endOf {
			if next[p] < end {
				return true
			}
		}
		return false
	}
	for behind() {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			for p, end := range endOf {
				if next[p] < end {
					t.Errorf("fetch-session consumer stalled: partition %d at offset %d of %d; %s",
						p, next[p], end, rawFetchSummary(t, b.Addr, topic, p, next[p]))
				}
			}
			return
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Errorf("fetch-session consumer: %s/%d: %v", topic, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Errorf("fetch-session consumer: partition %d offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
		})
	}
}
