package controller

import "sync/atomic"

// electionStats count the partition leader changes this node applied from the metadata log
// since it started, for the metrics (every node applies the same log, so each counts the
// cluster's elections since its own start; Kafka counts them on the active controller).
type electionStats struct {
	elections, unclean atomic.Int64
}

// countElection counts pc if it gives its partition a new leader (not the leader -1 of a
// partition going offline); one that leaves the new leader recovering was unclean.
func (s *electionStats) countElection(w *Image, pc *PartitionChangeRecord) {
	t := w.TopicsByID[pc.TopicID]
	if t == nil || pc.Partition < 0 || int(pc.Partition) >= len(t.Partitions) || pc.Leader < 0 {
		return
	}
	prev := &t.Partitions[pc.Partition]
	if pc.Leader == prev.Leader && pc.LeaderEpoch == prev.LeaderEpoch {
		return
	}
	s.elections.Add(1)
	if pc.LeaderRecovering && !prev.LeaderRecovering {
		s.unclean.Add(1)
	}
}

// LeaderElections returns the leader elections and, of them, the unclean ones this node has
// applied from the metadata log since it started (mirrors kafka.controller:type=ControllerStats,
// name=LeaderElectionRateAndTimeMs and UncleanLeaderElectionsPerSec).
func (c *Controller) LeaderElections() (all, unclean int64) {
	return c.elections.elections.Load(), c.elections.unclean.Load()
}
