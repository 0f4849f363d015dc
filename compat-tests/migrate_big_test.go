//go:build migratebig

package compattests

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"sluice/internal/testcluster"
)

// migrateBigRun is one adoption of TestMigrateBig: TotalMiB of records over the topics, with
// log.segment.bytes of SegmentMiB.
type migrateBigRun struct{ TotalMiB, SegmentMiB int64 }

// migrateBigRuns parses SLUICE_MIGRATE_BIG_RUNS, "TOTAL:SEGMENT,..." in MiB. The default makes
// two sizes with the same segment count (4 GiB in 64 MiB segments, 1 GiB in 16 MiB) and two
// segment counts with the same size (4 GiB in 64 MiB and in 16 MiB segments).
func migrateBigRuns(t *testing.T) []migrateBigRun {
	spec := os.Getenv("SLUICE_MIGRATE_BIG_RUNS")
	if spec == "" {
		spec = "4096:64,1024:16,4096:16"
	}
	var runs []migrateBigRun
	for _, r := range strings.Split(spec, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(r), ":")
		total, err1 := strconv.ParseInt(a, 10, 64)
		seg, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || total <= 0 || seg < 1 {
			t.Fatalf("SLUICE_MIGRATE_BIG_RUNS: %q is not TOTAL_MIB:SEGMENT_MIB (segment at least 1, Kafka's smallest)", r)
		}
		runs = append(runs, migrateBigRun{total, seg})
	}
	return runs
}

const (
	migrateBigTopics     = 4
	migrateBigPartitions = 4
	migrateBigRecordSize = 4096
	migrateBigGroup      = "big-group"
	migrateBigReps       = 3
)

// TestMigrateBig (make migrate-big; build tag migratebig, not in make test) adopts real Apache
// Kafka 4.4 directories of gigabytes: for each run of SLUICE_MIGRATE_BIG_RUNS it starts one
// Kafka broker under SLUICE_MIGRATE_BIG_DIR (default /tmp/sluice-migrate-big) with that
// log.segment.bytes, loads four topics of four partitions with Kafka's ProducerPerformance,
// commits a group's offsets, samples records (first, middle, last of each partition) and
// lists the log start and end offsets; stops Kafka; times `sluice migrate --dry-run`,
// `--dry-run --check-all-crcs` and `sluice migrate`, each with the directory's files evicted
// from the page cache first (a cold start); starts sluice on the result and checks
// the same offsets, committed offsets and sampled records, byte for byte. Each run's data is
// deleted before the next. The times are logged as a table (MIGRATE-BIG lines) for
// bench/results.
func TestMigrateBig(t *testing.T) {
	lib := kafkaJars(t)
	bin := sluiceBinary(t)
	root := os.Getenv("SLUICE_MIGRATE_BIG_DIR")
	if root == "" {
		root = filepath.Join(os.TempDir(), "sluice-migrate-big")
	}
	var table []string
	for i, run := range migrateBigRuns(t) {
		base := filepath.Join(root, fmt.Sprintf("run-%d", i))
		if err := os.RemoveAll(base); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal(err)
		}
		ok := t.Run(fmt.Sprintf("%dMiB-in-%dMiB-segments", run.TotalMiB, run.SegmentMiB), func(t *testing.T) {
			table = append(table, migrateBigOne(t, lib, bin, base, run))
		})
		os.RemoveAll(base)
		if !ok {
			break
		}
	}
	t.Logf("MIGRATE-BIG | total MiB | segment MiB | partitions | segments | bytes | load s | dry-run s (median of 3) | dry-run --check-all-crcs s (median of 3) | migrate s | sluice answers ApiVersions s |")
	for _, l := range table {
		t.Logf("MIGRATE-BIG %s", l)
	}
}

// bigSample is one sampled record: what a consumer observes of it.
type bigSample struct {
	Offset    int64
	Key       string
	Value     []byte
	Headers   string
	Timestamp int64
}

// bigState is what a user sees of the loaded cluster without reading every record.
type bigState struct {
	Starts, Ends, Committed string
	Samples                 map[string]bigSample // "topic/partition@offset"
}

func migrateBigOne(t *testing.T, lib, bin, base string, run migrateBigRun) string {
	settings := append([]string{fmt.Sprintf("log.segment.bytes=%d", run.SegmentMiB<<20)}, migrateSettings...)
	kc, err := testcluster.StartKafka(testcluster.KafkaOptions{Nodes: 1, Lib: lib, BaseDir: base,
		JVMOpts:  []string{"-Xmx1g", "-Xms1g", "-XX:+UseG1GC", "-Djava.awt.headless=true"},
		Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	kafkaDir := kc.Nodes[0].Dir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	adm, cl, err := kc.Admin()
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for i := range migrateBigTopics {
		name := fmt.Sprintf("big-%d", i)
		topics = append(topics, name)
		if _, err := adm.CreateTopic(ctx, migrateBigPartitions, 1, nil, name); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}

	// The load: one ProducerPerformance per topic, in turn (two cores are shared).
	loadStart := time.Now()
	perTopic := run.TotalMiB << 20 / migrateBigTopics / migrateBigRecordSize
	for _, topic := range topics {
		stdout, stderr, err := runCmdErr(time.Hour, "", lookPath(t, "java"), "-Xmx512m", "-cp", filepath.Join(lib, "*"),
			"org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
			"--num-records", strconv.FormatInt(perTopic, 10), "--record-size", strconv.Itoa(migrateBigRecordSize),
			"--throughput", "-1", "--producer-props", "bootstrap.servers="+strings.Join(kc.Bootstrap(), ","),
			"acks=1", "batch.size=262144", "linger.ms=5", "compression.type=none", "buffer.memory=67108864")
		if err != nil {
			t.Fatalf("ProducerPerformance on %s: %v\n%s%s", topic, err, clip(stdout), clip(stderr))
		}
	}
	loadSecs := time.Since(loadStart).Seconds()

	// A group's committed offsets: a third of the way into each partition.
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	commits := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		commits.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset / 3, LeaderEpoch: -1, Metadata: "big"})
	})
	if err := adm.CommitAllOffsets(ctx, migrateBigGroup, commits); err != nil {
		t.Fatal(err)
	}
	want, err := bigSnapshot(ctx, adm, kc.Bootstrap(), topics, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if !kc.Nodes[0].Stop() {
		t.Fatal("kafka did not stop within its deadline")
	}

	setArgs := []string{"--set", "log.dirs=" + kafkaDir, "--set", "node.id=1"}
	for _, s := range migrateSettings {
		setArgs = append(setArgs, "--set", s)
	}
	timed := func(args ...string) (float64, string) {
		t.Helper()
		evictFromPageCache(t, kafkaDir)
		start := time.Now()
		out, err := exec.Command(bin, append(append([]string{"migrate", "--from-kafka", kafkaDir}, args...), setArgs...)...).CombinedOutput()
		secs := time.Since(start).Seconds()
		if err != nil {
			t.Fatalf("migrate %v: %v\n%s", args, err, out)
		}
		return secs, string(out)
	}
	// The dry runs change nothing, so each is timed migrateBigReps times; the median is kept.
	median := func(args ...string) (float64, string) {
		t.Helper()
		var secs []float64
		var out string
		for range migrateBigReps {
			s, o := timed(args...)
			secs, out = append(secs, s), o
		}
		slices.Sort(secs)
		t.Logf("migrate %v: %.3f s (of %v)", args, secs[len(secs)/2], secs)
		return secs[len(secs)/2], out
	}
	drySecs, dryOut := median("--dry-run")
	crcSecs, _ := median("--dry-run", "--check-all-crcs")
	migSecs, _ := timed()
	t.Logf("dry run:\n%s", dryOut)
	var parts, segs int
	var size int64
	for _, line := range strings.Split(dryOut, "\n") {
		if _, err := fmt.Sscanf(line, "%d topics, %d partitions, %d segments, %d bytes", new(int), &parts, &segs, &size); err == nil {
			break
		}
	}
	if segs == 0 {
		t.Fatalf("no totals line in the dry run's output")
	}

	evictFromPageCache(t, kafkaDir)
	startAt := time.Now()
	b := StartBrokerWith(t, BrokerOptions{Dir: kafkaDir}, append([]string{"node.id=1"}, migrateSettings...)...)
	startSecs := time.Since(startAt).Seconds()
	scl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	sadm := kadm.NewClient(scl)
	var got bigState
	waitFor(t, 5*time.Minute, "sluice serves the migrated group", func() error {
		var err error
		if got, err = bigSnapshot(ctx, sadm, []string{b.Addr}, topics, want.Samples); err != nil {
			return err
		}
		if got.Committed != want.Committed {
			return fmt.Errorf("committed offsets\n got %s\nwant %s", got.Committed, want.Committed)
		}
		return nil
	})
	if got.Starts != want.Starts {
		t.Errorf("log start offsets\n got %s\nwant %s", got.Starts, want.Starts)
	}
	if got.Ends != want.Ends {
		t.Errorf("log end offsets\n got %s\nwant %s", got.Ends, want.Ends)
	}
	for k, w := range want.Samples {
		g, ok := got.Samples[k]
		if !ok || g.Offset != w.Offset || g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || g.Headers != w.Headers || g.Timestamp != w.Timestamp {
			t.Errorf("%s: sluice has offset %d (%d bytes, ts %d), Kafka had offset %d (%d bytes, ts %d)", k, g.Offset, len(g.Value), g.Timestamp, w.Offset, len(w.Value), w.Timestamp)
		}
	}
	t.Logf("%d samples byte-identical, log start/end offsets and committed offsets equal", len(want.Samples))
	scl.Close()
	if !b.Stop() {
		t.Fatal("sluice did not stop within its deadline")
	}
	return fmt.Sprintf("| %d | %d | %d | %d | %d | %.0f | %.3f | %.3f | %.3f | %.3f |",
		run.TotalMiB, run.SegmentMiB, parts, segs, size, loadSecs, drySecs, crcSecs, migSecs, startSecs)
}

// bigSnapshot lists the log start and end offsets and the group's committed offsets, and
// reads the sampled records: at the given keys when samples is set (each "topic/p@offset"),
// otherwise the first, last and three in the middle of each partition.
func bigSnapshot(ctx context.Context, adm *kadm.Client, seeds, topics []string, samples map[string]bigSample) (bigState, error) {
	var st bigState
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return st, err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return st, err
	}
	if err := starts.Error(); err != nil {
		return st, err
	}
	if err := ends.Error(); err != nil {
		return st, err
	}
	render := func(l kadm.ListedOffsets) string {
		var s []string
		l.Each(func(o kadm.ListedOffset) { s = append(s, fmt.Sprintf("%s/%d:%d", o.Topic, o.Partition, o.Offset)) })
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	st.Starts, st.Ends = render(starts), render(ends)
	fo, err := adm.FetchOffsets(ctx, migrateBigGroup)
	if err != nil {
		return st, err
	}
	var offs []string
	for _, o := range fo.Sorted() {
		offs = append(offs, fmt.Sprintf("%s/%d@%d(%s)", o.Topic, o.Partition, o.At, o.Metadata))
	}
	st.Committed = strings.Join(offs, " ")

	// The offsets to sample, as rounds: round i reads one offset of every partition.
	rounds := map[int]map[string]map[int32]kgo.Offset{}
	add := func(round int, topic string, p int32, off int64) {
		if rounds[round] == nil {
			rounds[round] = map[string]map[int32]kgo.Offset{}
		}
		if rounds[round][topic] == nil {
			rounds[round][topic] = map[int32]kgo.Offset{}
		}
		rounds[round][topic][p] = kgo.NewOffset().At(off)
	}
	if samples == nil {
		ends.Each(func(e kadm.ListedOffset) {
			s, _ := starts.Lookup(e.Topic, e.Partition)
			if e.Offset <= s.Offset {
				return
			}
			n := e.Offset - s.Offset
			for i, off := range []int64{s.Offset, s.Offset + n/4, s.Offset + n/2, s.Offset + 3*n/4, e.Offset - 1} {
				add(i, e.Topic, e.Partition, off)
			}
		})
	} else {
		perPart := map[string]int{}
		for k := range samples {
			var topic string
			var p int32
			var off int64
			tp, o, _ := strings.Cut(k, "@")
			tn, pn, _ := strings.Cut(tp, "/")
			topic = tn
			p64, _ := strconv.ParseInt(pn, 10, 32)
			p = int32(p64)
			off, _ = strconv.ParseInt(o, 10, 64)
			add(perPart[tp], topic, p, off)
			perPart[tp]++
		}
	}
	st.Samples = map[string]bigSample{}
	for round := 0; round < len(rounds); round++ {
		parts := rounds[round]
		want := 0
		for _, ps := range parts {
			want += len(ps)
		}
		if err := func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(parts), kgo.FetchMaxPartitionBytes(1<<20))
			if err != nil {
				return err
			}
			defer cl.Close()
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			seen := map[string]bool{}
			for len(seen) < want {
				fs := cl.PollFetches(pctx)
				if err := fs.Err0(); err != nil {
					return err
				}
				fs.EachPartition(func(p kgo.FetchTopicPartition) {
					tp := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
					if seen[tp] || len(p.Records) == 0 {
						return
					}
					seen[tp] = true
					asked := parts[p.Topic][p.Partition].EpochOffset().Offset
					r := p.Records[0]
					var hs []string
					for _, h := range r.Headers {
						hs = append(hs, h.Key+"="+string(h.Value))
					}
					st.Samples[fmt.Sprintf("%s@%d", tp, asked)] = bigSample{r.Offset, string(r.Key), r.Value, strings.Join(hs, ","), r.Timestamp.UnixMilli()}
					cl.PauseFetchPartitions(map[string][]int32{p.Topic: {p.Partition}})
				})
			}
			return nil
		}(); err != nil {
			return st, fmt.Errorf("sample round %d: %w", round, err)
		}
	}
	return st, nil
}

// evictFromPageCache drops dir's files from the page cache (POSIX_FADV_DONTNEED on each, after
// fdatasync so none is dirty), so a timed command reads from disk, as after a reboot, without
// dropping the shared machine's other caches.
func evictFromPageCache(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("fdatasync %s: %w", path, err)
		}
		return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
	if err != nil {
		t.Fatal(err)
	}
}
