package controller

// Dynamic voters (KIP-853): AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter on the active
// controller, as raft configuration changes.
//
// The voter set is raft's ConfState: it lives in the log (configuration change entries) and
// in every snapshot, so it survives restarts with nothing else to persist. A change is one
// etcd-raft ConfChangeV2 with a single change (never a joint configuration), and its Context
// carries the voter's controller endpoint and directory ID as JSON (voterContext); applying
// it records them in Image.VoterEndpoints, so every node knows where the voters listen and
// the transport (SetPeers) dials a new voter and forgets a removed one.
//
// Adding node N (AddVoter):
//  1. if N is neither voter nor learner, ConfChangeAddLearnerNode: N starts following the log
//     as a raft learner (an observer that dialled the voters is accepted once it is one);
//  2. once N's replication progress on the leader reaches the commit index of the moment it
//     became a learner (it has caught up), ConfChangeAddNode promotes it;
//  3. the call returns once the promotion is applied.
//
// Removing node N (RemoveVoter) demotes it with ConfChangeAddLearnerNode: it keeps following
// the log as an observer, as Kafka's removed voters do. A leader that demotes itself steps
// down (raft's StepDownOnRemoval) once the change is applied, and another voter is elected.
//
// One voter change at a time, as Kafka's leader allows: a second AddRaftVoter or
// RemoveRaftVoter while one is in flight is refused with REQUEST_TIMED_OUT (Kafka's answer
// while a previous voter change is pending). etcd-raft also refuses a configuration change
// while another is unapplied (it turns it into an empty entry); a step whose change did not
// show in the applied configuration after voterRetryTicks is proposed again.
//
// A node whose log starts at index 0 (an observer or a joining controller) bootstraps the
// configuration it was told (controller.quorum.voters, or the voters a bootstrap server
// answered), which the log's entries then change. That is only right while no voter change
// was ever made, so every node snapshots (and compacts its log) right after applying a voter
// change: from then on the leader has no entries from index 1 to send, and a node starting
// from 0 gets a snapshot, with the configuration in it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	pb "go.etcd.io/raft/v3/raftpb"
)

// VoterEndpoint is where a voter added through AddRaftVoter (or formatted as an initial voter)
// listens for controller traffic, and its metadata directory's ID.
type VoterEndpoint struct {
	NodeID int32
	// DirectoryID is the directory.id of the voter's metadata log directory (zero: not
	// known, as for voters of controller.quorum.voters).
	DirectoryID [16]byte
	Listener    string // the controller listener's name, e.g. "CONTROLLER"
	Host        string
	Port        int32
}

// Addr is the endpoint's host:port.
func (e VoterEndpoint) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))) }

// voterContext is the JSON carried in a ConfChangeV2's Context: the endpoint of the node the
// change is about, and the addresses of static voters (controller.quorum.voters) that the log
// has no endpoint of yet, as the proposing leader knows them, so that a node added to a static
// quorum finds every voter in its own log after a restart.
type voterContext struct {
	Endpoint *VoterEndpoint  `json:"endpoint,omitempty"`
	Known    []VoterEndpoint `json:"known,omitempty"`
}

type voterOpKind uint8

const (
	opAddVoter voterOpKind = iota
	opRemoveVoter
	opUpdateVoter
)

func (k voterOpKind) String() string {
	return [...]string{"add", "remove", "update"}[k]
}

// voterRetryTicks is how long a voter change step waits for its configuration change to be
// applied before proposing it again.
const voterRetryTicks = 20

// voterOp is the one voter change in flight on the active controller. Owned by the driver.
type voterOp struct {
	ctx  context.Context
	done chan error // capacity 1
	kind voterOpKind
	ep   VoterEndpoint
	// proposedAt is the tick of the last proposal and proposed the change (0: none yet).
	proposedAt uint64
	proposed   pb.ConfChangeType
	// catchUpTo is the commit index a new learner must have replicated before promotion;
	// 0 until it is a learner.
	catchUpTo uint64
}

// AddVoter promotes node ep.NodeID to a voter of the metadata quorum (AddRaftVoter, API 80),
// adding it as a learner first if it is neither voter nor learner, and returns once the
// promotion is applied. Refusals are *kerr.Error values: NOT_CONTROLLER on a node that does
// not lead, DUPLICATE_VOTER, REQUEST_TIMED_OUT while another voter change is in flight;
// ctx's error when it ends first (the learner had not caught up, or the quorum is down).
func (c *Controller) AddVoter(ctx context.Context, ep VoterEndpoint) error {
	if ep.NodeID < 0 {
		return fail(kerr.InvalidRequest, "Invalid voter ID %d.", ep.NodeID).code
	}
	return c.runVoterOp(ctx, &voterOp{ep: ep})
}

// RemoveVoter demotes voter id (RemoveRaftVoter, API 81) to an observer and returns once that
// is applied. A non-zero directoryID must match the one recorded for the voter.
// VOTER_NOT_FOUND when id is not a voter (or the directory differs); INVALID_REQUEST for the
// last voter; otherwise as AddVoter.
func (c *Controller) RemoveVoter(ctx context.Context, id int32, directoryID [16]byte) error {
	return c.runVoterOp(ctx, &voterOp{kind: opRemoveVoter, ep: VoterEndpoint{NodeID: id, DirectoryID: directoryID}})
}

// UpdateVoter records a voter's new controller endpoint (UpdateRaftVoter, API 82).
// VOTER_NOT_FOUND when ep.NodeID is not a voter, NOT_CONTROLLER on a node that does not lead.
func (c *Controller) UpdateVoter(ctx context.Context, ep VoterEndpoint) error {
	// The endpoint travels as a configuration change that re-adds the voter: AddNode of a
	// voter changes nothing in raft's configuration, and applying it records the endpoint.
	return c.runVoterOp(ctx, &voterOp{kind: opUpdateVoter, ep: ep})
}

// VoterEndpoint returns the recorded endpoint of voter id, if any.
func (c *Controller) VoterEndpoint(id int32) (VoterEndpoint, bool) {
	ep, ok := c.Image().VoterEndpoints[id]
	return ep, ok
}

// VoterAddrs returns the controller listener addresses of the current voters that this node
// knows (recorded endpoints, else controller.quorum.voters), by node ID. Callers must not
// modify the map.
func (c *Controller) VoterAddrs() map[int32]string {
	if m := c.voterAddrs.Load(); m != nil {
		return *m
	}
	return nil
}

// runVoterOp hands op to the driver and waits for its outcome.
func (c *Controller) runVoterOp(ctx context.Context, op *voterOp) error {
	op.ctx, op.done = ctx, make(chan error, 1)
	var verr *validationError
	if err := c.query(ctx, func() { verr = c.startVoterOp(op) }); err != nil {
		return err
	}
	if verr != nil {
		return verr.code
	}
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		select {
		case err := <-op.done:
			return err
		default:
			return c.closedErr()
		}
	}
}

// startVoterOp checks op against the configuration and starts it. REQUIRES: driver goroutine.
func (c *Controller) startVoterOp(op *voterOp) *validationError {
	if !c.leaderReady {
		return errNotController
	}
	if c.voterOp != nil {
		return fail(kerr.RequestTimedOut, "Another voter change (node %d) is in progress; retry once it is done.", c.voterOp.ep.NodeID)
	}
	rid := raftID(op.ep.NodeID)
	isVoter := slices.Contains(c.confState.GetVoters(), rid)
	cur, recorded := c.Image().VoterEndpoints[op.ep.NodeID]
	switch op.kind {
	case opAddVoter:
		if isVoter {
			return fail(kerr.DuplicateVoter, "Node %d is already a voter.", op.ep.NodeID)
		}
	case opRemoveVoter, opUpdateVoter:
		if !isVoter {
			return fail(kerr.VoterNotFound, "Node %d is not a voter.", op.ep.NodeID)
		}
		if op.ep.DirectoryID != ([16]byte{}) && recorded && cur.DirectoryID != ([16]byte{}) && cur.DirectoryID != op.ep.DirectoryID {
			return fail(kerr.VoterNotFound, "Node %d is a voter with another directory ID.", op.ep.NodeID)
		}
	}
	switch op.kind {
	case opRemoveVoter:
		if len(c.confState.GetVoters()) == 1 {
			return fail(kerr.InvalidRequest, "Node %d is the only voter; the quorum cannot lose its last voter.", op.ep.NodeID)
		}
		if recorded {
			op.ep = cur
		}
	case opUpdateVoter:
		if recorded && cur == op.ep {
			return nil // nothing to change
		}
	}
	c.voterOp = op
	c.logger.Info("voter change started", "node", op.ep.NodeID, "change", op.kind.String())
	c.advanceVoterOp()
	return nil
}

// finishVoterOp completes the op in flight with err. REQUIRES: driver goroutine.
func (c *Controller) finishVoterOp(err error) {
	op := c.voterOp
	if op == nil {
		return
	}
	c.voterOp = nil
	op.done <- err
	if err != nil {
		c.logger.Warn("voter change failed", "node", op.ep.NodeID, "change", op.kind.String(), "err", err)
	} else {
		c.logger.Info("voter change done", "node", op.ep.NodeID, "change", op.kind.String())
	}
}

// advanceVoterOp moves the op in flight forward: it is called when it starts, on every tick
// and after every applied configuration change. REQUIRES: driver goroutine.
func (c *Controller) advanceVoterOp() {
	op := c.voterOp
	if op == nil {
		return
	}
	if err := op.ctx.Err(); err != nil {
		c.finishVoterOp(err)
		return
	}
	if !c.leaderReady {
		c.finishVoterOp(errNotController.code)
		return
	}
	rid := raftID(op.ep.NodeID)
	isVoter := slices.Contains(c.confState.GetVoters(), rid)
	isLearner := slices.Contains(c.confState.GetLearners(), rid)
	var want pb.ConfChangeType
	switch {
	case op.kind == opRemoveVoter && !isVoter:
		c.finishVoterOp(nil)
		return
	case op.kind == opRemoveVoter:
		want = pb.ConfChangeAddLearnerNode // demote: it goes on as an observer
	case op.kind == opUpdateVoter && c.endpointRecorded(op.ep):
		c.finishVoterOp(nil)
		return
	case op.kind == opUpdateVoter && !isVoter:
		c.finishVoterOp(fail(kerr.VoterNotFound, "Node %d is no longer a voter.", op.ep.NodeID).code)
		return
	case op.kind == opUpdateVoter:
		want = pb.ConfChangeAddNode // re-add with the new endpoint
	case isVoter:
		c.finishVoterOp(nil)
		return
	case !isLearner:
		want = pb.ConfChangeAddLearnerNode
	default:
		if op.catchUpTo == 0 {
			op.catchUpTo = c.node.BasicStatus().HardState.GetCommit()
		}
		pr, ok := c.node.Status().Progress[rid]
		if !ok || pr.Match < op.catchUpTo {
			return // not caught up yet; checked again on the next tick
		}
		want = pb.ConfChangeAddNode
	}
	if op.proposedAt != 0 && op.proposed == want && c.tickCount-op.proposedAt < voterRetryTicks {
		return // proposed; waiting for it to apply
	}
	ctxData, err := json.Marshal(voterContext{Endpoint: &op.ep, Known: c.unrecordedStaticVoters(op.ep.NodeID)})
	if err != nil {
		c.finishVoterOp(err)
		return
	}
	cc := pb.ConfChangeV2{
		Changes: []*pb.ConfChangeSingle{{Type: want.Enum(), NodeId: &rid}},
		Context: ctxData,
	}
	if err := c.node.ProposeConfChange(&cc); err != nil {
		c.logger.Debug("voter change proposal dropped", "node", op.ep.NodeID, "err", err)
	}
	op.proposedAt, op.proposed = max(c.tickCount, 1), want
	c.logger.Info("proposing a voter change", "node", op.ep.NodeID, "change", want.String())
}

// unrecordedStaticVoters are the voters of Config.VoterAddrs (but node) that the image has no
// endpoint of, sorted by node ID. REQUIRES: driver goroutine.
func (c *Controller) unrecordedStaticVoters(node int32) []VoterEndpoint {
	im := c.Image()
	var out []VoterEndpoint
	for id, addr := range c.cfg.VoterAddrs {
		if _, ok := im.VoterEndpoints[id]; ok || id == node || !slices.Contains(c.confState.GetVoters(), raftID(id)) {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil {
			continue
		}
		out = append(out, VoterEndpoint{NodeID: id, Host: host, Port: int32(p)})
	}
	slices.SortFunc(out, func(a, b VoterEndpoint) int { return int(a.NodeID) - int(b.NodeID) })
	return out
}

// endpointRecorded reports whether ep is the recorded endpoint of its voter.
func (c *Controller) endpointRecorded(ep VoterEndpoint) bool {
	cur, ok := c.Image().VoterEndpoints[ep.NodeID]
	return ok && cur == ep
}

// applyVoterContext records the endpoint a ConfChangeV2 carries in b's image: added for a
// voter or learner change of that node. Every node applies the same bytes the same way, so a
// context that does not decode is skipped (and logged) on all of them.
func (c *Controller) applyVoterContext(b *imageBuilder, cc *pb.ConfChangeV2, index uint64) {
	if len(cc.GetContext()) == 0 {
		return
	}
	var vc voterContext
	if err := json.Unmarshal(cc.GetContext(), &vc); err != nil || vc.Endpoint == nil {
		c.logger.Error("skipping undecodable voter change context", "index", index, "err", err)
		return
	}
	for _, k := range vc.Known {
		if _, ok := b.img.VoterEndpoints[k.NodeID]; !ok {
			eps := maps.Clone(b.img.VoterEndpoints)
			if eps == nil {
				eps = map[int32]VoterEndpoint{}
			}
			eps[k.NodeID] = k
			b.img.VoterEndpoints = eps
		}
	}
	for _, ch := range cc.GetChanges() {
		if kafkaID(ch.GetNodeId()) != vc.Endpoint.NodeID {
			continue
		}
		switch ch.GetType() {
		case pb.ConfChangeAddNode, pb.ConfChangeAddLearnerNode:
			eps := maps.Clone(b.img.VoterEndpoints)
			if eps == nil {
				eps = map[int32]VoterEndpoint{}
			}
			eps[vc.Endpoint.NodeID] = *vc.Endpoint
			b.img.VoterEndpoints = eps
		case pb.ConfChangeRemoveNode:
			eps := maps.Clone(b.img.VoterEndpoints)
			delete(eps, vc.Endpoint.NodeID)
			b.img.VoterEndpoints = eps
		}
	}
}

// configurationChanged runs after the raft configuration changed (applied conf change or
// installed snapshot): it publishes the members for the transport's handshakes and hands the
// transport the voters' addresses. REQUIRES: driver goroutine (or open).
func (c *Controller) configurationChanged(im *Image) {
	c.storeLearners()
	addrs := map[int32]string{}
	for _, rid := range c.confState.GetVoters() {
		id := kafkaID(rid)
		if ep, ok := im.VoterEndpoints[id]; ok && ep.Host != "" {
			addrs[id] = ep.Addr()
		} else if a, ok := c.cfg.VoterAddrs[id]; ok {
			addrs[id] = a
		}
	}
	prev := c.VoterAddrs()
	isVoter := slices.Contains(c.confState.GetVoters(), raftID(c.cfg.NodeID))
	if maps.Equal(prev, addrs) && prev != nil && isVoter == c.wasVoter {
		return
	}
	c.wasVoter = isVoter
	c.voterAddrs.Store(&addrs)
	if s, ok := c.transport.(interface {
		SetPeers(map[int32]string, bool)
	}); ok && len(addrs) > 0 {
		s.SetPeers(addrs, isVoter)
	}
}

// BootstrapVoters writes the first state of a new metadata directory dir, as `sluice format`
// (Kafka's kafka-storage format) does: a snapshot at raft index 1 whose configuration is the
// given voters and whose image holds clusterID and the voters' endpoints. Every initial voter
// is formatted with the same voters and cluster ID, so their logs agree from the start; a
// node formatted without voters (a controller that joins later, or a broker) needs no
// metadata directory. It refuses a directory that already holds metadata. records (sluice
// format's --add-scram credentials) are applied to that first image.
func BootstrapVoters(dir, clusterID string, voters []VoterEndpoint, records ...Record) error {
	if clusterID == "" {
		return fmt.Errorf("controller: bootstrap needs a cluster ID")
	}
	if len(voters) == 0 {
		return fmt.Errorf("controller: bootstrap needs at least one voter")
	}
	has, err := HasState(dir)
	if err != nil {
		return err
	}
	if has {
		return fmt.Errorf("controller: metadata directory %s is already formatted or in use", dir)
	}
	im := emptyImage()
	if len(records) > 0 {
		next, errs := applyRecords(im, 1, records)
		if len(errs) > 0 {
			return fmt.Errorf("controller: bootstrap records: %w", errors.Join(errs...))
		}
		im = next
	}
	im.ClusterID = clusterID
	im.Offset = 1
	im.VoterEndpoints = map[int32]VoterEndpoint{}
	cs := &pb.ConfState{}
	for _, v := range voters {
		if _, dup := im.VoterEndpoints[v.NodeID]; dup || v.NodeID < 0 {
			return fmt.Errorf("controller: voter %d listed twice or negative", v.NodeID)
		}
		im.VoterEndpoints[v.NodeID] = v
		cs.Voters = append(cs.Voters, raftID(v.NodeID))
	}
	slices.Sort(cs.Voters)
	snap := &pb.Snapshot{
		Data:     encodeImage(im),
		Metadata: &pb.SnapshotMetadata{ConfState: cs, Index: ptr(uint64(1)), Term: ptr(uint64(1))},
	}
	return writeBootstrapSnapshot(dir, snap)
}

// writeBootstrapSnapshot writes snap as the first snapshot file of dir (created if missing).
func writeBootstrapSnapshot(dir string, snap *pb.Snapshot) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	s := &diskStorage{dir: dir}
	return s.writeSnapshotFile(snap)
}
