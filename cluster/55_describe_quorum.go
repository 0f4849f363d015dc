package cluster

// DescribeQuorum, key 55: v0–v2.
//
// The metadata partition __cluster_metadata-0 only (others: UNKNOWN_TOPIC_OR_PARTITION). The
// leader answers its view (controller.DescribeQuorum); a node that does not lead answers
// NOT_LEADER_OR_FOLLOWER with the leader it knows, as Kafka's KafkaRaftClient does, and the
// admin client retries with the leader. Offsets are exclusive, Kafka's way: the high
// watermark is the commit index plus one, a voter's log end offset its match index plus one.
// v1 LastFetchTimestamp is the last raft message received from the voter, and
// LastCaughtUpTimestamp the same for a voter at the leader's high watermark (else -1). v2
// directory IDs are those recorded by AddRaftVoter or `sluice format` (zero for voters of
// controller.quorum.voters), and Nodes carry each current voter's controller listener. Observers
// are the broker-only nodes, which follow the log as raft learners, described as voters are
// (Kafka lists the brokers fetching the log; they have no controller listener to put in Nodes).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(55, 0, 2, (*Server).handleDescribeQuorum) }

const metadataTopic = "__cluster_metadata"

func (s *Server) handleDescribeQuorum(ctx context.Context, req *kmsg.DescribeQuorumRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	d, err := s.cfg.Controller.DescribeQuorum(ctx)
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case rt.Topic != metadataTopic || rp.Partition != 0:
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				p.ErrorCode, p.ErrorMessage = callError(err)
			case !d.IsLeader:
				p.ErrorCode = kerr.NotLeaderForPartition.Code
				p.LeaderID, p.LeaderEpoch = d.LeaderID, int32(d.LeaderEpoch)
			default:
				p.LeaderID, p.LeaderEpoch = d.LeaderID, int32(d.LeaderEpoch)
				p.HighWatermark = int64(d.HighWatermark) + 1
				for _, v := range d.Voters {
					p.CurrentVoters = append(p.CurrentVoters, s.replicaState(v, d.HighWatermark))
				}
				for _, o := range d.Observers {
					p.Observers = append(p.Observers, s.replicaState(o, d.HighWatermark))
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if req.Version >= 2 {
		voters := s.voters()
		for _, id := range sortedIDs(voters) {
			host, port, ok := splitHostPort(voters[id])
			if !ok {
				continue
			}
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = id
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(port)
			if ep, ok := s.cfg.Controller.VoterEndpoint(id); ok && ep.Listener != "" {
				l.Name = ep.Listener
			}
			n.Listeners = append(n.Listeners, l)
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp, nil
}

// replicaState is one voter's or observer's row, with Kafka's exclusive offsets.
func (s *Server) replicaState(v controller.VoterDescription, highWatermark uint64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	rs.ReplicaID = v.NodeID
	if ep, ok := s.cfg.Controller.VoterEndpoint(v.NodeID); ok {
		rs.ReplicaDirectoryID = ep.DirectoryID
	}
	rs.LogEndOffset = v.MatchIndex + 1
	rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = -1, -1
	if !v.LastContact.IsZero() {
		rs.LastFetchTimestamp = v.LastContact.UnixMilli()
		if v.MatchIndex >= int64(highWatermark) {
			rs.LastCaughtUpTimestamp = rs.LastFetchTimestamp
		}
	}
	return rs
}
