package ops

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"sluice/controller"
	"sluice/logstore"
)

// groupOffsetsTimeout bounds how long a scrape waits for the coordinator's committed offsets.
const groupOffsetsTimeout = 2 * time.Second

var (
	tpLabels  = []string{"topic", "partition"}
	gtpLabels = []string{"group", "topic", "partition"}
	// tpReplicaLabels name a follower (replica: its node ID) of a partition.
	tpReplicaLabels = []string{"topic", "partition", "replica"}

	descLogSize = prometheus.NewDesc("sluice_partition_log_size_bytes",
		"Bytes of the partition replica's log on disk (mirrors kafka.log:type=Log,name=Size).", tpLabels, nil)
	descSegments = prometheus.NewDesc("sluice_partition_log_segments",
		"Segments in the partition replica's log (mirrors kafka.log:type=Log,name=NumLogSegments).", tpLabels, nil)
	descLogStart = prometheus.NewDesc("sluice_partition_log_start_offset",
		"First offset of the partition replica's log (mirrors kafka.log:type=Log,name=LogStartOffset).", tpLabels, nil)
	descLogEnd = prometheus.NewDesc("sluice_partition_log_end_offset",
		"Log end offset of the partition replica (mirrors kafka.log:type=Log,name=LogEndOffset).", tpLabels, nil)
	descHW = prometheus.NewDesc("sluice_partition_high_watermark",
		"High watermark of the partition replica: the offset consumers read up to (Kafka exposes it through ListOffsets, kafka-exporter as kafka_topic_partition_current_offset).", tpLabels, nil)
	descLeader = prometheus.NewDesc("sluice_partition_leader",
		"1 when this node leads the partition, 0 when it follows (the per-partition view of kafka.server:type=ReplicaManager,name=LeaderCount).", tpLabels, nil)
	descISR = prometheus.NewDesc("sluice_partition_in_sync_replicas",
		"In-sync replicas of a partition this node leads (kafka-exporter's kafka_topic_partition_in_sync_replica).", tpLabels, nil)
	descPartitions = prometheus.NewDesc("sluice_partitions",
		"Partition replicas hosted on this node (mirrors kafka.server:type=ReplicaManager,name=PartitionCount).", nil, nil)
	descLeaders = prometheus.NewDesc("sluice_leader_partitions",
		"Partitions this node leads (mirrors kafka.server:type=ReplicaManager,name=LeaderCount).", nil, nil)
	descUnderReplicated = prometheus.NewDesc("sluice_under_replicated_partitions",
		"Partitions this node leads whose ISR is smaller than their replica set (mirrors kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions).", nil, nil)
	descUnderMinISR = prometheus.NewDesc("sluice_under_min_isr_partitions",
		"Partitions this node leads whose ISR is smaller than min.insync.replicas (mirrors kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount).", nil, nil)
	descActiveController = prometheus.NewDesc("sluice_active_controller",
		"1 when this node is the active controller (mirrors kafka.controller:type=KafkaController,name=ActiveControllerCount).", nil, nil)
	descMetadataOffset = prometheus.NewDesc("sluice_metadata_applied_offset",
		"Offset of the newest metadata image this node knows (mirrors kafka.server:type=broker-metadata-metrics,name=last-applied-record-offset).", nil, nil)
	descBrokerApplied = prometheus.NewDesc("sluice_broker_metadata_applied_offset",
		"Offset of the newest metadata image the broker has acted on (opened and led partitions by).", nil, nil)
	descBrokers = prometheus.NewDesc("sluice_cluster_brokers",
		"Registered brokers in the metadata, by fenced state (mirrors kafka.controller:type=KafkaController,name=ActiveBrokerCount and FencedBrokerCount).", []string{"state"}, nil)
	descCommitted = prometheus.NewDesc("sluice_consumer_group_committed_offset",
		"Committed offset of a group this node coordinates (kafka-exporter's kafka_consumergroup_current_offset).", gtpLabels, nil)
	descLag = prometheus.NewDesc("sluice_consumer_group_lag",
		"High watermark minus the committed offset, for groups this node coordinates on partitions it leads (kafka-exporter's kafka_consumergroup_lag; kafka-consumer-groups.sh's LAG).", gtpLabels, nil)
	descConnections = prometheus.NewDesc("sluice_listener_connections",
		"Open client connections per listener (mirrors kafka.server:type=socket-server-metrics,listener=<name>,name=connection-count).", []string{"listener"}, nil)
	descRaftTerm = prometheus.NewDesc("sluice_raft_term",
		"Raft term of the metadata quorum as this node knows it (mirrors kafka.server:type=raft-metrics,name=current-epoch).", nil, nil)
	descRaftCommit = prometheus.NewDesc("sluice_raft_commit_index",
		"Commit index of the metadata log known to this node (mirrors kafka.server:type=raft-metrics,name=high-watermark).", nil, nil)
	descRaftLeader = prometheus.NewDesc("sluice_raft_leader_id",
		"Node ID of the metadata quorum's leader, -1 if none (mirrors kafka.server:type=raft-metrics,name=current-leader).", nil, nil)
	descRaftVoterLag = prometheus.NewDesc("sluice_raft_replica_lag_entries",
		"On the quorum leader, how far each voter's and observer's log is behind the commit index (the Lag column of kafka-metadata-quorum describe --replication).", []string{"node", "role"}, nil)
	descBytesIn = prometheus.NewDesc("sluice_partition_bytes_in_total",
		"Bytes of client batches appended to the partition as its leader, since it was opened here (mirrors kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec).", tpLabels, nil)
	descMessagesIn = prometheus.NewDesc("sluice_partition_messages_in_total",
		"Records of client batches appended to the partition as its leader (mirrors kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec).", tpLabels, nil)
	descBytesOut = prometheus.NewDesc("sluice_partition_bytes_out_total",
		"Record bytes sent to consumers from the partition (mirrors kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec, without replication).", tpLabels, nil)
	descReplicationBytesOut = prometheus.NewDesc("sluice_partition_replication_bytes_out_total",
		"Record bytes sent to follower replicas from the partition (mirrors kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec).", tpLabels, nil)
	descISRShrinks = prometheus.NewDesc("sluice_partition_isr_shrinks_total",
		"Committed ISR changes of a partition this node leads that removed replicas (mirrors kafka.server:type=ReplicaManager,name=IsrShrinksPerSec).", tpLabels, nil)
	descISRExpands = prometheus.NewDesc("sluice_partition_isr_expands_total",
		"Committed ISR changes of a partition this node leads that added replicas (mirrors kafka.server:type=ReplicaManager,name=IsrExpandsPerSec).", tpLabels, nil)
	descPurgatory = prometheus.NewDesc("sluice_purgatory_size",
		"Delayed operations waiting on this node: long-poll fetches and acks=all produces (mirrors kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize for Produce and Fetch together).", nil, nil)
	descConsumedHeld = prometheus.NewDesc("sluice_retention_consumed_held_bytes",
		"sluice's own, no Kafka equivalent: on the leader of a partition whose topic sets retention.consumed.groups, the bytes of closed segments below the high watermark that the group has not committed past, kept because of it (as of the last retention pass).", gtpLabels, nil)
	descConsumedCommitted = prometheus.NewDesc("sluice_retention_consumed_group_offset",
		"sluice's own: the committed offset of a group named by retention.consumed.groups, as the partition's leader read it at the last retention pass; -1 when the group has none or its coordinator could not be asked.", gtpLabels, nil)
	descElections = prometheus.NewDesc("sluice_leader_elections_total",
		"Partition leader elections (a new leader or leader epoch; not a partition going offline) this node applied from the metadata log since it started; every node applies the same log (mirrors kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs).", nil, nil)
	descUncleanElections = prometheus.NewDesc("sluice_unclean_leader_elections_total",
		"Of sluice_leader_elections_total, the unclean ones (an out-of-sync replica elected; mirrors kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec).", nil, nil)
	descThrottled = prometheus.NewDesc("sluice_quota_throttled_responses_total",
		"Responses a client quota throttled (producer_byte_rate, consumer_byte_rate), by request type (mirrors the throttle-time metrics of kafka.server:type=Produce and type=Fetch).", []string{"request"}, nil)
	descThrottledSeconds = prometheus.NewDesc("sluice_quota_throttle_seconds_total",
		"Total throttle time client quotas imposed, by request type (mirrors kafka.network:type=RequestMetrics,name=ThrottleTimeMs).", []string{"request"}, nil)
	descFlush = prometheus.NewDesc("sluice_log_flush_seconds",
		"Log fsyncs of this process: the group-committed data fsyncs of flush.messages and the fsyncs of rolled segments (mirrors kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs).", nil, nil)
	descReplicaLag = prometheus.NewDesc("sluice_partition_replica_lag_records",
		"On the leader, how many records each follower is behind the leader's log end as of its last fetch (the leader's side of kafka.server:type=FetcherLagMetrics,name=ConsumerLag; the input of Kafka's ISR checks).", tpReplicaLabels, nil)
	descReplicaCaughtUp = prometheus.NewDesc("sluice_partition_replica_caught_up",
		"On the leader, 1 when a follower is caught up as Kafka's Replica.isCaughtUp decides (at the leader's log end, or caught up within replica.lag.time.max.ms), 0 otherwise: an ISR member at 0 is about to be dropped from the ISR.", tpReplicaLabels, nil)
	descReplicaSinceCaughtUp = prometheus.NewDesc("sluice_partition_replica_time_since_caught_up_seconds",
		"On the leader, seconds since a follower last had everything the leader had at one of its fetches (Kafka's lastCaughtUpTimeMs, compared with replica.lag.time.max.ms); -1 when it has not since this node became leader.", tpReplicaLabels, nil)
	descFetcherLag = prometheus.NewDesc("sluice_replica_fetcher_lag_records",
		"On a follower, the leader's high watermark minus this replica's log end after its last fetch (mirrors kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-*,topic=*,partition=*); -1 before the first fetch.", []string{"topic", "partition", "leader"}, nil)
	descFetcherMaxLag = prometheus.NewDesc("sluice_replica_fetcher_max_lag_records",
		"On a follower, the largest sluice_replica_fetcher_lag_records over the partitions it follows (mirrors kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica).", nil, nil)
	descScrapeErrors = prometheus.NewDesc("sluice_consumer_group_scrape_errors",
		"1 when this scrape could not read the committed offsets (coordinator loading or timed out).", nil, nil)
)

// brokerCollector computes the partition, cluster and group metrics at scrape time.
type brokerCollector struct{ s *Server }

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLogSize, descSegments, descLogStart, descLogEnd, descHW, descLeader, descISR,
		descPartitions, descLeaders, descUnderReplicated, descUnderMinISR, descActiveController, descMetadataOffset,
		descBrokerApplied, descBrokers, descCommitted, descLag, descScrapeErrors, descConnections,
		descRaftTerm, descRaftCommit, descRaftLeader, descRaftVoterLag, descBytesIn, descMessagesIn, descBytesOut,
		descReplicationBytesOut, descISRShrinks, descISRExpands, descPurgatory, descConsumedHeld, descConsumedCommitted,
		descElections, descUncleanElections, descFlush, descThrottled, descThrottledSeconds,
		descReplicaLag, descReplicaCaughtUp, descReplicaSinceCaughtUp, descFetcherLag, descFetcherMaxLag} {
		ch <- d
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	im := c.s.cfg.Image()
	active := 0.0
	if im.ControllerID == c.s.cfg.NodeID {
		active = 1
	}
	gauge(descActiveController, active)
	gauge(descMetadataOffset, float64(im.Offset))
	var fenced, unfenced float64
	for _, bi := range im.Brokers {
		if bi.Fenced {
			fenced++
		} else {
			unfenced++
		}
	}
	gauge(descBrokers, unfenced, "active")
	gauge(descBrokers, fenced, "fenced")
	if c.s.cfg.Elections != nil {
		all, unclean := c.s.cfg.Elections()
		ch <- prometheus.MustNewConstMetric(descElections, prometheus.CounterValue, float64(all))
		ch <- prometheus.MustNewConstMetric(descUncleanElections, prometheus.CounterValue, float64(unclean))
	}
	cumulative, flushes, flushSeconds := logstore.FlushLatencies()
	buckets := make(map[float64]uint64, len(cumulative))
	for i, bound := range logstore.FlushBuckets {
		buckets[bound] = cumulative[i]
	}
	ch <- prometheus.MustNewConstHistogram(descFlush, flushes, flushSeconds, buckets)
	if c.s.cfg.Quorum != nil {
		ctx, cancel := context.WithTimeout(context.Background(), groupOffsetsTimeout)
		q, err := c.s.cfg.Quorum(ctx)
		cancel()
		if err == nil {
			gauge(descRaftTerm, float64(q.LeaderEpoch))
			gauge(descRaftCommit, float64(q.HighWatermark))
			gauge(descRaftLeader, float64(q.LeaderID))
			if q.IsLeader {
				for role, replicas := range map[string][]controller.VoterDescription{"voter": q.Voters, "observer": q.Observers} {
					for _, v := range replicas {
						gauge(descRaftVoterLag, float64(max(int64(q.HighWatermark)-v.MatchIndex, 0)), strconv.Itoa(int(v.NodeID)), role)
					}
				}
			}
		}
	}
	if ls := c.s.listeners.Load(); ls != nil {
		for _, l := range *ls {
			gauge(descConnections, float64(l.Connections()), l.Name)
		}
	}

	b := c.s.broker.Load()
	if b == nil {
		return
	}
	gauge(descBrokerApplied, float64(b.AppliedMetadataOffset()))
	gauge(descPurgatory, float64(b.PurgatorySize()))
	produced, fetched, producedFor, fetchedFor := b.QuotaThrottles()
	ch <- prometheus.MustNewConstMetric(descThrottled, prometheus.CounterValue, float64(produced), "produce")
	ch <- prometheus.MustNewConstMetric(descThrottled, prometheus.CounterValue, float64(fetched), "fetch")
	ch <- prometheus.MustNewConstMetric(descThrottledSeconds, prometheus.CounterValue, producedFor.Seconds(), "produce")
	ch <- prometheus.MustNewConstMetric(descThrottledSeconds, prometheus.CounterValue, fetchedFor.Seconds(), "fetch")
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	type tp struct {
		topic     string
		partition int32
	}
	hw := map[tp]int64{}
	var leaders, underReplicated, underMinISR float64
	stats := b.PartitionStats()
	for _, p := range stats {
		part := strconv.Itoa(int(p.Partition))
		gauge(descLogSize, float64(p.SizeBytes), p.Topic, part)
		gauge(descSegments, float64(p.Segments), p.Topic, part)
		gauge(descLogStart, float64(p.LogStart), p.Topic, part)
		gauge(descLogEnd, float64(p.LogEnd), p.Topic, part)
		gauge(descHW, float64(p.HighWatermark), p.Topic, part)
		counter(descBytesIn, p.BytesIn, p.Topic, part)
		counter(descMessagesIn, p.MessagesIn, p.Topic, part)
		counter(descBytesOut, p.BytesOut, p.Topic, part)
		counter(descReplicationBytesOut, p.ReplicationBytesOut, p.Topic, part)
		counter(descISRShrinks, p.ISRShrinks, p.Topic, part)
		counter(descISRExpands, p.ISRExpands, p.Topic, part)
		if p.Leader {
			gauge(descLeader, 1, p.Topic, part)
			gauge(descISR, float64(p.ISR), p.Topic, part)
			leaders++
			hw[tp{p.Topic, p.Partition}] = p.HighWatermark
			if p.ISR < p.Replicas {
				underReplicated++
			}
			if int32(p.ISR) < p.MinInsync {
				underMinISR++
			}
		} else {
			gauge(descLeader, 0, p.Topic, part)
		}
	}
	gauge(descPartitions, float64(len(stats)))
	gauge(descLeaders, leaders)
	gauge(descUnderReplicated, underReplicated)
	gauge(descUnderMinISR, underMinISR)
	for _, l := range b.ReplicaLags() {
		part, replica := strconv.Itoa(int(l.Partition)), strconv.Itoa(int(l.Replica))
		gauge(descReplicaLag, float64(l.LagRecords), l.Topic, part, replica)
		caughtUp := 0.0
		if l.CaughtUp {
			caughtUp = 1
		}
		gauge(descReplicaCaughtUp, caughtUp, l.Topic, part, replica)
		gauge(descReplicaSinceCaughtUp, l.SinceCaughtUpSeconds, l.Topic, part, replica)
	}
	maxFetcherLag := int64(0)
	for _, l := range b.FetcherLags() {
		gauge(descFetcherLag, float64(l.LagRecords), l.Topic, strconv.Itoa(int(l.Partition)), strconv.Itoa(int(l.Leader)))
		maxFetcherLag = max(maxFetcherLag, l.LagRecords)
	}
	gauge(descFetcherMaxLag, float64(maxFetcherLag))
	for _, h := range b.ConsumedRetentionHolds() {
		part := strconv.Itoa(int(h.Partition))
		gauge(descConsumedHeld, float64(h.HeldBytes), h.Group, h.Topic, part)
		gauge(descConsumedCommitted, float64(h.Committed), h.Group, h.Topic, part)
	}

	ctx, cancel := context.WithTimeout(context.Background(), groupOffsetsTimeout)
	defer cancel()
	offsets, err := b.CommittedOffsets(ctx)
	if err != nil {
		gauge(descScrapeErrors, 1)
		return
	}
	gauge(descScrapeErrors, 0)
	for _, o := range offsets {
		part := strconv.Itoa(int(o.Partition))
		gauge(descCommitted, float64(o.Committed), o.Group, o.Topic, part)
		if h, ok := hw[tp{o.Topic, o.Partition}]; ok {
			gauge(descLag, float64(max(h-o.Committed, 0)), o.Group, o.Topic, part)
		}
	}
}
