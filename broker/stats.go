package broker

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds read-only accessors for the operator's HTTP endpoints (package ops): what a
// scrape of /metrics or a /readyz probe reads. None of them changes state; each reads the
// state the broker already keeps (partition snapshots, the applied image, the coordinator).

// PartitionStat is one hosted partition replica as a scrape sees it.
type PartitionStat struct {
	Topic     string
	Partition int32
	// Leader: this node leads the partition (HW, ISR and the under-replicated checks are the
	// leader's to report, as in Kafka).
	Leader                          bool
	LeaderEpoch                     int32
	LogStart, HighWatermark, LogEnd int64
	SizeBytes                       int64
	Segments                        int
	// ISR is the in-sync replica count (leader only); Replicas the assigned replica count.
	ISR, Replicas int
	MinInsync     int32
	// Counters since the partition was opened on this node (partition_counters.go).
	BytesIn, MessagesIn, BytesOut, ReplicationBytesOut, ISRShrinks, ISRExpands int64
}

// PartitionStats returns a snapshot of every partition replica hosted here, sorted by topic
// and partition.
func (b *Broker) PartitionStats() []PartitionStat {
	b.mu.RLock()
	parts := make([]*Partition, 0, len(b.mu.partitions))
	for _, p := range b.mu.partitions {
		parts = append(parts, p)
	}
	im := b.mu.appliedImage
	b.mu.RUnlock()
	out := make([]PartitionStat, 0, len(parts))
	for _, p := range parts {
		s := p.replica.Snapshot()
		st := PartitionStat{
			Topic: p.tp.topic, Partition: p.tp.partition, Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
			LogStart: s.LogStart, HighWatermark: s.HighWatermark, LogEnd: s.LogEnd,
			SizeBytes: p.log.Size(), Segments: p.log.NumSegments(),
			BytesIn: p.counters.bytesIn.Load(), MessagesIn: p.counters.messagesIn.Load(),
			BytesOut: p.counters.bytesOut.Load(), ReplicationBytesOut: p.counters.replicationBytesOut.Load(),
			ISRShrinks: p.counters.isrShrinks.Load(), ISRExpands: p.counters.isrExpands.Load(),
		}
		if settings := p.settings.Load(); settings != nil {
			st.MinInsync = settings.MinInsyncReplicas
		}
		if s.Leader {
			isr, _ := p.replica.ISR()
			st.ISR = len(isr)
		}
		if im != nil {
			if t := im.Topics[p.tp.topic]; t != nil && int(p.tp.partition) < len(t.Partitions) {
				st.Replicas = len(t.Partitions[p.tp.partition].Replicas)
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b PartitionStat) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// QuotaThrottles returns, for produce and for fetch, how many responses were throttled by a
// client quota and for how long in all.
func (b *Broker) QuotaThrottles() (produced, fetched int64, producedFor, fetchedFor time.Duration) {
	q := b.quotas
	return q.throttled[0].Load(), q.throttled[1].Load(), time.Duration(q.throttledFor[0].Load()), time.Duration(q.throttledFor[1].Load())
}

// PurgatorySize is how many delayed operations (long-poll fetches, acks=all produces,
// coordinator appends) wait now.
func (b *Broker) PurgatorySize() int { return b.purgatory.Len() }

// AppliedMetadataOffset is the offset of the newest metadata image this broker has acted on
// (opened and led its partitions by); -1 before the first.
func (b *Broker) AppliedMetadataOffset() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.mu.appliedImage == nil {
		return -1
	}
	return b.mu.appliedImage.Offset
}

// GroupOffset is one committed offset of a group this node coordinates.
type GroupOffset struct {
	Group     string
	Topic     string
	Partition int32
	Committed int64
}

// CommittedOffsets returns the committed offsets of every group whose coordinator shard is
// loaded on this node, read through the coordinator's own ListGroups and OffsetFetch.
func (b *Broker) CommittedOffsets(ctx context.Context) ([]GroupOffset, error) {
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	lresp, err := b.coord.ListGroups(ctx, lreq)
	if err != nil {
		return nil, err
	}
	if len(lresp.Groups) == 0 {
		return nil, nil
	}
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 8
	for _, g := range lresp.Groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g.Group
		freq.Groups = append(freq.Groups, rg) // nil Topics: every committed partition
	}
	fresp, err := b.coord.OffsetFetch(ctx, freq)
	if err != nil {
		return nil, err
	}
	var out []GroupOffset
	for _, g := range fresp.Groups {
		if g.ErrorCode != 0 {
			continue
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Offset < 0 {
					continue
				}
				out = append(out, GroupOffset{Group: g.Group, Topic: t.Topic, Partition: p.Partition, Committed: p.Offset})
			}
		}
	}
	return out, nil
}
