package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/internal/testcluster"
)

// Config is one run.
type Config struct {
	// Bin is the sluice binary ("" means testcluster.Binary()).
	Bin string
	// Nodes is the cluster size (3 or 5).
	Nodes int
	// Partitions of the topic under test.
	Partitions int32
	// Nemeses are the fault kinds, taken in turn (Mixed: each fault at random).
	Nemeses []string
	// Duration is how long the nemesis runs; the workload goes on for Settle after it.
	Duration time.Duration
	// HealWait is the healthy time between faults; Settle the healthy time after the last.
	HealWait, Settle time.Duration
	// Seed makes the nemesis's choices repeatable (the cluster's timing is not).
	Seed uint64
	// Settings are extra broker settings for every node.
	Settings []string
	// LeaderAcks makes the producers ask for acks=1 without idempotence: a control run, in
	// which kill -9 of a leader may lose acknowledged writes (as Kafka documents), to show the
	// checker sees them.
	LeaderAcks bool
	// MetadataMinAge, when set, is the producers' kgo.MetadataMinAge (franz-go's default is 5 s:
	// after a leader moves, a producer may wait that long to see it).
	MetadataMinAge time.Duration
	// WorkDir holds the nodes' data and full logs (removed unless KeepWorkDir).
	WorkDir     string
	KeepWorkDir bool
	// Log receives the run's timeline (nil: discarded).
	Log io.Writer
}

// Defaults for the fields a caller leaves zero.
func (c *Config) fill() {
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if len(c.Nemeses) == 0 {
		c.Nemeses = []string{Mixed}
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.HealWait == 0 {
		c.HealWait = 6 * time.Second
	}
	if c.Settle == 0 {
		c.Settle = 12 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Result is one run: its history, the checker's report, and the nodes' log files.
type Result struct {
	History  History
	Report   Report
	NodeLogs []string // paths under WorkDir (gone unless KeepWorkDir)
	Elapsed  time.Duration
}

const (
	topic = "chaos"
	group = "chaos-group"
	// sessionTimeout is the brokers' broker.session.timeout.ms: sluice's default, which the
	// pause nemesis must outlast.
	sessionTimeout = 9 * time.Second
)

// Run runs one nemesis run. An error means the harness could not run (the network, the
// cluster's start, the final read's cluster never healing); anomalies are in Result.Report.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.fill()
	began := time.Now()
	logMu := sync.Mutex{}
	rec := &recorder{start: began}
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(cfg.Log, "%8.3fs %s\n", rec.now().Seconds(), fmt.Sprintf(format, args...))
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "sluice-chaos-")
		if err != nil {
			return nil, err
		}
		cfg.WorkDir = dir
	}
	if !cfg.KeepWorkDir {
		defer os.RemoveAll(cfg.WorkDir)
	}
	if slices.Contains(cfg.Nemeses, UncleanElection) && cfg.Nodes < 5 {
		return nil, fmt.Errorf("the %s nemesis needs 5 nodes (with 3, killing the ISR takes the metadata quorum with it)", UncleanElection)
	}
	res := &Result{}
	settings := append([]string{
		"broker.session.timeout.ms=" + fmt.Sprint(sessionTimeout.Milliseconds()),
		"offsets.topic.replication.factor=3",
		"group.initial.rebalance.delay.ms=0",
	}, cfg.Settings...)
	if slices.Contains(cfg.Nemeses, UncleanElection) {
		settings = append(settings, "unclean.leader.election.enable=true")
	}
	nodes, err := startNodes(cfg.WorkDir, cfg.Nodes, cfg.Bin, settings, logf)
	if nodes != nil {
		res.NodeLogs = nodes.logs
		defer nodes.Close()
	}
	if err != nil {
		return res, err
	}
	nw, c := nodes.nw, nodes.c
	if err := createTopic(ctx, c, topic, cfg.Partitions); err != nil {
		return res, err
	}
	logf("topic %s: %d partitions, RF 3, min.insync.replicas=2, every ISR full", topic, cfg.Partitions)

	bootstrap := c.Bootstrap()
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	readCtx, stopReaders := context.WithCancel(ctx)
	defer stopReaders()
	var wg sync.WaitGroup
	const producers = 2
	rec.mu.h.WorkloadStart = rec.now()
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := produce(workCtx, rec, bootstrap, topic, cfg.Partitions, p, cfg.LeaderAcks, cfg.MetadataMinAge, 40*time.Second); err != nil {
				logf("producer %d: %v", p, err)
			}
		}()
	}
	var readers sync.WaitGroup
	for i := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			if err := groupConsumer(readCtx, rec, bootstrap, topic, group, fmt.Sprintf("group-%d", i+1)); err != nil {
				logf("group consumer: %v", err)
			}
		}()
	}
	readers.Add(2)
	go func() {
		defer readers.Done()
		if err := reader(readCtx, rec, bootstrap, topic, cfg.Partitions, "reader"); err != nil {
			logf("reader: %v", err)
		}
	}()
	go func() { defer readers.Done(); observeCommits(readCtx, rec, bootstrap, group) }()

	nem := &nemesis{c: c, nw: nw, rec: rec, topic: topic, parts: cfg.Partitions,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)), logf: logf, session: sessionTimeout}
	nemCtx, stopNemesis := context.WithTimeout(ctx, cfg.Duration)
	nem.schedule(nemCtx, cfg.Nemeses, cfg.HealWait)
	stopNemesis()
	if err := nem.healAll(); err != nil {
		logf("final heal: %v", err)
	}
	logf("healed; workload continues for %v (%d acknowledged so far)", cfg.Settle, rec.acked())
	sleepCtx(ctx, cfg.Settle)
	stopWork()
	rec.mu.Lock()
	rec.mu.h.WorkloadEnd = rec.now()
	rec.mu.Unlock()
	wg.Wait()
	logf("producers stopped and drained (%d acknowledged)", rec.acked())
	// Let the consumers catch up a moment (they are not what the final read checks).
	sleepCtx(ctx, 3*time.Second)
	stopReaders()
	readers.Wait()

	final, complete, err := finalRead(ctx, c, cfg.Partitions, logf)
	if err != nil {
		logf("final read: %v", err)
	}
	rec.mu.Lock()
	rec.mu.h.Topic, rec.mu.h.Partitions = topic, cfg.Partitions
	rec.mu.h.Final, rec.mu.h.FinalComplete = final, complete
	res.History = rec.mu.h
	rec.mu.Unlock()
	res.Report = Check(res.History)
	res.Elapsed = time.Since(began)
	logf("checked: %s", res.Report.Summary())
	return res, nil
}

// createTopic creates topic with replication factor 3 and min.insync.replicas=2 and waits
// until every partition has a leader and a full ISR.
func createTopic(ctx context.Context, c *testcluster.Cluster, topic string, partitions int32) error {
	adm, cl, err := c.Admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	two := "2"
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		resp, err := adm.CreateTopic(cctx, partitions, 3, map[string]*string{"min.insync.replicas": &two}, topic)
		if err == nil && (resp.Err == nil || strings.Contains(resp.Err.Error(), "TOPIC_ALREADY_EXISTS")) {
			break
		}
		if cctx.Err() != nil {
			return fmt.Errorf("create topic %s: %v %v", topic, err, resp.Err)
		}
		sleepCtx(cctx, 200*time.Millisecond)
	}
	for {
		td, err := adm.ListTopics(cctx, topic)
		if err == nil && td[topic].Err == nil && len(td[topic].Partitions) == int(partitions) {
			full := true
			for _, p := range td[topic].Partitions {
				if p.Leader < 1 || len(p.ISR) != 3 {
					full = false
				}
			}
			if full {
				return nil
			}
		}
		if cctx.Err() != nil {
			return fmt.Errorf("topic %s never had full ISRs: %v", topic, err)
		}
		sleepCtx(cctx, 200*time.Millisecond)
	}
}

// finalReadDeadline bounds the final read, leaders' election after the last heal included.
const finalReadDeadline = 90 * time.Second

// finalRead reads every partition from its log start to its end offset (the high watermark),
// once every partition has a leader again.
func finalRead(ctx context.Context, c *testcluster.Cluster, partitions int32, logf func(string, ...any)) (map[int32][]Record, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, finalReadDeadline)
	defer cancel()
	adm, acl, err := c.Admin()
	if err != nil {
		return nil, false, err
	}
	defer acl.Close()
	var ends, starts kadm.ListedOffsets
	for {
		ends, err = adm.ListEndOffsets(rctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			starts, err = adm.ListStartOffsets(rctx, topic)
			if err == nil {
				err = starts.Error()
			}
		}
		if err == nil {
			break
		}
		if rctx.Err() != nil {
			return nil, false, fmt.Errorf("end offsets: %w", err)
		}
		sleepCtx(rctx, 250*time.Millisecond)
	}
	end := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	starts.Each(func(o kadm.ListedOffset) { offsets[o.Partition] = kgo.NewOffset().At(o.Offset) })
	logf("final read: end offsets %v", end)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, false, err
	}
	defer cl.Close()
	out := map[int32][]Record{}
	next := map[int32]int64{}
	for p := range partitions {
		out[p] = nil
	}
	done := func() bool {
		for p := range partitions {
			if next[p] < end[p] {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return out, false, fmt.Errorf("read %v of end offsets %v: %w", next, end, errors.Join(rctx.Err()))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end[r.Partition] {
				out[r.Partition] = append(out[r.Partition], Record{Offset: r.Offset, Value: string(r.Value)})
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	return out, true, nil
}

// Summary is one line of counts.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sends (%d acknowledged, %d failed, %d of those in the log), %d polled, %d in the final read",
		r.Sends, r.Acked, r.Failed, r.Recovered, r.Polled, r.FinalRecords)
	if !r.FinalComplete {
		b.WriteString(", FINAL READ INCOMPLETE")
	}
	for _, c := range r.Classes() {
		fmt.Fprintf(&b, "; %s %d", c.Name, c.Class.Count)
	}
	fmt.Fprintf(&b, "; longest without an ack %v at %v; worst partition (%d) without an ack %v at %v; leader kills %v; leader pauses %v",
		r.LongestUnavailable.Round(time.Millisecond), r.LongestUnavailableAt.Round(time.Millisecond),
		r.WorstPartition, r.WorstPartitionUnavailable.Round(time.Millisecond), r.WorstPartitionUnavailableAt.Round(time.Millisecond),
		roundAll(r.LeaderKills), roundAll(r.LeaderPauses))
	return b.String()
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
