package controller

import (
	"cmp"
	"context"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
)

// QuorumDescription is this node's view of the metadata quorum: the data of Kafka's
// DescribeQuorum (API 55). Indexes are raft log indexes, inclusive: the metadata offset of an
// entry is its raft index (Image.Offset), so Kafka's exclusive high watermark is
// HighWatermark+1 and a voter's exclusive log end offset is MatchIndex+1.
type QuorumDescription struct {
	// LeaderID is the Kafka node ID of the leader this node knows of, -1 if none.
	LeaderID int32
	// LeaderEpoch is the raft term: it grows with every election, as Kafka's leader epoch.
	LeaderEpoch uint64
	// HighWatermark is the commit index known to this node.
	HighWatermark uint64
	// IsLeader is true when this node is the leader; only then are the voters' MatchIndex and
	// replication states known.
	IsLeader bool
	// Voters are the voters of the current configuration, sorted by node ID.
	Voters []VoterDescription
	// Observers are the raft learners of the current configuration (broker-only nodes that
	// follow the metadata log), sorted by node ID, described as voters are.
	Observers []VoterDescription
}

// VoterDescription is one voter's replication state as this node knows it.
type VoterDescription struct {
	NodeID int32
	// MatchIndex is the last index known to be in the voter's log (for the leader itself, its
	// last index); -1 when this node does not lead.
	MatchIndex int64
	// State is raft's replication state of the voter ("StateProbe", "StateReplicate",
	// "StateSnapshot"); empty when this node does not lead.
	State string
	// RecentActive: the leader heard from the voter within the last election timeout.
	RecentActive bool
	// LastContact is when this node last received a raft message from the voter (zero if
	// never since start; for this node itself, the time of the call). For a follower seen by
	// the leader this is the time of its last append or heartbeat response — the nearest
	// thing to Kafka's last fetch timestamp.
	LastContact time.Time
}

// DescribeQuorum returns this node's view of the metadata quorum. It is answered by the
// driver goroutine, so it waits behind a Ready being processed.
func (c *Controller) DescribeQuorum(ctx context.Context) (QuorumDescription, error) {
	var d QuorumDescription
	err := c.query(ctx, func() { d = c.describeQuorum() })
	return d, err
}

// describeQuorum builds the description. REQUIRES: driver goroutine.
func (c *Controller) describeQuorum() QuorumDescription {
	st := c.node.Status()
	d := QuorumDescription{
		LeaderID:      -1,
		LeaderEpoch:   st.HardState.GetTerm(),
		HighWatermark: st.HardState.GetCommit(),
		IsLeader:      st.RaftState == raft.StateLeader,
	}
	if st.Lead != raft.None {
		d.LeaderID = kafkaID(st.Lead)
	}
	now := time.Now()
	c.calls.mu.Lock()
	contacts := make(map[uint64]time.Time, len(c.calls.mu.lastContact))
	for id, t := range c.calls.mu.lastContact {
		contacts[id] = t
	}
	c.calls.mu.Unlock()
	describe := func(ids []uint64) []VoterDescription {
		var out []VoterDescription
		for _, id := range ids {
			v := VoterDescription{NodeID: kafkaID(id), MatchIndex: -1, LastContact: contacts[id]}
			if id == st.ID {
				v.LastContact = now
			}
			if pr, ok := st.Progress[id]; ok {
				v.MatchIndex = int64(pr.Match)
				v.State = pr.State.String()
				v.RecentActive = pr.RecentActive || id == st.ID
			}
			out = append(out, v)
		}
		slices.SortFunc(out, func(a, b VoterDescription) int { return cmp.Compare(a.NodeID, b.NodeID) })
		return out
	}
	d.Voters = describe(c.confState.GetVoters())
	d.Observers = describe(c.confState.GetLearners())
	return d
}
