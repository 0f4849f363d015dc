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
	// PauseTxnCoordinator SIGSTOPs a transaction coordinator past broker.session.timeout.ms.
	PauseTxnCoordinator = "pause-txn-coordinator"
	// TxnMixed picks each fault at random from TxnMixKinds.
	TxnMixed = "txn-mixed"
)

// TxnKinds lists the transactional nemeses, in CHAOS.md's order (make chaos runs each).
var TxnKinds = []string{KillTxnCoordinator, KillOutputLeader, KillGroupCoordinator, PauseTxnCoordinator, TxnMixed}

// TxnMixKinds are txn-mixed's choices: the transactional faults, kill -9 of the controller and
// an output leader cut off from the other nodes.
var TxnMixKinds = []string{KillTxnCoordinator, KillOutputLeader, KillGroupCoordinator, PauseTxnCoordinator, KillController, PartitionLeader}

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

// txnFault starts one fault of kind (a transactional kind or any of Kinds) and returns its
// heal. Events of the transactional kinds name the kind before a colon in their note.
func (n *nemesis) txnFault(kind string, txnIDs []string) func() {
	leaders := n.leaders()
	var victim int32
	var note string
	switch kind {
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
	case KillTxnCoordinator, KillGroupCoordinator, KillOutputLeader:
		return n.hold(KillLeader)
	case PauseTxnCoordinator:
		return n.hold(PauseLeader)
	}
	return n.hold(kind)
}

// txnSchedule is schedule for RunTxn: faults of kinds in turn (TxnMixed: each from
// TxnMixKinds, Mixed: each from Kinds), healWait of healthy cluster after each.
func (n *nemesis) txnSchedule(ctx context.Context, kinds []string, healWait time.Duration, txnIDs []string) {
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
		heal := n.txnFault(kind, txnIDs)
		sleepCtx(ctx, n.txnHold(kind))
		heal()
	}
}
