package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"sluice/internal/testcluster"
)

// Nemesis kinds, as named in CHAOS.md and on the command line.
const (
	KillRandom     = "kill-random"     // kill -9 a random node, restart it
	KillLeader     = "kill-leader"     // kill -9 the leader of a random partition
	KillController = "kill-controller" // kill -9 the active controller
	// KillLeaderLong is KillLeader with the node kept down past broker.session.timeout.ms
	// (plus 4 s), so the controller fences it by session expiry rather than on its restart:
	// the availability measurement. Not in Kinds (nor in mixed).
	KillLeaderLong    = "kill-leader-long"
	PauseLeader       = "pause-leader"       // SIGSTOP a partition leader past the session timeout
	PartitionLeader   = "partition-leader"   // cut a partition leader off from every other node
	PartitionMajority = "partition-majority" // split a random minority from the majority
	PartitionBridge   = "partition-bridge"   // two sides that only one node connects
	// KillAndPartition combines two faults: a partition leader cut off from every other node
	// and, at the same time, kill -9 of another node.
	KillAndPartition = "kill-and-partition"
	Mixed            = "mixed" // each fault picked at random from the above
	// UncleanElection shows what unclean.leader.election.enable=true costs (Run turns it on
	// for the topic): one replica of a partition is paused past the session timeout, so it is
	// fenced and leaves the ISR while the other two go on acknowledging acks=all writes; then
	// both of those are killed (-9) and the paused one resumed. Nothing in sync is alive, so
	// the controller elects the out-of-sync replica uncleanly, and when the killed ones return
	// they truncate to its log: the writes only they had are lost, as Kafka documents. It
	// needs five nodes (three combined nodes could not keep a metadata quorum with two of them
	// dead). Not in Kinds (nor in mixed).
	UncleanElection = "unclean-election"
)

// Kinds lists every single nemesis, in CHAOS.md's order.
var Kinds = []string{KillRandom, KillLeader, KillController, PauseLeader, PartitionLeader, PartitionMajority, PartitionBridge, KillAndPartition}

// nemesis injects faults into one cluster and heals them.
type nemesis struct {
	c       *testcluster.Cluster
	nw      *Network
	rec     *recorder
	topic   string
	parts   int32
	rng     *rand.Rand
	logf    func(format string, args ...any)
	session time.Duration // broker.session.timeout.ms
}

// hold is how long a fault lasts before it is healed: a pause outlasts the broker session, so
// the paused broker is fenced.
func (n *nemesis) hold(kind string) time.Duration {
	switch kind {
	case PauseLeader:
		return n.session + 3*time.Second
	case KillRandom, KillLeader, KillController:
		return 8 * time.Second
	case KillLeaderLong:
		return n.session + 4*time.Second
	case UncleanElection:
		return 15 * time.Second // the out-of-sync replica leads alone until the killed ones return
	}
	return 12 * time.Second
}

// leaders is one Metadata look-up of the topic's leaders (empty on failure).
func (n *nemesis) leaders() map[int32]int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := n.c.PartitionLeaders(ctx, n.topic)
	if err != nil {
		n.logf("leader lookup: %v", err)
		return map[int32]int32{}
	}
	return l
}

// led lists the partitions node led in leaders.
func led(leaders map[int32]int32, node int32) []int32 {
	var out []int32
	for p, l := range leaders {
		if l == node {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (n *nemesis) randomNode() int32 { return int32(1 + n.rng.IntN(len(n.c.Nodes))) }

// partitionLeader is the leader of a random partition (a random node if it has none).
func (n *nemesis) partitionLeader(leaders map[int32]int32) (int32, int32) {
	p := int32(n.rng.IntN(int(n.parts)))
	if l, ok := leaders[p]; ok && l >= 1 {
		return p, l
	}
	return p, n.randomNode()
}

func (n *nemesis) event(e NemesisEvent) {
	e.Time = n.rec.now()
	n.rec.nemesis(e)
	n.logf("nemesis %s nodes=%v led=%v %s", e.Kind, e.Nodes, e.Led, e.Note)
}

// fault starts one fault of kind and returns its heal.
func (n *nemesis) fault(kind string) func() {
	leaders := n.leaders()
	switch kind {
	case KillRandom, KillLeader, KillController, KillLeaderLong:
		var victim int32
		note := ""
		switch kind {
		case KillRandom:
			victim = n.randomNode()
		case KillLeader, KillLeaderLong:
			var p int32
			p, victim = n.partitionLeader(leaders)
			note = fmt.Sprintf("leader of partition %d", p)
		case KillController:
			id, err := n.c.QuorumLeader()
			if err != nil {
				n.logf("controller lookup: %v; killing a random node", err)
				id = n.randomNode()
			}
			victim, note = id, "active controller"
		}
		node := n.c.Node(victim)
		if err := node.Kill(); err != nil {
			n.logf("kill node %d: %v", victim, err)
		}
		n.event(NemesisEvent{Kind: "kill", Nodes: []int32{victim}, Led: led(leaders, victim), Note: note})
		return func() { n.restart(victim) }
	case PauseLeader:
		p, victim := n.partitionLeader(leaders)
		if err := n.c.Node(victim).Pause(); err != nil {
			n.logf("pause node %d: %v", victim, err)
		}
		n.event(NemesisEvent{Kind: "pause", Nodes: []int32{victim}, Led: led(leaders, victim), Note: fmt.Sprintf("leader of partition %d", p)})
		return func() {
			if err := n.c.Node(victim).Resume(); err != nil {
				n.logf("resume node %d: %v", victim, err)
			}
			n.event(NemesisEvent{Kind: "resume", Nodes: []int32{victim}})
		}
	case PartitionLeader, PartitionMajority, PartitionBridge:
		all := make([]int, len(n.c.Nodes))
		for i := range all {
			all[i] = i
		}
		var a, b []int
		note := ""
		switch kind {
		case PartitionLeader:
			p, l := n.partitionLeader(leaders)
			a = []int{int(l) - 1}
			for _, i := range all {
				if i != int(l)-1 {
					b = append(b, i)
				}
			}
			note = fmt.Sprintf("leader of partition %d isolated", p)
		case PartitionMajority:
			n.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			a, b = all[:len(all)/2], all[len(all)/2:]
			note = "minority | majority"
		case PartitionBridge:
			n.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			half := len(all) / 2 // the middle node (all[half]) reaches both sides
			a, b = all[:half], all[half+1:]
			note = fmt.Sprintf("node %d bridges", all[half]+1)
		}
		if err := n.nw.Partition(a, b); err != nil {
			n.logf("partition: %v", err)
		}
		n.event(NemesisEvent{Kind: "partition", Nodes: ids(append(slices.Clone(a), b...)), Note: fmt.Sprintf("%v | %v cut (%s); cuts %s", ids(a), ids(b), note, n.nw.Cuts())})
		return func() {
			if err := n.nw.Heal(); err != nil {
				n.logf("heal: %v", err)
			}
			n.event(NemesisEvent{Kind: "heal"})
		}
	case KillAndPartition:
		p, l := n.partitionLeader(leaders)
		var others []int
		for i := range n.c.Nodes {
			if i != int(l)-1 {
				others = append(others, i)
			}
		}
		if err := n.nw.Partition([]int{int(l) - 1}, others); err != nil {
			n.logf("partition: %v", err)
		}
		n.event(NemesisEvent{Kind: "partition", Nodes: ids(append([]int{int(l) - 1}, others...)), Note: fmt.Sprintf("leader of partition %d isolated; cuts %s", p, n.nw.Cuts())})
		victim := int32(others[n.rng.IntN(len(others))] + 1)
		if err := n.c.Node(victim).Kill(); err != nil {
			n.logf("kill node %d: %v", victim, err)
		}
		// Led stays empty: with the partition on top, the recovery time is not a leader kill's.
		n.event(NemesisEvent{Kind: "kill", Nodes: []int32{victim}, Note: fmt.Sprintf("a node of the other side (led %v; recovery not measured)", led(leaders, victim))})
		return func() {
			if err := n.nw.Heal(); err != nil {
				n.logf("heal: %v", err)
			}
			n.event(NemesisEvent{Kind: "heal"})
			n.restart(victim)
		}
	case UncleanElection:
		return n.uncleanElection(leaders)
	}
	panic("unknown nemesis " + kind)
}

// uncleanElection is the UncleanElection fault (see its constant); the heal restarts the two
// killed replicas.
func (n *nemesis) uncleanElection(leaders map[int32]int32) func() {
	p := int32(n.rng.IntN(int(n.parts)))
	replicas := n.replicas(p)
	leader, ok := leaders[p]
	if len(replicas) != 3 || !ok || !slices.Contains(replicas, leader) {
		n.logf("unclean-election: partition %d has replicas %v and leader %d (%v); skipping this fault", p, replicas, leader, ok)
		return func() {}
	}
	var stale int32 // the replica that falls out of sync
	for _, r := range replicas {
		if r != leader {
			stale = r
			break
		}
	}
	isr := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return r == stale })
	if err := n.c.Node(stale).Pause(); err != nil {
		n.logf("pause node %d: %v", stale, err)
	}
	n.event(NemesisEvent{Kind: "pause", Nodes: []int32{stale}, Led: led(leaders, stale),
		Note: fmt.Sprintf("replica of partition %d (replicas %v) paused until fenced: out of its ISR", p, replicas)})
	// Past the session timeout the controller fences it and shrinks the ISR to isr, which
	// keeps acknowledging writes to p that stale never gets.
	sleepCtx(context.Background(), n.session+4*time.Second)
	for _, id := range isr {
		if err := n.c.Node(id).Kill(); err != nil {
			n.logf("kill node %d: %v", id, err)
		}
	}
	n.event(NemesisEvent{Kind: "kill", Nodes: isr, Note: fmt.Sprintf("the ISR %v of partition %d (recovery not measured)", isr, p)})
	if err := n.c.Node(stale).Resume(); err != nil {
		n.logf("resume node %d: %v", stale, err)
	}
	n.event(NemesisEvent{Kind: "resume", Nodes: []int32{stale}, Note: fmt.Sprintf("only out-of-sync replica %d of partition %d alive: an unclean election", stale, p)})
	return func() {
		for _, id := range isr {
			n.restart(id)
		}
	}
}

// replicas is one look-up of partition p's replicas (nil on failure).
func (n *nemesis) replicas(p int32) []int32 {
	adm, cl, err := n.c.Admin()
	if err != nil {
		n.logf("admin client: %v", err)
		return nil
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, n.topic)
	if err != nil || td[n.topic].Err != nil {
		n.logf("replica lookup: %v %v", err, td[n.topic].Err)
		return nil
	}
	for _, pd := range td[n.topic].Partitions {
		if pd.Partition == p {
			return slices.Clone(pd.Replicas)
		}
	}
	return nil
}

func ids(idx []int) []int32 {
	out := make([]int32, len(idx))
	for i, x := range idx {
		out[i] = int32(x + 1)
	}
	return out
}

// restart starts a killed node again (a failure is logged; healAll retries it).
func (n *nemesis) restart(id int32) {
	if err := n.c.Node(id).Restart(); err != nil {
		n.logf("restart node %d: %v", id, err)
		return
	}
	n.event(NemesisEvent{Kind: "restart", Nodes: []int32{id}})
}

// healAll removes every cut, resumes every paused node and restarts every dead one.
func (n *nemesis) healAll() error {
	if err := n.nw.Heal(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(n.c.Nodes))
	for i, node := range n.c.Nodes {
		if node.Paused() {
			_ = node.Resume()
		}
		if !node.Alive() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if errs[i] = node.Restart(); errs[i] == nil {
					n.event(NemesisEvent{Kind: "restart", Nodes: []int32{int32(i + 1)}, Note: "final heal"})
				}
			}()
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("restart node %d: %w", i+1, err)
		}
	}
	return nil
}

// schedule runs faults of the given kinds in turn (Mixed: each at random) with healWait of
// healthy cluster after each, until ctx ends; a fault in progress is healed first.
func (n *nemesis) schedule(ctx context.Context, kinds []string, healWait time.Duration) {
	for i := 0; ; i++ {
		kind := kinds[i%len(kinds)]
		if kind == Mixed {
			kind = Kinds[n.rng.IntN(len(Kinds))]
		}
		if !sleepCtx(ctx, healWait) {
			return
		}
		heal := n.fault(kind)
		sleepCtx(ctx, n.hold(kind))
		heal()
	}
}

// sleepCtx waits d or until ctx ends; false if ctx ended. (The nemesis schedule is timed; no
// test outcome depends on it.)
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
