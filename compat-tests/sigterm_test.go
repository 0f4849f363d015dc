package compattests

// SIGTERM of one node of three under load, measured on real processes: an idempotent acks=all
// producer and a consumer on an RF 3, min.insync.replicas=2 partition while its leader (and,
// in some rounds, the active controller) shuts down cleanly. The test asserts what must hold
// whatever the machine's speed — no record fails, the consumer sees only retriable errors —
// and logs the longest pause between acknowledgements and between consumed records.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// countingLogger keeps franz-go's warnings and errors: the client's own account of trouble.
type countingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *countingLogger) Level() kgo.LogLevel {
	switch os.Getenv("SLUICE_SIGTERM_KGO_LOG") {
	case "":
	case "debug":
		return kgo.LogLevelDebug
	default:
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}
func (l *countingLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %s %v", time.Now().Format("15:04:05.000"), level, msg, kv))
}

func (l *countingLogger) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// TestSigtermUnderLoad stops the leader of partition 0 with SIGTERM, SLUICE_SIGTERM_REPS
// times (default 4), restarting it in between, under a producer (one record every 5 ms) and
// a consumer, and logs the longest pause between acknowledgements and between consumed
// records around each stop, the client warnings, and the consumer's errors.
func TestSigtermUnderLoad(t *testing.T) {
	reps := 4
	if s := os.Getenv("SLUICE_SIGTERM_REPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_SIGTERM_REPS=%q", s)
		}
		reps = n
	}
	c := StartCluster(t, 3, "auto.leader.rebalance.enable=false")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(reps+2)*2*clusterDeadline)
	defer cancel()
	adm, _ := clusterAdmin(t, c.Bootstrap()...)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "sigterm"); err != nil {
		t.Fatalf("create RF 3: %v", err)
	}
	plog := &countingLogger{}
	prod := startPacedProducer(t, c.Bootstrap(), "sigterm", 0, 5*time.Millisecond, kgo.WithLogger(plog))

	clog := &countingLogger{}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.WithLogger(clog),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"sigterm": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var cmu sync.Mutex
	var received []time.Time
	var fetchErrs []error
	cctx, ccancel := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			cmu.Lock()
			fs.EachRecord(func(*kgo.Record) { received = append(received, now) })
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					fetchErrs = append(fetchErrs, err)
				}
			})
			cmu.Unlock()
		}
	}()
	longestReceiveGap := func(from, to time.Time) time.Duration {
		cmu.Lock()
		defer cmu.Unlock()
		last, gap := from, time.Duration(0)
		for _, r := range received {
			if r.Before(from) || r.After(to) {
				continue
			}
			gap = max(gap, r.Sub(last))
			last = r
		}
		return max(gap, to.Sub(last))
	}

	var ackGaps, recvGaps []time.Duration
	var lines []string
	// restarted is when each node was last started again: a client that has not used its
	// connections to a node since then still holds ones to the node's previous process, and
	// franz-go finds them dead only when it sends on them (see the report below).
	restarted := map[int32]time.Time{}
	for rep := range reps {
		var leader int32
		waitFor(t, clusterDeadline, "partition 0 with a full ISR and producing", func() error {
			l, isr, err := metadataPartition(c.Nodes[0].Addr, "sigterm", 0)
			if err != nil {
				return err
			}
			if len(isr) != 3 {
				return fmt.Errorf("ISR %v", isr)
			}
			if _, ok := prod.firstAckOfRecordSentAfter(time.Now().Add(-200 * time.Millisecond)); !ok {
				return errors.New("no recent acknowledgement")
			}
			leader = l
			return nil
		})
		activeController := c.quorumLeader(t)
		plog.take()
		clog.take()
		victim := c.Nodes[leader-1]
		from := time.Now()
		if !victim.Stop() {
			t.Fatalf("node %d did not exit on SIGTERM", leader)
		}
		stopped := time.Now()
		// Measure until two seconds past the exit, long enough to see the pause it caused.
		waitFor(t, clusterDeadline, "acknowledgements after the stop", func() error {
			if _, ok := prod.firstAckOfRecordSentAfter(stopped.Add(2 * time.Second)); !ok {
				return errors.New("not yet")
			}
			return nil
		})
		to := stopped.Add(2 * time.Second)
		ackGap, recvGap := prod.longestAckGap(from, to), longestReceiveGap(from, to)
		ackGaps, recvGaps = append(ackGaps, ackGap), append(recvGaps, recvGap)
		role := "leader"
		if activeController == leader {
			role = "leader+active controller"
		}
		newLeader := "new leader unknown"
		for _, n := range c.Nodes {
			if n == victim {
				continue
			}
			if l, _, err := metadataPartition(n.Addr, "sigterm", 0); err == nil && l >= 0 {
				newLeader = fmt.Sprintf("new leader %d", l)
				if at, ok := restarted[l]; ok {
					newLeader += fmt.Sprintf(", itself restarted %v before the stop", from.Sub(at).Round(time.Millisecond))
				}
				break
			}
		}
		role += "; " + newLeader
		pw, cw := plog.take(), clog.take()
		line := fmt.Sprintf("rep %d: SIGTERM node %d (%s), exited after %v: longest pause between acks %v, between consumed records %v; producer warnings %d, consumer warnings %d",
			rep+1, leader, role, stopped.Sub(from).Round(time.Millisecond), ackGap.Round(time.Millisecond), recvGap.Round(time.Millisecond), len(pw), len(cw))
		for _, w := range append(pw, cw...) {
			line += "\n      " + w
		}
		lines = append(lines, line)
		t.Log(line)
		if os.Getenv("SLUICE_SIGTERM_LOGS") != "" {
			for i, b := range c.Nodes {
				for _, l := range strings.Split(b.Log(), "\n") {
					if strings.Contains(l, "fetch") || strings.Contains(l, "shutdown") || strings.Contains(l, "leader") {
						t.Logf("node %d: %s", i+1, l)
					}
				}
			}
		}
		victim.Restart()
		restarted[leader] = time.Now()
	}
	ccancel()
	<-consumed
	if errs := prod.errors(); len(errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(errs), errs[0])
	}
	cmu.Lock()
	for _, err := range fetchErrs {
		if !kerr.IsRetriable(err) {
			t.Errorf("consumer saw a non-retriable error: %v", err)
		}
	}
	nFetchErrs := len(fetchErrs)
	cmu.Unlock()
	t.Logf("SIGTERM of partition 0's leader under load, %d stops:\n  %s\n  longest pause between acks:             %s\n  longest pause between consumed records: %s\n  consumer fetch errors: %d (all retriable)",
		reps, strings.Join(lines, "\n  "), summary(ackGaps), summary(recvGaps), nFetchErrs)
}
