package controller

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"sluice/wire"
)

// saslTransport makes a transport authenticate its raft connections as the voters of a
// SASL_PLAINTEXT controller listener do (cmd/sluice wires the same two hooks): PLAIN, with
// the user "controller" as the listener's only one.
func saslTransport(mech sasl.Mechanism) func(*NetTransportConfig) {
	listener := &wire.SASLConfig{Mechanisms: []string{"PLAIN"},
		PlainUsers: map[string]string{"controller": "raft-secret", "intruder": "intruder-secret"}}
	return func(c *NetTransportConfig) {
		c.Authenticate = func(ctx context.Context, rw io.ReadWriter, addr string) error {
			return wire.AuthenticateSASLStream(ctx, rw, mech, addr)
		}
		c.AuthenticateInbound = func(r io.Reader, w io.Writer) (string, time.Time, error) {
			s, err := listener.ServeSASLStream(r, w)
			return s.Principal, s.Expires, err
		}
		// As cmd/sluice with an authorizer: only the nodes' principal holds CLUSTER_ACTION.
		c.AuthorizeInbound = func(_ net.Conn, principal string) error {
			if principal != "User:controller" {
				return errors.New(principal + " lacks CLUSTER_ACTION")
			}
			return nil
		}
	}
}

// TestNetSASLQuorum: voters that authenticate their raft connections with SASL elect a
// leader, commit, and elect another once the leader is killed; a peer that sends the hello
// but no SASL exchange, or the wrong password, is refused before any ack, and the quorum is
// unaffected.
func TestNetSASLQuorum(t *testing.T) {
	ctx := testCtx(t)
	good := plain.Auth{User: "controller", Pass: "raft-secret"}.AsMechanism()
	q := newNetQuorumWith(t, saslTransport(good), 10*time.Millisecond, 1024, 1, 2, 3)
	q.propose(func(c *Controller) error { return registerLeader(ctx, c) })
	q.propose(createTopic(ctx, "before"))
	waitConverged(t, q.running(), "before")

	lead := q.leader()
	target := others(q.running(), lead)[0]
	addr := q.addrs[target.id]
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism // nil: the hello, then a raft frame without authenticating
	}{
		{"no SASL", nil},
		{"wrong password", plain.Auth{User: "controller", Pass: "guess"}.AsMechanism()},
		{"authenticated but not authorized", plain.Auth{User: "intruder", Pass: "intruder-secret"}.AsMechanism()},
	} {
		before := target.tr.Stats().Refused
		conn := rawConn(t, addr)
		if _, err := conn.Write(appendHello(nil, hello{from: lead.id, to: target.id})); err != nil {
			t.Fatal(err)
		}
		if tc.mech == nil {
			frame, err := encodeMessageFrame(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(raftID(lead.id)),
				To: proto.Uint64(raftID(target.id)), Term: proto.Uint64(1)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(frame); err != nil {
				t.Fatal(err)
			}
			if got := expectClosed(t, conn, tc.name); len(got) != 0 {
				t.Fatalf("%s: answered %q", tc.name, got)
			}
		} else if tc.name == "authenticated but not authorized" {
			if err := wire.AuthenticateSASLStream(ctx, conn, tc.mech, addr); err != nil {
				t.Fatalf("%s: the intruder's credentials were refused: %v", tc.name, err)
			}
			if got := expectClosed(t, conn, tc.name); len(got) != 0 {
				t.Fatalf("%s: an ack to a peer without CLUSTER_ACTION: %q", tc.name, got)
			}
		} else {
			err := wire.AuthenticateSASLStream(ctx, conn, tc.mech, addr)
			if !errors.Is(err, wire.ErrStreamAuthentication) {
				t.Fatalf("%s: %v, want a refused authentication", tc.name, err)
			}
			if got := expectClosed(t, conn, tc.name); len(got) != 0 {
				t.Fatalf("%s: an ack after a refused authentication: %q", tc.name, got)
			}
		}
		eventually(t, tc.name+" counted as refused", func() bool { return target.tr.Stats().Refused > before })
	}

	q.stop(lead.id)
	q.propose(createTopic(ctx, "after"))
	if l := q.leader(); l.id == lead.id {
		t.Fatal("the killed leader still leads")
	}
	waitConverged(t, q.running(), "after")
	q.start(lead.id)
	waitConverged(t, q.running(), "after")
	for _, n := range q.running() {
		if st := n.tr.Stats(); n.id != target.id && st.Refused != 0 {
			t.Errorf("voter %d refused %d connections of authenticated peers", n.id, st.Refused)
		}
	}
}
