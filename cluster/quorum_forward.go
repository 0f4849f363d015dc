package cluster

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ForwardQuorumRequest sends a request about the metadata quorum itself — DescribeQuorum
// (55), AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82) — to the active
// controller's controller listener and returns its answer, as Kafka 4's brokers forward what
// the admin client sends them with --bootstrap-server. It retries, with backoff until ctx
// ends, while no controller leads or the one asked answers that it does not (NOT_CONTROLLER,
// or NOT_LEADER_OR_FOLLOWER for DescribeQuorum). The answer is at req's version.
func (l *Link) ForwardQuorumRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	version := req.GetVersion()
	var resp kmsg.Response
	send := func(cl *kgo.Client) error {
		if cl == nil {
			return errRetry
		}
		req.SetVersion(version)
		r, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		if notActive(r) {
			return errRetry
		}
		resp = r
		return nil
	}
	err := l.withLeader(ctx, func() error { return send(l.client(l.cfg.NodeID)) }, send)
	if err != nil {
		return nil, err
	}
	resp.SetVersion(version)
	return resp, nil
}

// notActive reports whether resp says the node asked is not the quorum's leader.
func notActive(resp kmsg.Response) bool {
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode == kerr.NotController.Code
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode == kerr.NotController.Code
	case *kmsg.UpdateRaftVoterResponse:
		return r.ErrorCode == kerr.NotController.Code
	case *kmsg.DescribeQuorumResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotLeaderForPartition.Code || p.ErrorCode == kerr.NotController.Code {
					return true
				}
			}
		}
	}
	return false
}

// ServeQuorumRequest answers a quorum request (DescribeQuorum, AddRaftVoter, RemoveRaftVoter,
// UpdateRaftVoter) as this node's controller listener would: the broker listener of a node
// that is alone (no controller listener) answers them through it.
func (s *Server) ServeQuorumRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch req.Key() {
	case 55, 80, 81, 82:
	default:
		return nil, errors.New("cluster: not a quorum request")
	}
	return apis[req.Key()].handle(s, ctx, req)
}
