package compattests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// churnPartitions is the partition count of each churn test's topic.
const churnPartitions = 6

// churnSessionTimeout is the members' session timeout: how long a crashed member keeps its
// partitions before the coordinator expires it.
const churnSessionTimeout = 4 * time.Second

// churnSettle bounds each wait for the group to settle on a new membership.
const churnSettle = 30 * time.Second

// TestGroupsFranzChurn runs franz-go members that join and leave one group while a producer
// keeps writing, once with the classic protocol and the cooperative-sticky balancer and once
// with KIP-848 (server-side "uniform" assignment). It asserts what a user relies on:
//   - no partition is ever owned by two members at once (ownership is tracked through
//     OnPartitionsAssigned/Revoked/Lost with the member's generation or epoch), and a member
//     only receives records of partitions it owns;
//   - every produced record is consumed (commits are synchronous after each poll, so records
//     are re-read only after a partition moved);
//   - after SIGKILL and a restart of the broker, the groups' committed offsets are unchanged
//     and a new member resumes from them;
//   - live members and a producer carry on across a broker SIGKILL and restart, losing
//     nothing.
func TestGroupsFranzChurn(t *testing.T) {
	// Short session timeouts so a crashed member expires within a few seconds: classic members
	// ask for churnSessionTimeout (the broker minimum must allow it), KIP-848 members get the
	// broker's group.consumer.session.timeout.ms.
	b, cl, adm := startGroupBroker(t,
		"group.consumer.min.session.timeout.ms=1000",
		fmt.Sprintf("group.consumer.session.timeout.ms=%d", churnSessionTimeout.Milliseconds()))
	runs := []struct {
		name, group, topic, groupType string
		balancer                      kgo.GroupBalancer
		serverSide                    bool
	}{
		{"ClassicCooperativeSticky", "franz-coop", "groups-franz-coop", "classic", kgo.CooperativeStickyBalancer(), false},
		// franz-go v1.22.3 speaks KIP-848 with ServerSideBalancer when the first balancer is
		// sticky ("uniform" server assignor) or range.
		{"KIP848", "franz-848", "groups-franz-848", "consumer", kgo.StickyBalancer(), true},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			groupsCreateTopic(t, adm, r.topic, churnPartitions)
			cfg := churnConfig{b: b, group: r.group, topic: r.topic, balancer: r.balancer, serverSide: r.serverSide}
			runChurn(t, cfg, cl, adm, r.groupType)
		})
	}
	if t.Failed() {
		return
	}

	t.Run("CommittedOffsetsSurviveRestart", func(t *testing.T) {
		before := make(map[string]map[int32]int64)
		for _, r := range runs {
			got, err := groupsCommitted(t, adm, r.group, r.topic)
			if err != nil {
				t.Fatalf("%s before restart: %v", r.group, err)
			}
			if len(got) != churnPartitions {
				t.Fatalf("%s before restart: committed offsets for %d partitions, want %d: %v", r.group, len(got), churnPartitions, got)
			}
			before[r.group] = got
		}
		b.Kill()
		b.Restart()
		for _, r := range runs {
			var after map[int32]int64
			waitFor(t, 30*time.Second, "OffsetFetch after the restart", func() (err error) {
				after, err = groupsCommitted(t, adm, r.group, r.topic)
				return err
			})
			if !sameOffsets(after, before[r.group]) {
				t.Errorf("%s: committed offsets after the restart %v, before %v", r.group, after, before[r.group])
			}
		}
		// A new member of each group resumes from the committed offsets: it reads the records
		// produced after the restart and nothing older.
		for _, r := range runs {
			fresh := groupsProduce(t, cl, r.topic, r.group+"-after-restart", 12)
			cfg := churnConfig{b: b, group: r.group, topic: r.topic, balancer: r.balancer, serverSide: r.serverSide}
			own, sink := newOwnership(), newConsumedSink()
			m := startChurnMember(t, cfg, "resumer", own, sink)
			waitFor(t, churnSettle, r.group+": the new member reads the records produced after the restart", func() error {
				if n := sink.distinct(); n < len(fresh) {
					return fmt.Errorf("read %d of %d", n, len(fresh))
				}
				return nil
			})
			m.close(t)
			if missing, extra := diffSets(sink.values(), fresh); len(missing)+len(extra) > 0 {
				t.Errorf("%s after the restart: missing %v, unexpected or repeated %v (an old record means the commits were not honoured)",
					r.group, missing, extra)
			}
		}
	})

	t.Run("LiveGroupsAcrossRestart", func(t *testing.T) {
		var cfgs []churnConfig
		for _, r := range runs {
			cfgs = append(cfgs, churnConfig{b: b, group: r.group, topic: r.topic, balancer: r.balancer, serverSide: r.serverSide})
		}
		testLiveGroupsAcrossRestart(t, b, cl, adm, cfgs)
	})
}

// liveGroupAcrossRestart is one group with two live members and a producer while the broker
// is killed and restarted.
type liveGroupAcrossRestart struct {
	cfg  churnConfig
	own  *ownership
	sink *consumedSink
	prod *churnProducer
	live []*churnMember
}

// testLiveGroupsAcrossRestart kills and restarts the broker under live groups (one per run):
// afterwards the members carry on, every record produced before, during and after the restart
// is consumed and committed, and no partition is owned twice at once.
func testLiveGroupsAcrossRestart(t *testing.T, b *Broker, cl *kgo.Client, adm *kadm.Client, cfgs []churnConfig) {
	var groups []*liveGroupAcrossRestart
	for _, cfg := range cfgs {
		g := &liveGroupAcrossRestart{cfg: cfg, own: newOwnership(), sink: newConsumedSink()}
		g.own.tolerateLost()
		g.prod = startChurnProducer(cl, cfg.topic, cfg.group+"-live")
		for _, name := range []string{"r1", "r2"} {
			g.live = append(g.live, startChurnMember(t, cfg, name, g.own, g.sink))
		}
		groups = append(groups, g)
	}
	stopAll := func() {
		for _, g := range groups {
			if g.prod != nil {
				g.prod.stop(t)
			}
		}
	}
	defer stopAll()
	for _, g := range groups {
		waitFor(t, churnSettle, g.cfg.group+" settles on r1 and r2", func() error {
			return g.own.settledOn([]string{"r1", "r2"}, churnPartitions)
		})
	}
	b.Kill()
	b.Restart()
	for _, g := range groups {
		n := g.prod.count()
		waitFor(t, churnSettle, g.cfg.group+": producing and consuming continue after the restart", func() error {
			if g.prod.count() <= n || g.sink.distinct() <= n {
				return fmt.Errorf("produced %d, consumed %d (%d before the restart); producer error %v",
					g.prod.count(), g.sink.distinct(), n, g.prod.failure())
			}
			return nil
		})
	}
	for _, g := range groups {
		produced := g.prod.stop(t)
		g.prod = nil
		waitFor(t, churnSettle, g.cfg.group+": every record produced around the restart consumed", func() error {
			if missing, _ := diffSets(dedup(g.sink.values()), produced); len(missing) > 0 {
				return fmt.Errorf("%d distinct consumed of %d produced; missing e.g. %v", g.sink.distinct(), len(produced), missing)
			}
			return nil
		})
		waitCommittedAtEnd(t, adm, g.cfg.group, g.cfg.topic, churnSettle)
		for _, m := range g.live {
			m.close(t)
		}
		for _, v := range append(g.own.violations(), g.sink.violations()...) {
			t.Errorf("%s: %s", g.cfg.group, v)
		}
		t.Logf("%s: %d produced, %d consumed (%d re-reads); ownership history: %s; client errors: %v", g.cfg.group,
			len(produced), len(g.sink.values()), len(g.sink.values())-g.sink.distinct(),
			strings.Join(g.own.history(), "; "), bound(g.own.errors()))
	}
}

// churnConfig describes one group under test.
type churnConfig struct {
	b            *Broker
	group, topic string
	balancer     kgo.GroupBalancer
	serverSide   bool
}

// runChurn is the join/leave scenario: m1 alone, +m2, +m3, -m1, +m4, -m2, m3 crashes,
// +m5 and +m6 at once, with a producer
// writing throughout; then everything produced must be consumed and committed.
func runChurn(t *testing.T, cfg churnConfig, cl *kgo.Client, adm *kadm.Client, groupType string) {
	own, sink := newOwnership(), newConsumedSink()
	prod := startChurnProducer(cl, cfg.topic, cfg.group)
	stopped := false
	stopProducer := func() []string {
		if !stopped {
			stopped = true
			return prod.stop(t)
		}
		return nil
	}
	defer stopProducer()

	members := map[string]*churnMember{}
	join := func(name string) {
		members[name] = startChurnMember(t, cfg, name, own, sink)
	}
	leave := func(name string) {
		members[name].close(t)
		delete(members, name)
	}
	settle := func(step string) {
		t.Helper()
		live := make([]string, 0, len(members))
		for name := range members {
			live = append(live, name)
		}
		sort.Strings(live)
		waitFor(t, churnSettle, fmt.Sprintf("%s: members %v each own partitions and together own all %d", step, live, churnPartitions),
			func() error { return own.settledOn(live, churnPartitions) })
		// Each step must also see consumption continue.
		n := sink.distinct()
		waitFor(t, churnSettle, step+": consumption progresses", func() error {
			if sink.distinct() <= n {
				return fmt.Errorf("still %d distinct records", n)
			}
			return nil
		})
		t.Logf("%s: ownership %v, %d records consumed, %d produced", step, own.snapshot(), sink.distinct(), prod.count())
	}

	join("m1")
	settle("m1 alone")
	checkGroupType(t, adm, cfg.group, groupType)
	join("m2")
	settle("m2 joined")
	join("m3")
	settle("m3 joined")
	leave("m1")
	settle("m1 left")
	join("m4")
	settle("m4 joined")
	leave("m2")
	settle("m2 left")
	// m3 crashes: its connections drop and it never sends LeaveGroup, so the coordinator must
	// expire it after the session timeout and hand its partitions to m4.
	members["m3"].crash(t, own)
	delete(members, "m3")
	settle("m3 crashed")
	// Two members join at once.
	var wg sync.WaitGroup
	var m5, m6 *churnMember
	wg.Add(2)
	go func() { defer wg.Done(); m5 = startChurnMember(t, cfg, "m5", own, sink) }()
	go func() { defer wg.Done(); m6 = startChurnMember(t, cfg, "m6", own, sink) }()
	wg.Wait()
	members["m5"], members["m6"] = m5, m6
	settle("m5 and m6 joined together")

	produced := stopProducer()
	if err := prod.failure(); err != nil {
		t.Fatalf("producer: %v", err)
	}
	waitConsumedAndCommitted(t, sink, produced, adm, cfg.group, cfg.topic)
	for name := range members {
		leave(name)
	}

	for _, v := range own.violations() {
		t.Error(v)
	}
	for _, v := range sink.violations() {
		t.Error(v)
	}
	if errs := own.errors(); len(errs) > 0 {
		t.Logf("client-reported errors (not failures by themselves): %v", bound(errs))
	}
	if _, extra := diffSets(dedup(sink.values()), produced); len(extra) > 0 {
		t.Errorf("consumed records nobody produced: %v", extra)
	}
	t.Logf("%d produced, %d consumed (%d re-reads after partition moves); ownership history: %s",
		len(produced), len(sink.values()), len(sink.values())-sink.distinct(), strings.Join(own.history(), "; "))
	if t.Failed() {
		t.Logf("full ownership history:\n%s", strings.Join(own.history(), "\n"))
	}
}

// checkGroupType asserts ListGroups reports the group with the expected type (proof that the
// KIP-848 run did not silently fall back to the classic protocol).
func checkGroupType(t *testing.T, adm *kadm.Client, group, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupsAdminTimeout)
	defer cancel()
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	g, ok := listed[group]
	if !ok {
		t.Fatalf("ListGroups does not list %s: %v", group, listed.Groups())
	}
	if g.GroupType != want {
		t.Fatalf("ListGroups: %s has type %q, want %q", group, g.GroupType, want)
	}
}

// waitConsumedAndCommitted waits until sink has seen every produced value and the group has
// committed the end of every partition of topic.
func waitConsumedAndCommitted(t *testing.T, sink *consumedSink, produced []string, adm *kadm.Client, group, topic string) {
	t.Helper()
	waitFor(t, churnSettle, "every produced record consumed", func() error {
		if missing, _ := diffSets(dedup(sink.values()), produced); len(missing) > 0 {
			return fmt.Errorf("%d distinct consumed of %d produced; missing e.g. %v", sink.distinct(), len(produced), missing)
		}
		return nil
	})
	waitCommittedAtEnd(t, adm, group, topic, churnSettle)
}

func dedup(values []string) []string {
	s := slices.Clone(values)
	slices.Sort(s)
	return slices.Compact(s)
}

// ---- ownership tracking ----

// ownership records which member owns which partition as reported by the members'
// rebalance callbacks, and every violation of single ownership.
type ownership struct {
	mu struct {
		sync.Mutex
		owner    map[int32]string // partition -> member; absent when unowned
		interval map[int32]int    // partition -> how many times it has been assigned so far
		events   []string         // "m1@g3 +[0 1]" style history
		bad      []string         // single-ownership violations
		errs     []string         // client errors (commit, fetch) seen by members
		dead     map[string]bool  // crashed members; their later callbacks only go to events
		lostOK   bool             // losing partitions is expected (the coordinator restarted)
	}
}

func newOwnership() *ownership {
	o := &ownership{}
	o.mu.owner = make(map[int32]string)
	o.mu.interval = make(map[int32]int)
	o.mu.dead = make(map[string]bool)
	return o
}

func (o *ownership) assigned(member string, gen int32, parts []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mu.events = append(o.mu.events, fmt.Sprintf("%s@%d +%v", member, gen, parts))
	if o.mu.dead[member] {
		return
	}
	for _, p := range parts {
		if prev, ok := o.mu.owner[p]; ok && prev != member {
			o.mu.bad = append(o.mu.bad, fmt.Sprintf("partition %d assigned to %s (generation/epoch %d) while %s still owns it", p, member, gen, prev))
		}
		o.mu.owner[p] = member
		o.mu.interval[p]++
	}
}

func (o *ownership) released(member, how string, gen int32, parts []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mu.events = append(o.mu.events, fmt.Sprintf("%s@%d %s%v", member, gen, how, parts))
	if o.mu.dead[member] {
		return
	}
	if how == "lost" && !o.mu.lostOK {
		o.mu.bad = append(o.mu.bad, fmt.Sprintf("%s (generation/epoch %d) lost partitions %v (fenced or expired without leaving)", member, gen, parts))
	}
	for _, p := range parts {
		if o.mu.owner[p] == member {
			delete(o.mu.owner, p)
		} else {
			o.mu.bad = append(o.mu.bad, fmt.Sprintf("%s (generation/epoch %d) %s partition %d owned by %q", member, gen, how, p, o.mu.owner[p]))
		}
	}
}

// tolerateLost stops counting OnPartitionsLost as a violation: when the coordinator itself
// restarts, a member may be fenced and rejoin; what must still hold is single ownership.
func (o *ownership) tolerateLost() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mu.lostOK = true
}

// crashed ends member's ownership of everything: it has stopped processing, and whatever
// its client reports afterwards is ignored.
func (o *ownership) crashed(member string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []int32
	for p, m := range o.mu.owner {
		if m == member {
			parts = append(parts, p)
			delete(o.mu.owner, p)
		}
	}
	slices.Sort(parts)
	o.mu.dead[member] = true
	o.mu.events = append(o.mu.events, fmt.Sprintf("%s crashed holding %v", member, parts))
}

// owns reports whether member owns p and, if so, which assignment interval of p this is.
func (o *ownership) owns(member string, p int32) (bool, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mu.owner[p] == member, o.mu.interval[p]
}

func (o *ownership) noteError(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mu.errs = append(o.mu.errs, s)
}

// settledOn returns nil once exactly the live members own partitions, each at least one,
// covering all n partitions.
func (o *ownership) settledOn(live []string, n int) error {
	snap := o.snapshot()
	owners := make([]string, 0, len(snap))
	total := 0
	for m, ps := range snap {
		owners = append(owners, m)
		total += len(ps)
	}
	sort.Strings(owners)
	if !slices.Equal(owners, live) || total != n {
		return fmt.Errorf("ownership %v", snap)
	}
	return nil
}

// snapshot returns member -> sorted owned partitions.
func (o *ownership) snapshot() map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string][]int32)
	for p, m := range o.mu.owner {
		out[m] = append(out[m], p)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

func (o *ownership) violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.mu.bad)
}

func (o *ownership) errors() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.mu.errs)
}

func (o *ownership) history() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.mu.events)
}

// ---- consumed records ----

// consumedSink collects every record the members process.
type consumedSink struct {
	mu struct {
		sync.Mutex
		all   []string
		first map[string]readBy // value -> its first read
		bad   []string
	}
}

// readBy identifies who read a record: the member, and which assignment interval of the
// partition it was in. A record read twice within one interval was delivered twice without
// a partition move, which at-least-once with synchronous commits does not allow.
type readBy struct {
	member   string
	interval int
}

func newConsumedSink() *consumedSink {
	s := &consumedSink{}
	s.mu.first = make(map[string]readBy)
	return s
}

func (s *consumedSink) add(member string, interval int, r *kgo.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := string(r.Value)
	s.mu.all = append(s.mu.all, v)
	who := readBy{member, interval}
	if prev, ok := s.mu.first[v]; ok {
		if prev == who {
			s.mu.bad = append(s.mu.bad, fmt.Sprintf("%s read %q (partition %d offset %d) twice without the partition moving", member, v, r.Partition, r.Offset))
		}
		return
	}
	s.mu.first[v] = who
}

func (s *consumedSink) violation(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.bad = append(s.mu.bad, msg)
}

func (s *consumedSink) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.first)
}

func (s *consumedSink) values() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mu.all)
}

func (s *consumedSink) violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bound(slices.Clone(s.mu.bad))
}

// ---- members ----

// churnMember is one franz-go group member with its poll loop.
type churnMember struct {
	name      string
	cl        *kgo.Client
	cancel    context.CancelFunc // stops the poll loop
	clCancel  context.CancelFunc // cancels the client's own context (crash)
	net       *cuttableDialer
	done      chan struct{}
	closed    bool
	closeDone chan struct{} // closed when the background Close after a crash returned
}

// cuttableDialer dials TCP and can, at once, close every connection it made and refuse new
// ones: to the broker that looks like a member whose process died.
type cuttableDialer struct {
	mu struct {
		sync.Mutex
		cut   bool
		conns []net.Conn
	}
}

func (d *cuttableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.cut {
		return nil, errors.New("network cut (simulated crash)")
	}
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.mu.conns = append(d.mu.conns, conn)
	}
	return conn, err
}

func (d *cuttableDialer) cutAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.cut = true
	for _, c := range d.mu.conns {
		c.Close()
	}
	d.mu.conns = nil
}

// startChurnMember joins cfg.group. Its poll loop processes each poll, commits it
// synchronously, and only then lets a rebalance proceed (BlockRebalanceOnPoll), so a partition
// moves only after its records were committed.
func startChurnMember(t *testing.T, cfg churnConfig, name string, own *ownership, sink *consumedSink, extra ...kgo.Opt) *churnMember {
	t.Helper()
	topic := cfg.topic
	gen := func(cl *kgo.Client) int32 { _, g := cl.GroupMetadata(); return g }
	dialer := &cuttableDialer{}
	clCtx, clCancel := context.WithCancel(context.Background())
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.b.Addr),
		kgo.Dialer(dialer.dial),
		kgo.WithContext(clCtx),
		kgo.ClientID(name),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(cfg.balancer),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(250 * time.Millisecond),
		kgo.SessionTimeout(churnSessionTimeout),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			own.assigned(name, gen(cl), m[topic])
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			// The poll loop committed everything before allowing this; commit again in case.
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				own.noteError(fmt.Sprintf("%s commit on revoke: %v", name, err))
			}
			if len(m[topic]) > 0 {
				own.released(name, "-", gen(cl), m[topic])
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			if len(m[topic]) > 0 {
				own.released(name, "lost", gen(cl), m[topic])
			}
		}),
	}
	if cfg.serverSide {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	opts = append(opts, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		clCancel()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &churnMember{name: name, cl: cl, cancel: cancel, clCancel: clCancel, net: dialer, done: make(chan struct{})}
	t.Cleanup(func() { m.close(t) })
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				cl.AllowRebalance()
				return
			}
			fs.EachError(func(tp string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					own.noteError(fmt.Sprintf("%s fetch %s/%d: %v", name, tp, p, err))
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				owned, interval := own.owns(name, r.Partition)
				if !owned {
					sink.violation(fmt.Sprintf("%s received partition %d offset %d without owning the partition (ownership %v)",
						name, r.Partition, r.Offset, own.snapshot()))
				}
				sink.add(name, interval, r)
			})
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				own.noteError(fmt.Sprintf("%s commit: %v", name, err))
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// crash makes the member vanish without leaving: the poll loop stops (everything it processed
// is committed), then its connections drop and no new ones can be made, and its client
// context is canceled so it cannot send LeaveGroup. Its Close runs in the background.
func (m *churnMember) crash(t *testing.T, own *ownership) {
	t.Helper()
	m.closed = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(churnSettle):
		t.Errorf("%s: poll loop did not stop within %v", m.name, churnSettle)
	}
	m.net.cutAll()
	m.clCancel()
	own.crashed(m.name)
	m.closeDone = make(chan struct{})
	go func() { m.cl.Close(); close(m.closeDone) }()
	t.Cleanup(func() {
		select {
		case <-m.closeDone:
		case <-time.After(churnSettle):
			t.Errorf("%s: Close after the simulated crash did not return within %v", m.name, churnSettle)
		}
	})
}

// close stops the poll loop and closes the client, which leaves the group (revoking, and
// reporting through OnPartitionsRevoked, everything the member owns).
func (m *churnMember) close(t *testing.T) {
	t.Helper()
	if m.closed {
		return
	}
	m.closed = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(churnSettle):
		t.Errorf("%s: poll loop did not stop within %v", m.name, churnSettle)
	}
	closed := make(chan struct{})
	go func() { m.cl.Close(); m.clCancel(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(churnSettle):
		t.Errorf("%s: Close (leave group) did not return within %v", m.name, churnSettle)
	}
}

// ---- producer ----

// churnProducer writes small synchronous batches until stopped.
type churnProducer struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     struct {
		sync.Mutex
		values []string // acknowledged values in order
		err    error
	}
}

func startChurnProducer(cl *kgo.Client, topic, prefix string) *churnProducer {
	p := &churnProducer{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		// Pace: one batch per tick, so a run produces a few thousand records, not millions.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; {
			select {
			case <-p.stopCh:
				return
			case <-tick.C:
			}
			batch := make([]*kgo.Record, 10)
			for i := range batch {
				batch[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%06d", prefix, seq)}
				seq++
			}
			ctx, cancel := context.WithTimeout(context.Background(), groupsAdminTimeout)
			err := cl.ProduceSync(ctx, batch...).FirstErr()
			cancel()
			p.mu.Lock()
			if err != nil {
				p.mu.err = err
				p.mu.Unlock()
				return
			}
			for _, r := range batch {
				p.mu.values = append(p.mu.values, string(r.Value))
			}
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *churnProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.values)
}

func (p *churnProducer) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.err
}

// stop ends production and returns every acknowledged value.
func (p *churnProducer) stop(t *testing.T) []string {
	t.Helper()
	close(p.stopCh)
	select {
	case <-p.done:
	case <-time.After(2 * groupsAdminTimeout):
		t.Fatal("producer did not stop")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.values)
}
