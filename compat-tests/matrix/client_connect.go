package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka Connect's row: connect-standalone (the runtime and its FileStream connectors, fetched by
// `KAFKA_JARS=connect scripts/fetch-kafka.sh` into the cache) running the FileStreamSource
// connector for the produce scenarios and the FileStreamSink connector for consume-begin and
// group. The worker stores source offsets in a
// file (standalone mode); the sink's consumer commits to the group, which the worker is allowed
// to name (connector.client.config.override.policy=All) so the harness can check the cell's
// group.

// connectVersion is the Kafka Connect release the row runs: connect-file 4.4.0 is not on Maven
// Central, and 4.3.1's connectors do not load in the 4.4.0 runtime (they call
// org.apache.kafka.common.utils.AppInfoParser, which 4.4 moved to ...utils.internals), so the
// runtime and the connectors are both 4.3.1, the newest release that has both.
const connectVersion = "4.3.1"

// ConnectLib fetches (once) Kafka Connect's jars with scripts/fetch-kafka.sh and returns the dir.
func (t *Tools) ConnectLib(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.connectLib != "" {
		return t.mu.connectLib, nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(t.root, "scripts", "fetch-kafka.sh"))
	cmd.Env = append(os.Environ(), "KAFKA_VERSION="+connectVersion, "KAFKA_JARS=connect")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("KAFKA_JARS=connect scripts/fetch-kafka.sh: %w", err)
	}
	t.mu.connectLib = strings.TrimSpace(string(out))
	return t.mu.connectLib, nil
}

func prepareConnect(ctx context.Context, t *Tools) error {
	if _, err := t.ConnectLib(ctx); err != nil {
		return err
	}
	_, err := t.JavaClasses(ctx) // its log4j.properties
	return err
}

func runConnect(ctx context.Context, e *Env) error {
	s := e.Scenario
	switch {
	case s.Codec != "":
		var in strings.Builder
		for i := 0; i < seedCount; i++ {
			fmt.Fprintf(&in, "%s\n", payload(i))
		}
		file := filepath.Join(e.Dir, "in.txt")
		if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
			return err
		}
		wctx, stop, err := startConnect(ctx, e, []string{"producer.compression.type=" + s.Codec, "producer.linger.ms=100"},
			"connector.class=org.apache.kafka.connect.file.FileStreamSourceConnector", "file="+file, "topic="+e.Topic)
		if err != nil {
			return err
		}
		err = waitFor(wctx, func() error {
			recs, err := e.readAll(ctx, e.Topic, false)
			if err == nil && len(recs) < seedCount {
				err = fmt.Errorf("the source connector wrote %d of %d records", len(recs), seedCount)
			}
			return err
		})
		err = stopFirst(stop, err)
		if err != nil {
			return err
		}
		recs, err := e.readAll(ctx, e.Topic, false)
		if err != nil {
			return err
		}
		for i, r := range recs {
			if i >= seedCount || string(r.Value) != payload(i) || r.Key != nil {
				return fmt.Errorf("verify: record %d is %q=%q, want a null key and %s", i, r.Key, r.Value, payload(i))
			}
		}
		return e.VerifyProduced(ctx, seedCount, true)
	case s.ID == "consume-begin":
		out := filepath.Join(e.Dir, "out.txt")
		wctx, stop, err := startConnect(ctx, e, nil, sinkProps(e, out)...)
		if err != nil {
			return err
		}
		err = waitFile(wctx, out, seedValues(0, seedCount))
		err = stopFirst(stop, err)
		return err
	case s.ID == "group":
		// The sink writes v0..v9 and commits offset 10 in the group; after a restart it must
		// write only what was produced meanwhile (v10, v11), once.
		out := filepath.Join(e.Dir, "out.txt")
		props := append(sinkProps(e, out), "consumer.override.group.id="+e.Group)
		wctx, stop, err := startConnect(ctx, e, nil, props...)
		if err != nil {
			return err
		}
		err = waitFile(wctx, out, seedValues(0, seedCount))
		if err == nil {
			err = waitFor(wctx, func() error { return e.VerifyCommitted(ctx, seedCount) })
		}
		err = stopFirst(stop, err)
		if err != nil {
			return err
		}
		if err := produceValues(ctx, e, "v10", "v11"); err != nil {
			return fmt.Errorf("harness produce: %w", err)
		}
		if wctx, stop, err = startConnect(ctx, e, nil, props...); err != nil {
			return err
		}
		err = waitFile(wctx, out, seedValues(0, seedCount+2))
		if err == nil {
			err = waitFor(wctx, func() error { return e.VerifyCommitted(ctx, seedCount+2) })
		}
		err = stopFirst(stop, err)
		return err
	case s.ID == "keys-headers":
		return na("the file connectors carry record values only (StringConverter lines)")
	case s.ID == "consume-end", s.ID == "consume-ts":
		return na("a sink connector starts at its group's committed offset or auto.offset.reset; it cannot seek to the end or a timestamp")
	case s.ID == "transactions", s.ID == "exactly-once":
		return na("exactly-once source support needs a distributed worker; the standalone worker's producer is not transactional")
	}
	return na("Kafka Connect moves data through connectors; the file connectors produce and consume only")
}

func sinkProps(e *Env, out string) []string {
	return []string{"connector.class=org.apache.kafka.connect.file.FileStreamSinkConnector", "file=" + out, "topics=" + e.Topic}
}

// startConnect starts connect-standalone with one connector (its properties after name and
// tasks.max) and worker settings added to the row's defaults, and returns a function that stops
// the worker gracefully (SIGTERM, so a sink commits its offsets) and reports how it ended.
//
// The returned context ends when ctx does or when the worker exits, so a wait on it does not
// outlast a worker that died; stop then says so.
func startConnect(ctx context.Context, e *Env, worker []string, connector ...string) (wctx context.Context, stop func() error, err error) {
	lib, err := e.Tools.ConnectLib(ctx)
	if err != nil {
		return nil, nil, err
	}
	classes, err := e.Tools.JavaClasses(ctx) // for its log4j.properties
	if err != nil {
		return nil, nil, err
	}
	e.Tools.mu.Lock()
	e.Tools.mu.seqConnect++
	n := e.Tools.mu.seqConnect
	e.Tools.mu.Unlock()
	workerProps := append([]string{
		"bootstrap.servers=" + e.Addr,
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename=" + filepath.Join(e.Dir, "connect.offsets"),
		"offset.flush.interval.ms=500",
		"listeners=http://127.0.0.1:0",
		"connector.client.config.override.policy=All",
		"plugin.discovery=only_scan",
	}, worker...)
	connProps := append([]string{"name=" + e.Topic + "-connector", "tasks.max=1"}, connector...)
	wf := filepath.Join(e.Dir, fmt.Sprintf("worker-%d.properties", n))
	cf := filepath.Join(e.Dir, fmt.Sprintf("connector-%d.properties", n))
	if err := os.WriteFile(wf, []byte(strings.Join(workerProps, "\n")+"\n"), 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(cf, []byte(strings.Join(connProps, "\n")+"\n"), 0o644); err != nil {
		return nil, nil, err
	}
	e.Log.Printf("[harness] worker: %s", strings.Join(workerProps, " "))
	e.Log.Printf("[harness] connector: %s", strings.Join(connProps, " "))
	args := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx384m",
		"-Dlog4j.configuration=file:" + filepath.Join(classes, "log4j.properties"), "-cp", filepath.Join(lib, "*"),
		"org.apache.kafka.connect.cli.ConnectStandalone", wf, cf}
	cmd := exec.Command("java", args...)
	cmd.Dir = e.Dir
	cmd.Stdout, cmd.Stderr = e.Log, e.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(e.Log, "$ java %s\n", shellQuote(args))
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		done <- cmd.Wait()
		cancel() // the caller's wait ends as soon as the worker does
	}()
	start := time.Now()
	var exited bool
	var exitErr error
	return wctx, func() error {
		if wctx.Err() != nil && ctx.Err() == nil && !exited {
			// The worker exited before it was asked to (a connector that failed to start).
			exitErr, exited = <-done, true
			fmt.Fprintf(e.Log, "[connect-standalone exited on its own after %v: %v]\n", time.Since(start).Round(time.Millisecond), exitErr)
			return fmt.Errorf("connect-standalone exited on its own: %v", exitErr)
		}
		if !exited {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case exitErr = <-done:
			case <-time.After(30 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				exitErr = errors.Join(errors.New("connect-standalone did not stop within 30s of SIGTERM"), <-done)
			}
			exited = true
			fmt.Fprintf(e.Log, "[connect-standalone stopped after %v: %v]\n", time.Since(start).Round(time.Millisecond), exitErr)
		}
		// 143 is the JVM's exit status after a SIGTERM it handled with its shutdown hooks.
		var ee *exec.ExitError
		if errors.As(exitErr, &ee) && ee.ExitCode() == 143 {
			return nil
		}
		return exitErr
	}, nil
}

// stopFirst stops the worker and returns its error if it died on its own (the cause of a failed
// wait), else the wait's error, else how the stop went.
func stopFirst(stop func() error, waitErr error) error {
	stopErr := stop()
	if stopErr != nil && strings.Contains(stopErr.Error(), "exited on its own") {
		return stopErr
	}
	return cmp.Or(waitErr, stopErr)
}

// waitFile waits until file holds exactly want (a sink that wrote a record twice fails).
func waitFile(ctx context.Context, file, want string) error {
	return waitFor(ctx, func() error {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		return expectOutput(string(data), want)
	})
}

// produceValues appends records with the given values (no key) to partition 0.
func produceValues(ctx context.Context, e *Env, values ...string) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: e.Topic, Value: []byte(v)})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}
