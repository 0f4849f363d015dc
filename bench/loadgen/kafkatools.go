package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// perfProducerResult is kafka-producer-perf-test's summary line. Its percentiles are whole
// milliseconds, as the tool prints them.
type perfProducerResult struct {
	Records                     int64
	RecPerSec, MiBPerSec        float64
	AvgMs, MaxMs                float64
	P50Ms, P95Ms, P99Ms, P999Ms float64
}

// perfProducerLine matches ProducerPerformance's final summary, e.g.
// "100 records sent, 9.9 records/sec (0.01 MB/sec), 3.12 ms avg latency, 45.00 ms max latency,
// 2 ms 50th, 5 ms 95th, 45 ms 99th, 45 ms 99.9th."
var perfProducerLine = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th`)

func javaTool(ctx context.Context, lib string, timeout time.Duration, class string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	full := append([]string{"-Xmx512m", "-cp", filepath.Join(lib, "*"), class}, args...)
	cmd := exec.CommandContext(ctx, "java", full...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w\n%s", class, err, tail(out.String(), 2000))
	}
	return out.String(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// runPerfProducer runs kafka-producer-perf-test with unthrottled throughput and the Java
// producer's defaults apart from acks.
func runPerfProducer(ctx context.Context, lib, addr, topic string, records int64, size int, acks string, timeout time.Duration) (*perfProducerResult, error) {
	out, err := javaTool(ctx, lib, timeout, "org.apache.kafka.tools.ProducerPerformance",
		"--topic", topic, "--num-records", strconv.FormatInt(records, 10),
		"--record-size", strconv.Itoa(size), "--throughput", "-1",
		"--producer-props", "bootstrap.servers="+addr, "acks="+acks)
	if err != nil {
		return nil, err
	}
	m := perfProducerLine.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return nil, fmt.Errorf("no summary line in producer perf output:\n%s", tail(out, 2000))
	}
	last := m[len(m)-1]
	f := func(i int) float64 { v, _ := strconv.ParseFloat(last[i], 64); return v }
	n, _ := strconv.ParseInt(last[1], 10, 64)
	return &perfProducerResult{Records: n, RecPerSec: f(2), MiBPerSec: f(3), AvgMs: f(4), MaxMs: f(5),
		P50Ms: f(6), P95Ms: f(7), P99Ms: f(8), P999Ms: f(9)}, nil
}

// perfConsumerResult is kafka-consumer-perf-test's data line; the fetch.* rates exclude the
// group join ("rebalance.time.ms").
type perfConsumerResult struct {
	MiB, Records                   float64
	RebalanceMs, FetchMs           float64
	FetchMiBPerSec, FetchRecPerSec float64
}

func runPerfConsumer(ctx context.Context, lib, addr, topic, group string, records int64, timeout time.Duration) (*perfConsumerResult, error) {
	out, err := javaTool(ctx, lib, timeout, "org.apache.kafka.tools.ConsumerPerformance",
		"--bootstrap-server", addr, "--topic", topic, "--group", group,
		"--messages", strconv.FormatInt(records, 10), "--timeout", "30000")
	if err != nil {
		return nil, err
	}
	// Header: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
	// nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
	var fields []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(strings.TrimSpace(line), ", "); len(f) == 10 && !strings.HasPrefix(line, "start.time") {
			fields = f
		}
	}
	if fields == nil {
		return nil, fmt.Errorf("no data line in consumer perf output:\n%s", tail(out, 2000))
	}
	v := make([]float64, 10)
	for i := 2; i < 10; i++ {
		v[i], _ = strconv.ParseFloat(fields[i], 64)
	}
	return &perfConsumerResult{MiB: v[2], Records: v[4], RebalanceMs: v[6], FetchMs: v[7],
		FetchMiBPerSec: v[8], FetchRecPerSec: v[9]}, nil
}
