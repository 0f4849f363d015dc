package main

// loadgen overhead: the cost of sluice's Prometheus metrics (issue 16: "metrics on versus off
// within 3% on the produce rows"). Two single-node sluice processes on fresh directories, one
// serving /metrics (--http-addr) and scraped every second, as a Prometheus set to a 1 s
// interval would (harsher than the usual 15 s), the other without an HTTP listener, so its
// request path skips the per-request observation entirely. They run the same produce
// workloads in turns (which one goes first alternates each round, so load from other users of
// the machine falls on both alike), and the report gives each round's records/s and the median
// ratio, and the broker's CPU time per record (utime+stime of the process over the step). On a
// shared machine the rate swings with other users' load; the CPU a broker spends per record
// does much less, so it is the steadier measure of what the metrics cost.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sluice/internal/testcluster"
)

// overheadRun is one broker of the comparison.
type overheadRun struct {
	name    string
	cluster *testcluster.Cluster
	addr    string
	metrics string // base URL of /metrics, "" without
}

func cmdOverhead(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("overhead", flag.ExitOnError)
	bin := fs.String("sluice-bin", "bin/sluice", "sluice binary")
	workdir := fs.String("workdir", filepath.Join(os.TempDir(), "sluice-overhead"), "fresh data directories go here")
	rounds := fs.Int("rounds", 3, "turns per workload and broker")
	dur := fs.Duration("duration", 10*time.Second, "how long each produce step runs")
	out := fs.String("out", "", "write the markdown report here (default: stdout only)")
	_ = fs.Parse(args)
	if err := os.RemoveAll(*workdir); err != nil {
		return err
	}
	var runs []*overheadRun
	for _, withMetrics := range []bool{true, false} {
		r, err := startOverheadBroker(*bin, *workdir, withMetrics)
		if err != nil {
			return err
		}
		defer r.cluster.Close()
		runs = append(runs, r)
	}
	scrapeCtx, stopScrape := context.WithCancel(ctx)
	defer stopScrape()
	scrapes := make(chan int, 1)
	go func() { scrapes <- scrapeEverySecond(scrapeCtx, runs[0].metrics) }()

	type row struct {
		title     string
		producers int
		on, off   []float64
		// onCPU and offCPU are the broker's CPU microseconds per record, per round.
		onCPU, offCPU []float64
	}
	rows := []*row{{title: "1 KiB, acks=all, 4 producers", producers: 4}, {title: "1 KiB, acks=all, 1 producer", producers: 1}}
	// Each step writes to a topic of its own, deleted after it: a step writes gigabytes, and
	// twenty of them kept would fill the disk.
	step := 0
	// produceStep returns the step's result and the broker's CPU seconds during the produce.
	produceStep := func(r *overheadRun, producers int, d time.Duration) (*produceResult, float64, error) {
		step++
		topic := fmt.Sprintf("overhead-%d", step)
		if err := createTopic(ctx, []string{r.addr}, topic, 6, 1); err != nil {
			return nil, 0, err
		}
		defer deleteTopic(ctx, []string{r.addr}, topic)
		pid := r.cluster.Nodes[0].Pid()
		cpu0, err := procCPU(pid)
		if err != nil {
			return nil, 0, err
		}
		res, err := runProduce(ctx, produceSpec{Brokers: []string{r.addr}, Topic: topic, Producers: producers,
			RecordSize: 1024, AcksAll: true, Duration: d})
		if err != nil {
			return nil, 0, err
		}
		cpu1, err := procCPU(pid)
		return res, cpu1 - cpu0, err
	}
	for _, r := range runs {
		// Unmeasured warm-up, as loadgen all does.
		if _, _, err := produceStep(r, 4, 5*time.Second); err != nil {
			return err
		}
	}
	for round := 0; round < *rounds; round++ {
		for _, w := range rows {
			order := []int{0, 1}
			if round%2 == 1 {
				order = []int{1, 0}
			}
			for _, i := range order {
				r := runs[i]
				res, cpu, err := produceStep(r, w.producers, *dur)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", r.name, w.title, err)
				}
				rate := float64(res.Records) / res.Elapsed.Seconds()
				perRecord := cpu / float64(max(res.Records, 1)) * 1e6
				if i == 0 {
					w.on, w.onCPU = append(w.on, rate), append(w.onCPU, perRecord)
				} else {
					w.off, w.offCPU = append(w.off, rate), append(w.offCPU, perRecord)
				}
				fmt.Fprintf(os.Stderr, "round %d %s %s: %.0f rec/s, %.2f µs CPU per record\n", round+1, w.title, r.name, rate, perRecord)
			}
		}
	}
	stopScrape()
	n := <-scrapes
	var b strings.Builder
	fmt.Fprintf(&b, "| produce workload (%v steps, %d rounds) | metrics on, rec/s per round | metrics off, rec/s per round | median on / median off |\n|---|---|---|---|\n", *dur, *rounds)
	for _, w := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.3f |\n", w.title, formatEach(w.on, "%.0f"), formatEach(w.off, "%.0f"), median(w.on)/median(w.off))
	}
	fmt.Fprintf(&b, "\n| produce workload | metrics on, broker CPU µs per record per round | metrics off, broker CPU µs per record per round | median on / median off |\n|---|---|---|---|\n")
	for _, w := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.3f |\n", w.title, formatEach(w.onCPU, "%.2f"), formatEach(w.offCPU, "%.2f"), median(w.onCPU)/median(w.offCPU))
	}
	fmt.Fprintf(&b, "\n/metrics was scraped %d times (every second) from the broker with metrics on.\n", n)
	fmt.Print(b.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(b.String()), 0o644)
	}
	return nil
}

func startOverheadBroker(bin, workdir string, withMetrics bool) (*overheadRun, error) {
	name := "metrics-off"
	if withMetrics {
		name = "metrics-on"
	}
	dir := filepath.Join(workdir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "sluice.log"))
	if err != nil {
		return nil, err
	}
	flags := []string{"--log-level", "warn"}
	metrics := ""
	if withMetrics {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		flags = append(flags, "--http-addr", addr)
		metrics = "http://" + addr + "/metrics"
	}
	c, err := testcluster.Start(testcluster.Options{Nodes: 1, Bin: bin, Settings: brokerSettings(1, false),
		BaseDir: filepath.Join(dir, "data"), Output: func(int) io.Writer { return logf },
		Flags: func(int) []string { return flags }})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testcluster.StartDeadline)
	defer cancel()
	if err := c.WaitBrokers(ctx, 1); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &overheadRun{name: name, cluster: c, addr: c.Nodes[0].Addr, metrics: metrics}, nil
}

// scrapeEverySecond reads url every second until ctx ends and returns how many scrapes
// succeeded.
func scrapeEverySecond(ctx context.Context, url string) int {
	n := 0
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		if _, err := io.Copy(io.Discard, resp.Body); err == nil && resp.StatusCode == http.StatusOK {
			n++
		}
		resp.Body.Close()
	}
}

// formatEach formats every x with format and joins them with commas.
func formatEach(xs []float64, format string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(s, ", ")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
