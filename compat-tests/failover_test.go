package compattests

// Failover time, measured on real processes: how long after kill -9 of a partition's leader an
// idempotent acks=all franz-go producer gets its next acknowledgement on that partition, with
// sluice's default broker.session.timeout.ms and broker.heartbeat.interval.ms. These are
// measurements, not timed assertions: the test asserts only what must hold whatever the
// machine's speed (every record acknowledged, none failed, produce resumes within
// clusterDeadline) and logs the distribution.

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pacedProducer produces to one partition one record every interval (load shaping, not a wait
// in the test) and keeps, for every record, when it was handed to the client and when it was
// acknowledged.
type pacedProducer struct {
	cl       *kgo.Client
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}

	mu struct {
		sync.Mutex
		sent     []time.Time // by sequence number
		acked    []time.Time // zero until acknowledged
		errs     []error     // every failed record's error
		inFlight int
	}
}

func startPacedProducer(t *testing.T, seeds []string, topic string, partition int32, interval time.Duration, opts ...kgo.Opt) *pacedProducer {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	p := &pacedProducer{cl: cl, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(partition)
	t.Cleanup(func() { p.close() })
	return p
}

func (p *pacedProducer) run(partition int32) {
	defer close(p.done)
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		if p.mu.inFlight >= 5000 { // bound the client's buffer while a partition is unavailable
			p.mu.Unlock()
			seq--
			continue
		}
		p.mu.sent = append(p.mu.sent, time.Now())
		p.mu.acked = append(p.mu.acked, time.Time{})
		p.mu.inFlight++
		p.mu.Unlock()
		v := strconv.Itoa(seq)
		p.cl.Produce(context.Background(), &kgo.Record{Partition: partition, Value: []byte(v)}, func(_ *kgo.Record, err error) {
			now := time.Now()
			p.mu.Lock()
			defer p.mu.Unlock()
			p.mu.inFlight--
			if err != nil {
				p.mu.errs = append(p.mu.errs, fmt.Errorf("record %d: %w", seq, err))
				return
			}
			p.mu.acked[seq] = now
		})
	}
}

func (p *pacedProducer) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.cl.Close()
}

// firstAckOfRecordSentAfter returns when the first record handed to the client at or after
// since was acknowledged, or false if none is yet.
func (p *pacedProducer) firstAckOfRecordSentAfter(since time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, _ := slices.BinarySearchFunc(p.mu.sent, since, func(a, b time.Time) int { return a.Compare(b) })
	for ; i < len(p.mu.sent); i++ {
		if !p.mu.acked[i].IsZero() {
			return p.mu.acked[i], true
		}
	}
	return time.Time{}, false
}

// longestAckGap returns the longest time between consecutive acknowledgements in [from, to],
// counting from from and up to to.
func (p *pacedProducer) longestAckGap(from, to time.Time) time.Duration {
	p.mu.Lock()
	var acks []time.Time
	for _, a := range p.mu.acked {
		if !a.IsZero() && !a.Before(from) && !a.After(to) {
			acks = append(acks, a)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(acks, func(a, b time.Time) int { return a.Compare(b) })
	last, gap := from, time.Duration(0)
	for _, a := range acks {
		gap = max(gap, a.Sub(last))
		last = a
	}
	return max(gap, to.Sub(last))
}

func (p *pacedProducer) errors() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.errs)
}

// metadataPartition asks the broker at addr itself (no client cache) for partition's leader
// and ISR.
func metadataPartition(addr, topic string, partition int32) (int32, []int32, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return -1, nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if err := roundTrip(conn, req, resp, 1); err != nil {
		return -1, nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition == partition {
				return p.Leader, p.ISR, kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	return -1, nil, fmt.Errorf("partition %d not in %s's metadata", partition, addr)
}

// metadataLeader asks the broker at addr itself (no client that might ask another, or
// answer from a cache) which node leads partition of topic.
func metadataLeader(addr, topic string, partition int32) (int32, error) {
	l, _, err := metadataPartition(addr, topic, partition)
	return l, err
}

// summary formats durations as min / median / max.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return "no samples"
	}
	return fmt.Sprintf("min %v, median %v, max %v (n=%d)", s[0].Round(time.Millisecond), s[len(s)/2].Round(time.Millisecond),
		s[len(s)-1].Round(time.Millisecond), len(s))
}

// TestFailoverTime kills -9 the leader of partition 0 of an RF 3, min.insync.replicas=2 topic
// under an idempotent acks=all producer, SLUICE_FAILOVER_REPS times (default 10), restarting
// the victim and waiting for it to rejoin the ISR between repetitions. It measures, per kill,
// when a surviving broker's Metadata first names a new leader ("metadata") and when a record
// handed to the producer after the kill is first acknowledged ("ack"), and logs both
// distributions, split by whether the victim was also the active controller. Kills are paced
// at least calmAfter apart (see below). SLUICE_FAILOVER_KGO_LOG=1 adds the producer's log,
// SLUICE_FAILOVER_LOGS=1 the nodes' fencing and election lines. Cluster defaults
// throughout: broker.session.timeout.ms=9000, broker.heartbeat.interval.ms=2000.
func TestFailoverTime(t *testing.T) {
	reps := 10
	if s := os.Getenv("SLUICE_FAILOVER_REPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_FAILOVER_REPS=%q", s)
		}
		reps = n
	}
	c := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(reps+2)*2*clusterDeadline)
	defer cancel()
	adm, _ := clusterAdmin(t, c.Bootstrap()...)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "failover"); err != nil {
		t.Fatalf("create RF 3: %v", err)
	}
	var popts []kgo.Opt
	if os.Getenv("SLUICE_FAILOVER_KGO_LOG") != "" { // the producer's own account of a failover
		popts = append(popts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo,
			func() string { return time.Now().Format("15:04:05.000 ") })))
	}
	prod := startPacedProducer(t, c.Bootstrap(), "failover", 0, 5*time.Millisecond, popts...)
	// A producer refreshes metadata when it starts and after each failover, and franz-go
	// refreshes once more MetadataMinAge (5 s) later for the produce failures it queued
	// meanwhile; within MetadataMinAge of a refresh it will not refresh again, however wrong
	// its metadata. Kills come at least calmAfter after the producer's start and the previous
	// recovery, so each one meets a producer in its steady state, as a long-running one
	// would be.
	const calmAfter = 12 * time.Second
	calmFrom := time.Now()

	var acks, metas, ackCtl, ackOther []time.Duration
	var lines []string
	for rep := range reps {
		var leader int32
		waitFor(t, clusterDeadline, "partition 0 with a full ISR and producing", func() error {
			l, isr, err := metadataPartition(c.Nodes[0].Addr, "failover", 0)
			if err != nil {
				return err
			}
			if len(isr) != 3 {
				return fmt.Errorf("ISR %v", isr)
			}
			if _, ok := prod.firstAckOfRecordSentAfter(time.Now().Add(-200 * time.Millisecond)); !ok {
				return fmt.Errorf("no recent acknowledgement")
			}
			leader = l
			return nil
		})
		time.Sleep(time.Until(calmFrom.Add(calmAfter))) // pacing the nemesis, not waiting for a condition
		activeController := c.quorumLeader(t)
		victim := c.Nodes[leader-1]
		var survivor *Broker
		for _, b := range c.Nodes {
			if b != victim {
				survivor = b
				break
			}
		}
		victim.Kill()
		killed := time.Now() // the process is reaped: nothing it answers is acknowledged after this
		t.Logf("rep %d: node %d killed at %s", rep+1, leader, killed.Format("15:04:05.000"))

		var metaAt time.Time
		waitFor(t, clusterDeadline, "a new leader in metadata and an acknowledgement after the kill", func() error {
			if metaAt.IsZero() {
				if l, err := metadataLeader(survivor.Addr, "failover", 0); err == nil && l != leader && l >= 0 {
					metaAt = time.Now()
				}
			}
			if _, ok := prod.firstAckOfRecordSentAfter(killed); !ok || metaAt.IsZero() {
				return fmt.Errorf("not yet (metadata seen: %v)", !metaAt.IsZero())
			}
			return nil
		})
		ackAt, _ := prod.firstAckOfRecordSentAfter(killed)
		calmFrom = ackAt // the producer refreshed its metadata by then
		ack, meta := ackAt.Sub(killed), metaAt.Sub(killed)
		acks, metas = append(acks, ack), append(metas, meta)
		role := "leader"
		if activeController == leader {
			role = "leader+active controller"
			ackCtl = append(ackCtl, ack)
		} else {
			ackOther = append(ackOther, ack)
		}
		lines = append(lines, fmt.Sprintf("rep %d: killed node %d (%s): metadata %v, ack %v", rep+1, leader, role,
			meta.Round(time.Millisecond), ack.Round(time.Millisecond)))
		t.Log(lines[len(lines)-1])

		victim.Restart()
		waitFor(t, clusterDeadline, "the restarted node back in the ISR", func() error {
			_, isr, err := metadataPartition(survivor.Addr, "failover", 0)
			if err != nil {
				return err
			}
			if !slices.Contains(isr, leader) {
				return fmt.Errorf("ISR %v", isr)
			}
			return nil
		})
	}
	if os.Getenv("SLUICE_FAILOVER_LOGS") != "" {
		for i, b := range c.Nodes {
			for _, line := range strings.Split(b.Log(), "\n") {
				if strings.Contains(line, "fencing") || strings.Contains(line, "campaign") || strings.Contains(line, "became metadata leader") || strings.Contains(line, "fetch from leader failed") {
					t.Logf("node %d: %s", i+1, line)
				}
			}
		}
	}
	if errs := prod.errors(); len(errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(errs), errs[0])
	}
	t.Logf("failover after kill -9 of partition 0's leader, sluice defaults, %d kills:\n  %s\n  metadata names a new leader: %s\n  next acknowledged produce:   %s\n    victim was the active controller: %s\n    victim was not:                   %s",
		reps, strings.Join(lines, "\n  "), summary(metas), summary(acks), summary(ackCtl), summary(ackOther))
}
