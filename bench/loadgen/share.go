package main

// loadgen share (issue 17, KIP-932): share-group consumption on one node of each broker in
// turn, the same franz-go share consumer against both. For each partition count, a topic is
// preloaded with a backlog; then -consumers share consumers of one group (share.auto.offset.reset
// =earliest, set as a GROUP config) consume it until every record was delivered and accepted.
// Each consumer polls, marks the poll's records ACCEPT and flushes the acknowledgements
// synchronously (franz-go's FlushAcks: a ShareAcknowledge round trip, KafkaShareConsumer's
// commitSync): that wait is the acknowledge latency. Records/s is the backlog over the time from
// the consumers' start to the last record's first delivery being counted, so group joins are
// included, the same for both brokers.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type shareConfig struct {
	singleNodeRun
	Partitions               []int
	Records, Size, Consumers int
	Warmup                   int
	Timeout                  time.Duration
	ProfileSeconds           int
}

// shareRow is one broker's run of one partition count.
type shareRow struct {
	Broker     string
	Partitions int
	Records    int
	// Delivered counts every record handed to a consumer, redeliveries included; Unique the
	// distinct offsets.
	Delivered, Unique int64
	Elapsed           time.Duration
	RecordsPerSec     float64
	Acks              uint64 // FlushAcks round trips timed
	AckP50, AckP99    time.Duration
	AckMax            time.Duration
	CPUSeconds        float64
	PeakRSSMiB        float64
	Profile           string // `go tool pprof -top` of sluice during the run, if taken
	Err               string
}

func cmdShare(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("share", flag.ExitOnError)
	var cfg shareConfig
	cfg.registerFlags(fs, "share")
	parts := fs.String("partitions", "1,4", "partition counts, one topic each")
	fs.IntVar(&cfg.Records, "records", 200000, "backlog records per topic")
	fs.IntVar(&cfg.Size, "size", 512, "record value bytes")
	fs.IntVar(&cfg.Consumers, "consumers", 4, "share consumers in the group")
	fs.IntVar(&cfg.Warmup, "warmup", 20000, "records of an unmeasured warm-up consumption on each broker first (JIT, page cache); 0: none")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "how long one topic's consumption may take")
	fs.IntVar(&cfg.ProfileSeconds, "profile-seconds", 0, "take a sluice CPU profile (--debug-addr) of this many seconds from the start of each consumption")
	_ = fs.Parse(args)
	for _, s := range strings.Split(*parts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -partitions entry %q", s)
		}
		cfg.Partitions = append(cfg.Partitions, n)
	}
	if cfg.Records < 1 || cfg.Consumers < 1 || cfg.Size < 1 {
		return errors.New("-records, -consumers and -size must be positive")
	}
	if err := cfg.prepare(); err != nil {
		return err
	}
	started := time.Now().UTC()
	machine := machineInfo(cfg.SluiceBin)
	var rows []shareRow
	for _, name := range cfg.Brokers {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rows = append(rows, runShareBroker(ctx, cfg, name)...)
	}
	finished := time.Now().UTC()
	return cfg.writeReport(started, "share", rows, renderShare(cfg, started, finished, rows, machine, os.Args))
}

// runShareBroker starts one fresh node of broker name and runs every partition count on it.
func runShareBroker(ctx context.Context, cfg shareConfig, name string) []shareRow {
	fail := func(err error) []shareRow { return []shareRow{{Broker: name, Err: err.Error()}} }
	b, err := cfg.startNode(name, cfg.ProfileSeconds > 0)
	if err != nil {
		return fail(err)
	}
	defer stopNode(b)
	if err := enableShareGroups(ctx, b.Addrs); err != nil {
		return fail(err)
	}
	if cfg.Warmup > 0 {
		warm := cfg
		warm.Records, warm.ProfileSeconds = cfg.Warmup, 0
		row := runShareTopic(ctx, warm, b, "share-warmup", 1)
		slog.Info("share warm-up", "broker", name, "records_per_s", int(row.RecordsPerSec), "err", row.Err)
	}
	var rows []shareRow
	for _, p := range cfg.Partitions {
		row := runShareTopic(ctx, cfg, b, fmt.Sprintf("share-p%d", p), p)
		if row.Err != "" {
			slog.Error("share run failed", "broker", name, "partitions", p, "err", row.Err)
		} else {
			slog.Info("share run", "broker", name, "partitions", p, "records_per_s", int(row.RecordsPerSec),
				"ack_p50", row.AckP50, "ack_p99", row.AckP99, "redelivered", row.Delivered-row.Unique)
		}
		rows = append(rows, row)
	}
	return rows
}

// enableShareGroups finalizes share.version 1 when the broker supports it and has not (Kafka
// 4.4 serves share groups only with the feature finalized; kafka-features.sh upgrade
// --feature share.version=1 does the same UpdateFeatures).
func enableShareGroups(ctx context.Context, addrs []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	var supported int16
	for _, f := range av.SupportedFeatures {
		if f.Name == "share.version" {
			supported = f.MaxVersion
		}
	}
	for _, f := range av.FinalizedFeatures {
		if f.Name == "share.version" && f.MaxVersionLevel >= 1 {
			return nil
		}
	}
	if supported < 1 {
		return nil // sluice serves share groups without the feature (share.version 0)
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "share.version", 1, 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("UpdateFeatures share.version=1: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("UpdateFeatures share.version=1: %w (%s)", err, strPtr(resp.ErrorMessage))
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("UpdateFeatures %s: %w (%s)", r.Feature, err, strPtr(r.ErrorMessage))
		}
	}
	return nil
}

// setShareGroupEarliest sets the group's share.auto.offset.reset to earliest.
func setShareGroupEarliest(ctx context.Context, cl *kgo.Client, group string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return fmt.Errorf("share.auto.offset.reset for %s: %w (%s)", group, err, strPtr(res.ErrorMessage))
		}
	}
	return nil
}

// preload writes n records of size bytes spread over the topic's partitions.
func preload(ctx context.Context, addrs []string, topic string, n, size int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var firstErr atomic.Pointer[error]
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if p := firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// runShareTopic preloads topic with partitions partitions and consumes it with a share group.
func runShareTopic(ctx context.Context, cfg shareConfig, b *brokerProc, topic string, partitions int) (row shareRow) {
	row = shareRow{Broker: b.Name, Partitions: partitions, Records: cfg.Records}
	group := "bench-" + topic
	if err := createTopic(ctx, b.Addrs, topic, int32(partitions), 1); err != nil {
		row.Err = err.Error()
		return row
	}
	if err := preload(ctx, b.Addrs, topic, cfg.Records, cfg.Size); err != nil {
		row.Err = "preload: " + err.Error()
		return row
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		row.Err = err.Error()
		return row
	}
	defer admin.Close()
	if err := setShareGroupEarliest(ctx, admin, group); err != nil {
		row.Err = err.Error()
		return row
	}
	writeBackDirtyPages()

	// seen[p][offset] marks offsets delivered at least once; each partition holds at most
	// cfg.Records offsets (a fresh topic, no transactions).
	seen := make([][]atomic.Bool, partitions)
	for i := range seen {
		seen[i] = make([]atomic.Bool, cfg.Records)
	}
	var delivered, unique atomic.Int64
	var lastNew atomic.Int64 // ns since start at which the last new offset was counted
	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	u, err := beginUsage(b.pids())
	if err != nil {
		row.Err = err.Error()
		return row
	}
	var prof chan pprofResult
	if b.DebugAddr != "" && cfg.ProfileSeconds > 0 {
		prof = make(chan pprofResult, 1)
		path := filepath.Join(cfg.WorkDir, fmt.Sprintf("sluice-share-p%d.pprof", partitions))
		go func() { prof <- takeCPUProfile(ctx, b.DebugAddr, cfg.ProfileSeconds, path) }()
	}
	start := time.Now()
	hists := make([]*hist, cfg.Consumers)
	errs := make([]error, cfg.Consumers)
	var wg sync.WaitGroup
	for i := range cfg.Consumers {
		hists[i] = new(hist)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = shareConsume(runCtx, b.Addrs, group, topic, hists[i], func(r *kgo.Record) {
				delivered.Add(1)
				if r.Partition < 0 || int(r.Partition) >= partitions || r.Offset < 0 || r.Offset >= int64(cfg.Records) {
					return
				}
				if !seen[r.Partition][r.Offset].Swap(true) {
					lastNew.Store(int64(time.Since(start)))
					if unique.Add(1) == int64(cfg.Records) {
						cancel() // everything was delivered: stop every consumer
					}
				}
			})
		}()
	}
	wg.Wait()
	cpu, rss, uerr := u.end()
	if prof != nil {
		if p := <-prof; p.err == nil {
			row.Profile = p.top
		} else {
			row.Profile = "profile failed: " + p.err.Error()
		}
	}
	row.Delivered, row.Unique = delivered.Load(), unique.Load()
	row.Elapsed = time.Duration(lastNew.Load())
	if row.Elapsed > 0 {
		row.RecordsPerSec = float64(row.Unique) / row.Elapsed.Seconds()
	}
	all := new(hist)
	for _, h := range hists {
		all.merge(h)
	}
	row.Acks, row.AckP50, row.AckP99, row.AckMax = all.total, all.quantile(0.5), all.quantile(0.99), time.Duration(all.max)
	if uerr == nil {
		row.CPUSeconds = cpu
		for _, r := range rss {
			row.PeakRSSMiB = max(row.PeakRSSMiB, r)
		}
	}
	if row.Unique < int64(cfg.Records) {
		row.Err = fmt.Sprintf("only %d of %d records delivered within %v", row.Unique, cfg.Records, cfg.Timeout)
		for _, err := range errs {
			if err != nil {
				row.Err += "; " + err.Error()
				break
			}
		}
	}
	deleteTopic(ctx, b.Addrs, topic)
	return row
}

// shareConsume runs one share consumer until ctx ends: poll, hand each record to onRecord, mark
// the poll's records ACCEPT and flush the acknowledgements, timing the flush into h.
func shareConsume(ctx context.Context, addrs []string, group, topic string, h *hist, onRecord func(*kgo.Record)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	var lastErr error
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				lastErr = err
			}
		})
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			onRecord(r)
		})
		if n == 0 {
			continue
		}
		cl.MarkAcks(kgo.AckAccept)
		t0 := time.Now()
		if err := cl.FlushAcks(ctx); err != nil {
			break
		}
		h.record(time.Since(t0))
	}
	return lastErr
}

func renderShare(cfg shareConfig, started, finished time.Time, rows []shareRow, machine map[string]string, argv []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Share groups (KIP-932): sluice vs Apache Kafka, %s\n\n", started.Format("2006-01-02"))
	fmt.Fprintf(&b, "Command: `%s` (`make bench-share`). Started %s, finished %s.\n\n",
		strings.Join(append([]string{"loadgen"}, argv[1:]...), " "), started.Format(time.RFC3339), finished.Format(time.RFC3339))
	fmt.Fprintf(&b, "One node of each broker in turn (commonBrokerProps; Kafka %s in KRaft combined mode with share.version=1 finalized, `-Xmx1g`). "+
		"After an unmeasured warm-up (%d records, 1 partition), per partition count: a topic preloaded with %d records of %d B (round robin), then %d franz-go share consumers of one group "+
		"(share.auto.offset.reset=earliest as a GROUP config) consume it until every offset was delivered. Each consumer polls, "+
		"marks the poll's records ACCEPT and waits for `FlushAcks` (a ShareAcknowledge round trip, KafkaShareConsumer's commitSync): "+
		"that wait is the ack latency. records/s = backlog / time from the consumers' start (group join included) to the last new offset.\n\n",
		kafkaVersion(cfg.KafkaLib), cfg.Warmup, cfg.Records, cfg.Size, cfg.Consumers)
	fmt.Fprintf(&b, "Machine: %s, %s cores, %s; load average at start %s. sluice %s.\n\n",
		machine["cpu"], machine["cores"], machine["memory"], machine["loadavg_at_start"], machine["sluice_commit"])
	b.WriteString("acks = FlushAcks round trips timed (one per poll that returned records); CPU s is the broker's over the consumption only.\n\n")
	b.WriteString("| broker | partitions | records/s | ack p50 | ack p99 | ack max | acks | redelivered | CPU s | peak RSS MiB | note |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %d | %d | %.1f | %.0f | %s |\n", r.Broker, r.Partitions, r.RecordsPerSec,
			fmtDur(r.AckP50), fmtDur(r.AckP99), fmtDur(r.AckMax), r.Acks, r.Delivered-r.Unique, r.CPUSeconds, r.PeakRSSMiB, errCell(r.Err))
	}
	b.WriteString("\nsluice / Kafka records/s (goal ≥ 1.5×):\n\n")
	for _, p := range cfg.Partitions {
		var k, s *shareRow
		for i := range rows {
			if rows[i].Partitions == p && rows[i].Err == "" {
				switch rows[i].Broker {
				case "kafka":
					k = &rows[i]
				case "sluice":
					s = &rows[i]
				}
			}
		}
		if k != nil && s != nil && k.RecordsPerSec > 0 {
			fmt.Fprintf(&b, "- %d partition(s): %.2f× (ack p50 %s vs %s)\n", p, s.RecordsPerSec/k.RecordsPerSec, fmtDur(s.AckP50), fmtDur(k.AckP50))
		} else {
			fmt.Fprintf(&b, "- %d partition(s): no comparison (a run failed or was not made)\n", p)
		}
	}
	for _, r := range rows {
		if r.Profile != "" {
			fmt.Fprintf(&b, "\n## sluice CPU profile, %d partition(s) (first %d s of the consumption)\n\n```\n%s\n```\n", r.Partitions, cfg.ProfileSeconds, r.Profile)
		}
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
