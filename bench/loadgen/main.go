// Command loadgen measures sluice against Apache Kafka on one machine, in one run, with the same
// load: franz-go producers and consumers of its own (per-record produce latency and
// produce-to-consume latency in log-bucketed histograms) and Kafka's own
// kafka-producer-perf-test and kafka-consumer-perf-test.
//
//	loadgen all -kafka-lib DIR -sluice-bin bin/sluice [-quick]   the whole comparison + report
//	loadgen produce -brokers HOST:PORT -topic T [-producers 8 -size 1024 -acks all -duration 10s]
//	                [-tls-ca ca.crt] [-scram-sha-512 user:password]      (SSL, SASL_SSL listeners)
//	loadgen consume -brokers HOST:PORT -topic T -records N
//	loadgen txn -brokers HOST:PORT -topic T [-producers 1 -per-txn 100 -size 1024 -debug]
//	loadgen limits -dir DIR                                        disk and loopback ceilings
//	loadgen overhead -sluice-bin bin/sluice [-rounds 3 -duration 10s -out F]   metrics on vs off
//	loadgen scale -kafka-lib DIR -sluice-bin bin/sluice [-sizes 1000,5000,10000 -ramp-to 100000]
//	                                           partitions at scale: create, Metadata, restart
//	loadgen share -kafka-lib DIR -sluice-bin bin/sluice [-partitions 1,4 -records 200000 -consumers 4]
//	                                           share groups: records/s and ack latency (share.go)
//
// `all` starts each broker in turn on a fresh data directory under -workdir (Kafka in KRaft
// combined mode, formatted with its StorageTool), runs the same workloads against each, first
// with each broker's default flush behaviour and then with an fsync per write
// (log.flush.interval.messages=1 on both), samples the broker's CPU time and peak RSS from
// /proc for every workload, profiles sluice with perf(1) when it is installed, and writes
// <out>/<date>.md with a PNG of the latency percentiles (plotted by bench/plot.py).
//
// It is a benchmark tool, not part of the broker: it holds no invariants beyond its own
// bookkeeping, and it only ever talks to 127.0.0.1.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen all|produce|consume|txn|limits|overhead|scale|conns|share|omb [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "all":
		err = cmdAll(ctx, os.Args[2:])
	case "produce":
		err = cmdProduce(ctx, os.Args[2:])
	case "consume":
		err = cmdConsume(ctx, os.Args[2:])
	case "txn":
		err = cmdTxn(ctx, os.Args[2:])
	case "limits":
		err = cmdLimits(os.Args[2:])
	case "overhead":
		err = cmdOverhead(ctx, os.Args[2:])
	case "scale":
		err = cmdScale(ctx, os.Args[2:])
	case "conns":
		err = cmdConns(ctx, os.Args[2:])
	case "omb":
		err = cmdOMB(ctx, os.Args[2:])
	case "share":
		err = cmdShare(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func cmdProduce(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	topic := fs.String("topic", "loadgen", "topic (must exist)")
	producers := fs.Int("producers", 1, "independent producer clients")
	size := fs.Int("size", 1024, "record value bytes")
	acks := fs.String("acks", "all", "all or 1")
	dur := fs.Duration("duration", 10*time.Second, "how long to produce")
	e2e := fs.Bool("e2e", true, "measure end-to-end latency with a consumer")
	rate := fs.Int("rate", 0, "records/s for all producers together (0: as fast as possible)")
	sequential := fs.Bool("sequential", false, "one record at a time with linger 0 (request round trip)")
	noLinger := fs.Bool("no-linger", false, "linger 0 (the fixed-rate end-to-end rows of loadgen all)")
	tlsCA := fs.String("tls-ca", "", "connect with TLS, trusting this PEM CA file (an SSL or SASL_SSL listener)")
	scram512 := fs.String("scram-sha-512", "", "USER:PASSWORD: authenticate with SASL SCRAM-SHA-512")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's own CPU profile (producers and end-to-end consumer) to this file")
	_ = fs.Parse(args)
	security, err := securityOpts(*tlsCA, *scram512)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := runProduce(ctx, produceSpec{Brokers: strings.Split(*brokers, ","), Topic: *topic,
		Producers: *producers, RecordSize: *size, AcksAll: *acks == "all", Duration: *dur, E2E: *e2e,
		Rate: *rate, Sequential: *sequential, NoLinger: *noLinger, Security: security})
	if res != nil {
		s := res.Elapsed.Seconds()
		fmt.Printf("%d records in %.1fs: %.0f rec/s %.1f MiB/s; produce p50 %v p99 %v p99.9 %v; errors %d\n",
			res.Records, s, float64(res.Records)/s, float64(res.Bytes)/(1<<20)/s,
			res.Produce.quantile(0.5), res.Produce.quantile(0.99), res.Produce.quantile(0.999), res.Errors)
		if res.EndToEnd != nil {
			fmt.Printf("end-to-end p50 %v p99 %v\n", res.EndToEnd.quantile(0.5), res.EndToEnd.quantile(0.99))
		}
	}
	return err
}

func cmdConsume(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	topic := fs.String("topic", "loadgen", "topic")
	records := fs.Int64("records", 1000000, "records to read")
	noSessions := fs.Bool("no-fetch-sessions", false, "full fetches only (no KIP-227 sessions)")
	_ = fs.Parse(args)
	res, err := runConsume(ctx, strings.Split(*brokers, ","), *topic, fmt.Sprintf("loadgen-%d", time.Now().UnixNano()), *records, 10*time.Minute, *noSessions)
	if res != nil {
		s := res.Elapsed.Seconds()
		fmt.Printf("%d records %.1f MiB in %.1fs (join %v): %.0f rec/s %.1f MiB/s\n", res.Records,
			float64(res.Bytes)/(1<<20), s, res.Join, float64(res.Records)/s, float64(res.Bytes)/(1<<20)/s)
	}
	return err
}

func cmdLimits(args []string) error {
	fs := flag.NewFlagSet("limits", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory on the disk to measure")
	mib := fs.Int64("mib", 1024, "MiB to write")
	_ = fs.Parse(args)
	l, err := measureLimits(*dir, *mib, 3*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("disk %.0f MiB/s (O_DIRECT %.0f MiB/s); fsync'd 4KiB writes %.0f/s (p50 %v); loopback %.0f MiB/s\n",
		l.DiskWriteMiBps, l.DiskDirectMiBps, l.FsyncWritesPerS, l.FsyncP50, l.LoopbackMiBps)
	return nil
}

func cmdTxn(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("txn", flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	topic := fs.String("topic", "loadgen", "topic (must exist)")
	producers := fs.Int("producers", 1, "transactional producers, each with its own transactional.id")
	size := fs.Int("size", 1024, "record value bytes")
	perTxn := fs.Int("per-txn", 100, "records per transaction")
	dur := fs.Duration("duration", 10*time.Second, "how long to produce")
	debug := fs.Bool("debug", false, "log the client's requests (franz-go debug level) to stderr")
	_ = fs.Parse(args)
	var extra []kgo.Opt
	if *debug {
		extra = append(extra, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000000 ") })))
	}
	res, err := runTxnProduce(ctx, txnSpec{Brokers: strings.Split(*brokers, ","), Topic: *topic, Producers: *producers,
		RecordSize: *size, PerTxn: *perTxn, Duration: *dur, Extra: extra})
	if res != nil {
		s := res.Elapsed.Seconds()
		fmt.Printf("%d records in %d transactions in %.1fs: %.0f rec/s; per transaction p50 %v p99 %v max %v; failed transactions %d\n",
			res.Records, res.Records/int64(*perTxn), s, float64(res.Records)/s, res.Produce.quantile(0.5), res.Produce.quantile(0.99), res.Produce.quantile(1), res.Errors)
	}
	return err
}
