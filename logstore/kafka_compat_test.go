//go:build linux

package logstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"sluice/internal/batch"
)

// kafkaLib fetches (or finds cached) Apache Kafka's jars with scripts/fetch-kafka.sh and
// returns the directory holding them.
func kafkaLib(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../scripts/fetch-kafka.sh")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fetch-kafka.sh: %v\n%s", err, stderr.String())
	}
	lib := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(lib, "kafka_2.13-4.4.0.jar")); err != nil {
		entries, _ := filepath.Glob(filepath.Join(lib, "kafka_2.13-*.jar"))
		if len(entries) == 0 {
			t.Fatalf("no kafka_2.13 jar in %s", lib)
		}
	}
	return lib
}

// runJava runs a Java main class with Kafka's jars and returns its combined output.
func runJava(t *testing.T, ctx context.Context, lib string, args ...string) string {
	t.Helper()
	full := append([]string{"-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", filepath.Join(lib, "*")}, args...)
	cmd := exec.CommandContext(ctx, "java", full...)
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dumpedBatch is one batch line of kafka-dump-log output.
type dumpedBatch struct {
	base, last, position, size, count int64
	epoch                             int32
	crcValid                          bool
}

var dumpBatchRe = regexp.MustCompile(`baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*partitionLeaderEpoch: (-?\d+) .*position: (\d+) .* size: (\d+) magic: 2 compresscodec: \w+ crc: \d+ isvalid: (\w+)`)

var (
	nonConsecutiveRe = regexp.MustCompile(`^Non-consecutive offsets in (\S+\.log)$`)
	followedByRe     = regexp.MustCompile(`^\s+(-?\d+) is followed by (\d+)$`)
)

// parseDump extracts the batch lines of DumpLogSegments per file and fails on any line that
// reports a problem.
func parseDump(t *testing.T, out string) map[string][]dumpedBatch {
	t.Helper()
	res := map[string][]dumpedBatch{}
	var file string
	// nonConsecutiveBase is the base offset of the segment whose "Non-consecutive offsets"
	// report is being read, -2 outside one.
	nonConsecutiveBase := int64(-2)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		// Kafka 4.4's DumpLogSegments (the Java port of the Scala tool) starts its
		// consecutive-offset check at -1 for every file, so any segment whose base offset is
		// not 0 is reported as "-1 is followed by <base offset>" (the Scala tool of 4.1 skipped
		// the first record). That one pair says nothing about the segment; any other does.
		if m := nonConsecutiveRe.FindStringSubmatch(line); m != nil {
			nonConsecutiveBase, _ = strconv.ParseInt(strings.TrimSuffix(filepath.Base(m[1]), ".log"), 10, 64)
			continue
		}
		if m := followedByRe.FindStringSubmatch(line); m != nil && nonConsecutiveBase >= 0 {
			if m[1] == "-1" && m[2] == strconv.FormatInt(nonConsecutiveBase, 10) {
				continue
			}
			t.Fatalf("kafka-dump-log reported non-consecutive offsets: %q\nfull output:\n%s", line, tail(out, 4000))
		}
		nonConsecutiveBase = -2
		low := strings.ToLower(line)
		for _, bad := range []string{"mismatch", "exception", "error", "not found", "out of order", "corrupt", "isvalid: false", "invalid", "non-consecutive"} {
			if strings.Contains(low, bad) {
				t.Fatalf("kafka-dump-log reported a problem: %q\nfull output:\n%s", line, tail(out, 4000))
			}
		}
		if strings.HasPrefix(line, "Dumping ") {
			file = filepath.Base(strings.TrimPrefix(line, "Dumping "))
			continue
		}
		if m := dumpBatchRe.FindStringSubmatch(line); m != nil {
			n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
			res[file] = append(res[file], dumpedBatch{base: n(1), last: n(2), count: n(3), epoch: int32(n(4)), position: n(5), size: n(6), crcValid: m[7] == "true"})
		}
	}
	return res
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// readAllBatches reads every batch of a log through Read and returns their headers.
func readAllBatches(t *testing.T, l *Log) []batch.Header {
	t.Helper()
	var out []batch.Header
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		rr, err := l.Read(off, 64<<10, 1<<62, true)
		if err != nil || rr.Bytes == 0 {
			t.Fatalf("read %d: %+v %v", off, rr, err)
		}
		data := make([]byte, rr.Bytes)
		if _, err := rr.Slices[0].File.ReadAt(data, rr.Slices[0].Position); err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			h, err := batch.Check(data)
			if err != nil {
				t.Fatalf("batch at %d: %v", off, err)
			}
			out = append(out, h)
			off = h.NextOffset()
			data = data[h.Size():]
		}
	}
	return out
}

// TestKafkaDumpLogReadsSluiceSegments writes a log with sluice (several segments, dense
// indexes, idempotent and compressed batches, several leader epochs, a truncation) and runs
// Apache Kafka's kafka-dump-log over every segment, offset index and time index: it must
// report no error or index mismatch and print the batches sluice wrote.
func TestKafkaDumpLogReadsSluiceSegments(t *testing.T) {
	lib := kafkaLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "sluice-0")
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 300
	l, err := Open(dir, cfg, Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	ts := int64(1_700_000_000_000)
	seq, pid := int32(0), int64(42)
	for i := 0; i < 120; i++ {
		var b []byte
		switch {
		case i%5 == 0:
			b = gzipBatch(t, 1+i%7, ts+int64(i)*10)
		case i%3 == 0:
			b = mkBatch(1+i%4, ts+int64(i)*10, pid, 1, seq)
			seq += int32(1 + i%4)
		default:
			b = mkBatch(1+i%9, ts+int64(i)*10-int64(i%4)*100, -1, 0, 0)
		}
		if _, err := l.AppendAsLeader(b, int32(i/40)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if i == 100 {
			if err := l.TruncateTo(l.LogEndOffset() - 5); err != nil {
				t.Fatal(err)
			}
			seq, pid = 0, 43 // a fresh producer id keeps sequences simple
		}
	}
	want := readAllBatches(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(names) < 3 {
		t.Fatalf("want several segments, got %d", len(names))
	}
	var files []string
	for _, n := range names {
		base := strings.TrimSuffix(n, ".log")
		files = append(files, n, base+".index", base+".timeindex")
	}
	out := runJava(t, ctx, lib, "org.apache.kafka.tools.DumpLogSegments", "--deep-iteration", "--files", strings.Join(files, ","))
	dumped := parseDump(t, out)
	var got []dumpedBatch
	sort.Strings(names)
	for _, n := range names {
		got = append(got, dumped[filepath.Base(n)]...)
	}
	if len(got) != len(want) {
		t.Fatalf("kafka-dump-log printed %d batches, sluice wrote %d\n%s", len(got), len(want), tail(out, 3000))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.base != w.BaseOffset || g.last != w.LastOffset() || g.size != w.Size() || g.epoch != w.PartitionLeaderEpoch || !g.crcValid || g.count != int64(w.RecordCount) {
			t.Fatalf("batch %d: kafka-dump-log %+v, sluice [%d..%d] size %d epoch %d", i, g, w.BaseOffset, w.LastOffset(), w.Size(), w.PartitionLeaderEpoch)
		}
	}
	// The index dumps list entries; they must have been verified without complaint above.
	if !strings.Contains(out, ".index") || !strings.Contains(out, ".timeindex") || !strings.Contains(out, "offset: ") {
		t.Fatalf("index files were not dumped:\n%s", tail(out, 3000))
	}
	// Kafka's own sanity check, the one that decides whether Kafka rebuilds an index on startup.
	var indexes []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".log") {
			indexes = append(indexes, f)
		}
	}
	out = runJava(t, ctx, lib, "org.apache.kafka.tools.DumpLogSegments", "--index-sanity-check", "--files", strings.Join(indexes, ","))
	if n := strings.Count(out, "passed sanity check"); n+strings.Count(out, "is empty") < len(indexes) {
		t.Fatalf("only %d of %d indexes passed Kafka's sanity check:\n%s", n, len(indexes), out)
	}
	t.Logf("kafka-dump-log checked %d segments, %d batches", len(names), len(got))
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestSluiceOpensKafkaWrittenLog formats and starts a real Apache Kafka 4.1 broker (KRaft,
// combined mode) on free local ports, produces to it with Kafka's Java producer (compressed
// and uncompressed, idempotent), stops it, and opens the partition directory with logstore:
// it must read back exactly the batches kafka-dump-log sees in Kafka's own files, rebuild the
// producer state from them, and leave the directory readable by Kafka's tools.
// runningKafka is an Apache Kafka broker (KRaft, one node) started from the fetched jars.
type runningKafka struct {
	port   int
	logDir string
	stop   func()        // controlled shutdown (SIGTERM), idempotent
	log    func() string // the tail of its output
}

// startKafka starts a one-node Kafka broker in a temporary directory, with extra
// server.properties lines, and waits until it accepts connections; it is stopped when the
// test ends at the latest.
func startKafka(t *testing.T, ctx context.Context, lib string, extraProps ...string) *runningKafka {
	t.Helper()
	work := t.TempDir()
	logDir := filepath.Join(work, "kafka-logs")
	brokerPort, controllerPort := freePort(t), freePort(t)
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=%[3]s
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
log.segment.bytes=1048576
log.index.interval.bytes=4096
`, brokerPort, controllerPort, logDir) + strings.Join(extraProps, "\n") + "\n"
	propsFile := filepath.Join(work, "server.properties")
	if err := os.WriteFile(propsFile, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	runJava(t, ctx, lib, "kafka.tools.StorageTool", "format", "-t", "MkU3OEVBNTcwNTJENDM2Qg", "-c", propsFile)

	// Start the broker; it must be stopped however the test ends.
	brokerOut, err := os.Create(filepath.Join(work, "broker.out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { brokerOut.Close() })
	broker := exec.CommandContext(ctx, "java", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(lib, "*"), "kafka.Kafka", propsFile)
	broker.Stdout, broker.Stderr = brokerOut, brokerOut
	// The JVM dies with the test process even if the test binary is killed.
	broker.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	broker.WaitDelay = 5 * time.Second
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	brokerDone := make(chan error, 1)
	go func() { brokerDone <- broker.Wait() }()
	stopped := false
	stopBroker := func() {
		if stopped {
			return
		}
		stopped = true
		broker.Process.Signal(syscall.SIGTERM) // controlled shutdown: indexes trimmed, clean
		select {
		case <-brokerDone:
		case <-time.After(30 * time.Second):
			broker.Process.Kill()
			<-brokerDone
		}
	}
	t.Cleanup(stopBroker)
	brokerLog := func() string { b, _ := os.ReadFile(brokerOut.Name()); return tail(string(b), 3000) }

	// Wait until the broker accepts connections (condition with a deadline).
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", brokerPort), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-brokerDone:
			stopped = true
			t.Fatalf("broker exited: %v\n%s", err, brokerLog())
		case <-ctx.Done():
			t.Fatalf("broker did not start:\n%s", brokerLog())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return &runningKafka{port: brokerPort, logDir: logDir, stop: stopBroker, log: brokerLog}
}

func TestSluiceOpensKafkaWrittenLog(t *testing.T) {
	lib := kafkaLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	work := t.TempDir()
	k := startKafka(t, ctx, lib)
	logDir, brokerPort, stopBroker := k.logDir, k.port, k.stop
	const topic = "sluice-compat"
	produce := func(records int, extra ...string) {
		args := []string{"org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
			"--num-records", strconv.Itoa(records), "--record-size", "300", "--throughput", "-1",
			"--producer-props", fmt.Sprintf("bootstrap.servers=127.0.0.1:%d", brokerPort), "acks=all",
			"linger.ms=5", "batch.size=32768", "max.block.ms=60000"}
		runJava(t, ctx, lib, append(args, extra...)...)
	}
	produce(5000, "compression.type=lz4")
	produce(3000, "compression.type=none")
	produce(2000, "compression.type=gzip")
	partDir := filepath.Join(logDir, topic+"-0")
	// A copy taken while the broker runs is what a crash (kill -9) would leave: the active
	// segment's indexes are preallocated and zero-filled, nothing is checkpointed.
	crashDir := filepath.Join(work, "crash-copy", topic+"-0")
	copyDir(t, partDir, crashDir)
	stopBroker()

	kafkaFiles := func() []string {
		names, _ := filepath.Glob(filepath.Join(partDir, "*.log"))
		sort.Strings(names)
		return names
	}
	logs := kafkaFiles()
	if len(logs) < 2 {
		t.Fatalf("want Kafka to have written several segments, got %v", logs)
	}
	dumpAll := func() []dumpedBatch {
		out := runJava(t, ctx, lib, "org.apache.kafka.tools.DumpLogSegments", "--files", strings.Join(kafkaFiles(), ","))
		dumped := parseDump(t, out)
		var all []dumpedBatch
		for _, n := range kafkaFiles() {
			all = append(all, dumped[filepath.Base(n)]...)
		}
		return all
	}
	want := dumpAll()

	l, err := Open(partDir, DefaultConfig(), Options{Logger: quietLogger})
	if err != nil {
		t.Fatalf("open Kafka's partition directory: %v", err)
	}
	got := readAllBatches(t, l)
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("sluice read %d batches, Kafka's files hold %d", len(got), len(want))
	}
	var records int64
	for i := range want {
		g, w := got[i], want[i]
		if g.BaseOffset != w.base || g.LastOffset() != w.last || g.Size() != w.size || g.PartitionLeaderEpoch != w.epoch {
			t.Fatalf("batch %d: sluice [%d..%d] size %d epoch %d, Kafka %+v", i, g.BaseOffset, g.LastOffset(), g.Size(), g.PartitionLeaderEpoch, w)
		}
		records += int64(g.RecordCount)
	}
	if records != 10000 || l.LogEndOffset() != 10000 || l.LogStartOffset() != 0 {
		t.Fatalf("records %d, log [%d, %d), want 10000 records", records, l.LogStartOffset(), l.LogEndOffset())
	}
	if ep := l.LatestEpoch(); ep != want[len(want)-1].epoch {
		t.Fatalf("latest epoch %d, Kafka's last batch has %d", ep, want[len(want)-1].epoch)
	}
	// Lookups by timestamp agree with the batches.
	for _, h := range []batch.Header{got[0], got[len(got)/2], got[len(got)-1]} {
		r, ok := l.OffsetForTimestamp(h.MaxTimestamp)
		if !ok || r.Offset > h.LastOffset() {
			t.Fatalf("offset for timestamp %d: %+v %v, batch [%d..%d]", h.MaxTimestamp, r, ok, h.BaseOffset, h.LastOffset())
		}
	}
	// The idempotent producer's state was rebuilt from Kafka's batches: a retry of the last
	// batch is recognised as a duplicate.
	last := got[len(got)-1]
	if !last.HasProducerID() {
		t.Fatalf("Kafka's producer was not idempotent: %+v", last)
	}
	rr, err := l.Read(last.BaseOffset, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	retry := make([]byte, last.Size())
	if _, err := rr.Slices[0].File.ReadAt(retry, rr.Slices[0].Position); err != nil {
		t.Fatal(err)
	}
	res, err := l.AppendAsLeader(retry, last.PartitionLeaderEpoch)
	if err != nil || !res.Duplicate || res.FirstOffset != last.BaseOffset {
		t.Fatalf("retry of Kafka's last batch: %+v %v", res, err)
	}
	// sluice appends to Kafka's log, then Kafka's tools still read all of it.
	if _, err := l.AppendAsLeader(mkBatch(3, time.Now().UnixMilli(), -1, 0, 0), last.PartitionLeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	after := dumpAll()
	if len(after) != len(want)+1 || after[len(after)-1].base != 10000 || after[len(after)-1].last != 10002 {
		t.Fatalf("after sluice appended, kafka-dump-log sees %d batches (last %+v)", len(after), after[len(after)-1])
	}
	t.Logf("sluice read %d Kafka batches (%d records) from %d segments", len(got), records, len(logs))

	// The crash image of the running broker opens too and holds the same batches.
	if idx, _ := filepath.Glob(filepath.Join(crashDir, "*.index")); len(idx) > 0 {
		st, _ := os.Stat(idx[len(idx)-1])
		t.Logf("crash copy: active segment index is %d bytes (Kafka preallocates)", st.Size())
	}
	lc, err := Open(crashDir, DefaultConfig(), Options{Logger: quietLogger})
	if err != nil {
		t.Fatalf("open crash copy of Kafka's partition: %v", err)
	}
	defer lc.Close()
	gotCrash := readAllBatches(t, lc)
	if len(gotCrash) != len(want) {
		t.Fatalf("crash copy: %d batches, want %d", len(gotCrash), len(want))
	}
	for i := range want {
		if gotCrash[i].BaseOffset != want[i].base || gotCrash[i].Size() != want[i].size {
			t.Fatalf("crash copy batch %d: [%d] size %d, Kafka %+v", i, gotCrash[i].BaseOffset, gotCrash[i].Size(), want[i])
		}
	}
}

// copyDir copies the regular files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var dumpTxnRe = regexp.MustCompile(`producerId:? (\d+),? firstOffset:? (\d+),? lastOffset:? (\d+),? lastStableOffset:? (\d+)`)

// Kafka's kafka-dump-log reads sluice's .txnindex files entry for entry, and decodes its
// transaction markers (control batches) as COMMIT and ABORT with their coordinator epochs.
func TestKafkaDumpLogReadsSluiceTxnIndex(t *testing.T) {
	lib := kafkaLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "sluice-0")
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600
	l, err := Open(dir, cfg, Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	ts := int64(1_700_000_000_000)
	seqs := map[int64]int32{}
	for i := 0; i < 24; i++ {
		pid := int64(100 + i%3)
		var b []byte
		o := LeaderAppend{}
		if i%4 == 3 {
			b = MarkerBatch(pid, 0, int32(i), i%8 == 3, ts+int64(i))
			o.Coordinator = true
		} else {
			b = mkBatch(1+i%3, ts+int64(i), pid, 0, seqs[pid])
			setAttributes(b, batch.AttrTransactional)
			seqs[pid] += int32(1 + i%3)
		}
		if _, sync, err := l.AppendAsLeaderWith(b, 0, o); err != nil {
			t.Fatalf("append %d: %v", i, err)
		} else if err := sync.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	want := l.AbortedTransactions(0, 1<<62)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	txnFiles, _ := filepath.Glob(filepath.Join(dir, "*.txnindex"))
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(txnFiles)
	if len(txnFiles) < 2 || len(want) < 3 {
		t.Fatalf("want aborts in several segments: %d .txnindex files, %d aborts", len(txnFiles), len(want))
	}
	out := runJava(t, ctx, lib, "org.apache.kafka.tools.DumpLogSegments", "--files", strings.Join(txnFiles, ","))
	var got []AbortedTxn
	for _, m := range dumpTxnRe.FindAllStringSubmatch(out, -1) {
		n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
		got = append(got, AbortedTxn{ProducerID: n(1), FirstOffset: n(2), LastOffset: n(3), LastStableOffset: n(4)})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("kafka-dump-log read %+v, sluice wrote %+v\n%s", got, want, tail(out, 3000))
	}
	out = runJava(t, ctx, lib, "org.apache.kafka.tools.DumpLogSegments", "--deep-iteration", "--files", strings.Join(logs, ","))
	commits, aborts := strings.Count(out, "endTxnMarker: COMMIT"), strings.Count(out, "endTxnMarker: ABORT")
	if commits != 3 || aborts != 3 {
		t.Fatalf("kafka-dump-log decoded %d COMMIT and %d ABORT markers, want 3 and 3\n%s", commits, aborts, tail(out, 3000))
	}
	t.Logf("kafka-dump-log read %d aborted transactions in %d .txnindex files", len(got), len(txnFiles))
}

// A Kafka-written .txnindex opens in sluice entry for entry: Kafka gets a transaction left
// open on a partition (a hand-built transactional batch, with Kafka's verification of
// transactional produce turned off) ended by `kafka-transactions abort` (an ABORT marker,
// one .txnindex entry); sluice opens Kafka's directory with the same aborted transaction, no transaction
// open and the last stable offset at the log end.
func TestSluiceOpensKafkaWrittenTxnIndex(t *testing.T) {
	lib := kafkaLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	k := startKafka(t, ctx, lib, "transaction.partition.verification.enable=false")
	addr := fmt.Sprintf("127.0.0.1:%d", k.port)
	const topic = "sluice-txn"
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.MaxVersions(kversion.V3_0_0())) // Produce by topic name for the raw request
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v\n%s", err, k.log())
	}
	txn := mkBatch(2, time.Now().UnixMilli(), 90001, 0, 0)
	setAttributes(txn, batch.AttrTransactional)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 30000
	tid := "never-initialized"
	req.TransactionID = &tid
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txn}}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("transactional produce to Kafka: %v %+v", err, resp)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	runJava(t, ctx, lib, "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", addr,
		"abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
	cl.Close()
	k.stop()

	partDir := filepath.Join(k.logDir, topic+"-0")
	txnFiles, _ := filepath.Glob(filepath.Join(partDir, "*.txnindex"))
	if len(txnFiles) == 0 {
		t.Fatalf("Kafka wrote no .txnindex in %s", partDir)
	}
	out := runJava(t, ctx, lib, "org.apache.kafka.tools.DumpLogSegments", "--files", strings.Join(txnFiles, ","))
	var want []AbortedTxn
	for _, m := range dumpTxnRe.FindAllStringSubmatch(out, -1) {
		n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
		want = append(want, AbortedTxn{ProducerID: n(1), FirstOffset: n(2), LastOffset: n(3), LastStableOffset: n(4)})
	}
	if len(want) != 1 || want[0].ProducerID != 90001 || want[0].FirstOffset != 1 {
		t.Fatalf("Kafka's .txnindex holds %+v, want producer 90001's transaction from offset 1\n%s", want, out)
	}
	l, err := Open(partDir, DefaultConfig(), Options{Logger: quietLogger})
	if err != nil {
		t.Fatalf("open Kafka's partition directory: %v", err)
	}
	defer l.Close()
	if got := l.AbortedTransactions(0, 1<<62); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sluice reads %+v from Kafka's .txnindex, kafka-dump-log %+v", got, want)
	}
	end := l.LogEndOffset()
	if lso := l.LastStableOffset(end); lso != end {
		t.Fatalf("LSO %d, want the log end %d: %+v", lso, end, l.Producers())
	}
	for _, p := range l.Producers() {
		if p.CurrentTxnStartOffset >= 0 {
			t.Fatalf("producer %d open at %d after Kafka's abort", p.ProducerID, p.CurrentTxnStartOffset)
		}
	}
}
