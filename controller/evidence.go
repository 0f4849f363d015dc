package controller

import (
	"context"
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Fencing on certain evidence. Waiting out broker.session.timeout.ms is the only safe rule
// for a broker that merely went quiet: it may be slow (a long GC pause, a stalled disk, a
// SIGSTOP), and fencing it would move leadership away from a live leader. But a broker whose
// process is gone need not be waited for, and some evidence of that is certain:
//
//   - A new incarnation of it registers after the old one's session expired (RegisterBroker
//     replaces the old one in the same entry). While the old session is live a new incarnation
//     is refused (DUPLICATE_BROKER_REGISTRATION: it may be a second process with the same
//     node.id), and the refusal is a reason to probe the old one now, as below.
//   - Its heartbeats stopped and its listeners refuse connections (ECONNREFUSED: no socket
//     listens on that address any more), though this node saw those same listeners accept a
//     connection from this incarnation before. A live sluice broker keeps its listeners open
//     from before it is unfenced until after its controlled shutdown; a paused or overloaded
//     one still has its listening socket, and the kernel accepts (or, with the backlog full,
//     drops) connections for it rather than refusing them. Only accepted-then-refused counts:
//     a listener this node never reached (not yet open, advertised under a name this host
//     cannot reach) proves nothing, nor does a timeout or an unreachable network.
//
// So every node probes (Config.Prober dials; this file decides) each unfenced broker
// incarnation's endpoints until one has accepted a connection: its baseline. The active
// controller probes a broker again when there is reason to suspect it — the connection that
// carried its heartbeats closed (BrokerConnectionClosed, reported by the controller
// listener), it has been silent for a third of the session timeout, or this node just became
// the active controller (the dead broker may have been the previous one) — and fences it at
// once when every endpoint of its baseline now refuses and no heartbeat arrived while the
// probe ran. Anything else leaves the broker to the session timeout. The one way a live
// broker can be fenced early is a network path that actively rejects connections between
// this controller and it (a firewall answering with RSTs); Kafka would fence such a broker
// after the session timeout too, since its heartbeats cannot arrive either.

// The same evidence shortens the quorum's own failover. A follower waits out the election
// timeout before it campaigns, and with CheckQuorum it refuses votes while it heard from its
// leader within that timeout (the leader lease), so that a slow leader is not deposed. But
// when the transport's connection to the leader's controller listener, which accepted this
// process's connections before, is refused on redial (ReportPeerGone), the leader's process
// is gone. Then the surviving voter with the lowest ID campaigns at once as a leadership
// transfer does (etcd-raft's MsgTimeoutNow: no pre-vote, and voters grant it inside their
// lease); the others, seeing the same evidence, wait for its vote request. This is only about
// when an election starts: raft's safety never depends on timing, a vote is still granted only
// to a log at least as up to date, and if the chosen voter's log is behind, the others elect
// one after the ordinary timeout.

// ProbeOutcome is what one connection attempt to a broker endpoint showed.
type ProbeOutcome uint8

const (
	// ProbeInconclusive: a timeout, an unreachable network, a name that does not resolve —
	// nothing certain about the broker.
	ProbeInconclusive ProbeOutcome = iota
	// ProbeAccepted: a listener accepted the connection.
	ProbeAccepted
	// ProbeRefused: the connection was refused (ECONNREFUSED): nothing listens there.
	ProbeRefused
)

// Prober dials brokers' endpoints for the controller.
type Prober interface {
	// Probe tries one connection to each endpoint and calls done once, from any goroutine,
	// with the outcome of each, in order. It must not block the caller (the driver).
	Probe(endpoints []Endpoint, done func([]ProbeOutcome))
}

// Probe pacing, in driver ticks (100 ms by default).
const (
	// baselineRetryTicks is how often an incarnation without a baseline is probed again:
	// often, since until it has one it can only be fenced by its session.
	baselineRetryTicks = 2
	// minSuspectTicks bounds how often a silent broker is probed.
	minSuspectTicks = 5
)

// brokerLiveness is what this node has seen of one broker incarnation's listeners.
// Driver-owned.
type brokerLiveness struct {
	epoch     int64
	endpoints []Endpoint
	// reachable[i]: endpoints[i] accepted a connection from this node during this epoch.
	reachable []bool
	probing   bool
	lastProbe uint64 // tick of the last probe's start
	// heartbeats counts the heartbeats this node (as active controller) handled for the
	// incarnation; a probe's refusals count only if none arrived while it ran.
	heartbeats uint64
}

// probeResult is a finished probe handed back to the driver.
type probeResult struct {
	id       int32
	epoch    int64
	outcomes []ProbeOutcome
	// baseline and heartbeats are the entry's reachable set and heartbeat count when the
	// probe started.
	baseline   []bool
	heartbeats uint64
}

// BrokerConnectionClosed tells the active controller that a connection on which broker id
// (at epoch) heartbeated has closed: a reason to probe it now. It never blocks.
func (c *Controller) BrokerConnectionClosed(id int32, epoch int64) {
	c.calls.mu.Lock()
	if c.calls.mu.connClosed == nil {
		c.calls.mu.connClosed = map[int32]int64{}
	}
	c.calls.mu.connClosed[id] = epoch
	c.calls.mu.Unlock()
	c.calls.wake()
}

// livenessOf returns the entry of broker b's current epoch, making or resetting it.
// REQUIRES: driver goroutine.
func (c *Controller) livenessOf(b *BrokerInfo) *brokerLiveness {
	l := c.liveness[b.ID]
	if l == nil || l.epoch != b.Epoch {
		l = &brokerLiveness{epoch: b.Epoch, endpoints: slices.Clone(b.Endpoints), reachable: make([]bool, len(b.Endpoints))}
		c.liveness[b.ID] = l
	}
	return l
}

// noteHeartbeat counts a heartbeat of broker b. REQUIRES: driver goroutine.
func (c *Controller) noteHeartbeat(b *BrokerInfo) {
	if c.cfg.Prober != nil {
		c.livenessOf(b).heartbeats++
	}
}

// tickLiveness starts the probes that are due: baselines on every node, suspicion of silent
// brokers and of every broker in a new term on the active controller. REQUIRES: driver
// goroutine.
func (c *Controller) tickLiveness() {
	if c.cfg.Prober == nil {
		return
	}
	im := c.image.Load()
	for id := range c.liveness {
		if b := im.Brokers[id]; b == nil || b.Fenced {
			delete(c.liveness, id)
		}
	}
	newTerm := c.leaderReady && c.livenessTerm != c.leaderTerm
	if newTerm {
		c.livenessTerm = c.leaderTerm
	}
	suspectTicks := max(c.sessionTicks/3, minSuspectTicks)
	for _, id := range sortedBrokerIDs(im) {
		b := im.Brokers[id]
		if b.Fenced || id == c.cfg.NodeID || len(b.Endpoints) == 0 {
			continue // this node's own broker is alive while this code runs
		}
		l := c.livenessOf(b)
		if l.probing {
			continue
		}
		since := c.tickCount - l.lastProbe
		hasBaseline := slices.Contains(l.reachable, true)
		switch {
		case !hasBaseline && (l.lastProbe == 0 || since >= baselineRetryTicks):
		case hasBaseline && newTerm:
		case hasBaseline && c.leaderReady && since >= suspectTicks && c.silentFor(id, b.Epoch) >= suspectTicks:
		default:
			continue
		}
		c.startProbe(id, l)
	}
}

// silentFor is how many ticks ago the active controller last heard broker id at epoch.
func (c *Controller) silentFor(id int32, epoch int64) uint64 {
	s := c.sessions[id]
	if s == nil || s.epoch != epoch {
		return 0
	}
	return c.tickCount - s.lastHeartbeat
}

// suspect probes broker id (at epoch) now, if it has a baseline and no probe is running.
// REQUIRES: driver goroutine.
func (c *Controller) suspect(id int32, epoch int64) {
	b := c.image.Load().Brokers[id]
	if c.cfg.Prober == nil || !c.leaderReady || b == nil || b.Fenced || b.Epoch != epoch || id == c.cfg.NodeID {
		return
	}
	l := c.livenessOf(b)
	if l.probing || !slices.Contains(l.reachable, true) {
		return
	}
	c.startProbe(id, l)
}

// startProbe dials l's endpoints. REQUIRES: driver goroutine.
func (c *Controller) startProbe(id int32, l *brokerLiveness) {
	l.probing, l.lastProbe = true, max(c.tickCount, 1)
	r := &probeResult{id: id, epoch: l.epoch, baseline: slices.Clone(l.reachable), heartbeats: l.heartbeats}
	c.cfg.Prober.Probe(slices.Clone(l.endpoints), func(outcomes []ProbeOutcome) {
		r.outcomes = outcomes
		c.calls.mu.Lock()
		c.calls.mu.probes = append(c.calls.mu.probes, r)
		c.calls.mu.Unlock()
		c.calls.wake()
	})
}

// probeDone records a probe's outcome and, on the active controller, fences the broker if it
// is certainly gone (see the top of this file). REQUIRES: driver goroutine.
func (c *Controller) probeDone(r *probeResult) {
	l := c.liveness[r.id]
	if l == nil || l.epoch != r.epoch {
		return
	}
	l.probing = false
	refused, baseline := true, false
	for i, o := range r.outcomes {
		if i >= len(l.reachable) {
			break
		}
		if o == ProbeAccepted {
			l.reachable[i] = true
		}
		if r.baseline[i] {
			baseline = true
			refused = refused && o == ProbeRefused
		}
	}
	if !baseline || !refused || !c.leaderReady || l.heartbeats != r.heartbeats {
		return
	}
	b := c.working.Brokers[r.id]
	if b == nil || b.Fenced || b.Epoch != r.epoch {
		return
	}
	c.fenceBrokers([]int32{r.id}, "fencing broker: its heartbeats stopped and its listeners refuse connections")
}

// livenessCalls handles reported connection closures and finished probes. REQUIRES: driver
// goroutine, with the reports taken from calls.
func (c *Controller) livenessCalls(closed map[int32]int64, probes []*probeResult) {
	for _, r := range probes {
		c.probeDone(r)
	}
	for _, id := range sortedKeys(closed) {
		c.suspect(id, closed[id])
	}
}

func sortedBrokerIDs(im *Image) []int32 {
	ids := make([]int32, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func sortedKeys[V any](m map[int32]V) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// fenceBrokers fences the given active brokers in one proposal, moving their leadership and
// ISR memberships as removeBrokerRecords does. REQUIRES: driver goroutine.
func (c *Controller) fenceBrokers(ids []int32, why string) {
	slices.Sort(ids)
	r := &request{ctx: context.Background(), done: make(chan error, 1), nonAtomic: true, plan: func(w *Image) []Record {
		var recs []Record
		for _, id := range ids {
			b := w.Brokers[id]
			if b == nil || b.Fenced {
				continue
			}
			c.logger.Info(why, "broker", id, "epoch", b.Epoch)
			// Later removals in the batch must see earlier ones, so plan each on top.
			step := append(removeBrokerRecords(w, id), &BrokerChangeRecord{BrokerID: id, BrokerEpoch: b.Epoch, Fenced: ptr(true)})
			w, _ = applyRecords(w, w.Offset, step)
			recs = append(recs, step...)
		}
		return recs
	}}
	c.handleRequest(r)
}

// ReportPeerGone tells the controller that voter nodeID's controller listener, which accepted
// this transport's connections before, now refuses them: its process is gone. It never
// blocks; reports are coalesced per voter.
func (c *Controller) ReportPeerGone(nodeID int32) {
	c.calls.report(raftID(nodeID), func(p *pendingReport) { p.gone = true })
}

// peerGone starts an election at once if the voter that is gone led this follower's term and
// this node is the surviving voter with the lowest ID (see the top of this file).
// REQUIRES: driver goroutine.
func (c *Controller) peerGone(id uint64) {
	st := c.node.BasicStatus()
	if st.RaftState != raft.StateFollower || st.Lead != id || c.forcedCampaignTerm == st.HardState.GetTerm() {
		return
	}
	var first uint64
	for _, v := range c.confState.GetVoters() {
		if v != id && (first == 0 || v < first) {
			first = v
		}
	}
	if first != raftID(c.cfg.NodeID) {
		return
	}
	c.forcedCampaignTerm = st.HardState.GetTerm()
	c.logger.Info("the metadata leader's process is gone (its controller listener refuses connections); campaigning now",
		"leader", kafkaID(id), "term", st.HardState.GetTerm())
	// Term 0 marks a local message; stepFollower answers MsgTimeoutNow with a transfer campaign.
	m := &pb.Message{Type: pb.MsgTimeoutNow.Enum(), From: proto.Uint64(id), To: proto.Uint64(raftID(c.cfg.NodeID)), Term: proto.Uint64(0)}
	if err := c.node.Step(m); err != nil {
		c.logger.Debug("raft refused the campaign", "err", err)
	}
}
