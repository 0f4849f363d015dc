package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// workload is one measured step against one broker.
type workload struct {
	ID         string // stable key shared by both brokers' rows
	Title      string
	Tool       string // toolLoadgenProduce, toolPerfProducer, toolPerfConsumer, toolLoadgenConsume
	RecordSize int
	AcksAll    bool
	Producers  int
	Records    int64 // perf producer: records to send; consumers: records to read
	Topic      string
	KeepTopic  bool // the backlog stays for the consumer workloads
	Rate       int  // records/s for all producers together; 0 = as fast as possible
	NoE2E      bool // no end-to-end consumer (profiling the produce path alone)
	Sequential bool // one record at a time, linger 0: the broker's request round trip
	NoLinger   bool // linger 0: a record is sent as soon as the connection is free (latency rows)
	PerTxn     int  // toolLoadgenTxn: records per transaction
	// PprofNode1: take a Go CPU profile of sluice's node 1 (--debug-addr) during the measured
	// run itself (the rf3 row: the evidence for where a replicated produce's time goes).
	PprofNode1 bool
	// Listener is the client listener a tls-mode produce workload uses (listenerSSL,
	// listenerSASLSSL; "" = PLAINTEXT).
	Listener string
}

const (
	toolLoadgenProduce = "franz-go loadgen"
	toolPerfProducer   = "kafka-producer-perf-test"
	toolPerfConsumer   = "kafka-consumer-perf-test"
	toolLoadgenConsume = "franz-go loadgen (group)"
	// toolLoadgenConsumeNoSessions is a diagnostic: the same consumer without fetch sessions.
	toolLoadgenConsumeNoSessions = "franz-go loadgen (group, fetch sessions off)"
	toolWarmup                   = "warm-up" // unmeasured, so the JVM has compiled its hot paths
	toolLoadgenTxn               = "franz-go loadgen (transactional)"
)

// pct is one point of a latency curve.
type pct struct {
	Q  float64 `json:"q"`
	Ms float64 `json:"ms"`
}

// result is one workload's row in the report.
type result struct {
	Mode     string `json:"mode"` // "default" or "fsync"
	Broker   string `json:"broker"`
	Workload string `json:"workload"`
	Title    string `json:"title"`
	Tool     string `json:"tool"`
	Consume  bool   `json:"consume"`
	Rate     int    `json:"rate,omitempty"` // fixed records/s; 0 = unthrottled
	// Sequential: one record at a time (latency is the goal, not throughput).
	Sequential bool    `json:"sequential,omitempty"`
	Records    int64   `json:"records"`
	MiB        float64 `json:"mib"`
	Seconds    float64 `json:"seconds"` // the measured phase the rates are computed over
	// WallSeconds is the whole step the CPU and RSS figures cover, including a loadgen
	// workload's warm-up records and its end-to-end consumer catching up afterwards.
	WallSeconds float64 `json:"wall_seconds"`
	RecPerSec   float64 `json:"rec_per_sec"`
	MiBPerSec   float64 `json:"mib_per_sec"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	P999Ms      float64 `json:"p999_ms"`
	// P9999Ms and MaxMs are the longest produce stalls (a record waiting on a roll, an fsync).
	P9999Ms    float64 `json:"p9999_ms,omitempty"`
	MaxMs      float64 `json:"max_ms,omitempty"`
	E2EP50Ms   float64 `json:"e2e_p50_ms"`
	E2EP99Ms   float64 `json:"e2e_p99_ms"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// ClientCPUSeconds is the load generator's CPU over the step (this process and the perf
	// tools it ran), which shares the machine's cores with the broker.
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
	PeakRSSMiB       float64 `json:"peak_rss_mib"` // the largest node's
	// NodePeakRSSMiB is each node's peak RSS (several for a multi-node broker).
	NodePeakRSSMiB []float64 `json:"node_peak_rss_mib,omitempty"`
	Nodes          int       `json:"nodes"`
	Latency        []pct     `json:"latency,omitempty"` // produce latency curve (loadgen)
	E2E            []pct     `json:"e2e,omitempty"`
	Note           string    `json:"note,omitempty"`
	Err            string    `json:"error,omitempty"`
	pprofTop       string    // node 1's `go tool pprof -top` (PprofNode1 workloads)
}

// runConfig sizes one whole comparison.
type runConfig struct {
	KafkaLib, SluiceBin, WorkDir, OutDir, PlotScript string
	Quick                                            bool
	Duration                                         time.Duration // each loadgen produce workload
	Warmup                                           time.Duration // unmeasured produce before the workloads
	BacklogMiB                                       int64         // 1 KiB records written for the consumers
	FsyncDuration                                    time.Duration
	FsyncPerfRecords                                 int64
	Brokers                                          []string
	Modes                                            []string
	Profile                                          bool
	Only                                             []string // workload IDs to run; empty = all
	DiskMiB                                          int64
}

// report is everything the markdown and the plot are made from.
type report struct {
	Started    time.Time          `json:"started"`
	Finished   time.Time          `json:"finished"`
	Config     runConfig          `json:"config"`
	Machine    map[string]string  `json:"machine"`
	Limits     *limits            `json:"limits"`
	Results    []result           `json:"results"`
	Profiles   []profile          `json:"profiles"`
	BrokerLogs map[string]string  `json:"broker_logs"`
	Idle       map[string]float64 `json:"idle_rss_mib"`
}

var latencyQuantiles = []float64{0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1}

func curve(h *hist) []pct {
	out := make([]pct, 0, len(latencyQuantiles))
	for _, q := range latencyQuantiles {
		out = append(out, pct{Q: q, Ms: ms(h.quantile(q))})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func cmdAll(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("all", flag.ExitOnError)
	var cfg runConfig
	fs.StringVar(&cfg.KafkaLib, "kafka-lib", "", "directory of Apache Kafka's jars (scripts/fetch-kafka.sh prints it)")
	fs.StringVar(&cfg.SluiceBin, "sluice-bin", "bin/sluice", "sluice binary")
	fs.StringVar(&cfg.WorkDir, "workdir", filepath.Join(os.TempDir(), "sluice-bench"), "scratch directory on the data disk (wiped)")
	fs.StringVar(&cfg.OutDir, "out", "bench/results", "where the report goes")
	fs.StringVar(&cfg.PlotScript, "plot", "bench/plot.py", "matplotlib script that draws the PNG")
	fs.BoolVar(&cfg.Quick, "quick", false, "small sizes: a smoke run of a few minutes")
	brokers := fs.String("brokers", "kafka,sluice", "brokers to run, in order")
	modes := fs.String("modes", "default,fsync,rf3,txn", "modes to run: default and fsync (flush modes, one node), rf3 (three nodes, RF=3, min.insync.replicas=2), txn (transactional producer, one node), tls (PLAINTEXT, SSL and SASL_SSL listeners, one node)")
	fs.BoolVar(&cfg.Profile, "profile", true, "profile sluice with perf(1) during extra, unmeasured runs")
	only := fs.String("only", "", "comma-separated workload IDs to run (e.g. 1k-all-p8,100-a1-p8); empty runs all")
	_ = fs.Parse(args)
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	cfg.Brokers = strings.Split(*brokers, ",")
	cfg.Modes = strings.Split(*modes, ",")
	if cfg.Quick {
		cfg.Duration, cfg.Warmup, cfg.BacklogMiB, cfg.FsyncDuration, cfg.FsyncPerfRecords, cfg.DiskMiB = 5*time.Second, 3*time.Second, 256, 4*time.Second, 10000, 256
	} else {
		cfg.Duration, cfg.Warmup, cfg.BacklogMiB, cfg.FsyncDuration, cfg.FsyncPerfRecords, cfg.DiskMiB = 20*time.Second, 10*time.Second, 2100, 15*time.Second, 50000, 2048
	}
	if cfg.KafkaLib == "" {
		return errors.New("-kafka-lib is required")
	}
	if err := os.RemoveAll(cfg.WorkDir); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return err
	}
	rep := &report{Started: time.Now().UTC(), Config: cfg, Machine: machineInfo(cfg.SluiceBin),
		BrokerLogs: map[string]string{}, Idle: map[string]float64{}}

	slog.Info("measuring the machine's limits", "disk_mib", cfg.DiskMiB)
	var err error
	if rep.Limits, err = measureLimits(cfg.WorkDir, cfg.DiskMiB, 5*time.Second); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	slog.Info("limits", "disk_mibps", int(rep.Limits.DiskWriteMiBps), "fsyncs_per_s", int(rep.Limits.FsyncWritesPerS),
		"loopback_mibps", int(rep.Limits.LoopbackMiBps))

	for _, mode := range cfg.Modes {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rs, profs, err := runMode(ctx, cfg, rep, mode)
		rep.Results = append(rep.Results, rs...)
		rep.Profiles = append(rep.Profiles, profs...)
		if err != nil {
			slog.Error("run failed", "mode", mode, "err", err)
			rep.Results = append(rep.Results, result{Mode: mode, Broker: "-", Workload: "start", Err: err.Error()})
		}
	}
	rep.Finished = time.Now().UTC()
	return writeReport(rep)
}

// fixedRate is the paced workload's rate: light enough for both brokers in both flush modes,
// so its latency is the broker's, not the client's queue.
const fixedRate = 2000

// e2eRates are the fixed rates of the end-to-end rows (default mode).
var e2eRates = []int{1000, 10000, 50000}

func plan(cfg runConfig, mode string) []workload {
	all := fullPlan(cfg, mode)
	if len(cfg.Only) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(w workload) bool { return !slices.Contains(cfg.Only, w.ID) })
}

// nodesFor is how many nodes each broker runs in mode.
func nodesFor(mode string) int {
	if mode == "rf3" {
		return 3
	}
	return 1
}

func fullPlan(cfg runConfig, mode string) []workload {
	backlogRecords := cfg.BacklogMiB << 10 // 1 KiB records
	switch mode {
	case "rf3":
		// No end-to-end consumer: the three nodes and the producers already share 2 cores,
		// and the row is about what replication costs.
		return []workload{
			{ID: "rf3-1k-all-p1", Title: "3 nodes, RF=3, min ISR 2, 1 KiB, acks=all, 1 producer", Tool: toolLoadgenProduce, RecordSize: 1024, AcksAll: true, Producers: 1, NoE2E: true},
			{ID: "rf3-1k-all-p8", Title: "3 nodes, RF=3, min ISR 2, 1 KiB, acks=all, 8 producers", Tool: toolLoadgenProduce, RecordSize: 1024, AcksAll: true, Producers: 8, NoE2E: true, PprofNode1: true},
			// Unthrottled rows' latency is mostly time queued in the client; at a fixed rate
			// below both brokers' saturation it is the cluster's replication round trip.
			{ID: "rf3-1k-all-p1-fixed", Title: fmt.Sprintf("3 nodes, RF=3, min ISR 2, 1 KiB, acks=all, 1 producer, fixed %d records/s", fixedRate), Tool: toolLoadgenProduce,
				RecordSize: 1024, AcksAll: true, Producers: 1, Rate: fixedRate, NoE2E: true},
		}
	case "tls":
		return tlsPlan()
	case "txn":
		return []workload{
			{ID: "txn-1k-p1", Title: "transactions of 100 × 1 KiB, acks=all, 1 producer", Tool: toolLoadgenTxn, RecordSize: 1024, AcksAll: true, Producers: 1, PerTxn: 100},
			{ID: "txn-1k-p4", Title: "transactions of 100 × 1 KiB, acks=all, 4 producers", Tool: toolLoadgenTxn, RecordSize: 1024, AcksAll: true, Producers: 4, PerTxn: 100},
		}
	}
	lg := []workload{
		{ID: "1k-all-p1", Title: "1 KiB, acks=all, 1 producer", Tool: toolLoadgenProduce, RecordSize: 1024, AcksAll: true, Producers: 1},
		{ID: "1k-all-p8", Title: "1 KiB, acks=all, 8 producers", Tool: toolLoadgenProduce, RecordSize: 1024, AcksAll: true, Producers: 8},
		{ID: "100-a1-p1", Title: "100 B, acks=1, 1 producer", Tool: toolLoadgenProduce, RecordSize: 100, Producers: 1},
		{ID: "100-a1-p8", Title: "100 B, acks=1, 8 producers", Tool: toolLoadgenProduce, RecordSize: 100, Producers: 8},
		{ID: "1k-all-p1-fixed", Title: fmt.Sprintf("1 KiB, acks=all, 1 producer, fixed %d records/s", fixedRate), Tool: toolLoadgenProduce,
			RecordSize: 1024, AcksAll: true, Producers: 1, Rate: fixedRate},
		{ID: "100-a1-seq", Title: "100 B, acks=1, 1 producer, one record at a time (linger 0)", Tool: toolLoadgenProduce,
			RecordSize: 100, Producers: 1, Sequential: true},
	}
	if mode == "default" {
		// End-to-end latency of a consumer tailing the log at fixed rates below saturation:
		// the figure is e2e p50/p99, not throughput (issue 20).
		for _, rate := range e2eRates {
			// Linger 0: with franz-go's default 10 ms linger a record waits in the client for
			// its batch, and that wait, the same for both brokers, is most of what is measured.
			lg = append(lg, workload{ID: fmt.Sprintf("e2e-1k-all-%dk", rate/1000),
				Title: fmt.Sprintf("end-to-end, 1 KiB, acks=all, 1 producer, linger 0, fixed %d records/s, consumer tailing", rate),
				Tool:  toolLoadgenProduce, RecordSize: 1024, AcksAll: true, Producers: 1, Rate: rate, NoLinger: true})
		}
	}
	if mode == "fsync" {
		return append(lg,
			workload{ID: "perf-1k-all", Title: "1 KiB, acks=all, 1 producer", Tool: toolPerfProducer, RecordSize: 1024, AcksAll: true, Producers: 1, Records: cfg.FsyncPerfRecords},
			workload{ID: "perf-100-a1", Title: "100 B, acks=1, 1 producer", Tool: toolPerfProducer, RecordSize: 100, Producers: 1, Records: cfg.FsyncPerfRecords * 4},
		)
	}
	return append(lg,
		workload{ID: "perf-100-a1", Title: "100 B, acks=1, 1 producer", Tool: toolPerfProducer, RecordSize: 100, Producers: 1, Records: backlogRecords},
		workload{ID: "perf-1k-all-backlog", Title: fmt.Sprintf("1 KiB, acks=all, 1 producer (writes the %d MiB backlog)", cfg.BacklogMiB),
			Tool: toolPerfProducer, RecordSize: 1024, AcksAll: true, Producers: 1, Records: backlogRecords, Topic: "backlog", KeepTopic: true},
		workload{ID: "consume-perf", Title: fmt.Sprintf("read %d MiB backlog, 1 consumer in a group", cfg.BacklogMiB), Tool: toolPerfConsumer, Records: backlogRecords, Topic: "backlog", KeepTopic: true},
		workload{ID: "consume-loadgen", Title: fmt.Sprintf("read %d MiB backlog, 1 consumer in a group", cfg.BacklogMiB), Tool: toolLoadgenConsume, Records: backlogRecords, Topic: "backlog", KeepTopic: true},
		workload{ID: "consume-loadgen-nosessions", Title: fmt.Sprintf("read %d MiB backlog, 1 consumer in a group, no fetch sessions (diagnostic)", cfg.BacklogMiB),
			Tool: toolLoadgenConsumeNoSessions, Records: backlogRecords, Topic: "backlog", KeepTopic: true},
	)
}

// startBroker starts one broker for mode on a fresh directory under the work dir.
func startBroker(ctx context.Context, cfg runConfig, rep *report, name, mode string) (*brokerProc, string, error) {
	dir := filepath.Join(cfg.WorkDir, name+"-"+mode)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	fsyncEach := mode == "fsync"
	nodes := nodesFor(mode)
	slog.Info("starting broker", "broker", name, "mode", mode, "nodes", nodes)
	var b *brokerProc
	var err error
	switch {
	case name == "kafka" && mode == "tls":
		b, err = startKafkaTLS(cfg.KafkaLib, dir)
	case name == "sluice" && mode == "tls":
		b, err = startSluiceTLS(cfg.SluiceBin, dir)
	case name == "kafka":
		b, err = startKafka(cfg.KafkaLib, dir, nodes, fsyncEach)
	case name == "sluice":
		b, err = startSluice(cfg.SluiceBin, dir, nodes, fsyncEach, cfg.Profile && slices.ContainsFunc(plan(cfg, mode), func(w workload) bool { return w.PprofNode1 }))
	default:
		err = fmt.Errorf("unknown broker %q", name)
	}
	if err != nil {
		if b != nil {
			_ = b.stop()
		}
		os.RemoveAll(filepath.Join(dir, "data"))
		return nil, "", err
	}
	rep.BrokerLogs[name+"-"+mode] = strings.Join(b.LogPaths, " ")
	if rss, err := procStatusKiB(b.pid(), "VmRSS"); err == nil {
		rep.Idle[name+"-"+mode] = float64(rss) / 1024
	}
	return b, dir, nil
}

// runMode runs every workload of mode against all brokers. The brokers run side by side and
// take turns workload by workload (the first broker alternating), so that the load other users
// put on a shared machine falls on both alike instead of on whichever ran in a busy minute; a
// broker is idle while the other is measured.
func runMode(ctx context.Context, cfg runConfig, rep *report, mode string) ([]result, []profile, error) {
	var brokers []*brokerProc
	dirs := map[string]string{}
	defer func() {
		for _, b := range brokers {
			if err := b.stop(); err != nil {
				slog.Warn("broker stop", "broker", b.Name, "err", err)
			}
			os.RemoveAll(b.DataDir) // no broker data outlives its run
		}
	}()
	for _, name := range cfg.Brokers {
		b, dir, err := startBroker(ctx, cfg, rep, name, mode)
		if err != nil {
			return nil, nil, err
		}
		brokers = append(brokers, b)
		dirs[name] = dir
	}
	var out []result
	var profs []profile
	warm := workload{ID: "warmup", Title: "warm-up", Tool: toolWarmup, RecordSize: 1024, AcksAll: true, Producers: 4}
	for _, b := range brokers {
		if r := runWorkload(ctx, cfg, b, warm, mode, ""); r.Err != "" {
			return out, profs, fmt.Errorf("%s warm-up: %s", b.Name, r.Err)
		}
	}
	for i, w := range plan(cfg, mode) {
		order := append([]*brokerProc(nil), brokers...)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, b := range order {
			if ctx.Err() != nil {
				return out, profs, ctx.Err()
			}
			r := runWorkload(ctx, cfg, b, w, mode, "")
			slog.Info("workload", "broker", b.Name, "mode", mode, "id", w.ID, "rec_per_s", int(r.RecPerSec),
				"mib_per_s", fmt.Sprintf("%.1f", r.MiBPerSec), "p99_ms", r.P99Ms, "cpu_s", fmt.Sprintf("%.1f", r.CPUSeconds),
				"peak_rss_mib", int(r.PeakRSSMiB), "err", r.Err)
			out = append(out, r)
			if err := b.exited(); err != nil {
				return out, profs, fmt.Errorf("%s %s during %s (logs %s)", b.Name, err, w.ID, strings.Join(b.LogPaths, " "))
			}
			if w.PprofNode1 && b.Name == "sluice" && r.pprofTop != "" {
				profs = append(profs, profile{Workload: fmt.Sprintf("%s (%s), node 1, Go pprof during the measured run", w.ID, w.Title),
					Flat: r.pprofTop, CPUSeconds: r.CPUSeconds, WallSeconds: r.WallSeconds, Pprof: true})
			}
		}
	}
	if !cfg.Profile || mode != "default" {
		return out, profs, nil
	}
	for _, b := range brokers {
		if b.Name != "sluice" {
			continue
		}
		for _, w := range plan(cfg, mode) {
			if w.ID != "1k-all-p8" && w.ID != "100-a1-p8" && w.ID != "consume-loadgen" {
				continue
			}
			p, err := profileWorkload(ctx, cfg, b, w, mode, dirs[b.Name])
			if err != nil {
				slog.Warn("profile", "workload", w.ID, "err", err)
				continue
			}
			profs = append(profs, *p)
		}
	}
	return out, profs, nil
}

// runWorkload runs w against b and samples b's CPU and peak RSS around it. suffix keeps the
// topics of extra (profiling) runs apart.
func runWorkload(ctx context.Context, cfg runConfig, b *brokerProc, w workload, mode, suffix string) (r result) {
	r = result{Mode: mode, Broker: b.Name, Workload: w.ID, Title: w.Title, Tool: w.Tool, Nodes: len(b.Addrs),
		Consume: w.Tool == toolPerfConsumer || w.Tool == toolLoadgenConsume || w.Tool == toolLoadgenConsumeNoSessions, Rate: w.Rate,
		Sequential: w.Sequential}
	topic := w.Topic
	if topic == "" {
		topic = "bench-" + w.ID + suffix
	}
	fail := func(err error) result { r.Err = err.Error(); return r }
	if !r.Consume {
		if err := createTopic(ctx, b.Addrs, topic, 6, int16(nodesFor(mode))); err != nil {
			return fail(err)
		}
	}
	if !w.KeepTopic {
		defer deleteTopic(context.WithoutCancel(ctx), b.Addrs, topic)
	}
	if w.Tool == toolWarmup {
		_, err := runProduce(ctx, produceSpec{Brokers: b.Addrs, Topic: topic, Producers: w.Producers,
			RecordSize: w.RecordSize, AcksAll: w.AcksAll, Duration: cfg.Warmup, E2E: true})
		if err != nil {
			return fail(err)
		}
		return r
	}
	// The previous step's dirty pages (often the other broker's) are written back now, not
	// during this step, where the kernel would throttle this broker's writes for them. Before
	// a produce step the page cache is emptied too (when we may): what the other broker left
	// cached otherwise decides how fast this one's writes get pages. Consumer steps keep the
	// cache, since they read the backlog written just before, and so does the step that
	// writes that backlog: emptying the cache before the second broker's backlog would throw
	// out the first broker's.
	writeBackDirtyPages()
	cacheKept := !r.Consume && !w.KeepTopic && !dropPageCache()
	load := loadAvg()
	defer func() {
		if cacheKept {
			r.Note = "page cache not emptied before the step (not root); " + r.Note
		}
		if r.Note != "" && !strings.HasSuffix(r.Note, "; ") {
			r.Note += "; "
		}
		r.Note += "load avg " + load
	}()
	u, err := beginUsage(b.pids())
	if err != nil {
		return fail(err)
	}
	var pprofDone chan pprofResult
	if w.PprofNode1 && b.DebugAddr != "" {
		pprofDone = make(chan pprofResult, 1)
		seconds := max(int(durationFor(cfg, mode).Seconds())-2, 1)
		go func() {
			pprofDone <- takeCPUProfile(ctx, b.DebugAddr, seconds, filepath.Join(cfg.OutDir, time.Now().UTC().Format("2006-01-02")+"-sluice-"+w.ID+"-node1.pprof"))
		}()
	}
	group := fmt.Sprintf("bench-%s-%d", w.ID, time.Now().UnixNano())
	stepStart := time.Now()
	switch w.Tool {
	case toolLoadgenProduce:
		addrs, security, err := b.client(w.Listener)
		if err != nil {
			return fail(err)
		}
		res, err := runProduce(ctx, produceSpec{Brokers: addrs, Topic: topic, Producers: w.Producers,
			RecordSize: w.RecordSize, AcksAll: w.AcksAll, Duration: durationFor(cfg, mode), E2E: !w.NoE2E, Rate: w.Rate, Sequential: w.Sequential, NoLinger: w.NoLinger,
			Security: security})
		if res != nil {
			r.Records, r.Seconds = res.Records, res.Elapsed.Seconds()
			r.MiB = float64(res.Bytes) / (1 << 20)
			r.P50Ms, r.P99Ms, r.P999Ms = ms(res.Produce.quantile(0.5)), ms(res.Produce.quantile(0.99)), ms(res.Produce.quantile(0.999))
			r.P9999Ms, r.MaxMs = ms(res.Produce.quantile(0.9999)), ms(time.Duration(res.Produce.max))
			r.Latency = curve(res.Produce)
			if res.EndToEnd != nil {
				r.E2EP50Ms, r.E2EP99Ms = ms(res.EndToEnd.quantile(0.5)), ms(res.EndToEnd.quantile(0.99))
				r.E2E = curve(res.EndToEnd)
			}
			if res.EndToEnd != nil && res.E2ESeen < res.Records {
				r.Note = fmt.Sprintf("e2e consumer fell behind: had read %.0f%% of the records %v after the producers stopped (e2e figures cover those); ",
					100*float64(res.E2ESeen)/float64(max(res.Records, 1)), e2eDrain)
			}
			if res.Errors > 0 {
				r.Note += fmt.Sprintf("%d produce errors; ", res.Errors)
			}
		}
		if err != nil {
			r.Err = err.Error()
		}
	case toolLoadgenTxn:
		res, err := runTxnProduce(ctx, txnSpec{Brokers: b.Addrs, Topic: topic, Producers: w.Producers, RecordSize: w.RecordSize,
			PerTxn: w.PerTxn, Duration: durationFor(cfg, mode)})
		if res != nil {
			r.Records, r.Seconds = res.Records, res.Elapsed.Seconds()
			r.MiB = float64(res.Bytes) / (1 << 20)
			r.P50Ms, r.P99Ms, r.P999Ms = ms(res.Produce.quantile(0.5)), ms(res.Produce.quantile(0.99)), ms(res.Produce.quantile(0.999))
			r.Latency = curve(res.Produce)
			r.Note = fmt.Sprintf("%d transactions committed; latency columns are per transaction (BeginTransaction → commit acknowledged); ", res.Records/int64(w.PerTxn))
			if res.Errors > 0 {
				r.Note += fmt.Sprintf("%d failed transactions; ", res.Errors)
			}
		}
		if err != nil {
			r.Err = err.Error()
		}
	case toolPerfProducer:
		acks := "1"
		if w.AcksAll {
			acks = "all"
		}
		start := time.Now()
		res, err := runPerfProducer(ctx, cfg.KafkaLib, b.Addr, topic, w.Records, w.RecordSize, acks, 15*time.Minute)
		if err != nil {
			r.Err = err.Error()
			break
		}
		r.Records = res.Records
		r.MiB = float64(res.Records*int64(w.RecordSize)) / (1 << 20)
		r.Seconds = float64(res.Records) / res.RecPerSec
		r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs = res.P50Ms, res.P99Ms, res.P999Ms, res.MaxMs
		r.Latency = []pct{{0.5, res.P50Ms}, {0.95, res.P95Ms}, {0.99, res.P99Ms}, {0.999, res.P999Ms}, {1, res.MaxMs}}
		r.Note = fmt.Sprintf("JVM start to exit %.1fs; latencies are whole ms as the tool prints them", time.Since(start).Seconds())
	case toolPerfConsumer:
		res, err := runPerfConsumer(ctx, cfg.KafkaLib, b.Addr, topic, group, w.Records, 15*time.Minute)
		if err != nil {
			r.Err = err.Error()
			break
		}
		r.Records, r.MiB, r.Seconds = int64(res.Records), res.MiB, res.FetchMs/1000
		r.Note = fmt.Sprintf("group join %.0f ms (excluded)", res.RebalanceMs)
	case toolLoadgenConsume, toolLoadgenConsumeNoSessions:
		res, err := runConsume(ctx, []string{b.Addr}, topic, group, w.Records, 15*time.Minute, w.Tool == toolLoadgenConsumeNoSessions)
		if res != nil {
			r.Records, r.MiB, r.Seconds = res.Records, float64(res.Bytes)/(1<<20), res.Elapsed.Seconds()
			r.Note = fmt.Sprintf("group join %.0f ms (excluded)", float64(res.Join)/1e6)
		}
		if err != nil {
			r.Err = err.Error()
		}
	}
	if r.Seconds > 0 {
		r.RecPerSec, r.MiBPerSec = float64(r.Records)/r.Seconds, r.MiB/r.Seconds
	}
	r.WallSeconds = time.Since(stepStart).Seconds()
	r.ClientCPUSeconds = u.clientSeconds()
	if cpu, rss, err := u.end(); err == nil {
		r.CPUSeconds, r.PeakRSSMiB = cpu, slices.Max(rss)
		if len(rss) > 1 {
			r.NodePeakRSSMiB = rss
			var parts []string
			for _, v := range rss {
				parts = append(parts, fmt.Sprintf("%.0f", v))
			}
			r.Note += fmt.Sprintf("peak RSS per node %s MiB; CPU summed over the %d nodes; ", strings.Join(parts, "/"), len(rss))
		}
	} else if r.Err == "" {
		r.Err = err.Error()
	}
	if pprofDone != nil {
		p := <-pprofDone
		if p.err != nil {
			r.Note += "pprof failed: " + p.err.Error() + "; "
		} else {
			r.pprofTop = p.top
			r.Note += "node 1 profiled with pprof during this run; "
		}
	}
	return r
}

func durationFor(cfg runConfig, mode string) time.Duration {
	if mode == "fsync" {
		return cfg.FsyncDuration
	}
	return cfg.Duration
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// machineInfo describes where the run happened.
func machineInfo(sluiceBin string) map[string]string {
	m := map[string]string{}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m["cpu"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			return "unknown"
		}
		return strings.TrimSpace(string(out))
	}
	m["cores"] = run("nproc")
	m["kernel"] = run("uname", "-r")
	m["java"] = strings.Split(run("java", "-version"), "\n")[0]
	m["go"] = run("go", "version")
	m["sluice_commit"] = run("git", "rev-parse", "--short", "HEAD")
	// bench/run.sh builds the work tree, so uncommitted edits are part of what was measured.
	if dirty := run("git", "status", "--porcelain", "--untracked-files=no"); dirty != "unknown" && dirty != "" {
		m["sluice_commit"] += fmt.Sprintf(" + %d uncommitted files in the work tree", len(strings.Split(dirty, "\n")))
	}
	if st, err := os.Stat(sluiceBin); err == nil {
		m["sluice_binary_built"] = st.ModTime().UTC().Format(time.RFC3339)
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		m["memory"] = strings.TrimSpace(strings.TrimPrefix(strings.Split(string(raw), "\n")[0], "MemTotal:"))
	}
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		m["loadavg_at_start"] = strings.TrimSpace(string(raw))
	}
	return m
}

// profile is perf(1)'s view of sluice during one extra run of a workload.
type profile struct {
	Workload    string  `json:"workload"`
	Flat        string  `json:"flat"`         // self time per symbol
	Children    string  `json:"children"`     // time including callees per symbol
	CPUSeconds  float64 `json:"cpu_seconds"`  // sluice's CPU time during the profiled run
	WallSeconds float64 `json:"wall_seconds"` // the profiled run's measured duration
	// Categories sum self time (symbols of at least 0.3%) into broad buckets.
	Categories []profileCategory `json:"categories"`
	// Pprof: Flat is `go tool pprof -top` of a Go CPU profile, not perf's.
	Pprof bool   `json:"pprof,omitempty"`
	Err   string `json:"error,omitempty"`
}

// profileWorkload reruns w (not counted) with perf record attached to the broker.
func profileWorkload(ctx context.Context, cfg runConfig, b *brokerProc, w workload, mode, dir string) (*profile, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, errors.New("perf is not installed")
	}
	data := filepath.Join(dir, "perf-"+w.ID+".data")
	rec := exec.Command("perf", "record", "-F", "499", "-g", "-p", fmt.Sprint(b.pid()), "-o", data)
	logf, err := os.Create(data + ".log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	rec.Stdout, rec.Stderr = logf, logf
	if err := rec.Start(); err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // perf attaches asynchronously; a short head start is enough
	w.NoE2E = true                     // profile the produce path alone; the consume path has its own profile
	r := runWorkload(ctx, cfg, b, w, mode, "-profiled")
	_ = rec.Process.Signal(syscall.SIGINT)
	_ = rec.Wait() // perf exits with SIGINT's status after writing its data
	if st, err := os.Stat(data); err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("perf record wrote no data (see %s.log)", data)
	}
	defer os.Remove(data)
	p := &profile{Workload: w.ID + " (" + w.Title + ")", Err: r.Err, CPUSeconds: r.CPUSeconds, WallSeconds: r.WallSeconds}
	report := func(children string, limit int) []string {
		out, err := exec.Command("perf", "report", "-i", data, "--stdio", children, "--sort", "symbol",
			"-g", "none", "--percent-limit", "0.3").CombinedOutput()
		if err != nil {
			return []string{"perf report failed: " + err.Error()}
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			// --sort symbol leaves empty parent columns shown as "-"; drop them.
			for strings.HasSuffix(t, "-") {
				t = strings.TrimSpace(strings.TrimSuffix(t, "-"))
			}
			lines = append(lines, t)
		}
		if limit > 0 && len(lines) > limit {
			lines = lines[:limit]
		}
		return lines
	}
	flat := report("--no-children", 0)
	p.Categories = categorize(flat)
	if len(flat) > 25 {
		flat = flat[:25]
	}
	p.Flat = strings.Join(flat, "\n")
	p.Children = strings.Join(report("--children", 40), "\n")
	return p, nil
}

// profileCategory is a share of sampled CPU time.
type profileCategory struct {
	Name    string  `json:"name"`
	Percent float64 `json:"percent"`
}

// profileCategories sorts self-time symbols into the buckets the report discusses; the first
// matching rule wins.
var profileCategories = []struct {
	name  string
	match func(sym string, kernel bool) bool
}{
	{"kernel: scheduler, wake-ups, context switches", func(s string, k bool) bool {
		return k && containsAny(s, "finish_task_switch", "schedule", "_raw_spin_unlock_irq", "try_to_wake_up", "futex", "select_task_rq", "enqueue_", "dequeue_", "update_curr", "pick_next")
	}},
	{"kernel: TCP/loopback network", func(s string, k bool) bool {
		return k && containsAny(s, "tcp_", "skb", "sock", "softirq", "net_rx", "__dev_queue", "ip_", "splice_to_socket", "loopback", "napi")
	}},
	{"kernel: page cache, file write/read, copies", func(s string, k bool) bool {
		return k && containsAny(s, "filemap", "folio", "copy_", "page", "ext4", "xfs", "iomap", "find_lock_entries", "memcpy", "clear_", "iov_iter", "rep_movs", "fault")
	}},
	{"kernel: syscall entry/exit, other", func(s string, k bool) bool { return k }},
	{"Go GC and allocation", func(s string, _ bool) bool {
		return containsAny(s, "runtime.gc", "runtime.scan", "runtime.findObject", "runtime.greyobject", "runtime.mallocgc", "runtime.memclrNoHeapPointers",
			"runtime.(*mspan)", "runtime.(*mheap)", "runtime.(*gcWork)", "runtime.markBits", "runtime.tryDeferToSpanScan", "runtime.sweep", "runtime.bgsweep", "runtime.heapBits", "runtime.(*mcache)", "runtime.(*mcentral)", "runtime.wbBuf", "runtime.bulkBarrier", "runtime.typePointers", "runtime.spanOf", "runtime.(*spanSet)", "runtime.newobject", "runtime.makeslice", "runtime.growslice", "runtime.scanObjectsSmall")
	}},
	{"Go scheduler, timers, netpoll, locks", func(s string, _ bool) bool {
		return containsAny(s, "runtime.findRunnable", "runtime.schedule", "runtime.park", "runtime.futex", "runtime.usleep", "runtime.lock", "runtime.unlock", "runtime.casgstatus",
			"runtime.sysmon", "runtime.netpoll", "runtime.runqgrab", "runtime.stealWork", "runtime.ready", "runtime.notewakeup", "runtime.nanotime", "runtime.(*timer", "runtime.checkTimers", "runtime.mPark", "runtime.stopm", "runtime.startm", "runtime.wakep", "runtime.resetspinning", "runtime.execute", "runtime.gopark", "runtime.goready", "runtime.selectgo", "runtime.chan", "runtime.send", "runtime.recv", "sync.", "internal/sync", "runtime.procyield", "runtime.osyield", "__vdso_clock_gettime", "runtime.mcall", "runtime.gogo")
	}},
	{"memmove", func(s string, _ bool) bool { return strings.Contains(s, "memmove") }},
	{"CRC32C", func(s string, _ bool) bool { return strings.Contains(s, "crc32") }},
	{"syscall wrappers (Go side)", func(s string, _ bool) bool {
		return containsAny(s, "syscall.", "internal/runtime/syscall", "internal/poll", "runtime.entersyscall", "runtime.exitsyscall", "runtime.reentersyscall")
	}},
	{"sluice code", func(s string, _ bool) bool { return strings.HasPrefix(s, "sluice/") }},
	{"franz-go kmsg/kbin (protocol encode/decode)", func(s string, _ bool) bool { return strings.Contains(s, "twmb/franz-go") }},
	{"compression", func(s string, _ bool) bool { return containsAny(s, "klauspost", "lz4", "snappy", "compress/") }},
	{"other Go runtime and libraries", func(string, bool) bool { return true }},
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// categorize sums perf's self-time lines ("12.34%  [k] symbol") into profileCategories.
func categorize(lines []string) []profileCategory {
	sums := make([]float64, len(profileCategories))
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || !strings.HasSuffix(f[0], "%") {
			continue
		}
		pctv, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			continue
		}
		kernel := f[1] == "[k]"
		sym := strings.Join(f[2:], " ")
		for i, c := range profileCategories {
			if c.match(sym, kernel) {
				sums[i] += pctv
				break
			}
		}
	}
	var out []profileCategory
	for i, c := range profileCategories {
		if sums[i] > 0 {
			out = append(out, profileCategory{Name: c.name, Percent: sums[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Percent > out[j].Percent })
	return out
}

func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}
