package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/internal/testcluster"
)

// TxnConfig is one transactional run: Config, and a control switch.
type TxnConfig struct {
	Config
	// ReadUncommitted makes the output's reader and final reads use read_uncommitted: a control
	// run, in which the checker must find the aborted transactions' values (aborted reads), to
	// show it is not blind to them.
	ReadUncommitted bool
}

// TxnResult is one transactional run: its history, the checker's report, the nodes' logs.
type TxnResult struct {
	History  TxnHistory
	Report   TxnReport
	NodeLogs []string
	Elapsed  time.Duration
}

// catchUpDeadline bounds the wait, after the input producer stopped, for the transform group
// to commit offsets up to the input's end.
const catchUpDeadline = 45 * time.Second

// RunTxn runs one transactional run: an idempotent producer feeds the input topic; two
// GroupTransactSession members of one group transform every input record into one output
// record in a transaction that also commits the input offsets; an aborter runs transactions
// of its own on the output topic and aborts every abortEvery-th on purpose; a read_committed
// reader follows the output. Both topics have cfg.Partitions partitions, replication factor
// 3 and min.insync.replicas=2. The nemesis (cfg.Nemeses: TxnKinds or Kinds) runs for
// cfg.Duration; then every fault is healed, the input producer runs cfg.Settle more, the
// group catches up with the input's end, the transactions stop, and the output is read
// (read_committed) twice to its end, the input once, with the group's committed offsets.
// cfg.MetadataMinAge applies to every client of the run.
func RunTxn(ctx context.Context, tcfg TxnConfig) (*TxnResult, error) {
	cfg := tcfg.Config
	isolation := kgo.ReadCommitted()
	if tcfg.ReadUncommitted {
		isolation = kgo.ReadUncommitted()
	}
	if len(cfg.Nemeses) == 0 {
		cfg.Nemeses = []string{TxnMixed}
	}
	cfg.fill()
	began := time.Now()
	var logMu sync.Mutex
	inRec := &recorder{start: began}
	outRec := &recorder{start: began}
	txnRec := &txnRecorder{start: began, ending: make(chan string, 8)}
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(cfg.Log, "%8.3fs %s\n", inRec.now().Seconds(), fmt.Sprintf(format, args...))
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "sluice-chaos-txn-")
		if err != nil {
			return nil, err
		}
		cfg.WorkDir = dir
	}
	if !cfg.KeepWorkDir {
		defer os.RemoveAll(cfg.WorkDir)
	}
	res := &TxnResult{}
	settings := append([]string{
		"broker.session.timeout.ms=" + fmt.Sprint(sessionTimeout.Milliseconds()),
		"offsets.topic.replication.factor=3",
		"transaction.state.log.replication.factor=3",
		"transaction.state.log.min.isr=2",
		"group.initial.rebalance.delay.ms=0",
	}, cfg.Settings...)
	nodes, err := startNodes(cfg.WorkDir, cfg.Nodes, cfg.Bin, settings, logf)
	if nodes != nil {
		res.NodeLogs = nodes.logs
		defer nodes.Close()
	}
	if err != nil {
		return res, err
	}
	nw, c := nodes.nw, nodes.c
	for _, t := range []string{txnInTopic, txnOutTopic} {
		if err := createTopic(ctx, c, t, cfg.Partitions); err != nil {
			return res, err
		}
	}
	logf("topics %s and %s: %d partitions, RF 3, min.insync.replicas=2, every ISR full", txnInTopic, txnOutTopic, cfg.Partitions)

	bootstrap := c.Bootstrap()
	inCtx, stopInput := context.WithCancel(ctx)
	defer stopInput()
	txnCtx, stopTxns := context.WithCancel(ctx)
	defer stopTxns()
	readCtx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	workloadStart := inRec.now()
	inRec.mu.h.WorkloadStart = workloadStart
	var input, txns, readers sync.WaitGroup
	input.Add(1)
	go func() {
		defer input.Done()
		if err := produce(inCtx, inRec, bootstrap, txnInTopic, cfg.Partitions, 0, false, cfg.MetadataMinAge, 40*time.Second); err != nil {
			logf("input producer: %v", err)
		}
	}()
	for _, id := range transformIDs {
		txns.Add(1)
		go func() { defer txns.Done(); transform(txnCtx, txnRec, bootstrap, id, cfg.MetadataMinAge, logf) }()
	}
	txns.Add(1)
	go func() {
		defer txns.Done()
		aborter(txnCtx, txnRec, bootstrap, cfg.Partitions, cfg.MetadataMinAge, logf)
	}()
	readers.Add(1)
	go func() {
		defer readers.Done()
		if err := txnReader(readCtx, outRec, bootstrap, cfg.Partitions, isolation); err != nil {
			logf("reader: %v", err)
		}
	}()

	nem := &nemesis{c: c, nw: nw, rec: outRec, topic: txnOutTopic, parts: cfg.Partitions,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)), logf: logf, session: sessionTimeout}
	nemCtx, stopNemesis := context.WithTimeout(ctx, cfg.Duration)
	nem.txnSchedule(nemCtx, cfg.Nemeses, cfg.HealWait, txnEnv{ids: append(append([]string(nil), transformIDs...), aborterID), ending: txnRec.ending})
	stopNemesis()
	if err := nem.healAll(); err != nil {
		logf("final heal: %v", err)
	}
	logf("healed; input goes on for %v (%d inputs acknowledged, %d transform commits so far)", cfg.Settle, inRec.acked(), txnRec.committed.Load())
	sleepCtx(ctx, cfg.Settle)
	stopInput()
	input.Wait()
	inRec.mu.Lock()
	inRec.mu.h.WorkloadEnd = inRec.now()
	inRec.mu.Unlock()
	logf("input producer stopped and drained (%d acknowledged); waiting for the group to catch up", inRec.acked())
	if err := waitCaughtUp(ctx, c, cfg.Partitions); err != nil {
		logf("catch-up: %v", err)
	}
	stopTxns()
	txns.Wait()
	workloadEnd := inRec.now()
	logf("transactions stopped (%d transform commits)", txnRec.committed.Load())
	sleepCtx(ctx, 2*time.Second) // the reader's last polls (the final reads are what is checked)
	stopReader()
	readers.Wait()

	h := TxnHistory{Partitions: cfg.Partitions, WorkloadStart: workloadStart, WorkloadEnd: workloadEnd}
	inFinal, inComplete, err := readCommittedAll(ctx, c, txnInTopic, cfg.Partitions, kgo.ReadCommitted(), logf)
	if err != nil {
		logf("input final read: %v", err)
	}
	final, complete, err := readCommittedAll(ctx, c, txnOutTopic, cfg.Partitions, isolation, logf)
	if err != nil {
		logf("output final read: %v", err)
	}
	final2, complete2, err := readCommittedAll(ctx, c, txnOutTopic, cfg.Partitions, isolation, logf)
	if err != nil {
		logf("second output final read: %v", err)
	}
	h.Final, h.Final2, h.FinalComplete = final, final2, complete && complete2
	if offs, err := groupOffsets(ctx, c); err != nil {
		logf("group offsets: %v", err)
	} else {
		h.GroupOffsets, h.GroupOffsetsKnown = offs, true
		logf("group %s committed offsets %v", txnGroup, offs)
	}
	inRec.mu.Lock()
	h.Input = inRec.mu.h
	h.Input.Topic, h.Input.Partitions = txnInTopic, cfg.Partitions
	h.Input.Final, h.Input.FinalComplete = inFinal, inComplete
	inRec.mu.Unlock()
	outRec.mu.Lock()
	h.Polls, h.Nemesis = outRec.mu.h.Polls, outRec.mu.h.Nemesis
	outRec.mu.Unlock()
	txnRec.mu.Lock()
	h.Attempts = txnRec.mu.attempts
	txnRec.mu.Unlock()
	res.History = h
	res.Report = CheckTxn(h)
	res.Elapsed = time.Since(began)
	logf("checked: %s", res.Report.Summary())
	return res, nil
}

// waitCaughtUp waits (up to catchUpDeadline) until txnGroup's committed offsets reach the
// input topic's end on every partition.
func waitCaughtUp(ctx context.Context, c *testcluster.Cluster, partitions int32) error {
	adm, cl, err := c.Admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	wctx, cancel := context.WithTimeout(ctx, catchUpDeadline)
	defer cancel()
	last := ""
	for {
		ends, err := adm.ListEndOffsets(wctx, txnInTopic)
		if err == nil {
			err = ends.Error()
		}
		var committed kadm.OffsetResponses
		if err == nil {
			committed, err = adm.FetchOffsets(kadm.RequireStable(wctx), txnGroup)
			if err == nil {
				err = committed.Error()
			}
		}
		if err == nil {
			behind := 0
			ends.Each(func(o kadm.ListedOffset) {
				if at, ok := committed.Lookup(txnInTopic, o.Partition); !ok || at.At < o.Offset {
					behind++
				}
			})
			if behind == 0 {
				return nil
			}
			last = fmt.Sprintf("%d of %d partitions behind (ends %v)", behind, partitions, ends)
		} else {
			last = err.Error()
		}
		if wctx.Err() != nil {
			return fmt.Errorf("not caught up after %v: %s", catchUpDeadline, last)
		}
		sleepCtx(wctx, 500*time.Millisecond)
	}
}
