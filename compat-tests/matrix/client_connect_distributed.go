package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Kafka Connect's distributed row: org.apache.kafka.connect.cli.ConnectDistributed (the same
// 4.3.1 runtime and connectors as the standalone row) with its config, offset and status topics
// on sluice, connectors created through its REST API on a free loopback port. Every cell checks
// that the worker's three internal topics were created compacted with the replication factor it
// asked for (the cluster's RF: 3 on three nodes). The produce scenarios run the FileStreamSource
// connector; consume-begin a FileStreamSink on two workers in one group, killing the one that
// runs its task (the task moves to the other, no record lost or written twice); group a source and a sink across a graceful worker
// restart (the source resumes from the offsets topic, the sink from its group: no line twice);
// exactly-once a source on a worker with exactly.once.source.support=enabled (transactional
// producer per task, offsets read read_committed) across a kill -9 and restart.

// worker is one running Connect worker in distributed mode.
type worker struct {
	rest  string // http://127.0.0.1:port
	cmd   *exec.Cmd
	done  chan error
	wctx  context.Context // ends when the worker exits or the cell's context ends
	start time.Time
	log   *cellLog
}

// freeLoopbackPort returns a port that was free on 127.0.0.1 a moment ago.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// distributedProps are the worker settings of the cell's Connect cluster (its group and internal
// topics are named after the cell's topic and group, so a restarted worker finds its state).
func distributedProps(e *Env, port int) []string {
	rf := strconv.Itoa(int(e.RF))
	return []string{
		"bootstrap.servers=" + e.Addr,
		"group.id=" + e.Group + "-connect",
		"config.storage.topic=" + e.Topic + "-connect-configs",
		"offset.storage.topic=" + e.Topic + "-connect-offsets",
		"status.storage.topic=" + e.Topic + "-connect-status",
		"config.storage.replication.factor=" + rf,
		"offset.storage.replication.factor=" + rf,
		"status.storage.replication.factor=" + rf,
		"offset.storage.partitions=2",
		"status.storage.partitions=2",
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.flush.interval.ms=500",
		"listeners=http://127.0.0.1:" + strconv.Itoa(port),
		"rest.advertised.host.name=127.0.0.1",
		"connector.client.config.override.policy=All",
		"plugin.discovery=only_scan",
		"scheduled.rebalance.max.delay.ms=5000",
	}
}

// withSettings returns base with each key=value of extra replacing the setting of that key, or
// appended.
func withSettings(base, extra []string) []string {
	out := slices.Clone(base)
	for _, kv := range extra {
		key, _, _ := strings.Cut(kv, "=")
		if i := slices.IndexFunc(out, func(b string) bool { return strings.HasPrefix(b, key+"=") }); i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}

// startWorker starts a distributed worker with the cell's cluster settings plus extra and waits
// until its REST API answers.
func startWorker(ctx context.Context, e *Env, class string, extra []string, argsAfter ...string) (*worker, error) {
	lib, err := e.Tools.ConnectLib(ctx)
	if err != nil {
		return nil, err
	}
	classes, err := e.Tools.JavaClasses(ctx) // for its log4j.properties
	if err != nil {
		return nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	e.Tools.mu.Lock()
	e.Tools.mu.seqConnect++
	n := e.Tools.mu.seqConnect
	e.Tools.mu.Unlock()
	props := withSettings(distributedProps(e, port), extra)
	wf := filepath.Join(e.Dir, fmt.Sprintf("worker-%d.properties", n))
	if err := os.WriteFile(wf, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	e.Log.Printf("[harness] worker %d: %s", n, strings.Join(props, " "))
	args := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx384m",
		"-Dlog4j.configuration=file:" + filepath.Join(classes, "log4j.properties"), "-cp", filepath.Join(lib, "*"),
		class, wf}
	args = append(args, argsAfter...)
	cmd := exec.Command("java", args...)
	cmd.Dir = e.Dir
	cmd.Stdout, cmd.Stderr = e.Log, e.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(e.Log, "$ java %s\n", shellQuote(args))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &worker{rest: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan error, 1), start: time.Now(), log: e.Log}
	wctx, cancel := context.WithCancel(ctx)
	w.wctx = wctx
	go func() {
		w.done <- cmd.Wait()
		cancel()
	}()
	err = waitFor(wctx, func() error {
		_, err := w.call(wctx, "GET", "/connectors", nil)
		return err
	})
	if err != nil {
		w.kill()
		return nil, fmt.Errorf("worker REST API on %s: %w", w.rest, err)
	}
	return w, nil
}

// call makes a REST call and returns the body of a 2xx answer.
func (w *worker) call(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, w.rest+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, clip(string(out)))
	}
	return out, nil
}

// createConnector creates (or, when it exists, updates) a connector with tasks.max=1 and waits
// until it and its task report RUNNING.
func (w *worker) createConnector(ctx context.Context, name string, config map[string]string) error {
	config["tasks.max"] = "1"
	if _, err := w.call(ctx, "PUT", "/connectors/"+name+"/config", config); err != nil {
		return err
	}
	w.log.Printf("[harness] connector %s: %v", name, config)
	return w.waitRunning(ctx, name)
}

// waitRunning waits until the connector and one task are RUNNING (a FAILED one ends the wait
// with its trace).
func (w *worker) waitRunning(ctx context.Context, name string) error {
	var failed error
	err := waitFor(w.wctx, func() error {
		body, err := w.call(ctx, "GET", "/connectors/"+name+"/status", nil)
		if err != nil {
			return err
		}
		var st struct {
			Connector struct{ State, Trace string }
			Tasks     []struct{ State, Trace string }
		}
		if err := json.Unmarshal(body, &st); err != nil {
			return err
		}
		if st.Connector.State == "FAILED" {
			failed = fmt.Errorf("connector %s FAILED: %s", name, clip(st.Connector.Trace))
			return nil
		}
		for _, t := range st.Tasks {
			if t.State == "FAILED" {
				failed = fmt.Errorf("connector %s's task FAILED: %s", name, clip(t.Trace))
				return nil
			}
		}
		if st.Connector.State != "RUNNING" || len(st.Tasks) == 0 || st.Tasks[0].State != "RUNNING" {
			return fmt.Errorf("connector %s: %s", name, body)
		}
		return nil
	})
	return errors.Join(err, failed)
}

// stop stops the worker gracefully (SIGTERM: tasks commit their offsets, the worker leaves its
// group) and reports how it ended.
func (w *worker) stop() error {
	if w.wctx.Err() != nil {
		select {
		case err := <-w.done:
			w.done <- err
			return fmt.Errorf("the worker exited on its own: %v", err)
		default:
		}
	}
	syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
	var err error
	select {
	case err = <-w.done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		err = errors.Join(errors.New("the worker did not stop within 30s of SIGTERM"), <-w.done)
	}
	w.done <- err
	fmt.Fprintf(w.log, "[worker stopped after %v: %v]\n", time.Since(w.start).Round(time.Millisecond), err)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 143 {
		return nil
	}
	return err
}

// kill ends the worker with SIGKILL (no offsets flushed, no transaction ended) and waits for it.
func (w *worker) kill() {
	syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	err := <-w.done
	w.done <- err
	fmt.Fprintf(w.log, "[worker killed (SIGKILL) after %v: %v]\n", time.Since(w.start).Round(time.Millisecond), err)
}

// checkInternalTopics checks that the worker's config, offset and status topics exist with
// cleanup.policy=compact and the replication factor the worker asked for.
func checkInternalTopics(ctx context.Context, e *Env) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := []string{e.Topic + "-connect-configs", e.Topic + "-connect-offsets", e.Topic + "-connect-status"}
	md, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return err
	}
	for _, n := range names {
		td, ok := md[n]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return fmt.Errorf("internal topic %s: missing (%v)", n, td.Err)
		}
		for _, p := range td.Partitions {
			if len(p.Replicas) != int(e.RF) {
				return fmt.Errorf("internal topic %s partition %d has %d replicas, the worker asked for %d", n, p.Partition, len(p.Replicas), e.RF)
			}
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return err
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("describe configs %s: %w", rc.Name, rc.Err)
		}
		policy := ""
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				policy = c.MaybeValue()
			}
		}
		if policy != "compact" {
			return fmt.Errorf("internal topic %s has cleanup.policy=%q, want compact", rc.Name, policy)
		}
	}
	e.Log.Printf("[harness] internal topics %v: compacted, RF %d", names, e.RF)
	return nil
}

func runConnectDistributed(ctx context.Context, e *Env) error {
	s := e.Scenario
	const class = "org.apache.kafka.connect.cli.ConnectDistributed"
	source := func(file string) map[string]string {
		return map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": file, "topic": e.Topic}
	}
	switch {
	case s.Codec != "":
		file := filepath.Join(e.Dir, "in.txt")
		if err := os.WriteFile(file, []byte(payloadLines(0, seedCount)), 0o644); err != nil {
			return err
		}
		w, err := startWorker(ctx, e, class, []string{"producer.compression.type=" + s.Codec, "producer.linger.ms=100"})
		if err != nil {
			return err
		}
		err = checkInternalTopics(ctx, e)
		if err == nil {
			err = w.createConnector(ctx, "source", source(file))
		}
		if err == nil {
			err = waitFor(w.wctx, func() error { return topicHolds(ctx, e, false, payloadLines(0, seedCount)) })
		}
		if err = errors.Join(err, w.stop()); err != nil {
			return err
		}
		return e.VerifyProduced(ctx, seedCount, true)
	case s.ID == "consume-begin":
		return connectTwoWorkers(ctx, e, class)
	case s.ID == "group":
		return connectResume(ctx, e, class)
	case s.ID == "exactly-once":
		return connectExactlyOnceSource(ctx, e, class)
	case s.ID == "transactions":
		return na("the worker's transactions are those of exactly-once source support: see exactly-once")
	case s.ID == "admin":
		return na("the worker's admin use (its compacted internal topics, RF as asked) is checked in every other cell")
	case s.ID == "keys-headers":
		return na("the file connectors carry record values only (StringConverter lines)")
	case s.ID == "consume-end", s.ID == "consume-ts":
		return na("a sink connector starts at its group's committed offset or auto.offset.reset; it cannot seek to the end or a timestamp")
	}
	return na("Kafka Connect moves data through connectors; the file connectors produce and consume only")
}

// connectTwoWorkers starts two workers in one Connect group and a sink connector; once the sink
// has written the seeded records and committed them, the worker running its task is killed
// (SIGKILL) and the harness produces two more: the task must move to the other worker, which
// writes them after the others, each once.
func connectTwoWorkers(ctx context.Context, e *Env, class string) error {
	out := filepath.Join(e.Dir, "out.txt")
	var workers []*worker
	defer func() {
		for _, w := range workers {
			if w.wctx.Err() == nil {
				w.kill()
			}
		}
	}()
	for range 2 {
		w, err := startWorker(ctx, e, class, nil)
		if err != nil {
			return err
		}
		workers = append(workers, w)
	}
	if err := checkInternalTopics(ctx, e); err != nil {
		return err
	}
	w0 := workers[0]
	err := w0.createConnector(ctx, "sink", map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": out, "topics": e.Topic,
		"consumer.override.group.id": e.Group,
	})
	if err == nil {
		err = waitFile(w0.wctx, out, seedValues(0, seedCount))
	}
	if err == nil {
		err = waitFor(w0.wctx, func() error { return e.VerifyCommitted(ctx, seedCount) })
	}
	var owner string
	if err == nil {
		owner, err = taskWorker(ctx, w0, "sink")
	}
	if err != nil {
		return err
	}
	var victim, survivor *worker
	for _, w := range workers {
		if strings.HasSuffix(w.rest, "//"+owner) {
			victim = w
		} else {
			survivor = w
		}
	}
	if victim == nil || survivor == nil {
		return fmt.Errorf("the sink's task runs on %q, not one of the two workers", owner)
	}
	e.Log.Printf("[harness] the sink's task runs on %s; killing that worker", owner)
	victim.kill()
	if err := produceValues(ctx, e, "v10", "v11"); err != nil {
		return fmt.Errorf("harness produce: %w", err)
	}
	err = waitFor(survivor.wctx, func() error {
		now, err := taskWorker(ctx, survivor, "sink")
		if err == nil && !strings.HasSuffix(survivor.rest, "//"+now) {
			err = fmt.Errorf("the sink's task is still assigned to %s", now)
		}
		return err
	})
	if err == nil {
		err = waitFile(survivor.wctx, out, seedValues(0, seedCount+2))
	}
	if err == nil {
		e.Log.Printf("[harness] the task moved to %s, which wrote v10 and v11 once", strings.TrimPrefix(survivor.rest, "http://"))
	}
	return errors.Join(err, survivor.stop())
}

// taskWorker returns the worker id (host:port) running the connector's task 0 once it is
// RUNNING.
func taskWorker(ctx context.Context, w *worker, name string) (string, error) {
	body, err := w.call(ctx, "GET", "/connectors/"+name+"/status", nil)
	if err != nil {
		return "", err
	}
	var st struct {
		Tasks []struct {
			State    string
			WorkerID string `json:"worker_id"`
		}
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return "", err
	}
	if len(st.Tasks) == 0 || st.Tasks[0].State != "RUNNING" {
		return "", fmt.Errorf("connector %s's task is not running: %s", name, body)
	}
	return st.Tasks[0].WorkerID, nil
}

// payloadLines is the lines payload(from) .. payload(to-1), each ending in a newline.
func payloadLines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s\n", payload(i))
	}
	return b.String()
}

// topicHolds checks that the cell's topic holds exactly the lines of want as its values, in
// order (read_committed when committed): a duplicate or a gap fails.
func topicHolds(ctx context.Context, e *Env, committed bool, want string) error {
	recs, err := e.readAll(ctx, e.Topic, committed)
	if err != nil {
		return err
	}
	wantLines := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	seen := map[string]int{}
	for i, r := range recs {
		v := string(r.Value)
		if seen[v]++; seen[v] == 2 {
			return fmt.Errorf("%s holds %q twice (the second at offset %d)", e.Topic, clip(v), r.Offset)
		}
		if i >= len(wantLines) || v != wantLines[i] {
			return fmt.Errorf("%s: record %d (offset %d) is %q, want line %d of %d", e.Topic, i, r.Offset, clip(v), i, len(wantLines))
		}
	}
	if len(recs) != len(wantLines) {
		return fmt.Errorf("%s holds %d of the %d lines", e.Topic, len(recs), len(wantLines))
	}
	return nil
}

// connectResume runs a source (file -> topic) and a sink (topic -> file) connector, stops the
// worker gracefully, appends lines to the source file and restarts it: the source must resume
// from its offset in the offsets topic and the sink from its group's committed offset, so both
// the topic and the sink file hold every line once.
func connectResume(ctx context.Context, e *Env, class string) error {
	in, out := filepath.Join(e.Dir, "in.txt"), filepath.Join(e.Dir, "out.txt")
	if err := os.WriteFile(in, []byte(payloadLines(0, seedCount)), 0o644); err != nil {
		return err
	}
	// The topic was seeded with v0..v9; the sink copies those and then the source's lines.
	want := func(n int) string { return seedValues(0, seedCount) + payloadLines(0, n) }
	connectors := func(ctx context.Context, w *worker) error {
		if err := w.createConnector(ctx, "source", map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": in, "topic": e.Topic}); err != nil {
			return err
		}
		return w.createConnector(ctx, "sink", map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": out, "topics": e.Topic})
	}
	w, err := startWorker(ctx, e, class, nil)
	if err != nil {
		return err
	}
	err = checkInternalTopics(ctx, e)
	if err == nil {
		err = connectors(ctx, w)
	}
	if err == nil {
		err = waitFile(w.wctx, out, want(seedCount))
	}
	if err = errors.Join(err, w.stop()); err != nil {
		return err
	}
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(payloadLines(seedCount, seedCount+5))
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	// The restarted worker reads its connectors from the config topic; it is not told again.
	if w, err = startWorker(ctx, e, class, nil); err != nil {
		return err
	}
	err = w.waitRunning(ctx, "source")
	if err == nil {
		err = w.waitRunning(ctx, "sink")
	}
	if err == nil {
		err = waitFile(w.wctx, out, want(seedCount+5))
	}
	if err == nil {
		err = waitFor(w.wctx, func() error {
			return topicHolds(ctx, e, false, seedValues(0, seedCount)+payloadLines(0, seedCount+5))
		})
	}
	return errors.Join(err, w.stop())
}

// eosLines is how many lines the exactly-once source cell writes before the kill.
const eosLines = 2000

// connectExactlyOnceSource runs a FileStreamSource on a worker with exactly-once source support,
// kills the worker with SIGKILL while the source is still writing, appends lines and restarts
// it: read_committed, the topic must hold every line exactly once, in order.
func connectExactlyOnceSource(ctx context.Context, e *Env, class string) error {
	in := filepath.Join(e.Dir, "in.txt")
	if err := os.WriteFile(in, []byte(payloadLines(0, eosLines)), 0o644); err != nil {
		return err
	}
	eos := []string{"exactly.once.source.support=enabled", "producer.linger.ms=5"}
	config := func() map[string]string {
		return map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": in, "topic": e.Topic,
			"exactly.once.support": "required", "transaction.boundary": "poll", "batch.size": "50",
		}
	}
	w, err := startWorker(ctx, e, class, eos)
	if err != nil {
		return err
	}
	err = checkInternalTopics(ctx, e)
	if err == nil {
		err = w.createConnector(ctx, "source", config())
	}
	// Kill as soon as some transaction committed (the source is then mid-file, or done).
	if err == nil {
		err = waitFor(w.wctx, func() error {
			recs, err := e.readAll(ctx, e.Topic, true)
			if err == nil && len(recs) == 0 {
				err = errors.New("no committed record yet")
			}
			return err
		})
	}
	if err != nil {
		return errors.Join(err, w.stop())
	}
	w.kill()
	recs, err := e.readAll(ctx, e.Topic, true)
	if err != nil {
		return err
	}
	e.Log.Printf("[harness] %d of %d lines committed when the worker was killed", len(recs)-seedCount, eosLines)
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(payloadLines(eosLines, eosLines+5))
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if w, err = startWorker(ctx, e, class, eos); err != nil {
		return err
	}
	err = w.waitRunning(ctx, "source")
	if err == nil {
		// The topic was seeded with v0..v9 before the source ran.
		err = waitFor(w.wctx, func() error { return topicHolds(ctx, e, true, seedValues(0, seedCount)+payloadLines(0, eosLines+5)) })
	}
	if err == nil {
		// The lines came in transactions: the partition holds commit markers.
		_, control, rerr := e.readPartition(ctx, e.Topic, true)
		if err = rerr; err == nil && !slices.Contains(markerTypes(control), "commit") {
			err = fmt.Errorf("no commit marker in %s (markers %v): the source was not transactional", e.Topic, markerTypes(control))
		}
	}
	return errors.Join(err, w.stop())
}
