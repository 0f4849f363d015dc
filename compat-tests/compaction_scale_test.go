package compattests

// The judged compaction scenario against a real process (issue 14): a compacted topic with
// small segments fed many records over 10k keys ends, once the cleaner has run, with every
// key's latest value readable from the beginning at the offset it was written at, no
// superseded value below the active segment (read back or in the segment files), and its
// tombstones kept while delete.retention.ms holds and gone after. At 1M records it takes
// about 6 s on a loaded 2-core machine, so make test runs it at full size.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionScale1M: the scenario with 1M records over 10k keys.
func TestCompactionScale1M(t *testing.T) { compactionScale(t, 1_000_000, 10_000) }

// scaleSegmentBytes is the topic's segment size: small, so the records spread over many
// segments.
const scaleSegmentBytes = 256 << 10

// scaleValue is the value of the i-th record of the feed (key i % keys): unique per record, so
// a superseded value found in a segment file is recognised.
func scaleValue(key, i int) string { return fmt.Sprintf("key-%05d-v%07d", key, i) }

// scaleValueRE finds values written by scaleValue in a segment file.
var scaleValueRE = regexp.MustCompile(`key-(\d{5})-v(\d{7})`)

// scaleWritten is what the producer was told about a record it wrote.
type scaleWritten struct {
	offset    int64
	value     string // "" for a tombstone
	tombstone bool
}

func compactionScale(t *testing.T, records, keys int) {
	start := time.Now()
	b := StartBroker(t, "log.cleaner.backoff.ms=100")
	const topic = "scale-changelog"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(50_000),
		// Uncompressed, so that the segment files can be searched for superseded values.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10)) // below the segment size
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	compact, segment, ratio, keepTombstones := "compact", strconv.Itoa(scaleSegmentBytes), "0.01", "86400000"
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": &compact, "internal.segment.bytes": &segment,
		"min.cleanable.dirty.ratio": &ratio, "delete.retention.ms": &keepTombstones}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create compacted topic: %v %v %q", err, resp.Err, resp.ErrMessage)
	}

	// latest[k] is key k's newest write as acknowledged; filler is the key of the records
	// that roll the feed out of the active segment.
	latest := make([]scaleWritten, keys)
	var fillerLatest scaleWritten
	var mu sync.Mutex
	var firstErr error
	produce := func(rec *kgo.Record, done func(off int64)) {
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			done(r.Offset)
		})
	}
	// One producer, one partition, idempotent (franz-go's default): acknowledgements come in
	// offset order, so the last one per key is its newest write.
	note := func(k int, w scaleWritten) func(int64) {
		return func(off int64) {
			w.offset = off
			if off > latest[k].offset || latest[k].value == "" && !latest[k].tombstone {
				latest[k] = w
			}
		}
	}
	filler := func(round int) {
		const n = 2 * scaleSegmentBytes / 512 // two segments' worth: the feed is rolled out
		for i := range n {
			v := fmt.Sprintf("filler-%d-%05d-%0500d", round, i, 0)
			produce(&kgo.Record{Key: []byte("filler"), Value: []byte(v)}, func(off int64) {
				if off > fillerLatest.offset || fillerLatest.value == "" {
					fillerLatest = scaleWritten{offset: off, value: v}
				}
			})
		}
	}
	flush := func() {
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil {
			t.Fatalf("produce: %v", firstErr)
		}
	}
	for i := range records {
		k := i % keys
		v := scaleValue(k, i)
		produce(&kgo.Record{Key: fmt.Appendf(nil, "key-%05d", k), Value: []byte(v)}, note(k, scaleWritten{value: v}))
	}
	// Every 10th key is deleted.
	for k := 0; k < keys; k += 10 {
		produce(&kgo.Record{Key: fmt.Appendf(nil, "key-%05d", k)}, note(k, scaleWritten{tombstone: true}))
	}
	filler(0)
	flush()
	produced := time.Now()
	t.Logf("%d records over %d keys, %d tombstones and the filler produced in %v", records, keys, keys/10, produced.Sub(start))

	dir := filepath.Join(b.Dir, topic+"-0")
	// Cheap first: the closed segments shrink to about one record per key.
	waitFor(t, 5*time.Minute, "the cleaner to compact the closed segments", func() error {
		if size := closedSegmentBytes(t, dir); size > int64(keys)*100+4*scaleSegmentBytes {
			return fmt.Errorf("closed segments hold %d bytes", size)
		}
		return nil
	})
	waitFor(t, 2*time.Minute, "one record per key below the active segment, tombstones kept", func() error {
		return checkScaleLog(ctx, t, b.Addr, dir, latest, fillerLatest, true)
	})
	compacted := time.Now()
	t.Logf("compacted (tombstones kept) %v after the last acknowledgement", compacted.Sub(produced))

	// delete.retention.ms drops to 0: the next clean, which new records make due, removes the
	// tombstones.
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "delete.retention.ms", Value: kadm.StringPtr("0")}}, topic); err != nil {
		t.Fatalf("alter delete.retention.ms: %v", err)
	}
	// The config reaches the log through the metadata log; wait until DescribeConfigs shows it.
	waitFor(t, 30*time.Second, "delete.retention.ms=0 applied", func() error {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return err
		}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == "delete.retention.ms" && c.MaybeValue() == "0" {
					return nil
				}
			}
		}
		return fmt.Errorf("not yet")
	})
	filler(1)
	flush()
	waitFor(t, 2*time.Minute, "the tombstones gone once delete.retention.ms passed", func() error {
		return checkScaleLog(ctx, t, b.Addr, dir, latest, fillerLatest, false)
	})
	t.Logf("tombstones gone %v later; %v in all; %d segments left, %d bytes below the active one",
		time.Since(compacted), time.Since(start), len(segmentBases(t, dir)), closedSegmentBytes(t, dir))
}

// closedSegmentBytes is the size of every segment file in dir but the newest (active) one.
func closedSegmentBytes(t *testing.T, dir string) int64 {
	bases := segmentBases(t, dir)
	var n int64
	for _, base := range bases[:max(len(bases)-1, 0)] {
		if fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", base))); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// checkScaleLog reads the partition from the beginning with a fresh consumer and checks it
// against what was written: offsets only grow; below the active segment each key appears at
// most once, as its newest write below it, at the offset that write was acknowledged at; every
// live key's latest value is read; a deleted key's tombstone is read (withTombstones) or the
// key is not read at all; and no superseded value (nor, without tombstones, any value of a
// deleted key) is left in the closed segments' files.
func checkScaleLog(ctx context.Context, t *testing.T, addr, dir string, latest []scaleWritten, filler scaleWritten, withTombstones bool) error {
	bases := segmentBases(t, dir)
	if len(bases) < 2 {
		return fmt.Errorf("only %d segments", len(bases))
	}
	activeBase := bases[len(bases)-1]
	if filler.offset < activeBase {
		return fmt.Errorf("the active segment (base %d) starts after the last record %d", activeBase, filler.offset)
	}
	recs, err := readChangelog(ctx, addr, "scale-changelog")
	if err != nil {
		return err
	}
	seen := map[string]int64{}
	newest := map[string]*kgo.Record{}
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
		newest[k] = r
	}
	for k, w := range latest {
		key := fmt.Sprintf("key-%05d", k)
		r := newest[key]
		switch {
		case w.tombstone && !withTombstones:
			if r != nil {
				return fmt.Errorf("deleted key %s still read at offset %d (value %q)", key, r.Offset, r.Value)
			}
		case r == nil:
			return fmt.Errorf("key %s not read; its newest write is at offset %d", key, w.offset)
		case r.Offset != w.offset:
			return fmt.Errorf("key %s read at offset %d, written at %d", key, r.Offset, w.offset)
		case w.tombstone && r.Value != nil:
			return fmt.Errorf("key %s: value %q where its tombstone was", key, r.Value)
		case !w.tombstone && string(r.Value) != w.value:
			return fmt.Errorf("key %s: read %q, latest written %q", key, r.Value, w.value)
		}
	}
	if r := newest["filler"]; r == nil || r.Offset != filler.offset || string(r.Value) != filler.value {
		return fmt.Errorf("the filler key's last record not read at offset %d", filler.offset)
	}
	// The segment files: a value of the feed below the active segment is its key's latest.
	for _, base := range bases[:len(bases)-1] {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
		if err != nil {
			return err
		}
		for _, m := range scaleValueRE.FindAllSubmatch(data, -1) {
			k, _ := strconv.Atoi(string(m[1]))
			if k >= len(latest) || latest[k].value != string(m[0]) {
				return fmt.Errorf("segment %d holds %s, not the key's latest value", base, m[0])
			}
		}
	}
	return nil
}
