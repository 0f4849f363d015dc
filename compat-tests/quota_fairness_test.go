package compattests

// Quota fairness, measured: one sluice, client id `slow` with producer_byte_rate set through
// AlterClientQuotas producing flat out, next to client id `fast` (no quota) producing at a fixed
// rate. Over 30 s `slow` is held to within 10% of its quota while `fast` keeps its rate and a
// bounded produce latency: one greedy client does not starve another.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	fairSlowQuota  = 200_000 // producer_byte_rate of client id slow, bytes/s
	fairRecordSize = 1024
	fairFastRate   = 500 // records/s client id fast sends, 0.5 MB/s: 2.5× slow's quota
	// fairWarmup is not measured: the first quota windows let a burst through (the rate is
	// spread over at least quota.window.num-1 windows before any throttle).
	fairWarmup  = 3 * time.Second
	fairMeasure = 30 * time.Second
	// fairFastP99 bounds fast's p99 produce latency (Produce call → acknowledgement, acks=all,
	// franz-go's default 10 ms linger). Measured first on the shared 2-core machine (load
	// average about 12) with slow throttled next to it: p50 6.3–6.4 ms, p99 11.9–13.3 ms, max
	// 15–129 ms over three runs.
	// The bound leaves room for a busier machine; a fast client queued behind slow's
	// throttled connection would wait for the throttle times instead (hundreds of ms here).
	fairFastP99 = 100 * time.Millisecond
)

// ackLog is when each acknowledged record's bytes came back. Safe for concurrent use.
type ackLog struct {
	mu    sync.Mutex
	at    []time.Time
	lat   []time.Duration
	bytes int64 // per record
}

func (a *ackLog) add(at time.Time, lat time.Duration) {
	a.mu.Lock()
	a.at, a.lat = append(a.at, at), append(a.lat, lat)
	a.mu.Unlock()
}

// between is the records acknowledged in [from, to) and their latencies.
func (a *ackLog) between(from, to time.Time) (n int, lat []time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, t := range a.at {
		if !t.Before(from) && t.Before(to) {
			n++
			lat = append(lat, a.lat[i])
		}
	}
	return n, lat
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// The quota windows are two of one second (Kafka's defaults are eleven): with eleven, the
// rate is averaged over at least ten seconds, so a client first bursts about ten seconds' worth
// of quota at once and is then held back for it, and a 30 s average depends on where the bursts
// fall. Measured with eleven windows (this test, 2026-12-01): slow made 150 kB/s over the 30 s
// after its unmeasured burst, 25% under the quota, fast unaffected. Kafka's Rate computes the
// same way (not measured against Kafka here). Two windows hold the rate steadily, which is what
// "within 10% over 30 s" asks of the enforcement.
func TestQuotaFairness(t *testing.T) {
	b := StartBrokerWith(t, BrokerOptions{},
		"quota.window.num=2",
		"quota.window.size.seconds=1",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"fair-slow", "fair-fast"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	slowID := "slow"
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slowID}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: fairSlowQuota}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range altered {
		if a.Err != nil {
			t.Fatalf("AlterClientQuotas %v: %v", a.Entity, a.Err)
		}
	}
	described, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &slowID, MatchType: 0}})
	if err != nil || len(described) != 1 {
		t.Fatalf("DescribeClientQuotas slow: %v %v", described, err)
	}

	// newClient: no compression, so the bytes counted are the bytes the quota meters; batches
	// of at most 16 KiB (the Java producer's batch.size), so one request is a small part of a
	// second's quota; a short buffer, so the producers stop promptly.
	slowThrottles, fastThrottles := &throttleCounter{}, &throttleCounter{}
	newClient := func(id, topic string, tc *throttleCounter) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID(id), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10),
			kgo.MaxBufferedRecords(256), kgo.WithHooks(tc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	slow := newClient("slow", "fair-slow", slowThrottles)
	fast := newClient("fast", "fair-fast", fastThrottles)
	for _, cl := range []*kgo.Client{slow, fast} { // connections and producer ids before timing
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, fairRecordSize)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	slowAcks, fastAcks := &ackLog{}, &ackLog{}
	var slowErrs, fastErrs atomic.Int64
	pctx, stop := context.WithCancel(ctx)
	start := time.Now()
	end := start.Add(fairWarmup + fairMeasure)
	var wg sync.WaitGroup
	produce := func(cl *kgo.Client, acks *ackLog, errs *atomic.Int64, interval time.Duration) {
		defer wg.Done()
		value := make([]byte, fairRecordSize)
		next := start
		for time.Now().Before(end) && pctx.Err() == nil {
			if interval > 0 { // absolute schedule: a late wake-up sends the overdue records at once
				next = next.Add(interval)
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
			}
			sent := time.Now()
			cl.Produce(pctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					if pctx.Err() == nil {
						errs.Add(1)
					}
					return
				}
				now := time.Now()
				acks.add(now, now.Sub(sent))
			})
		}
	}
	wg.Add(2)
	go produce(slow, slowAcks, &slowErrs, 0)
	go produce(fast, fastAcks, &fastErrs, time.Second/fairFastRate)
	wg.Wait()
	// fast's last records are acknowledged within its latency; slow's buffer is abandoned.
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	ferr := fast.Flush(fctx)
	fcancel()
	stop()
	if ferr != nil {
		t.Fatalf("fast did not flush: %v", ferr)
	}

	from, to := start.Add(fairWarmup), start.Add(fairWarmup+fairMeasure)
	slowN, _ := slowAcks.between(from, to)
	fastN, fastLat := fastAcks.between(from, to)
	slowRate := float64(slowN*fairRecordSize) / fairMeasure.Seconds()
	fastRate := float64(fastN) / fairMeasure.Seconds()
	p50, p99, maxLat := quantile(fastLat, 0.5), quantile(fastLat, 0.99), quantile(fastLat, 1)
	t.Logf("over %v after %v: slow %.0f B/s (quota %d, %.1f%% off), %d throttles, longest %d ms; fast %.1f records/s (target %d), produce latency p50 %v p99 %v max %v, %d throttles; errors slow %d fast %d",
		fairMeasure, fairWarmup, slowRate, fairSlowQuota, 100*(slowRate/fairSlowQuota-1), slowThrottles.n.Load(), slowThrottles.maxMillis.Load(),
		fastRate, fairFastRate, p50, p99, maxLat, fastThrottles.n.Load(), slowErrs.Load(), fastErrs.Load())
	if slowThrottles.n.Load() == 0 {
		t.Error("slow was never answered a throttle time")
	}
	if slowRate < 0.9*fairSlowQuota || slowRate > 1.1*fairSlowQuota {
		t.Errorf("slow produced %.0f B/s over %v, want within 10%% of its quota %d B/s", slowRate, fairMeasure, fairSlowQuota)
	}
	if n := fastThrottles.n.Load(); n != 0 {
		t.Errorf("fast (no quota) was throttled %d times", n)
	}
	if fastRate < 0.95*fairFastRate {
		t.Errorf("fast achieved %.1f records/s, want its fixed %d (≥ 95%%)", fastRate, fairFastRate)
	}
	if p99 > fairFastP99 {
		t.Errorf("fast's p99 produce latency %v with slow throttled next to it, want ≤ %v", p99, fairFastP99)
	}
	if n := slowErrs.Load() + fastErrs.Load(); n != 0 {
		t.Errorf("%s", fmt.Sprintf("%d produce errors (slow %d, fast %d)", n, slowErrs.Load(), fastErrs.Load()))
	}
}
