// Package ops serves sluice's operator HTTP endpoints (sluice --http-addr): /healthz (the
// process is up), /readyz (the node serves clients: its listeners are open and its broker is
// registered, unfenced and has applied the metadata up to its registration; 503 with the
// reason otherwise) and /metrics (Prometheus text format, github.com/prometheus/client_golang).
//
// Metrics are of two kinds. Request counts and latencies are recorded as they happen: wire
// calls Server.ObserveRequest once per answered request (wire.Config.ObserveRequest), into a
// histogram per API and version whose observers are looked up once per (key, version) and
// cached, so the hot path is one atomic load and one histogram observation. Everything else is
// computed at scrape time by a Collector from state the broker already keeps
// (broker.PartitionStats, broker.CommittedOffsets, the metadata image, the controller's
// DescribeQuorum for the raft term, commit index and replicas' lag): nothing is counted on
// the produce or fetch path for it. Every metric's HELP names the Kafka JMX metric (or the
// kafka-exporter series) it mirrors.
//
// Retention until consumed (retention.consumed.groups, sluice's own) is reported by each
// partition's leader as of its last retention pass: per named group its committed offset and
// the bytes of closed segments it holds back (broker.ConsumedRetentionHolds).
//
// Replication lag is reported by both ends: a partition's leader, per follower, its lag in
// records behind the leader's log end, the time since it last caught up and Kafka's isCaughtUp
// (broker.ReplicaLags); a follower, per partition it fetches, the leader's HW minus its log end
// after the last fetch, Kafka's FetcherLagMetrics ConsumerLag (broker.FetcherLags).
//
// Consumer group lag is reported by the node that coordinates the group, for the partitions
// that node leads (lag = the partition's high watermark minus the committed offset, as
// kafka-consumer-groups.sh computes it against the log end visible to consumers). On a
// single node that is every group and partition; on a cluster a group's lag on partitions
// led elsewhere is not reported (its committed offset is).
package ops
