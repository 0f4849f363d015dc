package compattests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/internal/testcluster"
)

// streamsKafkaVersion is the Apache Kafka release whose Streams library (and tools) these tests
// run: 4.4 serves KIP-1071's streams group protocol as GA.
const streamsKafkaVersion = "4.4.0"

// streamsDeadline bounds one Streams test; it only guards against a hang (a JVM start is 2-5 s,
// a Streams rebalance after a broker kill up to the transaction timeout of 20 s).
const streamsDeadline = 6 * time.Minute

// streamsWaitDeadline bounds each wait for the application's output to catch up.
const streamsWaitDeadline = 150 * time.Second

var (
	streamsJarsOnce sync.Once
	streamsJarsDir  string
	streamsJarsErr  error
)

// streamsJars fetches (once per test binary) Kafka 4.4's jars with scripts/fetch-kafka.sh into
// the cache outside the repository and returns their directory.
func streamsJars(t testing.TB) string {
	t.Helper()
	streamsJarsOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			streamsJarsErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "fetch-kafka.sh"))
		cmd.Env = append(os.Environ(), "KAFKA_VERSION="+streamsKafkaVersion)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			streamsJarsErr = fmt.Errorf("KAFKA_VERSION=%s scripts/fetch-kafka.sh: %v\n%s", streamsKafkaVersion, err, clip(stderr.String()))
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		streamsJarsDir = strings.TrimSpace(lines[len(lines)-1])
		if m, _ := filepath.Glob(filepath.Join(streamsJarsDir, "kafka-streams-"+streamsKafkaVersion+".jar")); len(m) == 0 {
			streamsJarsErr = fmt.Errorf("no kafka-streams-%s jar in %q", streamsKafkaVersion, streamsJarsDir)
		}
	})
	if streamsJarsErr != nil {
		t.Fatal(streamsJarsErr)
	}
	return streamsJarsDir
}

// compileStreamsApp compiles testdata/streams/EosWordCount.java against the Streams jars into
// a temporary directory (with a log4j configuration that keeps client logs at WARN) and
// returns that directory.
func compileStreamsApp(t *testing.T, lib string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("testdata", "streams", "EosWordCount.java"))
	if err != nil {
		t.Fatal(err)
	}
	runCmd(t, 2*time.Minute, "", lookPath(t, "javac"), "-nowarn", "-cp", filepath.Join(lib, "*"), "-d", dir, src)
	log4j := "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" +
		"log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(log4j), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// streamsApp is one running EosWordCount JVM.
type streamsApp struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	output *testcluster.TailBuffer // stdout and stderr
	exited chan struct{}           // closed when the process has exited
	mu     struct {
		sync.Mutex
		states []string // the KafkaStreams states printed, in order
		err    error    // the process's exit status, once exited
	}
}

// startStreamsApp starts EosWordCount (compiled into classes) with the given group protocol
// and state directory; it is killed in t.Cleanup and its output printed if the test failed.
func startStreamsApp(t *testing.T, lib, classes, bootstrap, input, output, appID, protocol, stateDir string) *streamsApp {
	t.Helper()
	java := lookPath(t, "java")
	cmd := exec.Command(java, "-XX:+UseSerialGC", "-Xmx384m",
		"-Dlog4j.configuration=file:"+filepath.Join(classes, "log4j.properties"),
		"-cp", classes+string(os.PathListSeparator)+filepath.Join(lib, "*"),
		"EosWordCount", bootstrap, input, output, appID, protocol, stateDir)
	app := &streamsApp{t: t, cmd: cmd, output: &testcluster.TailBuffer{}, exited: make(chan struct{})}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	app.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = app.output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(app.output, line)
			if s, ok := strings.CutPrefix(line, "STATE "); ok {
				app.mu.Lock()
				app.mu.states = append(app.mu.states, s)
				app.mu.Unlock()
			}
		}
		err := cmd.Wait()
		app.mu.Lock()
		app.mu.err = err
		app.mu.Unlock()
		close(app.exited)
	}()
	t.Cleanup(func() {
		app.kill()
		if t.Failed() {
			t.Logf("Streams application (%s, %s) output:\n%s", appID, protocol, clip(app.output.String()))
		}
	})
	return app
}

// state returns the last state the application printed ("" before the first).
func (a *streamsApp) state() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.mu.states) == 0 {
		return ""
	}
	return a.mu.states[len(a.mu.states)-1]
}

// waitRunning waits until the application reports RUNNING; it fails if it exits or errs.
func (a *streamsApp) waitRunning() {
	a.t.Helper()
	waitFor(a.t, streamsWaitDeadline, "Streams application RUNNING", func() error {
		select {
		case <-a.exited:
			return fmt.Errorf("exited: %v", a.mu.err)
		default:
		}
		switch s := a.state(); s {
		case "RUNNING":
			return nil
		case "ERROR", "PENDING_ERROR", "NOT_RUNNING":
			a.t.Fatalf("Streams application is %s", s)
			return nil
		default:
			return fmt.Errorf("state %q", s)
		}
	})
}

// kill SIGKILLs the JVM (if it still runs) and waits for it to be gone.
func (a *streamsApp) kill() {
	select {
	case <-a.exited:
		return
	default:
	}
	_ = a.cmd.Process.Kill()
	<-a.exited
}

// close asks the application to close (its stdin ends) and waits for a clean exit.
func (a *streamsApp) close() {
	a.t.Helper()
	_ = a.stdin.Close()
	select {
	case <-a.exited:
	case <-time.After(streamsWaitDeadline):
		a.t.Fatalf("Streams application did not exit within %v of closing its stdin", streamsWaitDeadline)
	}
	a.mu.Lock()
	err := a.mu.err
	a.mu.Unlock()
	if err != nil {
		a.t.Fatalf("Streams application exited with %v", err)
	}
}

// wordCounts is what a read_committed consumer of the output topic has seen: per word, every
// count value in the order read.
type wordCounts struct {
	mu struct {
		sync.Mutex
		values    map[string][]int64
		sentinels map[int32]bool // output partitions whose end marker was read
	}
}

// streamsSentinelKey marks the records the test itself writes after the application closed.
const streamsSentinelKey = "__end__"

// consumeCounts runs a read_committed consumer of topic from its start until ctx ends,
// recording every record into a wordCounts. The consumer keeps its position across a broker
// restart, so a record read twice is a record the broker serves twice.
func consumeCounts(t *testing.T, ctx context.Context, addr, topic string) *wordCounts {
	t.Helper()
	wc := &wordCounts{}
	wc.mu.values = make(map[string][]int64)
	wc.mu.sentinels = make(map[int32]bool)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cl.Close(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				wc.mu.Lock()
				defer wc.mu.Unlock()
				if string(r.Key) == streamsSentinelKey {
					wc.mu.sentinels[r.Partition] = true
					return
				}
				n, err := strconv.ParseInt(string(r.Value), 10, 64)
				if err != nil {
					n = -1 // shows up as a wrong count
				}
				wc.mu.values[string(r.Key)] = append(wc.mu.values[string(r.Key)], n)
			})
		}
	}()
	return wc
}

// latestMatch reports nil when the last count read for every word equals want's.
func (wc *wordCounts) latestMatch(want map[string]int64) error {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	var behind []string
	for w, n := range want {
		vs := wc.mu.values[w]
		if len(vs) == 0 || vs[len(vs)-1] != n {
			last := int64(0)
			if len(vs) > 0 {
				last = vs[len(vs)-1]
			}
			behind = append(behind, fmt.Sprintf("%s=%d/%d", w, last, n))
		}
	}
	if len(behind) > 0 {
		sort.Strings(behind)
		return fmt.Errorf("%d words not at their count: %v", len(behind), bound(behind))
	}
	return nil
}

// total is how many count records have been read.
func (wc *wordCounts) total() int {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	n := 0
	for _, vs := range wc.mu.values {
		n += len(vs)
	}
	return n
}

// exactlyOnce checks the whole output: every word of want has the counts 1..want[w], each once
// and in order, and there is no other word.
func (wc *wordCounts) exactlyOnce(want map[string]int64) error {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	var bad []string
	for w, vs := range wc.mu.values {
		n, ok := want[w]
		if !ok {
			bad = append(bad, fmt.Sprintf("unexpected word %q: %v", w, vs))
			continue
		}
		if int64(len(vs)) != n {
			bad = append(bad, fmt.Sprintf("%s: %d updates for a count of %d", w, len(vs), n))
			continue
		}
		for i, v := range vs {
			if v != int64(i+1) {
				bad = append(bad, fmt.Sprintf("%s: update %d is %d, want %d (a duplicate or a lost update)", w, i, v, i+1))
				break
			}
		}
	}
	for w := range want {
		if _, ok := wc.mu.values[w]; !ok {
			bad = append(bad, fmt.Sprintf("%s: never counted", w))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errors.New(strings.Join(bound(bad), "; "))
	}
	return nil
}

// sentinelsRead reports nil once the end marker of every one of partitions was read.
func (wc *wordCounts) sentinelsRead(partitions int32) error {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if got := int32(len(wc.mu.sentinels)); got < partitions {
		return fmt.Errorf("end markers read on %d of %d partitions", got, partitions)
	}
	return nil
}

// wordInput produces lines of three words drawn from a fixed vocabulary and keeps the counts
// the application must reach.
type wordInput struct {
	cl    *kgo.Client
	topic string
	next  int // the next line's number
	want  map[string]int64
}

// streamsVocabulary is the number of distinct words.
const streamsVocabulary = 23

func newWordInput(t *testing.T, addr, topic string) *wordInput {
	t.Helper()
	// Idempotent (franz-go's default) and retrying across a broker restart: an input record
	// written twice would be a producer's duplicate, not the application's.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &wordInput{cl: cl, topic: topic, want: make(map[string]int64)}
}

// lines returns the next n lines and counts their words into want.
func (in *wordInput) lines(n int) []*kgo.Record {
	recs := make([]*kgo.Record, 0, n)
	for range n {
		i := in.next
		in.next++
		words := []string{
			fmt.Sprintf("w%02d", i%streamsVocabulary),
			fmt.Sprintf("w%02d", (i*7+3)%streamsVocabulary),
			fmt.Sprintf("w%02d", (i*i+5)%streamsVocabulary),
		}
		for _, w := range words {
			in.want[w]++
		}
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strings.Join(words, " "))})
	}
	return recs
}

// produce writes recs one by one (so a kill lands between them) and returns the first error.
func (in *wordInput) produce(ctx context.Context, recs []*kgo.Record) error {
	for _, r := range recs {
		if err := in.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// snapshot copies want.
func (in *wordInput) snapshot() map[string]int64 {
	m := make(map[string]int64, len(in.want))
	for w, n := range in.want {
		m[w] = n
	}
	return m
}

// TestStreamsExactlyOnce runs a Kafka Streams 4.4 word count with exactly_once_v2 and the
// classic group protocol: input from an idempotent producer, a repartition topic, a count
// store with a compacted changelog, output read by a read_committed consumer. A word seen N
// times must appear with the counts 1..N, each once, through a kill -9 of sluice (restarted on
// the same data dir) and a kill -9 of the Streams application (restarted on a new state dir,
// so it restores its store from the changelog) while input is flowing.
func TestStreamsExactlyOnce(t *testing.T) {
	testStreamsExactlyOnce(t, "classic")
}

// TestStreamsExactlyOnceStreamsProtocol is TestStreamsExactlyOnce with group.protocol=streams
// (KIP-1071): the broker derives the tasks from the topology the members send, creates the
// repartition and changelog topics, and assigns the tasks; kafka-streams-groups describes the
// group.
func TestStreamsExactlyOnceStreamsProtocol(t *testing.T) {
	testStreamsExactlyOnce(t, "streams",
		// A killed application's members hold their tasks until their session ends.
		"group.streams.session.timeout.ms=10000", "group.streams.min.session.timeout.ms=10000",
		"group.streams.heartbeat.interval.ms=1000", "group.streams.min.heartbeat.interval.ms=1000",
		// The application's two threads join within moments of each other; a second (rather
		// than Kafka's 3) is enough for both to be in the group's first assignment, after the
		// start and after the replacement joins the group the killed members left empty.
		"group.streams.initial.rebalance.delay.ms=1000")
}

func testStreamsExactlyOnce(t *testing.T, protocol string, settings ...string) *Broker {
	lib := streamsJars(t)
	classes := compileStreamsApp(t, lib)
	// A killed application's open transactions hold back the read_committed output and the
	// changelog its replacement restores from until the transaction coordinator aborts them:
	// transaction.timeout.ms (20 s) after they began, at the next timed-out-transaction check.
	// The check runs every second rather than every 10 s (Kafka's default), so that the wait is
	// the application's timeout and not up to 10 s more.
	b := StartBroker(t, append([]string{"group.initial.rebalance.delay.ms=0",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=1000"}, settings...)...)
	ctx, cancel := context.WithTimeout(context.Background(), streamsDeadline)
	defer cancel()
	input, output, appID := "words-"+protocol, "counts-"+protocol, "wc-"+protocol
	const partitions = 3
	createTxnTopic(t, ctx, b.Addr, input, partitions)
	createTxnTopic(t, ctx, b.Addr, output, partitions)
	counts := consumeCounts(t, ctx, b.Addr, output)
	in := newWordInput(t, b.Addr, input)
	waitCounts := func(what string, want map[string]int64) {
		t.Helper()
		waitFor(t, streamsWaitDeadline, what, func() error { return counts.latestMatch(want) })
	}
	// took logs how long each step took, so that a slow run shows where its time went.
	last := time.Now()
	took := func(what string) {
		t.Logf("%s took %v", what, time.Since(last).Round(100*time.Millisecond))
		last = time.Now()
	}

	app := startStreamsApp(t, lib, classes, b.Addr, input, output, appID, protocol, t.TempDir())
	app.waitRunning()
	took("starting the application")

	// 1. Steady state.
	if err := in.produce(ctx, in.lines(150)); err != nil {
		t.Fatal(err)
	}
	waitCounts("counts of the first 150 lines", in.snapshot())
	took("counting the first 150 lines")
	if err := counts.exactlyOnce(in.snapshot()); err != nil {
		t.Fatalf("before any fault: %v", err)
	}

	// 2. kill -9 of sluice while lines flow: the open transactions of the application abort
	// (or the coordinator aborts them after the restart), the application retries them.
	before := counts.total()
	batch := in.lines(300)
	produced := make(chan error, 1)
	go func() { produced <- in.produce(ctx, batch) }()
	waitFor(t, streamsWaitDeadline, "output flowing before the broker kill", func() error {
		if n := counts.total(); n < before+90 {
			return fmt.Errorf("%d new count records", n-before)
		}
		return nil
	})
	b.Kill()
	t.Logf("sluice killed with %d of %d count updates read", counts.total(), before+3*len(batch))
	last = time.Now()
	b.Restart()
	if err := <-produced; err != nil {
		t.Fatalf("producing across the broker restart: %v", err)
	}
	waitCounts("counts after the broker kill", in.snapshot())
	took("catching up after the broker kill")

	// 3. kill -9 of the Streams application while lines flow; its replacement has an empty
	// state dir and restores the counts from the changelog topic.
	before = counts.total()
	batch = in.lines(300)
	go func() { produced <- in.produce(ctx, batch) }()
	waitFor(t, streamsWaitDeadline, "output flowing before the application kill", func() error {
		if n := counts.total(); n < before+90 {
			return fmt.Errorf("%d new count records", n-before)
		}
		return nil
	})
	app.kill()
	t.Logf("application killed with %d of %d count updates read", counts.total(), before+3*len(batch))
	last = time.Now()
	app = startStreamsApp(t, lib, classes, b.Addr, input, output, appID, protocol, t.TempDir())
	if err := <-produced; err != nil {
		t.Fatalf("producing across the application restart: %v", err)
	}
	want := in.snapshot()
	waitCounts("counts after the application kill", want)
	took("catching up after the application kill")
	if protocol == "streams" {
		checkStreamsGroupTool(t, lib, b.Addr, appID, input, partitions)
	}
	app.close()

	// Every committed record is read: the test's own end marker on each output partition comes
	// after everything the application wrote.
	for p := int32(0); p < partitions; p++ {
		r := &kgo.Record{Topic: output, Partition: p, Key: []byte(streamsSentinelKey)}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctx, r).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, streamsWaitDeadline, "end markers read", func() error { return counts.sentinelsRead(partitions) })
	if err := counts.exactlyOnce(want); err != nil {
		t.Fatalf("after a broker kill and an application kill: %v", err)
	}
	t.Logf("%d lines, %d count updates, each exactly once", in.next, counts.total())

	if protocol == "streams" {
		checkStreamsRecordsDecode(t, lib, b, appID)
		// The closed application's members left: the group is empty and can be deleted.
		out := streamsGroupTool(t, lib, b.Addr, "--delete", "--group", appID)
		if !strings.Contains(out, "Deletion of requested streams groups ('"+appID+"') was successful.") {
			t.Errorf("kafka-streams-groups --delete:\n%s", out)
		}
		if out := streamsGroupTool(t, lib, b.Addr, "--list"); containsLine(out, appID) {
			t.Errorf("kafka-streams-groups --list still shows %s after --delete:\n%s", appID, out)
		}
	}

	// The internal topics are Kafka's: a compacted changelog for the store and a repartition
	// topic for the groupBy.
	adm := groupsAdminClient(t, b)
	ka := kadm.NewClient(adm)
	changelog, repartition := appID+"-counts-changelog", appID+"-words-repartition"
	rcs, err := ka.DescribeTopicConfigs(ctx, changelog, repartition)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe configs of %s: %v", rc.Name, rc.Err)
		}
		policy := ""
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				policy = *c.Value
			}
		}
		wantPolicy := map[string]string{changelog: "compact", repartition: "delete"}[rc.Name]
		if policy != wantPolicy {
			t.Errorf("%s: cleanup.policy=%q, want %q", rc.Name, policy, wantPolicy)
		}
	}
	return b
}

// streamsGroupCommandClass is kafka-streams-groups.
const streamsGroupCommandClass = "org.apache.kafka.tools.streams.StreamsGroupCommand"

// streamsGroupTool runs kafka-streams-groups (Kafka 4.4) against addr and returns its stdout.
func streamsGroupTool(t *testing.T, lib, addr string, args ...string) string {
	t.Helper()
	argv := append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", filepath.Join(lib, "*"),
		streamsGroupCommandClass, "--bootstrap-server", addr}, args...)
	return runCmd(t, 2*time.Minute, "", lookPath(t, "java"), argv...)
}

// checkStreamsGroupTool has kafka-streams-groups list and describe the running application's
// streams group: Stable with the sticky assignor and two members (the application's two stream
// threads, one process); the members' active tasks are the topology's six tasks (two
// subtopologies over three partitions), each on exactly one member; the committed offsets of the
// input and repartition topics catch up (lag 0 on every partition).
func checkStreamsGroupTool(t *testing.T, lib, addr, appID, input string, partitions int32) {
	t.Helper()
	start, last := time.Now(), time.Now()
	var steps []string
	step := func(what string) {
		steps = append(steps, fmt.Sprintf("%s %v", what, time.Since(last).Round(100*time.Millisecond)))
		last = time.Now()
	}
	defer func() {
		t.Logf("kafka-streams-groups checks took %v (%s)", time.Since(start).Round(time.Second), strings.Join(steps, ", "))
	}()
	if out := streamsGroupTool(t, lib, addr, "--list"); !containsLine(out, appID) {
		t.Errorf("kafka-streams-groups --list does not show %s:\n%s", appID, out)
	}
	stateRow := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(appID) + `\s+\S+ \(\d+\)\s+sticky\s+Stable\s+2\s*$`)
	waitFor(t, streamsWaitDeadline, "kafka-streams-groups --describe --state: Stable, 2 members", func() error {
		out := streamsGroupTool(t, lib, addr, "--describe", "--state", "--group", appID)
		if !stateRow.MatchString(out) {
			return fmt.Errorf("output:\n%s", out)
		}
		return nil
	})
	step("--list and --state")

	out := streamsGroupTool(t, lib, addr, "--describe", "--members", "--group", appID)
	step("--members")
	seen := map[string]int{}
	processes := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != appID {
			continue
		}
		rows++
		processes[f[2]] = true
		for _, task := range streamsMemberActiveTasks(line) {
			seen[task]++
		}
	}
	var want []string
	for _, sub := range []string{"0", "1"} {
		for p := int32(0); p < partitions; p++ {
			want = append(want, fmt.Sprintf("%s_%d", sub, p))
		}
	}
	var got []string
	for k, n := range seen {
		for range n {
			got = append(got, k)
		}
	}
	sort.Strings(got)
	if rows != 2 || len(processes) != 1 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("--describe --members: %d members of %d processes with active tasks %v, want 2 members of 1 process with %v:\n%s",
			rows, len(processes), got, want, out)
	}

	repartition := appID + "-words-repartition"
	waitFor(t, streamsWaitDeadline, "kafka-streams-groups --describe --offsets: lag 0 everywhere", func() error {
		out := streamsGroupTool(t, lib, addr, "--describe", "--offsets", "--group", appID)
		caughtUp := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) >= 4 && f[0] == appID && f[len(f)-1] == "0" {
				caughtUp[f[1]+"-"+f[2]] = true
			}
		}
		for _, topic := range []string{input, repartition} {
			for p := int32(0); p < partitions; p++ {
				if !caughtUp[fmt.Sprintf("%s-%d", topic, p)] {
					return fmt.Errorf("%s-%d not at lag 0:\n%s", topic, p, out)
				}
			}
		}
		return nil
	})
	step("--offsets")
}

// streamsTaskList is one "<subtopology>:[<partition>,...];" of an ASSIGNMENTS column.
var streamsTaskList = regexp.MustCompile(`(\w+):\[([0-9,]*)\];`)

// streamsMemberActiveTasks returns the active tasks, as "<subtopology>_<partition>", that a
// member row of kafka-streams-groups --describe --members shows. Kafka 4.4 prints its
// ASSIGNMENTS column as "ACTIVE: 0:[0,2]; 1:[1]; STANDBY: 1:[0]; WARMUP: ...": one
// "<subtopology>:[<partitions>];" per subtopology after each task type that has tasks, so the
// active tasks are every list between "ACTIVE:" and the next type (or the end of the line).
func streamsMemberActiveTasks(line string) []string {
	i := strings.Index(line, " ACTIVE:")
	if i < 0 {
		return nil
	}
	active := line[i+len(" ACTIVE:"):]
	for _, next := range []string{" STANDBY:", " WARMUP:"} {
		if j := strings.Index(active, next); j >= 0 {
			active = active[:j]
		}
	}
	var tasks []string
	for _, m := range streamsTaskList.FindAllStringSubmatch(active, -1) {
		for _, p := range strings.Split(m[2], ",") {
			if p != "" {
				tasks = append(tasks, m[1]+"_"+p)
			}
		}
	}
	return tasks
}

// TestStreamsMemberActiveTasks reads the ASSIGNMENTS column as Kafka 4.4's kafka-streams-groups
// prints it. The rows are from a run of TestStreamsExactlyOnceStreamsProtocol whose check failed
// with "active tasks [0_0 0_1 0_2]": it read each member's active tasks only up to the first
// ";", which ends the first subtopology's list, so a member running tasks of both subtopologies
// seemed to run those of the first only.
func TestStreamsMemberActiveTasks(t *testing.T) {
	const row = "wc-streams      %s 6ee710d7-3cfc-4334-a897-512956ef74a6 wc-streams-6ee710d7-3cfc-4334-a897-512956ef74a6-StreamThread-%d-consumer %s"
	for _, c := range []struct {
		line string
		want []string
	}{
		{fmt.Sprintf(row, "7C_JMRg9QIC0yEev3Yryig", 1, "ACTIVE: 0:[0,2]; 1:[1]; "), []string{"0_0", "0_2", "1_1"}},
		{fmt.Sprintf(row, "7vKrBzj1SnGbdUeEmz0LUw", 2, "ACTIVE: 0:[1]; 1:[0,2]; "), []string{"0_1", "1_0", "1_2"}},
		{fmt.Sprintf(row, "LUsJC9DdSA6Efy2XNg3ORA", 1, "ACTIVE: 0:[0,1,2]; "), []string{"0_0", "0_1", "0_2"}},
		{fmt.Sprintf(row, "vzUF3yytT2iQ2AyG1hT1lw", 2, "ACTIVE: 0:[1]; 1:[0]; STANDBY: 0:[2]; 1:[1,2]; WARMUP: 1:[0]; "), []string{"0_1", "1_0"}},
		{fmt.Sprintf(row, "Ixb0cVgbSCiO7OsjeRpaWw", 1, "STANDBY: 0:[2]; "), nil},
		{fmt.Sprintf(row, "wjKyI3bkTWGSWrFgU6atGQ", 2, ""), nil},
	} {
		if got := streamsMemberActiveTasks(c.line); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: active tasks %v, want %v", c.line, got, c.want)
		}
	}
}

// javaStringHash is Java's String.hashCode of an ASCII string.
func javaStringHash(s string) int32 {
	var h int32
	for _, c := range []byte(s) {
		h = 31*h + int32(c)
	}
	return h
}

// checkStreamsRecordsDecode reads the group's __consumer_offsets partition with Kafka 4.4's
// kafka-dump-log --offsets-decoder: every StreamsGroup* record type sluice writes (17 metadata,
// 19 member metadata, 20 target assignment metadata, 21 target assignment member, 22 current
// member assignment, 23 topology) decodes with Kafka's own schemas.
func checkStreamsRecordsDecode(t *testing.T, lib string, b *Broker, group string) {
	t.Helper()
	h := javaStringHash(group)
	if h < 0 {
		h = -h
	}
	partition := h % 50 // offsets.topic.num.partitions
	seg := filepath.Join(b.Dir, fmt.Sprintf("__consumer_offsets-%d", partition), "00000000000000000000.log")
	out := runCmd(t, 2*time.Minute, "", lookPath(t, "java"), "-Xmx256m", "-cp", filepath.Join(lib, "*"),
		"org.apache.kafka.tools.DumpLogSegments", "--offsets-decoder", "--files", seg)
	for _, kind := range []string{"17", "19", "20", "21", "22", "23"} {
		if !strings.Contains(out, `key: {"type":"`+kind+`","data":{"groupId":"`+group+`"`) {
			t.Errorf("kafka-dump-log --offsets-decoder shows no record of type %s for %s:\n%s", kind, group, clip(out))
		}
	}
	for _, bad := range []string{"Error", "Exception", "Unknown", "isvalid: false"} {
		if strings.Contains(out, bad) {
			t.Errorf("kafka-dump-log --offsets-decoder reports %q:\n%s", bad, clip(grepLines(out, bad)))
		}
	}
	if !strings.Contains(out, `"processId":"`) || !strings.Contains(out, `"subtopologyId":"1"`) {
		t.Errorf("the decoded records lack the member's process or the topology:\n%s", clip(out))
	}
}
