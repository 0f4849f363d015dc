package cluster

// AddRaftVoter, key 80: v0–v1 (KIP-853; v1 adds AckWhenCommitted, KIP-1186).
//
// Makes a node a voter of the metadata quorum (controller.AddVoter): a node that is not yet
// following the log is first added as a raft learner, and promoted once it has caught up; the
// answer comes once the promotion is committed and applied, whatever AckWhenCommitted says
// (Kafka may answer earlier when it is false; answering later is always correct). The new
// voter's endpoint is its listener named like this node's controller listener, else its
// first; none (or one without host or port) is INVALID_REQUEST. A node that never catches up
// (it is not running) stays a learner after the call timed out; raft drops what it sends it. Errors as Kafka's leader answers them: another voter change
// in flight or a learner that did not catch up within the request's timeout is
// REQUEST_TIMED_OUT, a voter already in the set DUPLICATE_VOTER, a node that does not lead
// NOT_CONTROLLER (the admin client sends these to the active controller), another cluster ID
// INCONSISTENT_CLUSTER_ID.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() {
	register(80, 0, 1, (*Server).handleAddRaftVoter)
	register(81, 0, 0, (*Server).handleRemoveRaftVoter)
	register(82, 0, 0, (*Server).handleUpdateRaftVoter)
}

type raftListener struct {
	name, host string
	port       uint16
}

// voterEndpoint picks the endpoint of a voter from the listeners it announced.
func (s *Server) voterEndpoint(id int32, dir [16]byte, listeners []raftListener) (controller.VoterEndpoint, bool) {
	if len(listeners) == 0 {
		return controller.VoterEndpoint{}, false
	}
	l := listeners[0]
	for _, c := range listeners {
		if c.name == s.cfg.ListenerName {
			l = c
		}
	}
	if l.host == "" || l.port == 0 {
		return controller.VoterEndpoint{}, false
	}
	return controller.VoterEndpoint{NodeID: id, DirectoryID: dir, Listener: l.name, Host: l.host, Port: int32(l.port)}, true
}

// checkClusterID is INCONSISTENT_CLUSTER_ID when a request names another cluster.
func (s *Server) checkClusterID(id *string) (int16, *string) {
	if own := s.cfg.Controller.Image().ClusterID; id != nil && *id != "" && own != "" && *id != own {
		return kerr.InconsistentClusterID.Code, strPtr("The request is for cluster " + *id + ", this is cluster " + own + ".")
	}
	return 0, nil
}

func (s *Server) handleAddRaftVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	if resp.ErrorCode, resp.ErrorMessage = s.checkClusterID(req.ClusterID); resp.ErrorCode != 0 {
		return resp, nil
	}
	var ls []raftListener
	for _, l := range req.Listeners {
		ls = append(ls, raftListener{l.Name, l.Host, l.Port})
	}
	ep, ok := s.voterEndpoint(req.VoterID, req.VoterDirectoryID, ls)
	if !ok {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, strPtr("AddRaftVoter names no usable listener (host and port) of the new voter.")
		return resp, nil
	}
	ctx, cancel := withTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	if err := s.cfg.Controller.AddVoter(ctx, ep); err != nil {
		resp.ErrorCode, resp.ErrorMessage = callError(err)
		return resp, nil
	}
	s.log.Info("added a voter to the metadata quorum", "voter", req.VoterID, "endpoint", ep.Addr())
	return resp, nil
}

func (s *Server) handleRemoveRaftVoter(ctx context.Context, req *kmsg.RemoveRaftVoterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	if resp.ErrorCode, resp.ErrorMessage = s.checkClusterID(req.ClusterID); resp.ErrorCode != 0 {
		return resp, nil
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	if err := s.cfg.Controller.RemoveVoter(ctx, req.VoterID, req.VoterDirectoryID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = callError(err)
		return resp, nil
	}
	s.log.Info("removed a voter from the metadata quorum", "voter", req.VoterID)
	return resp, nil
}

// UpdateRaftVoter, key 82: v0. A voter's new endpoint is recorded (controller.UpdateVoter);
// the KRaft version range is not checked (sluice has one). CurrentLeader carries the leader
// this node knows, with its controller address when known.
func (s *Server) handleUpdateRaftVoter(ctx context.Context, req *kmsg.UpdateRaftVoterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	im := s.cfg.Controller.Image()
	resp.CurrentLeader.LeaderID = im.ControllerID
	if host, port, ok := splitHostPort(s.voters()[im.ControllerID]); ok {
		resp.CurrentLeader.Host, resp.CurrentLeader.Port = host, port
	}
	if d, err := s.cfg.Controller.DescribeQuorum(ctx); err == nil {
		resp.CurrentLeader.LeaderEpoch = int32(d.LeaderEpoch)
	}
	if code, _ := s.checkClusterID(req.ClusterID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	var ls []raftListener
	for _, l := range req.Listeners {
		ls = append(ls, raftListener{l.Name, l.Host, l.Port})
	}
	ep, ok := s.voterEndpoint(req.VoterID, req.VoterDirectoryID, ls)
	if !ok {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	if err := s.cfg.Controller.UpdateVoter(ctx, ep); err != nil {
		resp.ErrorCode, _ = callError(err)
	}
	return resp, nil
}

// voters are the current voters' controller listener addresses: the applied configuration's
// (with voters added by AddRaftVoter), else ServerConfig.Voters.
func (s *Server) voters() map[int32]string {
	if m := s.cfg.Controller.VoterAddrs(); len(m) > 0 {
		return m
	}
	return s.cfg.Voters
}
