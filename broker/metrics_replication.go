package broker

import (
	"cmp"
	"slices"
	"strings"
)

// Replication lag as the operator's /metrics reads it (package ops), from state the leader's
// replicas and the follower's fetchers already keep: nothing is counted on the fetch path.

// ReplicaLagStat is one follower of a partition this node leads, as the leader sees it
// (replica.FollowerLag).
type ReplicaLagStat struct {
	Topic     string
	Partition int32
	Replica   int32
	// LagRecords is the leader's log end minus the follower's last fetch offset.
	LagRecords int64
	// SinceCaughtUpSeconds is how long ago the follower last had everything the leader had
	// at one of its fetches; -1 when it has not since this node became leader.
	SinceCaughtUpSeconds float64
	// CaughtUp is Kafka's isCaughtUp (within replica.lag.time.max.ms).
	CaughtUp bool
	// LogStart is the follower's log start as it last reported it (-1 unknown).
	LogStart int64
}

// ReplicaLags returns, for every partition this node leads, each follower's lag, sorted by
// topic, partition and replica.
func (b *Broker) ReplicaLags() []ReplicaLagStat {
	b.mu.RLock()
	parts := make([]*Partition, 0, len(b.mu.partitions))
	for _, p := range b.mu.partitions {
		parts = append(parts, p)
	}
	b.mu.RUnlock()
	now := b.clock.Now()
	var out []ReplicaLagStat
	for _, p := range parts {
		for _, l := range p.replica.FollowerLags(now) {
			since := -1.0
			if l.SinceCaughtUp >= 0 {
				since = l.SinceCaughtUp.Seconds()
			}
			out = append(out, ReplicaLagStat{Topic: p.tp.topic, Partition: p.tp.partition, Replica: l.ID,
				LagRecords: l.LagRecords, SinceCaughtUpSeconds: since, CaughtUp: l.CaughtUp, LogStart: l.LogStart})
		}
	}
	slices.SortFunc(out, func(a, c ReplicaLagStat) int {
		return cmp.Or(strings.Compare(a.Topic, c.Topic), cmp.Compare(a.Partition, c.Partition), cmp.Compare(a.Replica, c.Replica))
	})
	return out
}

// FetcherLagStat is one partition this node follows, as its replica fetcher sees it.
type FetcherLagStat struct {
	Topic     string
	Partition int32
	Leader    int32
	// LagRecords is the leader's high watermark minus this replica's log end after the
	// last fetch applied (Kafka's FetcherLagMetrics ConsumerLag); -1 before the first.
	LagRecords int64
}

// FetcherLags returns every partition the replica fetchers follow, sorted by topic and
// partition.
func (b *Broker) FetcherLags() []FetcherLagStat {
	if b.fetchers == nil {
		return nil
	}
	return b.fetchers.lags()
}

func (m *replicaFetchers) lags() []FetcherLagStat {
	m.mu.Lock()
	var out []FetcherLagStat
	for key, f := range m.mu.fetchers {
		f.mu.Lock()
		for tp, st := range f.mu.parts {
			out = append(out, FetcherLagStat{Topic: tp.topic, Partition: tp.partition, Leader: key.leader, LagRecords: st.lag.Load()})
		}
		f.mu.Unlock()
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, c FetcherLagStat) int {
		return cmp.Or(strings.Compare(a.Topic, c.Topic), cmp.Compare(a.Partition, c.Partition))
	})
	return out
}
