package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/internal/testcluster"
)

// The transactional workload's names.
const (
	txnInTopic  = "chaos-txn-in"
	txnOutTopic = "chaos-txn-out"
	txnGroup    = "chaos-txn-group"
	aborterID   = "chaos-aborter"
	// abortEvery: the aborter aborts every abortEvery-th of its transactions on purpose.
	abortEvery = 3
	// txnTimeout is the clients' transaction.timeout.ms: longer than a fault lasts (a kill is
	// held 8 s, a pause 12 s) so a transaction is not timed out by the coordinator only because
	// its client was waiting out a fault, short enough that a transaction its client gave up on
	// is aborted before the final read.
	txnTimeout = 20 * time.Second
)

// transformIDs are the consume-transform-produce sessions' transactional ids.
var transformIDs = []string{"chaos-etl-1", "chaos-etl-2"}

// txnRecorder appends a transactional run's attempts and polls from many goroutines.
type txnRecorder struct {
	start time.Time
	mu    struct {
		sync.Mutex
		attempts []TxnAttempt
	}
	committed atomic.Int64
	// ending receives (without blocking: a full channel drops it) a transform's transactional
	// id once its records are flushed and it is about to end its transaction: the moment the
	// kill-txn-coordinator-at-end nemesis waits for.
	ending chan string
}

func (r *txnRecorder) now() time.Duration { return time.Since(r.start) }

func (r *txnRecorder) attempt(a TxnAttempt) {
	r.mu.Lock()
	r.mu.attempts = append(r.mu.attempts, a)
	r.mu.Unlock()
	if a.Transform && a.Outcome == TxnCommitted {
		r.committed.Add(1)
	}
}

// unconfirmedLogger flags franz-go's log line for an EndTxn whose commit it could not confirm
// (it then retries as an abort and reports "not committed", though the commit may have
// happened): such an attempt's outcome is unknown, not aborted.
type unconfirmedLogger struct{ hit atomic.Bool }

func (l *unconfirmedLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }
func (l *unconfirmedLogger) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "unconfirmed") {
		l.hit.Store(true)
	}
}

// transform runs one consume-transform-produce member of txnGroup under transactional id
// txnID until ctx ends: every poll of the input topic becomes one transaction producing
// "<input>|<txnID>|<attempt>" to the same partition of the output topic, with the input's
// offsets committed in it (GroupTransactSession). A session whose End fails is closed and a
// new one started (its InitProducerId fences the old epoch and resolves what it left open).
//
// metadataMinAge, when set, is the session's kgo.MetadataMinAge: a produce answered
// CONCURRENT_TRANSACTIONS (the previous transaction's markers not yet complete when the next
// transaction's first produce arrives) is retried only after a metadata refresh, which
// franz-go's default (5 s) delays.
func transform(ctx context.Context, rec *txnRecorder, bootstrap []string, txnID string, metadataMinAge time.Duration, logf func(string, ...any)) {
	seq := 0
	for ctx.Err() == nil {
		lg := &unconfirmedLogger{}
		var opts []kgo.Opt
		if metadataMinAge > 0 {
			opts = append(opts, kgo.MetadataMinAge(metadataMinAge))
		}
		sess, err := kgo.NewGroupTransactSession(append(opts, kgo.SeedBrokers(bootstrap...),
			kgo.TransactionalID(txnID), kgo.TransactionTimeout(txnTimeout),
			kgo.ConsumerGroup(txnGroup), kgo.ConsumeTopics(txnInTopic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.DialTimeout(2*time.Second),
			kgo.RecordDeliveryTimeout(30*time.Second),
			kgo.WithLogger(lg), kgo.ClientID("chaos-"+txnID))...)
		if err != nil {
			logf("%s: session: %v", txnID, err)
			return
		}
		healthy := runSession(ctx, rec, sess, txnID, &seq, lg, logf)
		sess.Close()
		if !healthy {
			sleepCtx(ctx, 500*time.Millisecond)
		}
	}
}

// runSession runs transactions on one session until ctx ends (true) or the session fails
// (false).
func runSession(ctx context.Context, rec *txnRecorder, sess *kgo.GroupTransactSession, txnID string, seq *int, lg *unconfirmedLogger, logf func(string, ...any)) bool {
	for {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			return true
		}
		var in []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { in = append(in, r) })
		if len(in) == 0 {
			continue
		}
		a := TxnAttempt{TxnID: txnID, Seq: *seq, Transform: true, Begin: rec.now()}
		*seq++
		if err := sess.Begin(); err != nil {
			logf("%s: begin: %v", txnID, err)
			return false
		}
		lg.hit.Store(false)
		// A record that fails to produce must abort its transaction: franz-go's End commits
		// whatever was acknowledged (it aborts only on a rebalance), so an application that
		// ignores produce errors commits a transaction with records missing, as Kafka's own
		// producer never does (its commit fails after a failed send). AbortingFirstErrPromise
		// is franz-go's way to do what Kafka's producer does.
		failed := kgo.AbortingFirstErrPromise(sess.Client())
		for _, r := range in {
			v := TxnValue{Partition: r.Partition, Value: fmt.Sprintf("%s|%s|%d", r.Value, txnID, a.Seq), Input: string(r.Value), InputOffset: r.Offset}
			a.Values = append(a.Values, v)
			// Not ctx: a transaction once begun runs to its end.
			sess.Produce(context.Background(), &kgo.Record{Topic: txnOutTopic, Partition: r.Partition, Value: []byte(v.Value)}, failed.Promise())
		}
		endCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		// Flush first (End would), so the signal below means "committing offsets and ending".
		_ = sess.Client().Flush(endCtx)
		select {
		case rec.ending <- txnID:
		default:
		}
		produceErr := failed.Err()
		if produceErr != nil {
			logf("%s: attempt %d: a record failed, aborting: %v", txnID, a.Seq, produceErr)
		}
		committed, err := sess.End(endCtx, kgo.TransactionEndTry(produceErr == nil))
		cancel()
		a.Complete = rec.now()
		switch {
		case err != nil:
			a.Outcome, a.Err = TxnUnknown, err.Error()
		case produceErr != nil && committed:
			a.Outcome, a.Err = TxnCommitted, "committed after a failed produce: "+produceErr.Error()
		case lg.hit.Load():
			a.Outcome, a.Err = TxnUnknown, "franz-go could not confirm the commit and retried as an abort"
		case committed:
			a.Outcome = TxnCommitted
		default:
			a.Outcome = TxnAborted
		}
		rec.attempt(a)
		if err != nil {
			logf("%s: attempt %d: end: %v", txnID, a.Seq, err)
			return false
		}
	}
}

// aborter runs transactions of its own on the output topic until ctx ends, one value per
// partition each ("a|<attempt>|<partition>", or "x|..." for the ones it means to abort), and
// aborts every abortEvery-th: a read_committed reader must never see an x value.
func aborter(ctx context.Context, rec *txnRecorder, bootstrap []string, partitions int32, metadataMinAge time.Duration, logf func(string, ...any)) {
	seq := 0
	for ctx.Err() == nil {
		var opts []kgo.Opt
		if metadataMinAge > 0 {
			opts = append(opts, kgo.MetadataMinAge(metadataMinAge))
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(bootstrap...),
			kgo.TransactionalID(aborterID), kgo.TransactionTimeout(txnTimeout),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DialTimeout(2*time.Second),
			kgo.RecordDeliveryTimeout(30*time.Second), kgo.ClientID("chaos-aborter"))...)
		if err != nil {
			logf("aborter: %v", err)
			return
		}
		for ctx.Err() == nil {
			a := TxnAttempt{TxnID: aborterID, Seq: seq, WantAbort: seq%abortEvery == abortEvery-1, Begin: rec.now()}
			seq++
			if err := cl.BeginTransaction(); err != nil {
				logf("aborter: begin: %v", err)
				break
			}
			mark := "a"
			if a.WantAbort {
				mark = "x"
			}
			var produceErr error
			var wg sync.WaitGroup
			var mu sync.Mutex
			for p := range partitions {
				v := TxnValue{Partition: p, Value: fmt.Sprintf("%s|%d|%d", mark, a.Seq, p)}
				a.Values = append(a.Values, v)
				wg.Add(1)
				cl.Produce(context.Background(), &kgo.Record{Topic: txnOutTopic, Partition: p, Value: []byte(v.Value)}, func(_ *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						mu.Lock()
						produceErr = errors.Join(produceErr, err)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			commit := kgo.TransactionEndTry(!a.WantAbort && produceErr == nil)
			endCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := cl.EndTransaction(endCtx, commit)
			cancel()
			a.Complete = rec.now()
			switch {
			case err != nil:
				a.Outcome, a.Err = TxnUnknown, err.Error()
			case commit == kgo.TryCommit:
				a.Outcome = TxnCommitted
			default:
				a.Outcome = TxnAborted
			}
			rec.attempt(a)
			if err != nil {
				logf("aborter: attempt %d: end: %v", a.Seq, err)
				break
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
		cl.Close()
	}
}

// readCommittedAll reads every partition of topic with isolation read_committed from its log
// start to its end (the input topic too: it has no transactions, and the read is then the
// queue's final read), once no transaction is open on it (the last stable offset equal to the
// high watermark on every partition): control records are kept only to know where the read
// is, and are not returned.
//
// isolation is read_committed but in control runs (TxnConfig.ReadUncommitted).
func readCommittedAll(ctx context.Context, c *testcluster.Cluster, topic string, partitions int32, isolation kgo.IsolationLevel, logf func(string, ...any)) (map[int32][]Record, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, finalReadDeadline)
	defer cancel()
	adm, acl, err := c.Admin()
	if err != nil {
		return nil, false, err
	}
	defer acl.Close()
	end := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	for {
		ends, err := adm.ListEndOffsets(rctx, topic)
		if err == nil {
			err = ends.Error()
		}
		var stable, starts kadm.ListedOffsets
		if err == nil {
			stable, err = adm.ListCommittedOffsets(rctx, topic)
			if err == nil {
				err = stable.Error()
			}
		}
		if err == nil {
			starts, err = adm.ListStartOffsets(rctx, topic)
			if err == nil {
				err = starts.Error()
			}
		}
		if err == nil {
			open := 0
			ends.Each(func(o kadm.ListedOffset) {
				end[o.Partition] = o.Offset
				if s, ok := stable.Lookup(topic, o.Partition); !ok || s.Offset != o.Offset {
					open++
				}
			})
			starts.Each(func(o kadm.ListedOffset) { offsets[o.Partition] = kgo.NewOffset().At(o.Offset) })
			if open == 0 {
				break
			}
			err = fmt.Errorf("%d partitions with an open transaction", open)
		}
		if rctx.Err() != nil {
			return nil, false, fmt.Errorf("%s end offsets: %w", topic, err)
		}
		sleepCtx(rctx, 250*time.Millisecond)
	}
	level := "read_committed"
	if isolation == kgo.ReadUncommitted() {
		level = "read_uncommitted"
	}
	logf("final read of %s (%s): end offsets %v", topic, level, end)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(isolation), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, false, err
	}
	defer cl.Close()
	out := map[int32][]Record{}
	next := map[int32]int64{}
	for p := range partitions {
		out[p] = nil
		if o, ok := offsets[p]; ok {
			next[p] = o.EpochOffset().Offset
		}
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
			return out, false, fmt.Errorf("%s: read %v of end offsets %v: %w", topic, next, end, rctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end[r.Partition] && !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], Record{Offset: r.Offset, Value: string(r.Value)})
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	return out, true, nil
}

// groupOffsets is txnGroup's committed offsets of the input topic, waiting out pending
// transactional commits (require_stable).
func groupOffsets(ctx context.Context, c *testcluster.Cluster) (map[int32]int64, error) {
	adm, cl, err := c.Admin()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		resp, err := adm.FetchOffsets(kadm.RequireStable(rctx), txnGroup)
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			out := map[int32]int64{}
			resp.Each(func(o kadm.OffsetResponse) {
				if o.Topic == txnInTopic {
					out[o.Partition] = o.At
				}
			})
			return out, nil
		}
		if rctx.Err() != nil {
			return nil, err
		}
		sleepCtx(rctx, 250*time.Millisecond)
	}
}

// txnReader follows every partition of the output topic from its start with isolation
// (read_committed but in control runs) until ctx ends, recording every record it returns.
func txnReader(ctx context.Context, rec *recorder, bootstrap []string, partitions int32, isolation kgo.IsolationLevel) error {
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{txnOutTopic: offsets}),
		kgo.FetchIsolationLevel(isolation),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.DialTimeout(2*time.Second),
		kgo.ClientID("chaos-txn-reader"))
	if err != nil {
		return err
	}
	defer cl.Close()
	return pollLoop(ctx, rec, cl, "reader", func(int32) int { return 0 }, func() {})
}
