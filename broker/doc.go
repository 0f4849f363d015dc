// Package broker serves the Kafka APIs over sluice's partitions.
//
// It owns the partition replicas hosted on this node (each a replica.Replica: the log, its
// offsets and its replication state; see package broker/replica), reads cluster metadata from the controller's immutable image, and
// turns each Kafka request into work on those replicas. One file per Kafka API, named by key
// (00_produce.go, 01_fetch.go, ...); each opens with the versions it serves and registers itself
// in the API table (registry.go), which is also what ApiVersions advertises, so the versions
// advertised are exactly the versions implemented.
//
// Two error channels, as CONVENTIONS.md says: a Kafka-level problem becomes an error code in the
// response, per partition where the protocol has one (mapped from storage errors in errors.go);
// a Go error from a handler closes the connection.
//
// Requests that wait — a long-poll fetch, an acks=all produce — do not block the connection's
// handler: they are delayed operations in a replica.Purgatory keyed by their partitions, and
// answer when a change of those partitions' offsets wakes them, or when their timeout fires.
//
// # Replication
//
// For each partition of which this node is a replica, reconcile applies the image's leadership
// (Replica.BecomeLeader / BecomeFollower) and then places the partition with the replica
// fetchers (fetcher.go): a follower's partition is fetched from its leader by one of
// num.replica.fetchers fetchers for that leader, which first truncates a divergent tail
// (OffsetForLeaderEpoch) and then appends the leader's batches unchanged; a leader's, or one
// without a leader, is fetched by nobody. The leader serves those fetches (follower_fetch.go):
// reads up to its log end, the fetch offset as the follower's log end moving the HW (and
// completing acks=all produces), DivergingEpoch for a follower whose last epoch it does not
// hold. ISR changes the replicas propose go to the controller's AlterPartition
// (controllerAlterPartition in partition.go); a refusal leaves the committed ISR in force.
//
// # The log directory
//
// Besides one directory per partition ("<topic>-<partition>", with Kafka's partition.metadata
// naming its topic ID) the log directory holds Kafka's meta.properties (cluster.id, node.id,
// directory.id, version=1), Kafka's replication-offset-checkpoint (every hosted partition's high
// watermark, written periodically and at clean shutdown; package replica) and sluice's
// metadata-offset-checkpoint (the metadata offset up to
// which this node created or deleted partition directories, written before it does). At start
// the node refuses a log directory of another cluster or node, one holding a cluster's data
// while the metadata log is missing (CheckLogDir), and a metadata log older than the
// checkpoint (rewound). Damage never deletes data: only a partition.metadata that parses to a
// different topic ID marks a directory as a deleted topic's leftover (renamed
// "<dir>.<id>-delete", then removed, as Kafka does); an unreadable one takes that partition
// offline (offline.go: KAFKA_STORAGE_ERROR for every partition API, listed among the offline
// replicas in Metadata, logged with the file, files untouched; opened again in the background,
// and its directory removed only when its topic is deleted). Partitions are opened and
// recovered by num.recovery.threads.per.data.dir workers.
package broker
