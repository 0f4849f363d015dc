package compattests

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bounds of TestShareDurableKill9.
const (
	shareLedgerRecords    = 3000 // numbered records on the one-partition topic
	shareLedgerConsumers  = 2
	shareLedgerBeforeKill = 1000 // confirmed acknowledgements before the SIGKILL
	shareLedgerTimeout    = 60 * time.Second
	// shareFailoverRecords: more, so that both kills of TestShareDurableFailover land mid-stream.
	shareFailoverRecords = 8000
)

// shareLedger is what the share consumers observed: every delivery and every acknowledgement,
// and whether the broker confirmed it.
type shareLedger struct {
	mu sync.Mutex
	// delivered[i] counts deliveries of record i; deliveredAfter[i] counts those that a poll
	// returned after record i's acknowledgement had been confirmed (the bug this test hunts).
	delivered, deliveredAfter map[int]int
	// confirmed[i] is when the broker confirmed record i's acknowledgement (ACCEPT); acked[i]
	// counts the acknowledgements sent for it, confirmed or not (an acknowledgement in flight at
	// the kill has no answer).
	confirmed map[int]time.Time
	acked     map[int]int
	// confirmedTwice are records whose acknowledgement was confirmed more than once.
	confirmedTwice []int
	// limit, when set, holds the consumers' acknowledgements back once that many records are
	// confirmed (their records stay acquired), so that a test's kills land mid-stream.
	limit atomic.Int64
}

// waitGate blocks a consumer about to acknowledge while the confirmed count is at the limit.
func (l *shareLedger) waitGate(ctx context.Context) {
	for ctx.Err() == nil {
		limit := l.limit.Load()
		if limit <= 0 || int64(l.nConfirmed()) < limit {
			return
		}
		t := time.NewTimer(5 * time.Millisecond) // polling a condition the test moves
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (l *shareLedger) nConfirmed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.confirmed)
}

func (l *shareLedger) nAcked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// TestShareDurableKill9: KIP-932 share-group state survives a SIGKILL. A producer writes numbered
// records to a one-partition topic; two franz-go share consumers in one group acknowledge them
// (ACCEPT) poll by poll and log every delivery and whether the broker confirmed each
// acknowledgement. The broker is SIGKILLed mid-stream and restarted on its data dir. The
// ledger must show every record accepted, none whose acknowledgement was confirmed delivered
// again (before or after the restart) and none confirmed twice; and after a second SIGKILL and
// restart with everything acknowledged, a new consumer gets only a record produced afterwards
// (the share-partition start offset was persisted past every record).
func TestShareDurableKill9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), shareLedgerTimeout)
	defer cancel()
	b := StartBroker(t, "num.partitions=1", "group.share.heartbeat.interval.ms=500",
		"share.coordinator.state.topic.num.partitions=3", "offsets.topic.num.partitions=3",
		// A snapshot every 20 updates, so replay folds both record kinds.
		"share.coordinator.snapshot.update.records.per.snapshot=20")
	const topic, group = "share-ledger", "ledger"
	adm := groupsAdminClient(t, b)
	groupsCreateTopic(t, kadm.NewClient(adm), topic, 1)
	setShareGroupEarliest(t, ctx, adm, group)

	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := make([]*kgo.Record, 0, shareLedgerRecords)
	for i := range shareLedgerRecords {
		recs = append(recs, kgo.StringRecord(strconv.Itoa(i)))
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}

	l := newShareLedger()
	runCtx, stopConsumers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for c := range shareLedgerConsumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runShareLedgerConsumer(t, runCtx, []string{b.Addr}, topic, group, c, l)
		}()
	}
	defer func() { stopConsumers(); wg.Wait() }()

	waitFor(t, 30*time.Second, fmt.Sprintf("%d confirmed acknowledgements", shareLedgerBeforeKill), func() error {
		if n := l.nConfirmed(); n < shareLedgerBeforeKill {
			return fmt.Errorf("%d confirmed", n)
		}
		return nil
	})
	b.Kill()
	t.Logf("SIGKILL with %d of %d records' acknowledgements confirmed", l.nConfirmed(), shareLedgerRecords)
	b.Restart()
	waitFor(t, 40*time.Second, "every record acknowledged", func() error {
		if n := l.nAcked(); n < shareLedgerRecords {
			return fmt.Errorf("%d of %d acknowledged (%d confirmed)", n, shareLedgerRecords, l.nConfirmed())
		}
		return nil
	})
	stopConsumers()
	wg.Wait()

	l.check(t, shareLedgerRecords)

	// Everything is acknowledged: after another SIGKILL the persisted start offset is past the
	// last record, so a new consumer gets only what is produced afterwards.
	b.Kill()
	b.Restart()
	if err := prod.ProduceSync(ctx, kgo.StringRecord("sentinel")).FirstErr(); err != nil {
		t.Fatalf("producing the sentinel: %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no sentinel before the deadline")
		}
		done := false
		for _, r := range fs.Records() {
			if string(r.Value) != "sentinel" {
				t.Errorf("record %s delivered after every record was acknowledged and the broker restarted", r.Value)
				continue
			}
			done = true
		}
		if done {
			break
		}
	}
}

// runShareLedgerConsumer polls until ctx ends, acknowledging every record it gets (ACCEPT) and
// flushing the acknowledgements after each poll; the broker's answers tell which were confirmed.
func runShareLedgerConsumer(t *testing.T, ctx context.Context, seeds []string, topic, group string, id int, l *shareLedger) {
	var cbMu sync.Mutex
	var cbErr error
	cbSeen := false
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ShareGroup(group),
		kgo.ShareMaxRecords(50), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ClientID(fmt.Sprintf("ledger-%d", id)),
		kgo.RetryTimeout(5*time.Second),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			cbMu.Lock()
			defer cbMu.Unlock()
			cbSeen = true
			if err := rs.Error(); err != nil && cbErr == nil {
				cbErr = err
			}
		}))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 50)
		rs := fs.Records()
		if len(rs) == 0 {
			continue
		}
		polled := time.Now()
		nums := make([]int, 0, len(rs))
		l.mu.Lock()
		for _, r := range rs {
			n, err := strconv.Atoi(string(r.Value))
			if err != nil {
				continue // the sentinel of a later phase
			}
			nums = append(nums, n)
			l.delivered[n]++
			if at, ok := l.confirmed[n]; ok && polled.After(at) {
				l.deliveredAfter[n]++
			}
		}
		l.mu.Unlock()
		l.waitGate(ctx)
		cbMu.Lock()
		cbErr, cbSeen = nil, false
		cbMu.Unlock()
		cl.MarkAcks(kgo.AckAccept, rs...)
		flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := cl.FlushAcks(flushCtx)
		cancel()
		cbMu.Lock()
		ok := err == nil && cbSeen && cbErr == nil
		cbMu.Unlock()
		now := time.Now()
		l.mu.Lock()
		for _, n := range nums {
			l.acked[n]++
			if !ok {
				continue
			}
			if _, dup := l.confirmed[n]; dup {
				l.confirmedTwice = append(l.confirmedTwice, n)
				continue
			}
			l.confirmed[n] = now
		}
		l.mu.Unlock()
	}
}

// setShareGroupEarliest sets the group's share.auto.offset.reset to earliest (a group config).
func setShareGroupEarliest(t *testing.T, ctx context.Context, cl *kgo.Client, group string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet
	v := "earliest"
	c.Value = &v
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("setting share.auto.offset.reset: error %d", code)
	}
}

// check fails t unless every record was delivered and acknowledged, none was delivered again
// after its acknowledgement was confirmed, and none was confirmed twice.
func (l *shareLedger) check(t *testing.T, records int) {
	t.Helper()
	l.mu.Lock()
	unconfirmed := 0
	var lost, again []int
	for i := range records {
		if l.delivered[i] == 0 || l.acked[i] == 0 {
			lost = append(lost, i)
		}
		if l.deliveredAfter[i] > 0 {
			again = append(again, i)
		}
		if _, ok := l.confirmed[i]; !ok {
			unconfirmed++
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d records never delivered and acknowledged, first %v", len(lost), lost[:min(len(lost), 10)])
	}
	if len(again) > 0 {
		t.Errorf("%d records delivered again after their acknowledgement was confirmed, first %v", len(again), again[:min(len(again), 10)])
	}
	if len(l.confirmedTwice) > 0 {
		t.Errorf("records accepted twice: %v", l.confirmedTwice)
	}
	redelivered := 0
	for _, n := range l.delivered {
		redelivered += n - 1
	}
	t.Logf("ledger: %d records, %d redeliveries (records acquired or acknowledged unconfirmed at the kill), %d acknowledgements never confirmed",
		records, redelivered, unconfirmed)
	l.mu.Unlock()
}

func newShareLedger() *shareLedger {
	return &shareLedger{delivered: map[int]int{}, deliveredAfter: map[int]int{}, confirmed: map[int]time.Time{}, acked: map[int]int{}}
}

// TestShareDurableFailover: the share partition lives on its topic partition's leader and its
// state on the share coordinator (the leader of a __share_group_state partition, replicated
// with share.coordinator.state.topic.replication.factor 3): SIGKILL the topic partition's
// leader, then the share coordinator's node, mid-stream; the new leaders resume from the
// persisted state and the ledger holds as in TestShareDurableKill9.
func TestShareDurableFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := StartCluster(t, 3, "num.partitions=1", "default.replication.factor=3", "min.insync.replicas=2",
		"group.share.heartbeat.interval.ms=500", "share.coordinator.state.topic.num.partitions=3",
		"offsets.topic.num.partitions=3", "share.coordinator.snapshot.update.records.per.snapshot=20")
	const topic, group = "share-failover", "failover-ledger"
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	setShareGroupEarliest(t, ctx, adm, group)
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := make([]*kgo.Record, 0, shareFailoverRecords)
	for i := range shareFailoverRecords {
		recs = append(recs, kgo.StringRecord(strconv.Itoa(i)))
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}

	l := newShareLedger()
	runCtx, stopConsumers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	startConsumers := func() {
		for i := range shareLedgerConsumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runShareLedgerConsumer(t, runCtx, c.Bootstrap(), topic, group, i, l)
			}()
		}
	}
	defer func() { stopConsumers(); wg.Wait() }()

	confirmed := func(n int) {
		t.Helper()
		waitFor(t, 60*time.Second, fmt.Sprintf("%d confirmed acknowledgements", n), func() error {
			if got := l.nConfirmed(); got < n {
				return fmt.Errorf("%d confirmed", got)
			}
			return nil
		})
	}

	// Where the share partition (its topic partition's leader) and its state (the share
	// coordinator) live, before the consumers start.
	var topicID [16]byte
	waitFor(t, 30*time.Second, "the topic's ID", func() error {
		md, err := kadm.NewClient(adm).Metadata(ctx, topic)
		if err != nil {
			return err
		}
		topicID = md.Topics[topic].ID
		return nil
	})
	coordNode := shareCoordinatorNode(t, ctx, adm, fmt.Sprintf("%s:%s:0", group, base64.RawURLEncoding.EncodeToString(topicID[:])))
	leader, _, err := metadataPartition(c.Nodes[0].Addr, topic, 0)
	if err != nil || leader < 1 {
		t.Fatalf("leader of %s: %d, %v", topic, leader, err)
	}
	l.limit.Store(shareFailoverRecords / 4)
	startConsumers()

	confirmed(shareFailoverRecords / 4)
	c.Nodes[leader-1].Kill() // with the consumers holding acquired records
	t.Logf("SIGKILL of node %d (the topic partition's leader) with %d confirmed", leader, l.nConfirmed())
	l.limit.Store(shareFailoverRecords / 2)
	confirmed(shareFailoverRecords / 2)
	c.Nodes[leader-1].Restart()
	victim := coordNode
	if victim == leader {
		// Both lived on the node killed first: now kill the topic partition's new leader.
		waitFor(t, 30*time.Second, "the topic partition's new leader", func() error {
			l, _, err := metadataPartition(c.Nodes[leader%3].Addr, topic, 0)
			if err != nil || l < 1 {
				return fmt.Errorf("leader %d: %v", l, err)
			}
			victim = l
			return nil
		})
	}
	t.Logf("SIGKILL of node %d (the share coordinator was on node %d) with %d confirmed", victim, coordNode, l.nConfirmed())
	c.Nodes[victim-1].Kill()
	l.limit.Store(0)

	waitFor(t, 60*time.Second, "every record acknowledged", func() error {
		if got := l.nAcked(); got < shareFailoverRecords {
			return fmt.Errorf("%d of %d acknowledged (%d confirmed)", got, shareFailoverRecords, l.nConfirmed())
		}
		return nil
	})
	stopConsumers()
	wg.Wait()
	l.check(t, shareFailoverRecords)
}

// shareCoordinatorNode asks FindCoordinator (key type SHARE) which node holds key's state.
func shareCoordinatorNode(t *testing.T, ctx context.Context, cl *kgo.Client, key string) int32 {
	t.Helper()
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorType = 2
	find.CoordinatorKeys = []string{key}
	var node int32 = -1
	waitFor(t, 30*time.Second, "the share coordinator", func() error {
		resp, err := find.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.Coordinators[0].ErrorCode); err != nil {
			return err
		}
		node = resp.Coordinators[0].NodeID
		return nil
	})
	return node
}
