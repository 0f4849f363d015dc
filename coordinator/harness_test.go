package coordinator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
)

// manualClock is a Clock whose timers fire only inside Advance, in deadline
// order, on the test's goroutine.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*manualTimer
}

type manualTimer struct {
	c       *manualClock
	at      time.Time
	seq     int
	f       func()
	stopped bool
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d, firing due timers in order.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for {
		var next *manualTimer
		live := c.timers[:0]
		for _, t := range c.timers {
			if t.stopped {
				continue
			}
			live = append(live, t)
			if !t.at.After(target) && (next == nil || t.at.Before(next.at) || (t.at.Equal(next.at) && t.seq < next.seq)) {
				next = t
			}
		}
		c.timers = live
		if next == nil {
			break
		}
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.now = target
	c.mu.Unlock()
}

// fakeLog is an in-memory PartitionLog. Appends commit at once unless held.
type fakeLog struct {
	mu      sync.Mutex
	batches [][]byte // as stored: base offsets assigned
	next    int64    // log end offset
	hold    bool
	held    []func()
	failErr error // appends fail with this error when set
	appends int
	// onReplay runs once per batch during Replay (to observe loading).
	onReplay func()
}

func (l *fakeLog) Append(b []byte, done func(int64, error)) {
	l.mu.Lock()
	l.appends++
	if l.failErr != nil {
		err := l.failErr
		l.mu.Unlock()
		done(-1, err)
		return
	}
	h, err := batch.Check(b)
	if err != nil {
		l.mu.Unlock()
		panic(err)
	}
	stored := append([]byte(nil), b...)
	batch.SetBaseOffset(stored, l.next)
	l.batches = append(l.batches, stored)
	l.next += int64(h.LastOffsetDelta) + 1
	last := l.next - 1
	if l.hold {
		l.held = append(l.held, func() { done(last, nil) })
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	done(last, nil)
}

// appendControl stores a transaction marker for producerID, as the
// partition's WriteTxnMarkers would.
func (l *fakeLog) appendControl(producerID int64, epoch int16, commit bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	typ := byte(0)
	if commit {
		typ = 1
	}
	b := batch.Build(batch.Header{BaseOffset: l.next, PartitionLeaderEpoch: -1, ProducerID: producerID, ProducerEpoch: epoch,
		BaseSequence: -1, Attributes: batch.AttrTransactional | batch.AttrControl},
		[]batch.Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	l.batches = append(l.batches, b)
	l.next++
}

// release commits every held append, in order.
func (l *fakeLog) release() {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.hold = false
	l.mu.Unlock()
	for _, f := range held {
		f()
	}
}

func (l *fakeLog) Replay(fn func([]byte) error) error {
	l.mu.Lock()
	batches := append([][]byte(nil), l.batches...)
	hook := l.onReplay
	l.mu.Unlock()
	for _, b := range batches {
		if hook != nil {
			hook()
		}
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

type harness struct {
	t     testing.TB
	clock *manualClock
	cfg   Config
	c     *Coordinator
	logs  map[int32]*fakeLog
	ids   int
}

func newHarness(t testing.TB, mutate func(*Config)) *harness {
	h := &harness{t: t, clock: newManualClock(), logs: make(map[int32]*fakeLog)}
	cfg := DefaultConfig()
	cfg.Clock = h.clock
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if mutate != nil {
		mutate(&cfg)
	}
	h.cfg = cfg
	h.start()
	return h
}

// start creates a fresh Coordinator (a broker restart) and loads every
// partition that has a log.
func (h *harness) start() {
	h.c = New(h.cfg)
	h.c.memberIDs = func(clientID string) string {
		h.ids++
		return fmt.Sprintf("%s-%d", clientID, h.ids)
	}
	for p, l := range h.logs {
		if err := h.c.Load(p, l); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) restart() {
	h.t.Helper()
	h.c.Close()
	h.start()
}

// load makes the partition of group led here.
func (h *harness) load(group string) *fakeLog {
	h.t.Helper()
	p := h.c.PartitionFor(group)
	if l, ok := h.logs[p]; ok {
		return l
	}
	l := &fakeLog{}
	h.logs[p] = l
	if err := h.c.Load(p, l); err != nil {
		h.t.Fatal(err)
	}
	return l
}

var ctx = context.Background()

// async runs f on a goroutine; the result can be required later.
type async[T any] struct {
	ch  chan T
	got *T
}

func goAsync[T any](f func() T) *async[T] {
	a := &async[T]{ch: make(chan T, 1)}
	go func() { a.ch <- f() }()
	return a
}

// wait returns the result, failing the test if it does not arrive. The
// deadline only guards against a hung test; it never decides an outcome.
func (a *async[T]) wait(t testing.TB) T {
	t.Helper()
	if a.got != nil {
		return *a.got
	}
	select {
	case v := <-a.ch:
		a.got = &v
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a response")
	}
	panic("unreachable")
}

// waitFor polls cond (evaluated as a shard event) until it holds. Used to
// know a blocked call has reached the shard before the test moves on.
func (h *harness) waitFor(group string, cond func(s *shard) bool) {
	h.t.Helper()
	s, code := h.c.lookup(group)
	if code != 0 {
		h.t.Fatalf("lookup %s: %d", group, code)
	}
	reached := make(chan struct{})
	var once sync.Once
	hook := func(hs *shard) {
		if hs == s && cond(s) {
			once.Do(func() { close(reached) })
		}
	}
	h.c.eventHook.Store(&hook)
	defer h.c.eventHook.Store(nil)
	s.submit(func() {}) // evaluate once now; the hook runs after every event
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		h.t.Fatal("condition not reached")
	}
}

// inShard runs f as a shard event and waits for it.
func (h *harness) inShard(group string, f func(s *shard)) {
	h.t.Helper()
	s, code := h.c.lookup(group)
	if code != 0 {
		h.t.Fatalf("lookup %s: %d", group, code)
	}
	done := make(chan struct{})
	s.submit(func() { f(s); close(done) })
	<-done
	quiesce(s)
}

// quiesce waits until the shard has run every event queued so far and
// every event those queued (append completions, for example).
func quiesce(s *shard) {
	for {
		idle := make(chan bool, 1)
		s.submit(func() {
			s.exec.Lock()
			idle <- len(s.exec.queue) == 0
			s.exec.Unlock()
		})
		if <-idle {
			return
		}
	}
}

// advance moves the manual clock and waits for the shards to go idle.
func (h *harness) advance(d time.Duration) {
	h.clock.Advance(d)
	h.c.mu.Lock()
	var shards []*shard
	for _, s := range h.c.mu.shards {
		shards = append(shards, s)
	}
	h.c.mu.Unlock()
	for _, s := range shards {
		quiesce(s)
	}
}

func (h *harness) groupState(group string) string {
	var st string
	h.inShard(group, func(s *shard) {
		if g := s.groups[group]; g != nil {
			st = g.state.String()
		} else {
			st = "none"
		}
	})
	return st
}

func str(s string) *string { return &s }

func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 0
	m.Topics = topics
	return m.AppendTo(nil)
}

type joinSpec struct {
	group, memberID string
	instance        *string
	version         int16
	session         time.Duration
	rebalance       time.Duration
	protocols       []string // protocol names; metadata is consumerMeta("t")
	meta            []byte
	protocolType    string
}

func (h *harness) joinReq(js joinSpec) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = js.version
	if req.Version == 0 {
		req.Version = 9
	}
	req.Group = js.group
	req.MemberID = js.memberID
	req.InstanceID = js.instance
	req.SessionTimeoutMillis = int32(cmpOr(js.session, 10*time.Second) / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(cmpOr(js.rebalance, 30*time.Second) / time.Millisecond)
	req.ProtocolType = js.protocolType
	if req.ProtocolType == "" {
		req.ProtocolType = "consumer"
	}
	if len(js.protocols) == 0 {
		js.protocols = []string{"range"}
	}
	meta := js.meta
	if meta == nil {
		meta = consumerMeta("t")
	}
	for _, p := range js.protocols {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: meta})
	}
	return req
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func (h *harness) joinAsync(js joinSpec) *async[*kmsg.JoinGroupResponse] {
	req := h.joinReq(js)
	return goAsync(func() *kmsg.JoinGroupResponse {
		r, err := h.c.JoinGroup(ctx, JoinClient{ClientID: "c", ClientHost: "/127.0.0.1"}, req)
		if err != nil {
			panic(err)
		}
		return r
	})
}

// awaitingJoin reports how many members of group wait in JoinGroup.
func awaitingJoin(group string, n int) func(s *shard) bool {
	return func(s *shard) bool {
		g := s.groups[group]
		if g == nil {
			return false
		}
		c := 0
		for _, m := range g.members {
			if m.joinReply != nil {
				c++
			}
		}
		return c == n
	}
}

func awaitingSync(group string, n int) func(s *shard) bool {
	return func(s *shard) bool {
		g := s.groups[group]
		if g == nil {
			return false
		}
		c := 0
		for _, m := range g.members {
			if m.syncReply != nil {
				c++
			}
		}
		return c == n
	}
}

func (h *harness) syncAsync(group, member string, gen int32, assign map[string][]byte) *async[*kmsg.SyncGroupResponse] {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, member, gen
	ids := make([]string, 0, len(assign))
	for id := range assign {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: assign[id]})
	}
	return goAsync(func() *kmsg.SyncGroupResponse {
		r, err := h.c.SyncGroup(ctx, req)
		if err != nil {
			panic(err)
		}
		return r
	})
}

func (h *harness) heartbeat(group, member string, gen int32, instance *string) int16 {
	h.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, instance
	r, err := h.c.Heartbeat(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r.ErrorCode
}

func (h *harness) commit(group string, gen int32, member string, version int16, topic string, offsets map[int32]int64) *kmsg.OffsetCommitResponse {
	h.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.Generation, req.MemberID = group, gen, member
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	parts := make([]int32, 0, len(offsets))
	for p := range offsets {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		tp := kmsg.NewOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset = p, offsets[p]
		tp.LeaderEpoch = 7
		tp.Metadata = str("md")
		t.Partitions = append(t.Partitions, tp)
	}
	req.Topics = append(req.Topics, t)
	r, err := h.c.OffsetCommit(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func commitCodes(r *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// fetch returns the committed offsets of group for topic's partitions (v7).
func (h *harness) fetch(group, topic string, parts ...int32) []int64 {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: parts}}
	r, err := h.c.OffsetFetch(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.ErrorCode != 0 {
		h.t.Fatalf("offset fetch error %d", r.ErrorCode)
	}
	var out []int64
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.Offset)
		}
	}
	return out
}
