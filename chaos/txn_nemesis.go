package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The transactional run's own nemesis kinds (RunTxn; the queue kinds work there too, on the
// output topic).
const (
	// KillTxnCoordinator kill -9s the transaction coordinator of one of the run's transactional
	// ids (FindCoordinator, key type 1), and restarts it after 8 s.
	KillTxnCoordinator = "kill-txn-coordinator"
	// KillGroupCoordinator kill -9s the coordinator of the transform group (key type 0).
	KillGroupCoordinator = "kill-group-coordinator"
	// KillOutputLeader kill -9s the leader of a random partition of the output topic.
	KillOutputLeader = "kill-output-leader"
	// KillTxnCoordinatorAtEnd kill -9s the transaction coordinator of a transform session at
	// the moment the session, its records flushed, starts ending its transaction (offset
	// commit, heartbeat, EndTxn), after a random 0-20 ms: the coordinator dies mid-commit.
	KillTxnCoordinatorAtEnd = "kill-txn-coordinator-at-end"
	// PauseTxnCoordinator SIGSTOPs a transaction coordinator past broker.session.timeout.ms.
	PauseTxnCoordinator = "pause-txn-coordinator"
	// TxnMixed picks each fault at random from TxnMixKinds.
	TxnMixed = "txn-mixed"
)

// TxnKinds lists the transactional nemeses, in CHAOS.md's order (make chaos runs each).
var TxnKinds = []string{KillTxnCoordinator, KillOutputLeader, KillGroupCoordinator, PauseTxnCoordinator, TxnMixed, KillTxnCoordinatorAtEnd}

// TxnMixKinds are txn-mixed's choices: the transactional faults, kill -9 of the controller and
// an output leader cut off from the other nodes.
var TxnMixKinds = []string{KillTxnCoordinator, KillTxnCoordinatorAtEnd, KillOutputLeader, KillGroupCoordinator, PauseTxnCoordinator, KillController, PartitionLeader}

// coordinator is the node coordinating key (keyType 0: a group, 1: a transactional id), or an
// error.
func (n *nemesis) coordinator(keyType int8, key string) (int32, error) {
	adm, cl, err := n.c.Admin()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var resp kadm.FindCoordinatorResponses
	if keyType == 1 {
		resp = adm.FindTxnCoordinators(ctx, key)
	} else {
		resp = adm.FindGroupCoordinators(ctx, key)
	}
	r, ok := resp[key]
	switch {
	case !ok:
		return 0, fmt.Errorf("no FindCoordinator answer for %q", key)
	case r.Err != nil:
		return 0, r.Err
	}
	return r.NodeID, nil
}

// txnEnv is what the transactional nemeses need of the workload: its transactional ids
// (transform sessions' first) and the transform sessions' ending signal.
type txnEnv struct {
	ids    []string
	ending <-chan string
}

// txnFault starts one fault of kind (a transactional kind or any of Kinds) and returns its
// heal. Events of the transactional kinds name the kind before a colon in their note.
func (n *nemesis) txnFault(kind string, env txnEnv) func() {
	txnIDs := env.ids
	leaders := n.leaders()
	var victim int32
	var note string
	switch kind {
	case KillTxnCoordinatorAtEnd:
		id := transformIDs[n.rng.IntN(len(transformIDs))]
		node, err := n.coordinator(1, id)
		if err != nil {
			n.logf("transaction coordinator of %s: %v; a random node instead", id, err)
			node = n.randomNode()
		}
		delay := time.Duration(n.rng.IntN(21)) * time.Millisecond
		waited := n.awaitEnding(env.ending, id, 10*time.Second)
		time.Sleep(delay) // the nemesis's timing, not a test's wait
		victim, note = node, fmt.Sprintf("%s: node %d coordinates %s, killed %v after it began ending a transaction (%s)", kind, node, id, delay, waited)
	case KillTxnCoordinator, PauseTxnCoordinator:
		id := txnIDs[n.rng.IntN(len(txnIDs))]
		node, err := n.coordinator(1, id)
		if err != nil {
			n.logf("transaction coordinator of %s: %v; a random node instead", id, err)
			node = n.randomNode()
		}
		victim, note = node, fmt.Sprintf("%s: node %d coordinates %s", kind, node, id)
	case KillGroupCoordinator:
		node, err := n.coordinator(0, txnGroup)
		if err != nil {
			n.logf("group coordinator of %s: %v; a random node instead", txnGroup, err)
			node = n.randomNode()
		}
		victim, note = node, fmt.Sprintf("%s: node %d coordinates %s", kind, node, txnGroup)
	case KillOutputLeader:
		p, l := n.partitionLeader(leaders)
		victim, note = l, fmt.Sprintf("%s: node %d leads %s partition %d", kind, l, n.topic, p)
	default:
		return n.fault(kind)
	}
	if kind == PauseTxnCoordinator {
		if err := n.c.Node(victim).Pause(); err != nil {
			n.logf("pause node %d: %v", victim, err)
		}
		n.event(NemesisEvent{Kind: "pause", Nodes: []int32{victim}, Led: led(leaders, victim), Note: note})
		return func() {
			if err := n.c.Node(victim).Resume(); err != nil {
				n.logf("resume node %d: %v", victim, err)
			}
			n.event(NemesisEvent{Kind: "resume", Nodes: []int32{victim}})
		}
	}
	if err := n.c.Node(victim).Kill(); err != nil {
		n.logf("kill node %d: %v", victim, err)
	}
	n.event(NemesisEvent{Kind: "kill", Nodes: []int32{victim}, Led: led(leaders, victim), Note: note})
	return func() { n.restart(victim) }
}

// txnHold is how long a transactional fault lasts: a kill as long as the queue kinds' kills, a
// pause past the broker session.
func (n *nemesis) txnHold(kind string) time.Duration {
	switch kind {
	case KillTxnCoordinator, KillTxnCoordinatorAtEnd, KillGroupCoordinator, KillOutputLeader:
		return n.hold(KillLeader)
	case PauseTxnCoordinator:
		return n.hold(PauseLeader)
	}
	return n.hold(kind)
}

// txnSchedule is schedule for RunTxn: faults of kinds in turn (TxnMixed: each from
// TxnMixKinds, Mixed: each from Kinds), healWait of healthy cluster after each.
func (n *nemesis) txnSchedule(ctx context.Context, kinds []string, healWait time.Duration, env txnEnv) {
	for i := 0; ; i++ {
		kind := kinds[i%len(kinds)]
		switch kind {
		case TxnMixed:
			kind = TxnMixKinds[n.rng.IntN(len(TxnMixKinds))]
		case Mixed:
			kind = Kinds[n.rng.IntN(len(Kinds))]
		}
		if !sleepCtx(ctx, healWait) {
			return
		}
		heal := n.txnFault(kind, env)
		sleepCtx(ctx, n.txnHold(kind))
		heal()
	}
}

// awaitEnding waits (up to limit) for transactional id to signal on ending that it is ending a
// transaction, dropping other ids' and earlier signals; it says what it saw.
func (n *nemesis) awaitEnding(ending <-chan string, id string, limit time.Duration) string {
	for drained := false; !drained; {
		select {
		case <-ending:
		default:
			drained = true
		}
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		select {
		case got := <-ending:
			if got == id {
				return "signalled"
			}
		case <-deadline.C:
			return fmt.Sprintf("no signal in %v", limit)
		}
	}
}
