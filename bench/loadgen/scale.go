package main

// `loadgen scale`: partitions at scale (issue 20). One node of each broker on the same machine
// in the same run: how long CreateTopics of 1,000, 5,000 and 10,000 partitions takes, how long a
// Metadata request for every partition takes, the descriptors and memory the idle partitions
// hold, how long a restart with them takes (clean and after kill -9), and how far towards
// 100,000 partitions each broker gets under the machine's descriptor limit.

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type scaleConfig struct {
	singleNodeRun
	Sizes            []int         // the measured creates, in order, on one broker
	MetadataRequests int           // Metadata(all topics) requests timed
	RampTo           int           // partitions the ramp tries to reach
	RampStep         int           // partitions per topic of the ramp
	RampBudget       time.Duration // per broker; the ramp stops when spent
	ProfileSeconds   int           // sluice CPU profile during the largest create (0: none)
	DataGiB          float64       // data written before the restarts (0: none)
	DataPartitions   int           // partitions of the data topic
	RestartTimeout   time.Duration // how long a restart may take before it counts as failed
}

// createRow is one CreateTopics of Partitions partitions.
type createRow struct {
	Topic      string  `json:"topic"`
	Partitions int     `json:"partitions"`
	RequestSec float64 `json:"request_s"` // until CreateTopics was answered
	ReadySec   float64 `json:"ready_s"`   // until Metadata showed every partition of it led
	TotalAfter int     `json:"total_after"`
	FDs        int     `json:"fds,omitempty"`
	RSSMiB     float64 `json:"rss_mib,omitempty"`
	Err        string  `json:"error,omitempty"`
}

// restartRow is one restart with every partition created so far.
type restartRow struct {
	Kind       string  `json:"kind"`       // "clean" (SIGTERM) or "kill -9"
	StopSec    float64 `json:"stop_s"`     // SIGTERM until exit (clean)
	ReadySec   float64 `json:"ready_s"`    // launch until ApiVersions is answered
	LedSec     float64 `json:"all_led_s"`  // launch until Metadata shows every partition led and the data's end offsets are back
	Partitions int     `json:"partitions"` // partitions held at the restart
	FDs        int     `json:"fds"`        // after the restart, all partitions idle
	RSSMiB     float64 `json:"rss_mib"`
	Err        string  `json:"error,omitempty"`
}

type scaleResult struct {
	Broker       string       `json:"broker"`
	Creates      []createRow  `json:"creates"`
	Partitions   int          `json:"partitions"` // after the measured creates
	MetaP50Ms    float64      `json:"metadata_p50_ms"`
	MetaP99Ms    float64      `json:"metadata_p99_ms"`
	MetaRequests int          `json:"metadata_requests"`
	FDsBefore    int          `json:"fds_before"`
	FDsAfter     int          `json:"fds_after"`
	MapsAfter    int          `json:"maps_after"` // lines of /proc/pid/maps (vm.max_map_count counts these)
	RSSBeforeMiB float64      `json:"rss_before_mib"`
	RSSAfterMiB  float64      `json:"rss_after_mib"`
	Data         *dataLoad    `json:"data,omitempty"`
	Restarts     []restartRow `json:"restarts"`
	RampRestarts []restartRow `json:"ramp_restarts,omitempty"` // at the ramp's end, when it reached RampTo
	Ramp         []createRow  `json:"ramp"`
	RampReached  int          `json:"ramp_reached"` // partitions all led at the ramp's end
	RampStop     string       `json:"ramp_stop"`
	ProfileTop   string       `json:"profile_top,omitempty"`
	ProfilePath  string       `json:"profile_path,omitempty"`
	Err          string       `json:"error,omitempty"`
	LogPath      string       `json:"log"`
	NoFileLimit  string       `json:"nofile_limit"` // the broker process's "Max open files"
}

func cmdScale(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("scale", flag.ExitOnError)
	var cfg scaleConfig
	cfg.registerFlags(fs, "scale")
	sizes := fs.String("sizes", "1000,5000,10000", "partitions of each measured CreateTopics, created in turn on one broker")
	fs.IntVar(&cfg.MetadataRequests, "metadata-requests", 50, "Metadata requests for every partition to time")
	fs.IntVar(&cfg.RampTo, "ramp-to", 100000, "partitions the ramp tries to reach on one node (0: no ramp)")
	fs.IntVar(&cfg.RampStep, "ramp-step", 10000, "partitions per topic the ramp creates")
	fs.DurationVar(&cfg.RampBudget, "ramp-budget", 8*time.Minute, "time each broker's ramp may take")
	fs.IntVar(&cfg.ProfileSeconds, "profile-seconds", 0, "take a sluice CPU profile (--debug-addr) of this many seconds from the start of the largest create")
	fs.Float64Var(&cfg.DataGiB, "data-gib", 10, "GiB of 1 KiB records written before the restarts, into a topic of its own (0: none)")
	fs.IntVar(&cfg.DataPartitions, "data-partitions", 100, "partitions of the data topic")
	fs.DurationVar(&cfg.RestartTimeout, "restart-timeout", 10*time.Minute, "how long a restart may take before it counts as failed")
	_ = fs.Parse(args)
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -sizes entry %q", s)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	if err := cfg.prepare(); err != nil {
		return err
	}
	started := time.Now().UTC()
	var results []scaleResult
	for _, name := range cfg.Brokers {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := runScale(ctx, cfg, name)
		if r.Err != "" {
			slog.Error("scale run failed", "broker", name, "err", r.Err)
		}
		results = append(results, r)
	}
	finished := time.Now().UTC()
	return cfg.writeReport(started, "scale", results, renderScale(cfg, started, finished, results, os.Args))
}

// runScale runs the whole scale workload against one fresh node of broker name.
func runScale(ctx context.Context, cfg scaleConfig, name string) (r scaleResult) {
	r.Broker = name
	b, err := cfg.startNode(name, cfg.ProfileSeconds > 0)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.LogPath = b.LogPath
	defer stopNode(b)
	r.NoFileLimit = procNoFileLimit(b.pid())
	r.FDsBefore = countFDs(b.pid())
	if rss, err := procStatusKiB(b.pid(), "VmRSS"); err == nil {
		r.RSSBeforeMiB = float64(rss) / 1024
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestTimeoutOverhead(10*time.Minute),
		kgo.BrokerMaxReadBytes(1<<30))
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer cl.Close()

	total := 0
	for i, n := range cfg.Sizes {
		topic := fmt.Sprintf("scale-%d-%d", i, n)
		var prof chan pprofResult
		if i == len(cfg.Sizes)-1 && b.DebugAddr != "" && cfg.ProfileSeconds > 0 {
			prof = make(chan pprofResult, 1)
			path := filepath.Join(cfg.WorkDir, fmt.Sprintf("sluice-create-%d.pprof", n))
			go func() { prof <- takeCPUProfile(ctx, b.DebugAddr, cfg.ProfileSeconds, path) }()
		}
		row := timeCreate(ctx, cl, b.Addr, topic, n, total, 5*time.Minute)
		if row.Err == "" {
			total += n
		}
		row.TotalAfter = total
		slog.Info("create", "broker", name, "partitions", n, "request_s", row.RequestSec, "ready_s", row.ReadySec, "err", row.Err)
		r.Creates = append(r.Creates, row)
		if prof != nil {
			p := <-prof
			r.ProfilePath, r.ProfileTop = p.path, p.top
			if p.err != nil {
				r.ProfileTop = "profile failed: " + p.err.Error()
			}
		}
		if row.Err != "" {
			r.Err = fmt.Sprintf("create of %d partitions: %s", n, row.Err)
			return r
		}
	}
	r.Partitions = total
	r.RampReached = total // what it holds, should a later step fail before the ramp
	r.RampStop = "the ramp did not run"

	// Every partition idle: what they hold.
	r.FDsAfter = countFDs(b.pid())
	r.MapsAfter = countMaps(b.pid())
	if rss, err := procStatusKiB(b.pid(), "VmRSS"); err == nil {
		r.RSSAfterMiB = float64(rss) / 1024
	}

	h := &hist{}
	for range cfg.MetadataRequests {
		start := time.Now()
		led, err := ledPartitions(ctx, cl)
		if err != nil || led < total {
			r.Err = fmt.Sprintf("metadata: %d of %d partitions led (%v)", led, total, err)
			return r
		}
		h.record(time.Since(start))
		r.MetaRequests++
	}
	r.MetaP50Ms, r.MetaP99Ms = ms(h.quantile(0.5)), ms(h.quantile(0.99))
	slog.Info("metadata", "broker", name, "p50_ms", r.MetaP50Ms, "p99_ms", r.MetaP99Ms)

	if cfg.DataGiB > 0 {
		d, err := loadData(ctx, b.Addr, "scale-data", cfg.DataPartitions, cfg.DataGiB)
		if err != nil {
			r.Err = "loading the data: " + err.Error()
			return r
		}
		r.Data = d
		total += d.Partitions
		r.RampReached = total
	}
	if r.Restarts, r.Err = restartBoth(ctx, cfg, b, name, total, r.Data); r.Err != "" {
		return r
	}
	cl.Close()
	if cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestTimeoutOverhead(10*time.Minute),
		kgo.BrokerMaxReadBytes(1<<30)); err != nil {
		r.Err = err.Error()
		return r
	}

	if cfg.RampTo <= total {
		r.RampStop = "no ramp"
		return r
	}
	rampEnd := time.Now().Add(cfg.RampBudget)
	for i := 0; total < cfg.RampTo; i++ {
		if time.Now().After(rampEnd) {
			r.RampStop = fmt.Sprintf("ramp budget of %v spent", cfg.RampBudget)
			return r
		}
		n := min(cfg.RampStep, cfg.RampTo-total)
		row := timeCreate(ctx, cl, b.Addr, fmt.Sprintf("ramp-%d-%d", i, n), n, total, time.Until(rampEnd)+time.Minute)
		if err := b.exited(); err != nil {
			row.Err = strings.TrimSpace(row.Err + " broker " + err.Error())
		}
		if row.Err == "" {
			total += n
			r.RampReached = total
		}
		row.TotalAfter = total
		if b.exited() == nil {
			row.FDs = countFDs(b.pid())
			if rss, err := procStatusKiB(b.pid(), "VmRSS"); err == nil {
				row.RSSMiB = float64(rss) / 1024
			}
		}
		slog.Info("ramp", "broker", name, "total", total, "request_s", row.RequestSec, "ready_s", row.ReadySec, "fds", row.FDs, "err", row.Err)
		r.Ramp = append(r.Ramp, row)
		if row.Err != "" {
			r.RampStop = row.Err
			return r
		}
	}
	r.RampStop = "reached"
	r.RampRestarts, r.Err = restartBoth(ctx, cfg, b, name, total, r.Data)
	return r
}

// restartBoth restarts b cleanly and then after kill -9, holding total partitions and data.
func restartBoth(ctx context.Context, cfg scaleConfig, b *brokerProc, name string, total int, data *dataLoad) ([]restartRow, string) {
	// kill -9 first, right after the data was written: its recovery then has the unflushed
	// data to check, as after a crash. A restart that did not finish in time does not stop the
	// other.
	var rows []restartRow
	var errs []string
	for _, kind := range []string{"kill -9", "clean"} {
		row := restart(ctx, b, kind, total, data, cfg.RestartTimeout)
		slog.Info("restart", "broker", name, "partitions", total, "kind", kind, "ready_s", row.ReadySec, "all_led_s", row.LedSec, "err", row.Err)
		rows = append(rows, row)
		if row.Err != "" {
			errs = append(errs, "restart ("+kind+"): "+row.Err)
		}
	}
	return rows, strings.Join(errs, "; ")
}

// maxTopicPartitions is the most partitions one CreateTopics request creates here: Kafka's
// controller refuses a request of more than 10,000 records (MAX_RECORDS_PER_USER_OP; a topic
// is one record plus one per partition), and sluice does the same.
const maxTopicPartitions = 5000

// timeCreate creates n partitions (replication factor 1) as topics of at most
// maxTopicPartitions, one CreateTopics request each in turn, and waits until Metadata shows
// before+n partitions led. A name of topic-<i> per request.
func timeCreate(ctx context.Context, cl *kgo.Client, addr, topic string, n, before int, timeout time.Duration) createRow {
	row := createRow{Topic: topic, Partitions: n}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var probes []*kgo.Record // one record for the first and the last partition of each topic
	for i, left := 0, n; left > 0; i++ {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = int32(timeout.Milliseconds())
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = topic, int32(min(left, maxTopicPartitions)), 1
		if n > maxTopicPartitions {
			t.Topic = fmt.Sprintf("%s-%d", topic, i)
		}
		left -= int(t.NumPartitions)
		probes = append(probes, &kgo.Record{Topic: t.Topic, Partition: 0, Value: []byte("probe")},
			&kgo.Record{Topic: t.Topic, Partition: t.NumPartitions - 1, Value: []byte("probe")})
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			row.Err = err.Error()
			return row
		}
		if len(resp.Topics) != 1 {
			row.Err = fmt.Sprintf("CreateTopics answered %d topics", len(resp.Topics))
			return row
		}
		if err := kerrOf(resp.Topics[0].ErrorCode); err != nil {
			row.Err = fmt.Sprintf("CreateTopics: %v %s", err, strPtr(resp.Topics[0].ErrorMessage))
			return row
		}
	}
	row.RequestSec = time.Since(start).Seconds()
	last := 0
	for {
		led, err := ledPartitions(ctx, cl)
		if err == nil && led >= before+n {
			row.ReadySec = time.Since(start).Seconds()
			// Led in Metadata is the controller's word; a broker out of descriptors still
			// shows the partitions it could not open as led. One record into the first and
			// the last partition of each new topic says they are really there (not timed).
			if err := probeWrites(ctx, addr, probes); err != nil {
				row.Err = "created but not writable: " + err.Error()
			}
			return row
		}
		if err == nil {
			last = led
		}
		select {
		case <-ctx.Done():
			row.Err = fmt.Sprintf("%d of %d partitions led after %v (last error %v)", last, before+n, timeout, err)
			return row
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probeWrites produces recs (acks=1), each to the partition it names.
func probeWrites(ctx context.Context, addr string, recs []*kgo.Record) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProduceRequestTimeout(20*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// ledPartitions sends one Metadata request for every topic and counts the partitions that
// have a leader and no error.
func ledPartitions(ctx context.Context, cl *kgo.Client) (int, error) {
	req := kmsg.NewPtrMetadataRequest() // Topics nil: every topic
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	led := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Leader >= 0 {
				led++
			}
		}
	}
	return led, nil
}

// restart stops node 1 (SIGTERM, or SIGKILL for "kill -9"), launches it again on the same data
// and times readiness and every partition being led again.
func restart(ctx context.Context, b *brokerProc, kind string, total int, data *dataLoad, timeout time.Duration) (row restartRow) {
	row.Kind, row.Partitions = kind, total
	n := b.cluster.Nodes[0]
	start := time.Now()
	if kind == "clean" {
		if !n.Term(5 * time.Minute) {
			row.Err = "ignored SIGTERM for 5m"
			return row
		}
	} else if err := n.Kill(); err != nil {
		row.Err = err.Error()
		return row
	}
	row.StopSec = time.Since(start).Seconds()
	start = time.Now()
	if err := n.Launch(); err != nil {
		row.Err = err.Error()
		return row
	}
	if err := n.WaitReady(timeout); err != nil {
		row.Err = err.Error()
		row.ReadySec = time.Since(start).Seconds()
		return row
	}
	row.ReadySec = time.Since(start).Seconds()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.BrokerMaxReadBytes(1<<30))
	if err != nil {
		row.Err = err.Error()
		return row
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		led, err := ledPartitions(ctx, cl)
		if err == nil && led >= total && data.dataBack(ctx, cl) {
			break
		}
		select {
		case <-ctx.Done():
			row.Err = fmt.Sprintf("%d of %d partitions led (or the data's end offsets not back) %v after the restart (%v)", led, total, timeout, err)
			row.LedSec = time.Since(start).Seconds()
			return row
		case <-time.After(50 * time.Millisecond):
		}
	}
	row.LedSec = time.Since(start).Seconds()
	row.FDs = countFDs(n.Pid())
	if rss, err := procStatusKiB(n.Pid(), "VmRSS"); err == nil {
		row.RSSMiB = float64(rss) / 1024
	}
	return row
}

func kerrOf(code int16) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("error code %d", code)
}

func strPtr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func countFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

func countMaps(pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return -1
	}
	return strings.Count(string(raw), "\n")
}

// procNoFileLimit is the "Max open files" line of /proc/<pid>/limits (soft and hard).
func procNoFileLimit(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				return f[0] + " soft, " + f[1] + " hard"
			}
		}
	}
	return "?"
}

func renderScale(cfg scaleConfig, started, finished time.Time, rs []scaleResult, argv []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Partitions at scale: sluice vs Apache Kafka, %s\n\n", started.Format("2006-01-02"))
	fmt.Fprintf(&b, "Command: `%s` (from `make bench-scale`: `bin/loadgen scale -kafka-lib \"$(scripts/fetch-kafka.sh)\"`). ", strings.Join(append([]string{"loadgen"}, argv[1:]...), " "))
	fmt.Fprintf(&b, "Run %s to %s (%v).\n\n", started.Format("15:04:05"), finished.Format("15:04:05 MST"), finished.Sub(started).Round(time.Second))
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	mmc, _ := os.ReadFile("/proc/sys/vm/max_map_count")
	fmt.Fprintf(&b, "Machine: %s; `ulimit -n` %d (hard %d), vm.max_map_count %s. One node of each broker, replication factor 1, "+
		"the brokers one after the other on fresh data directories. Kafka: %s, `%s`. Sizes %v are created in turn on the same broker.\n\n",
		machineSummary(), lim.Cur, lim.Max, strings.TrimSpace(string(mmc)), kafkaVersion(cfg.KafkaLib), strings.Join(kafkaJVMOpts, " "), cfg.Sizes)
	byName := map[string]*scaleResult{}
	for i := range rs {
		byName[rs[i].Broker] = &rs[i]
	}
	k, s := byName["kafka"], byName["sluice"]
	get := func(r *scaleResult, f func(*scaleResult) float64) float64 {
		if r == nil {
			return math.NaN()
		}
		return f(r)
	}
	b.WriteString("## Goals (issue 20)\n\n| | Kafka | sluice | sluice/Kafka | goal |\n|---|---|---|---|---|\n")
	last := len(cfg.Sizes) - 1
	createAt := func(r *scaleResult, i int, ready bool) float64 {
		if i >= len(r.Creates) || r.Creates[i].Err != "" {
			return math.NaN()
		}
		if ready {
			return r.Creates[i].ReadySec
		}
		return r.Creates[i].RequestSec
	}
	row := func(label string, kv, sv float64, unit, goal string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", label, fnum(kv, unit), fnum(sv, unit), fx(ratio(sv, kv)), goal)
	}
	if last >= 0 {
		n := cfg.Sizes[last]
		row(fmt.Sprintf("CreateTopics of %d partitions, until every partition is led", n),
			get(k, func(r *scaleResult) float64 { return createAt(r, last, true) }),
			get(s, func(r *scaleResult) float64 { return createAt(r, last, true) }), "s", "≤ 0.5x")
	}
	row("Metadata for every partition, p50", get(k, func(r *scaleResult) float64 { return r.MetaP50Ms }), get(s, func(r *scaleResult) float64 { return r.MetaP50Ms }), "ms", "≤ 0.5x")
	row("Metadata for every partition, p99", get(k, func(r *scaleResult) float64 { return r.MetaP99Ms }), get(s, func(r *scaleResult) float64 { return r.MetaP99Ms }), "ms", "≤ 0.5x")
	row("open descriptors, all partitions idle", get(k, func(r *scaleResult) float64 { return float64(r.FDsAfter) }), get(s, func(r *scaleResult) float64 { return float64(r.FDsAfter) }), "", "idle partitions hold none")
	perPart := func(r *scaleResult) float64 {
		if r.Partitions == 0 {
			return math.NaN()
		}
		return (r.RSSAfterMiB - r.RSSBeforeMiB) * 1024 / float64(r.Partitions)
	}
	row("RSS after creation", get(k, func(r *scaleResult) float64 { return r.RSSAfterMiB }), get(s, func(r *scaleResult) float64 { return r.RSSAfterMiB }), "MiB", "≤ 0.25x")
	row("RSS growth per idle partition", get(k, perPart), get(s, perPart), "KiB", "")
	restartGoalRows(&b, cfg, k, s)
	row(fmt.Sprintf("partitions reached towards %d", cfg.RampTo), get(k, func(r *scaleResult) float64 { return float64(r.RampReached) }), get(s, func(r *scaleResult) float64 { return float64(r.RampReached) }), "", fmt.Sprintf("%d under the default limit", cfg.RampTo))
	b.WriteString("\n")

	for _, r := range rs {
		fmt.Fprintf(&b, "## %s\n\n", r.Broker)
		if r.Err != "" {
			fmt.Fprintf(&b, "**Error:** %s\n\n", r.Err)
		}
		fmt.Fprintf(&b, "Process limit: %s. Before any topic: %d descriptors, RSS %.0f MiB. Log: %s\n\n", r.NoFileLimit, r.FDsBefore, r.RSSBeforeMiB, r.LogPath)
		fmt.Fprintf(&b, "Topics of at most %d partitions, one CreateTopics request each, in turn (Kafka refuses a request of more than 10,000 records).\n\n", maxTopicPartitions)
		b.WriteString("| topic | partitions | CreateTopics answered | every partition led | total after |\n|---|---|---|---|---|\n")
		for _, c := range r.Creates {
			fmt.Fprintf(&b, "| %s | %d | %.2f s | %.2f s | %d |%s\n", c.Topic, c.Partitions, c.RequestSec, c.ReadySec, c.TotalAfter, errCell(c.Err))
		}
		fmt.Fprintf(&b, "\nWith %d idle partitions: %d descriptors, %d mappings, RSS %.0f MiB. Metadata for every partition over %d requests: p50 %.1f ms, p99 %.1f ms.\n\n",
			r.Partitions, r.FDsAfter, r.MapsAfter, r.RSSAfterMiB, r.MetaRequests, r.MetaP50Ms, r.MetaP99Ms)
		if r.Data != nil {
			fmt.Fprintf(&b, "Data before the restarts: %.1f GiB (%d records of %d B, acks=1) into %s, %d partitions, in %.1f s.\n\n",
				float64(r.Data.Bytes)/(1<<30), r.Data.Records, dataRecordBytes, r.Data.Topic, r.Data.Partitions, r.Data.Seconds)
		}
		if rows := append(append([]restartRow{}, r.Restarts...), r.RampRestarts...); len(rows) > 0 {
			b.WriteString("| restart | partitions | stop | until ApiVersions | until every partition led, data back | descriptors after | RSS after |\n|---|---|---|---|---|---|---|\n")
			for _, x := range rows {
				fmt.Fprintf(&b, "| %s | %d | %.2f s | %.2f s | %.2f s | %d | %.0f MiB |%s\n", x.Kind, x.Partitions, x.StopSec, x.ReadySec, x.LedSec, x.FDs, x.RSSMiB, errCell(x.Err))
			}
			b.WriteString("\n")
		}
		if len(r.Ramp) > 0 {
			fmt.Fprintf(&b, "Ramp towards %d partitions, %d per topic: reached %d (%s).\n\n", cfg.RampTo, cfg.RampStep, r.RampReached, r.RampStop)
			b.WriteString("| topic | CreateTopics answered | every partition led | total | descriptors | RSS |\n|---|---|---|---|---|---|\n")
			for _, c := range r.Ramp {
				fmt.Fprintf(&b, "| %s | %.2f s | %.2f s | %d | %d | %.0f MiB |%s\n", c.Topic, c.RequestSec, c.ReadySec, c.TotalAfter, c.FDs, c.RSSMiB, errCell(c.Err))
			}
			b.WriteString("\n")
		}
		if len(r.Ramp) == 0 && r.RampStop != "" {
			fmt.Fprintf(&b, "Ramp towards %d partitions: %s; it held %d.\n\n", cfg.RampTo, r.RampStop, r.RampReached)
		}
		if r.ProfileTop != "" {
			fmt.Fprintf(&b, "CPU profile of the largest create (%s):\n\n```\n%s\n```\n\n", r.ProfilePath, r.ProfileTop)
		}
	}
	return b.String()
}

// restartGoalRows adds the goal table's restart rows: both brokers at the measured sizes plus
// the data, and sluice again at the ramp's end. A restart that failed counts as at least the
// time it was given.
func restartGoalRows(b *strings.Builder, cfg scaleConfig, k, s *scaleResult) {
	took := func(r *scaleResult, ramp bool, kind string) (float64, bool, int) {
		if r == nil {
			return math.NaN(), false, 0
		}
		rows := r.Restarts
		if ramp {
			rows = r.RampRestarts
		}
		for _, x := range rows {
			if x.Kind == kind {
				return x.LedSec, x.Err != "", x.Partitions
			}
		}
		return math.NaN(), false, 0
	}
	cell := func(v float64, failed bool) string {
		if failed {
			return fmt.Sprintf("> %.0f s (did not finish)", v)
		}
		return fnum(v, "s")
	}
	data := "no data"
	if cfg.DataGiB > 0 {
		data = fmt.Sprintf("%g GiB", cfg.DataGiB)
	}
	for _, ramp := range []bool{false, true} {
		for _, kind := range []string{"kill -9", "clean"} {
			kv, kf, kn := took(k, ramp, kind)
			sv, sf, sn := took(s, ramp, kind)
			if math.IsNaN(sv) && math.IsNaN(kv) {
				continue
			}
			n := max(kn, sn)
			ratioCell := fx(ratio(sv, kv))
			switch {
			case kf && sf:
				ratioCell = "n/a"
			case kf:
				ratioCell = "< " + ratioCell
			case sf:
				ratioCell = "> " + ratioCell
			}
			if ramp && math.IsNaN(kv) {
				ratioCell = fmt.Sprintf("n/a (Kafka held %d partitions)", get0(k))
			}
			fmt.Fprintf(b, "| restart (%s) with %d partitions and %s, until every partition is led and the data is back | %s | %s | %s | ≤ 0.5x |\n",
				kind, n, data, cell(kv, kf), cell(sv, sf), ratioCell)
		}
	}
}

func get0(r *scaleResult) int {
	if r == nil {
		return 0
	}
	return r.RampReached
}

func errCell(e string) string {
	if e == "" {
		return ""
	}
	return " error: " + strings.ReplaceAll(firstLine(e), "|", "/")
}

func fnum(v float64, unit string) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	s := num(v)
	if s == "-" {
		s = "0"
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// machineSummary is the CPU model and core count.
func machineSummary() string {
	cpu := "?"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores", cpu, numCPU())
}

func numCPU() int { return runtime.NumCPU() }
