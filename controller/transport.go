package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Transport carries raft messages from this voter to the others. Raft node IDs are Kafka node
// IDs plus one (raft reserves 0 for "none"); see raftID.
//
// Send must not block the driver: a transport queues messages (bounded) and drops what it
// cannot deliver; raft retransmits. Send runs in the driver goroutine and owns msgs until it
// returns: a transport that keeps a message past Send must copy or encode it first. Messages
// arriving from other voters are handed to Controller.Step.
//
// A transport should tell the controller what it learns about delivery:
// Controller.ReportUnreachable when a voter cannot be reached (so raft stops streaming to it
// and probes instead), and Controller.ReportSnapshot after every MsgSnap it was given — raft
// sends nothing more to a voter with a snapshot outstanding until it hears the outcome.
//
// If the Transport has a method Attach(*Controller), the controller calls it once, before its
// driver starts: that is how a network transport learns where to deliver what it receives.
type Transport interface {
	Send(msgs []*pb.Message)
}

// noTransport is the transport of a cluster whose only voter is this node: raft never
// addresses a message to anyone else, so anything it is asked to send is a configuration
// error, logged and dropped.
type noTransport struct{ logger *slog.Logger }

func (t noTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		t.logger.Warn("dropping raft message: no transport configured", "type", m.GetType().String(), "to", kafkaID(m.GetTo()))
	}
}

// raftID maps a Kafka node ID (which may be 0) to a raft node ID (which may not).
func raftID(nodeID int32) uint64 { return uint64(nodeID) + 1 }

// kafkaID is the inverse of raftID; raft's "none" (0) maps to -1.
func kafkaID(id uint64) int32 { return int32(id) - 1 }

// Step hands a raft message received from another voter to this node. It blocks while the
// driver's inbound queue is full.
func (c *Controller) Step(ctx context.Context, m *pb.Message) error {
	if m == nil {
		return fmt.Errorf("controller: nil raft message")
	}
	c.calls.contacted(m.GetFrom())
	select {
	case <-c.done:
		return ErrClosed
	default:
	}
	select {
	case c.inbound <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
}

// ReportUnreachable tells raft that the voter nodeID could not be reached (a dial failed, a
// connection broke, its queue overflowed). It never blocks; reports are coalesced per voter.
func (c *Controller) ReportUnreachable(nodeID int32) {
	c.calls.report(raftID(nodeID), func(p *pendingReport) { p.unreachable = true })
}

// ReportSnapshot tells raft whether the MsgSnap it asked to send to nodeID was sent (failed
// == false) or lost. It never blocks; reports are coalesced per voter, the last one winning.
func (c *Controller) ReportSnapshot(nodeID int32, failed bool) {
	status := raft.SnapshotFinish
	if failed {
		status = raft.SnapshotFailure
	}
	c.calls.report(raftID(nodeID), func(p *pendingReport) { p.snapshot = status })
}

// maxDriverQueries bounds queries (DescribeQuorum) waiting for the driver.
const maxDriverQueries = 64

var errDriverBusy = errors.New("controller: too many queries waiting for the driver")

// driverCalls hands work from other goroutines to the driver without ever blocking them: a
// report or query is recorded under mu and the driver is woken through signal (capacity 1),
// the bounded-queue-with-signal pattern. Reports are per voter, so their number is bounded by
// the voters; queries by maxDriverQueries.
type driverCalls struct {
	signal chan struct{} // made by open; a send that finds it full is coalesced
	mu     struct {
		sync.Mutex
		reports map[uint64]*pendingReport // by raft ID
		queries []func()
		// lastContact is when a raft message from each voter (by raft ID) last arrived.
		lastContact map[uint64]time.Time
		// connClosed (broker ID -> epoch) and probes are evidence.go's reports; bounded by
		// the brokers (one entry per broker; at most one probe in flight per broker).
		connClosed map[int32]int64
		probes     []*probeResult
	}
}

type pendingReport struct {
	unreachable bool
	gone        bool                // ReportPeerGone
	snapshot    raft.SnapshotStatus // 0 = none
}

func (d *driverCalls) wake() {
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

func (d *driverCalls) report(id uint64, set func(*pendingReport)) {
	d.mu.Lock()
	if d.mu.reports == nil {
		d.mu.reports = map[uint64]*pendingReport{}
	}
	p := d.mu.reports[id]
	if p == nil {
		p = &pendingReport{}
		d.mu.reports[id] = p
	}
	set(p)
	d.mu.Unlock()
	d.wake()
}

func (d *driverCalls) contacted(id uint64) {
	now := time.Now()
	d.mu.Lock()
	if d.mu.lastContact == nil {
		d.mu.lastContact = map[uint64]time.Time{}
	}
	d.mu.lastContact[id] = now
	d.mu.Unlock()
}

// query runs fn in the driver and waits for it to finish.
func (c *Controller) query(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	c.calls.mu.Lock()
	if len(c.calls.mu.queries) >= maxDriverQueries {
		c.calls.mu.Unlock()
		return errDriverBusy
	}
	c.calls.mu.queries = append(c.calls.mu.queries, func() { fn(); close(done) })
	c.calls.mu.Unlock()
	c.calls.wake()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		select {
		case <-done:
			return nil
		default:
			return ErrClosed
		}
	}
}

// runDriverCalls applies pending reports to raft and runs pending queries. REQUIRES: driver
// goroutine.
func (c *Controller) runDriverCalls() {
	c.calls.mu.Lock()
	reports, queries := c.calls.mu.reports, c.calls.mu.queries
	c.calls.mu.reports, c.calls.mu.queries = nil, nil
	closed, probes := c.calls.mu.connClosed, c.calls.mu.probes
	c.calls.mu.connClosed, c.calls.mu.probes = nil, nil
	c.calls.mu.Unlock()
	c.livenessCalls(closed, probes)
	for id, p := range reports {
		if p.unreachable {
			c.node.ReportUnreachable(id)
		}
		if p.snapshot != 0 {
			c.node.ReportSnapshot(id, p.snapshot)
		}
		if p.gone {
			c.peerGone(id)
		}
	}
	for _, fn := range queries {
		fn()
	}
}

// raftLogger adapts slog to raft's Logger. Raft's info messages (elections, term changes) go
// to debug: the controller logs the events operators care about itself.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)              { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Info(v ...any)               { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...any)    { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...)) }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...)) }
func (r raftLogger) Fatal(v ...any)              { r.l.Error(fmt.Sprint(v...)); panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(f string, v ...any)   { r.Fatal(fmt.Sprintf(f, v...)) }
func (r raftLogger) Panic(v ...any)              { r.l.Error(fmt.Sprint(v...)); panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any)   { r.Panic(fmt.Sprintf(f, v...)) }
