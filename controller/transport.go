package controller

import (
	"context"
	"fmt"
	"log/slog"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Transport carries raft messages from this voter to the others. Raft node IDs are Kafka node
// IDs plus one (raft reserves 0 for "none"); see raftID.
//
// Send must not block the driver: a transport queues messages (bounded) and drops what it
// cannot deliver; raft retransmits. Messages arriving from other voters are handed to
// Controller.Step.
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
