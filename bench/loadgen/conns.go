package main

// `loadgen conns`: many client connections (issue 20). One node of each broker in turn on the
// same machine: N connections opened (each completes an ApiVersions, so the broker holds a
// live Kafka connection, not a bare socket), then held idle, then a mix in which some of them
// send Metadata for one topic at a fixed interval while the others stay idle. Reported per
// broker: the time to open them, the broker's RSS and descriptors before and with them
// (memory per connection is the RSS difference over N), and in the mix the broker's CPU,
// its peak RSS and the Metadata round trip's p50/p99.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/testcluster"
)

type connsConfig struct {
	singleNodeRun
	Conns        int           // connections held
	Active       int           // of them, how many send Metadata in the mix
	Interval     time.Duration // between one active connection's requests
	MixFor       time.Duration // how long the mix runs
	DialParallel int           // connections being opened at once
}

type connsResult struct {
	Broker        string  `json:"broker"`
	Opened        int     `json:"opened"`
	OpenSec       float64 `json:"open_s"`
	RSSBeforeMiB  float64 `json:"rss_before_mib"`
	RSSIdleMiB    float64 `json:"rss_idle_mib"`
	PerConnKiB    float64 `json:"per_conn_kib"`
	FDsBefore     int     `json:"fds_before"`
	FDsIdle       int     `json:"fds_idle"`
	MixRequests   uint64  `json:"mix_requests"`
	MixErrors     uint64  `json:"mix_errors"`
	MixP50Ms      float64 `json:"mix_p50_ms"`
	MixP99Ms      float64 `json:"mix_p99_ms"`
	MixMaxMs      float64 `json:"mix_max_ms"`
	MixCPUSec     float64 `json:"mix_cpu_s"`
	MixPeakRSSMiB float64 `json:"mix_peak_rss_mib"`
	Err           string  `json:"error,omitempty"`
	LogPath       string  `json:"log"`
}

func cmdConns(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("conns", flag.ExitOnError)
	var cfg connsConfig
	cfg.registerFlags(fs, "conns")
	fs.IntVar(&cfg.Conns, "conns", 10000, "connections to hold open")
	fs.IntVar(&cfg.Active, "active", 2000, "connections that send Metadata during the mix")
	fs.DurationVar(&cfg.Interval, "interval", 500*time.Millisecond, "time between one active connection's requests")
	fs.DurationVar(&cfg.MixFor, "mix-for", 20*time.Second, "how long the idle/active mix runs")
	fs.IntVar(&cfg.DialParallel, "dial-parallel", 64, "connections being opened at once")
	_ = fs.Parse(args)
	if cfg.Active > cfg.Conns {
		return errors.New("-active is more than -conns")
	}
	if err := cfg.prepare(); err != nil {
		return err
	}
	started := time.Now().UTC()
	var results []connsResult
	for _, name := range cfg.Brokers {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := runConns(ctx, cfg, name)
		if r.Err != "" {
			slog.Error("conns run failed", "broker", name, "err", r.Err)
		}
		results = append(results, r)
	}
	return cfg.writeReport(started, "conns", results, renderConns(cfg, started, results, os.Args))
}

// connsTopic is the one-partition topic the mix's Metadata requests name.
const connsTopic = "conns"

func runConns(ctx context.Context, cfg connsConfig, name string) (r connsResult) {
	r.Broker = name
	b, err := cfg.startNode(name, false)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.LogPath = b.LogPath
	defer stopNode(b)
	if err := createTopic(ctx, b.Addrs, connsTopic, 1, 1); err != nil {
		r.Err = "create topic: " + err.Error()
		return r
	}
	pid := b.pid()
	r.FDsBefore = countFDs(pid)
	if rss, err := procStatusKiB(pid, "VmRSS"); err == nil {
		r.RSSBeforeMiB = float64(rss) / 1024
	}

	start := time.Now()
	conns, err := openConns(ctx, b.Addr, cfg.Conns, cfg.DialParallel)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	r.Opened = len(conns)
	r.OpenSec = time.Since(start).Seconds()
	if err != nil {
		r.Err = fmt.Sprintf("opened %d of %d connections: %v", len(conns), cfg.Conns, err)
		return r
	}
	// Idle: what holding them costs. RSS is read after a short quiet spell, since the
	// broker's per-connection buffers are allocated while the ApiVersions is answered.
	time.Sleep(2 * time.Second)
	r.FDsIdle = countFDs(pid)
	if rss, err := procStatusKiB(pid, "VmRSS"); err == nil {
		r.RSSIdleMiB = float64(rss) / 1024
		r.PerConnKiB = (r.RSSIdleMiB - r.RSSBeforeMiB) * 1024 / float64(len(conns))
	}
	slog.Info("conns idle", "broker", name, "conns", len(conns), "open_s", r.OpenSec, "rss_mib", r.RSSIdleMiB,
		"per_conn_kib", r.PerConnKiB, "fds", r.FDsIdle)

	u, err := beginUsage([]int{pid})
	if err != nil {
		r.Err = err.Error()
		return r
	}
	h, requests, failures := mixMetadata(ctx, conns[:cfg.Active], cfg.Interval, cfg.MixFor)
	cpu, peak, err := u.end()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.MixRequests, r.MixErrors = requests, failures
	r.MixCPUSec, r.MixPeakRSSMiB = cpu, peak[0]
	r.MixP50Ms, r.MixP99Ms, r.MixMaxMs = ms(h.quantile(0.5)), ms(h.quantile(0.99)), ms(time.Duration(h.max))
	slog.Info("conns mix", "broker", name, "requests", requests, "errors", failures, "p50_ms", r.MixP50Ms,
		"p99_ms", r.MixP99Ms, "cpu_s", cpu, "peak_rss_mib", r.MixPeakRSSMiB)
	if err := b.exited(); err != nil {
		r.Err = err.Error()
	}
	return r
}

// openConns dials n connections to addr, parallel at a time, each answered one ApiVersions.
func openConns(ctx context.Context, addr string, n, parallel int) ([]net.Conn, error) {
	var mu sync.Mutex
	var conns []net.Conn
	var firstErr error
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err == nil {
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				req := kmsg.NewPtrApiVersionsRequest()
				req.Version = 3
				req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-loadgen", "1"
				resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
				if err = testcluster.RoundTrip(c, req, resp, 1); err == nil {
					_ = c.SetDeadline(time.Time{})
				} else {
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			conns = append(conns, c)
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return conns, firstErr
}

// mixMetadata has each of active send Metadata for connsTopic every interval, their starts
// spread over the first interval, for dur; the other connections stay idle.
func mixMetadata(ctx context.Context, active []net.Conn, interval, dur time.Duration) (*hist, uint64, uint64) {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var requests, failures atomic.Uint64
	// One histogram under a mutex: one per connection would be 57 KiB each.
	var mu sync.Mutex
	h := &hist{}
	var wg sync.WaitGroup
	for i, c := range active {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := interval * time.Duration(i) / time.Duration(len(active))
			tick := time.NewTimer(offset)
			defer tick.Stop()
			for corr := int32(2); ; corr++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				tick.Reset(interval)
				req := kmsg.NewPtrMetadataRequest()
				req.Version = 12
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(connsTopic)
				req.Topics = append(req.Topics, rt)
				resp := req.ResponseKind().(*kmsg.MetadataResponse)
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				sent := time.Now()
				if err := testcluster.RoundTrip(c, req, resp, corr); err != nil {
					failures.Add(1)
					return // the connection is no longer in step
				}
				took := time.Since(sent)
				mu.Lock()
				h.record(took)
				mu.Unlock()
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	return h, requests.Load(), failures.Load()
}

func renderConns(cfg connsConfig, started time.Time, rs []connsResult, argv []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Client connections: sluice vs Apache Kafka, %s\n\n", started.Format("2006-01-02"))
	fmt.Fprintf(&b, "Command: `%s` (`make bench-conns`). One node of each broker in turn, default settings. "+
		"%d connections opened (%d at a time), each answered one ApiVersions v3 and then held; "+
		"the idle row is read 2 s after the last one opened. In the mix, %d of them send Metadata v12 for a "+
		"one-partition topic every %v (starts spread over the interval) for %v while the rest stay idle.\n\n",
		strings.Join(append([]string{"loadgen"}, argv[1:]...), " "), cfg.Conns, cfg.DialParallel, cfg.Active, cfg.Interval, cfg.MixFor)
	b.WriteString("| broker | opened | open s | RSS before MiB | RSS idle MiB | KiB per connection | fds before → idle | mix requests (errors) | mix p50 ms | mix p99 ms | mix max ms | mix CPU s | mix peak RSS MiB |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	byName := map[string]connsResult{}
	for _, r := range rs {
		byName[r.Broker] = r
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | %d | failed: %s |||||||||||\n", r.Broker, r.Opened, r.Err)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.0f | %.0f | %.1f | %d → %d | %d (%d) | %.2f | %.2f | %.1f | %.1f | %.0f |\n",
			r.Broker, r.Opened, r.OpenSec, r.RSSBeforeMiB, r.RSSIdleMiB, r.PerConnKiB, r.FDsBefore, r.FDsIdle,
			r.MixRequests, r.MixErrors, r.MixP50Ms, r.MixP99Ms, r.MixMaxMs, r.MixCPUSec, r.MixPeakRSSMiB)
	}
	k, s := byName["kafka"], byName["sluice"]
	if k.Err == "" && s.Err == "" && k.Opened > 0 && s.Opened > 0 && k.PerConnKiB > 0 && k.MixP99Ms > 0 && k.MixCPUSec > 0 {
		fmt.Fprintf(&b, "\nsluice/Kafka: memory per connection %.2fx, idle RSS %.2fx, mix p99 %.2fx, mix CPU %.2fx, mix peak RSS %.2fx.\n",
			s.PerConnKiB/k.PerConnKiB, s.RSSIdleMiB/k.RSSIdleMiB, s.MixP99Ms/k.MixP99Ms, s.MixCPUSec/k.MixCPUSec, s.MixPeakRSSMiB/k.MixPeakRSSMiB)
	}
	return b.String()
}
