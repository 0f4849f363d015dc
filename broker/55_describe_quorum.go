package broker

// DescribeQuorum (55) v0–v2, AddRaftVoter (80) v0–v1 and RemoveRaftVoter (81) v0 on the broker
// listener. UpdateRaftVoter (82) is a controller's own request to the leader and, as in Kafka,
// is served on the controller listener only.
//
// As Kafka 4's brokers do for the admin client (`kafka-metadata-quorum --bootstrap-server`),
// the broker forwards these to the active controller's controller listener and returns its
// answer unchanged; the rules are cluster/55_describe_quorum.go's and
// cluster/80_add_raft_voter.go's. Without a QuorumForwarder (a Metadata that cannot reach the
// controller listener) the answer is NOT_CONTROLLER / UNKNOWN_SERVER_ERROR per API, and a
// forward that fails as a whole (no controller within the request's timeout) is
// REQUEST_TIMED_OUT or NOT_CONTROLLER.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

// QuorumForwarder is the optional part of a Metadata that sends quorum requests to the
// active controller (cluster.Link implements it).
type QuorumForwarder interface {
	ForwardQuorumRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

func init() {
	registerSync(55, 0, 2, (*Broker).forwardQuorum)
	registerSync(80, 0, 1, (*Broker).forwardQuorum)
	registerSync(81, 0, 0, (*Broker).forwardQuorum)
}

func (b *Broker) forwardQuorum(ctx context.Context, _ *wire.ConnInfo, req kmsg.Request) (kmsg.Response, error) {
	code := kerr.NotController.Code
	if f, ok := b.ctrl.(QuorumForwarder); ok {
		timeout := int32(0)
		if t, ok := req.(kmsg.TimeoutRequest); ok {
			timeout = t.Timeout()
		}
		fctx, cancel := adminTimeout(ctx, timeout)
		defer cancel()
		resp, err := f.ForwardQuorumRequest(fctx, req)
		if err == nil {
			return resp, nil
		}
		if errors.Is(err, context.DeadlineExceeded) {
			code = kerr.RequestTimedOut.Code
		}
	}
	resp := req.ResponseKind()
	msg := "The metadata quorum's active controller could not be reached."
	switch r := resp.(type) {
	case *kmsg.DescribeQuorumResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.AddRaftVoterResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.RemoveRaftVoterResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	}
	return resp, nil
}
