// Package migrate adopts the log directory of a stopped Apache Kafka KRaft broker (3.x or 4.x)
// in place, for `sluice migrate --from-kafka` (cmd/sluice/migrate.go).
//
// Prepare reads and writes nothing but reads: the directories' meta.properties (cluster.id,
// node.id; a version 0 ZooKeeper-era directory is refused with what to do instead), Kafka's
// metadata log (__cluster_metadata-0: the newest <offset>-<epoch>.checkpoint snapshot, then
// the segments' batches from its offset; kraft.go decodes Kafka's metadata records from their
// ApiMessage frame, metalog.go replays them into a kafkaImage), and every partition directory
// (dirs.go: partition.metadata's topic ID against the metadata, both indexes of every segment
// present and whole, every segment's batch chain from header to header ending exactly at the
// file's end, CRCs of the segments above the recovery point or of all). It translates the
// image into sluice's metadata records (controller.TopicRecord with the same topic IDs,
// PartitionRecords on this node alone with a leader epoch above every epoch Kafka used,
// topic, broker and group ConfigRecords, client quotas, SCRAM credentials, ACLs and the next
// producer ID) and replays them on an empty image to be sure they apply. Whatever is wrong
// is a Problem; Apply refuses to run with any.
//
// Apply keeps every partition directory where it is, byte for byte: sluice's logstore reads
// Kafka's segments, indexes, leader-epoch-checkpoint and partition.metadata as they are, and
// Kafka's replication-offset-checkpoint (the same file and format). __consumer_offsets is
// adopted as it is: sluice's group coordinator reads Kafka's OffsetCommit and GroupMetadata
// records and skips the KIP-848 record types, so committed offsets survive. Apply writes
// what sluice keeps differently — the recovery point, log start and cleaner offset per
// partition directory instead of per log directory — removes Kafka's producer snapshots
// (derived state in another layout; sluice rebuilds it from the log), then the caller's bootstrap (the
// metadata records, written by the first controller with the cluster ID, as `sluice format
// --add-scram` does), and last renames __cluster_metadata-0 to KafkaMetadataBackup.
package migrate
