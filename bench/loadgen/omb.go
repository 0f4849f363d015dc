package main

// `loadgen omb` (issue 20): the shape of OpenMessaging Benchmark's
// `1-topic-100-partitions-1kb` workload, scaled to this machine, on one node of each broker in
// turn. One topic of 100 partitions; 4 producers of 1 KiB records (acks=all, as OMB's Kafka
// driver sets; franz-go's default idempotence) and 4 consumers in one consumer group. Two rows:
// a fixed publish rate (OMB's workload asks 50,000 records/s of a machine that is a cluster;
// here -rate, 10,000 by default) and the maximum rate (the producers unthrottled). Reported as
// OMB reports it: publish rate, publish latency and end-to-end latency percentiles (p50, p99,
// p99.9, max; end-to-end from the send time stamped in the value to the consumer's poll), the
// records consumed, and the broker's CPU and peak RSS.

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type ombConfig struct {
	singleNodeRun
	Rate                 int
	Duration             time.Duration
	Partitions           int
	Producers, Consumers int
	RecordSize           int
}

type ombRow struct {
	Broker     string  `json:"broker"`
	Row        string  `json:"row"` // "fixed" or "max"
	TargetRate int     `json:"target_rate"`
	PublishPS  float64 `json:"publish_per_s"`
	Published  int64   `json:"published"`
	Consumed   int64   `json:"consumed"`
	Errors     int64   `json:"errors"`
	PubP50Ms   float64 `json:"pub_p50_ms"`
	PubP99Ms   float64 `json:"pub_p99_ms"`
	PubP999Ms  float64 `json:"pub_p999_ms"`
	PubMaxMs   float64 `json:"pub_max_ms"`
	E2EP50Ms   float64 `json:"e2e_p50_ms"`
	E2EP99Ms   float64 `json:"e2e_p99_ms"`
	E2EP999Ms  float64 `json:"e2e_p999_ms"`
	E2EMaxMs   float64 `json:"e2e_max_ms"`
	CPUSec     float64 `json:"cpu_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	Err        string  `json:"error,omitempty"`
}

func cmdOMB(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("omb", flag.ExitOnError)
	var cfg ombConfig
	cfg.registerFlags(fs, "omb")
	fs.IntVar(&cfg.Rate, "rate", 10000, "the fixed row's publish rate, records/s over all producers")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long each row publishes")
	fs.IntVar(&cfg.Partitions, "partitions", 100, "partitions of the topic")
	fs.IntVar(&cfg.Producers, "producers", 4, "producers")
	fs.IntVar(&cfg.Consumers, "consumers", 4, "consumers in the group")
	fs.IntVar(&cfg.RecordSize, "size", 1024, "record value bytes")
	_ = fs.Parse(args)
	if err := cfg.prepare(); err != nil {
		return err
	}
	started := time.Now().UTC()
	var rows []ombRow
	for _, name := range cfg.Brokers {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rows = append(rows, runOMB(ctx, cfg, name)...)
	}
	return cfg.writeReport(started, "omb", rows, renderOMB(cfg, started, rows, os.Args))
}

// runOMB runs the fixed-rate and the max-rate row on one fresh node of broker name, each on
// its own topic, after an unmeasured warm-up.
func runOMB(ctx context.Context, cfg ombConfig, name string) []ombRow {
	fail := func(err error) []ombRow { return []ombRow{{Broker: name, Row: "start", Err: err.Error()}} }
	b, err := cfg.startNode(name, false)
	if err != nil {
		return fail(err)
	}
	defer stopNode(b)
	warm := cfg
	warm.Duration = 5 * time.Second
	if r := ombRun(ctx, warm, b, "omb-warmup", "warmup", cfg.Rate); r.Err != "" {
		return fail(fmt.Errorf("warm-up: %s", r.Err))
	}
	var rows []ombRow
	for _, row := range []struct {
		name string
		rate int
	}{{"fixed", cfg.Rate}, {"max", 0}} {
		r := ombRun(ctx, cfg, b, "omb-"+row.name, row.name, row.rate)
		slog.Info("omb", "broker", name, "row", row.name, "publish_per_s", r.PublishPS, "pub_p99_ms", r.PubP99Ms,
			"e2e_p99_ms", r.E2EP99Ms, "consumed", r.Consumed, "published", r.Published, "err", r.Err)
		rows = append(rows, r)
	}
	return rows
}

// ombRun is one row: a fresh topic, the consumer group joined first, then the producers for
// cfg.Duration at rate (0: unthrottled), then up to e2eDrain for the consumers to catch up.
func ombRun(ctx context.Context, cfg ombConfig, b *brokerProc, topic, row string, rate int) (r ombRow) {
	r.Broker, r.Row, r.TargetRate = b.Name, row, rate
	if err := createTopic(ctx, b.Addrs, topic, int32(cfg.Partitions), 1); err != nil {
		r.Err = err.Error()
		return r
	}
	group, err := startOMBConsumers(b.Addrs, topic, cfg.Consumers)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer group.stop()
	// The consumers read from the start, so records sent before the group has its
	// partitions are read all the same (their end-to-end latency includes the join).
	u, err := beginUsage([]int{b.pid()})
	if err != nil {
		r.Err = err.Error()
		return r
	}
	res, err := runProduce(ctx, produceSpec{Brokers: b.Addrs, Topic: topic, Producers: cfg.Producers,
		RecordSize: cfg.RecordSize, AcksAll: true, Duration: cfg.Duration, Rate: rate})
	if err != nil {
		r.Err = err.Error()
		return r
	}
	want := res.Records + int64(cfg.Producers) // the producers' warm-up records count too
	_ = group.waitCount(ctx, want, e2eDrain)
	cpu, peak, err := u.end()
	if err == nil {
		r.CPUSec, r.PeakRSSMiB = cpu, peak[0]
	}
	e2e := group.stop()
	r.Published, r.Errors, r.Consumed = res.Records, res.Errors, group.seen.Load()-int64(cfg.Producers)
	r.PublishPS = float64(res.Records) / res.Elapsed.Seconds()
	r.PubP50Ms, r.PubP99Ms, r.PubP999Ms = ms(res.Produce.quantile(0.5)), ms(res.Produce.quantile(0.99)), ms(res.Produce.quantile(0.999))
	r.PubMaxMs = ms(time.Duration(res.Produce.max))
	r.E2EP50Ms, r.E2EP99Ms, r.E2EP999Ms = ms(e2e.quantile(0.5)), ms(e2e.quantile(0.99)), ms(e2e.quantile(0.999))
	r.E2EMaxMs = ms(time.Duration(e2e.max))
	if r.Consumed < r.Published {
		r.Err = fmt.Sprintf("the consumers read %d of %d acknowledged records within %v of the last send", r.Consumed, r.Published, e2eDrain)
	}
	return r
}

// ombConsumers are the group's consumers; each records end-to-end latency into its own
// histogram, merged at stop.
type ombConsumers struct {
	clients []*kgo.Client
	hists   []*hist
	seen    atomic.Int64
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
	merged  *hist
}

func startOMBConsumers(brokers []string, topic string, n int) (*ombConsumers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	g := &ombConsumers{cancel: cancel}
	groupID := fmt.Sprintf("%s-%d", topic, time.Now().UnixNano())
	for range n {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			g.stop()
			return nil, err
		}
		h := &hist{}
		g.clients, g.hists = append(g.clients, cl), append(g.hists, h)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for ctx.Err() == nil {
				fetches := cl.PollFetches(ctx)
				now := time.Now().UnixNano()
				fetches.EachRecord(func(rec *kgo.Record) {
					if len(rec.Value) >= 8 {
						if sent := int64(binary.BigEndian.Uint64(rec.Value)); sent != warmupStamp {
							h.record(time.Duration(now - sent))
						}
					}
					g.seen.Add(1)
				})
			}
		}()
	}
	return g, nil
}

func (g *ombConsumers) waitCount(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for g.seen.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("saw %d of %d records within %v", g.seen.Load(), n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// stop ends the consumers and returns their merged histogram; safe to call more than once.
func (g *ombConsumers) stop() *hist {
	g.once.Do(func() {
		g.cancel()
		g.wg.Wait()
		g.merged = &hist{}
		for i, cl := range g.clients {
			cl.Close()
			g.merged.merge(g.hists[i])
		}
	})
	return g.merged
}

func renderOMB(cfg ombConfig, started time.Time, rows []ombRow, argv []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# OpenMessaging Benchmark shape `1-topic-100-partitions-1kb`: sluice vs Apache Kafka, %s\n\n", started.Format("2006-01-02"))
	fmt.Fprintf(&b, "Command: `%s` (`make bench-omb`). One node of each broker in turn; a topic of %d partitions per row; "+
		"%d producers of %d B records (acks=all, idempotent), %d consumers in one group reading from the start; "+
		"each row publishes for %v after an unmeasured 5 s warm-up. `fixed` publishes %d records/s in all "+
		"(OMB's workload asks 50,000 of a cluster); `max` is unthrottled. Latencies as OMB reports them: publish "+
		"(send to acknowledgement) and end-to-end (send time in the value to the consumer's poll).\n\n",
		strings.Join(append([]string{"loadgen"}, argv[1:]...), " "), cfg.Partitions, cfg.Producers, cfg.RecordSize,
		cfg.Consumers, cfg.Duration, cfg.Rate)
	b.WriteString("| broker | row | publish/s | published | consumed | pub p50 ms | pub p99 ms | pub p99.9 ms | pub max ms | e2e p50 ms | e2e p99 ms | e2e p99.9 ms | e2e max ms | CPU s | peak RSS MiB |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	byKey := map[string]ombRow{}
	for _, r := range rows {
		byKey[r.Broker+"/"+r.Row] = r
		if r.Err != "" && r.Published == 0 {
			fmt.Fprintf(&b, "| %s | %s | failed: %s |||||||||||||\n", r.Broker, r.Row, r.Err)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f |\n",
			r.Broker, r.Row, r.PublishPS, r.Published, r.Consumed, r.PubP50Ms, r.PubP99Ms, r.PubP999Ms, r.PubMaxMs,
			r.E2EP50Ms, r.E2EP99Ms, r.E2EP999Ms, r.E2EMaxMs, r.CPUSec, r.PeakRSSMiB)
	}
	for _, r := range rows {
		if r.Err != "" && r.Published > 0 {
			fmt.Fprintf(&b, "\n%s %s: %s", r.Broker, r.Row, r.Err)
		}
	}
	b.WriteString("\n\nsluice/Kafka:")
	for _, row := range []string{"fixed", "max"} {
		k, s := byKey["kafka/"+row], byKey["sluice/"+row]
		if k.PublishPS > 0 && s.PublishPS > 0 && k.E2EP99Ms > 0 && k.PubP99Ms > 0 {
			fmt.Fprintf(&b, " %s: publish rate %.2fx, publish p99 %.2fx, end-to-end p99 %.2fx, CPU %.2fx.", row,
				s.PublishPS/k.PublishPS, s.PubP99Ms/k.PubP99Ms, s.E2EP99Ms/k.E2EP99Ms, s.CPUSec/k.CPUSec)
		}
	}
	b.WriteString("\n")
	return b.String()
}
