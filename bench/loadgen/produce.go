package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceSpec is one franz-go produce workload.
type produceSpec struct {
	Brokers    []string
	Topic      string
	Producers  int           // independent clients, each with its own connection
	RecordSize int           // bytes of value per record; the first 8 carry the send time
	AcksAll    bool          // acks=all (idempotent, as franz-go defaults) or acks=1
	Duration   time.Duration // how long the producers send
	E2E        bool          // run a consumer alongside that measures produce->consume latency
	// Rate, when positive, paces all producers together to this many records per second, so
	// latency is measured below saturation instead of as client-side queueing.
	Rate int
	// Sequential sends one record at a time and waits for its acknowledgement, with linger 0:
	// the latency is one produce request's round trip through the broker, without client
	// batching or queueing.
	Sequential bool
	// NoLinger sends with linger 0 (records still share a request when they queue behind one
	// in flight), so a paced row's latency is the broker's, not a batch's wait in the client.
	NoLinger bool
	// Security are the client options for a TLS or SASL listener (-tls-ca, -scram-sha-512),
	// given to the producers and the end-to-end consumer alike.
	Security []kgo.Opt
}

// produceResult is what one produce workload measured.
type produceResult struct {
	Records  int64
	Bytes    int64
	Elapsed  time.Duration
	Produce  *hist // per record: Produce call -> acknowledgement callback
	EndToEnd *hist // per record: send time in the value -> consumer poll return (nil if !E2E)
	Errors   int64
	// E2ESeen is how many acknowledged records the end-to-end consumer had read when it was
	// stopped; below Records when it fell behind by more than e2eDrain.
	E2ESeen int64
}

// e2eDrain bounds how long the end-to-end consumer may take to catch up after the producers stop.
const e2eDrain = 20 * time.Second

// warmupStamp marks warm-up records, which the end-to-end consumer counts but does not time.
const warmupStamp = 0

func runProduce(ctx context.Context, spec produceSpec) (*produceResult, error) {
	if spec.RecordSize < 8 {
		return nil, fmt.Errorf("record size %d below the 8-byte timestamp", spec.RecordSize)
	}
	acks := kgo.LeaderAck()
	// No compression, as the Java producer's default compression.type=none (franz-go would
	// snappy-compress by default), and incompressible values, so the bytes counted are the bytes
	// that cross the socket and reach the log.
	opts := []kgo.Opt{kgo.SeedBrokers(spec.Brokers...), kgo.DefaultProduceTopic(spec.Topic),
		kgo.ProducerBatchCompression(kgo.NoCompression())}
	opts = append(opts, spec.Security...)
	if spec.AcksAll {
		acks = kgo.AllISRAcks()
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	opts = append(opts, kgo.RequiredAcks(acks))
	if spec.Sequential || spec.NoLinger {
		opts = append(opts, kgo.ProducerLinger(0))
	}

	var e2e *e2eConsumer
	if spec.E2E {
		var err error
		if e2e, err = startE2E(spec.Brokers, spec.Topic, spec.Security...); err != nil {
			return nil, err
		}
		defer e2e.stop()
	}

	clients := make([]*kgo.Client, spec.Producers)
	for i := range clients {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		clients[i] = cl
		// One synchronous record per producer opens its connection and, for acks=all, gets
		// its producer ID before timing starts.
		warm := randomValue(spec.RecordSize)
		binary.BigEndian.PutUint64(warm, warmupStamp)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = cl.ProduceSync(wctx, &kgo.Record{Value: warm}).FirstErr()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("warm-up produce: %w", err)
		}
	}
	if e2e != nil {
		if err := e2e.waitCount(ctx, int64(spec.Producers), 30*time.Second); err != nil {
			return nil, fmt.Errorf("end-to-end consumer did not see the warm-up records: %w", err)
		}
	}

	res := &produceResult{Produce: &hist{}}
	var records, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(spec.Duration)
	hists := make([]*hist, spec.Producers)
	for i, cl := range clients {
		h := &hist{}
		hists[i] = h
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mu sync.Mutex // promises may run on other goroutines
			pool := sync.Pool{New: func() any { b := randomValue(spec.RecordSize); return &b }}
			var interval time.Duration
			if spec.Rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(spec.Producers) / float64(spec.Rate))
			}
			next := start
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if interval > 0 {
					// Absolute schedule: a late wake-up sends the overdue records at once
					// rather than lowering the rate.
					next = next.Add(interval)
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
				}
				bp := pool.Get().(*[]byte)
				sent := time.Now()
				binary.BigEndian.PutUint64(*bp, uint64(sent.UnixNano()))
				acked := func(_ *kgo.Record, err error) {
					lat := time.Since(sent)
					pool.Put(bp)
					if err != nil {
						errs.Add(1)
						return
					}
					records.Add(1)
					mu.Lock()
					h.record(lat)
					mu.Unlock()
				}
				if spec.Sequential {
					acked(nil, cl.ProduceSync(ctx, &kgo.Record{Value: *bp}).FirstErr())
					continue
				}
				cl.Produce(ctx, &kgo.Record{Value: *bp}, acked)
			}
			if err := cl.Flush(context.WithoutCancel(ctx)); err != nil {
				errs.Add(1)
			}
			mu.Lock()
			defer mu.Unlock()
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	for _, h := range hists {
		res.Produce.merge(h)
	}
	res.Records = records.Load()
	res.Errors = errs.Load()
	res.Bytes = res.Records * int64(spec.RecordSize)
	if e2e != nil {
		// Every acknowledged record is committed; give the consumer a bounded time to see them.
		// A consumer still behind after that is reported, not failed: its lag is the finding.
		_ = e2e.waitCount(ctx, res.Records+int64(spec.Producers), e2eDrain)
		res.EndToEnd = e2e.stop()
		res.E2ESeen = e2e.seen.Load() - int64(spec.Producers)
	}
	if res.Records == 0 {
		return res, errors.New("no record was acknowledged")
	}
	return res, nil
}

// randomValue returns n random bytes; only the first 8 are overwritten per record, so values
// stay incompressible without paying for random bytes on every send.
func randomValue(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rand.Uint64())
		copy(b[i:], w[:])
	}
	return b
}

// e2eConsumer reads the workload's topic from the start, without a group, and times each
// record from the send time stamped in its value.
type e2eConsumer struct {
	cl     *kgo.Client
	seen   atomic.Int64
	done   chan struct{}
	h      hist
	cancel context.CancelFunc
	once   sync.Once
}

func startE2E(brokers []string, topic string, extra ...kgo.Opt) (*e2eConsumer, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond), // the Java consumer's fetch.max.wait.ms
	}, extra...)...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &e2eConsumer{cl: cl, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			now := time.Now().UnixNano()
			fetches.EachRecord(func(r *kgo.Record) {
				if len(r.Value) >= 8 {
					if sent := int64(binary.BigEndian.Uint64(r.Value)); sent != warmupStamp {
						c.h.record(time.Duration(now - sent))
					}
				}
				c.seen.Add(1)
			})
		}
	}()
	return c, nil
}

// waitCount waits until the consumer has seen n records, or timeout passes.
func (c *e2eConsumer) waitCount(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for c.seen.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("saw %d of %d records within %v", c.seen.Load(), n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// stop ends the consumer and returns its histogram; safe to call more than once.
func (c *e2eConsumer) stop() *hist {
	c.once.Do(func() {
		c.cancel()
		<-c.done
		c.cl.Close()
	})
	return &c.h
}

// txnSpec is one transactional produce workload: each producer commits transactions of
// PerTxn records back to back.
type txnSpec struct {
	Brokers    []string
	Topic      string
	Producers  int
	RecordSize int
	PerTxn     int
	Duration   time.Duration
	Extra      []kgo.Opt // further client options (a logger for `loadgen txn -debug`)
}

// runTxnProduce runs spec's transactional producers (acks=all, idempotent, as transactions
// require) and counts the records of committed transactions; Produce holds one latency per
// transaction, from BeginTransaction to the commit's acknowledgement.
func runTxnProduce(ctx context.Context, spec txnSpec) (*produceResult, error) {
	if spec.PerTxn < 1 {
		return nil, fmt.Errorf("%d records per transaction", spec.PerTxn)
	}
	clients := make([]*kgo.Client, spec.Producers)
	run := time.Now().UnixNano()
	for i := range clients {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(spec.Brokers...), kgo.DefaultProduceTopic(spec.Topic),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.TransactionalID(fmt.Sprintf("loadgen-%d-%d", run, i))}, spec.Extra...)...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		clients[i] = cl
		// One committed transaction per producer before timing: InitProducerID, the
		// coordinator lookup and the first AddPartitionsToTxn are not what is measured.
		if err := commitTxn(ctx, cl, 1, randomValue(spec.RecordSize)); err != nil {
			return nil, fmt.Errorf("warm-up transaction: %w", err)
		}
	}
	res := &produceResult{Produce: &hist{}}
	var records, errs atomic.Int64
	hists := make([]*hist, spec.Producers)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(spec.Duration)
	for i, cl := range clients {
		h := &hist{}
		hists[i] = h
		wg.Add(1)
		go func() {
			defer wg.Done()
			value := randomValue(spec.RecordSize)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				began := time.Now()
				if err := commitTxn(ctx, cl, spec.PerTxn, value); err != nil {
					errs.Add(1)
					continue
				}
				h.record(time.Since(began))
				records.Add(int64(spec.PerTxn))
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	for _, h := range hists {
		res.Produce.merge(h)
	}
	res.Records, res.Errors = records.Load(), errs.Load()
	res.Bytes = res.Records * int64(spec.RecordSize)
	if res.Records == 0 {
		return res, errors.New("no transaction committed")
	}
	return res, nil
}

// commitTxn produces n records of value in one transaction and commits it; on a produce
// error the transaction is aborted.
func commitTxn(ctx context.Context, cl *kgo.Client, n int, value []byte) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var mu sync.Mutex
	var failed error // the first record's error; guarded by mu
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && failed == nil {
				failed = err
			}
		})
	}
	flushErr := cl.Flush(ctx)
	mu.Lock()
	recordErr := failed
	mu.Unlock()
	commit := kgo.TryCommit
	if flushErr != nil || recordErr != nil {
		commit = kgo.TryAbort
	}
	if err := cl.EndTransaction(ctx, commit); err != nil {
		return err
	}
	return errors.Join(flushErr, recordErr)
}
