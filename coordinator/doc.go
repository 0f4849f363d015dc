// Package coordinator is sluice's group coordinator (consumer groups and
// committed offsets, state in the compacted topic __consumer_offsets) and
// transaction coordinator (TxnCoordinator, state in __transaction_state),
// exactly as Kafka 4.x serves them. Both are state machines on one shard
// runtime (runtime.go: an event loop over one internal-topic partition,
// timers, writes committed by the high watermark, replay of whole batches).
//
// # Shape
//
// __consumer_offsets has offsets.topic.num.partitions partitions (Config.
// NumPartitions, default 50). Group G belongs to partition
// PartitionFor(G) = Utils.abs(G.hashCode()) % NumPartitions, computed with
// Java's String.hashCode so that every broker and FindCoordinator agree with
// Kafka. For each such partition this broker leads, the coordinator runs one
// shard: a single-threaded state machine holding the partition's groups and
// offsets. Every event — a request, a timer (session expiry, rebalance
// delays, offset retention), an append completion — runs serially on the
// shard; a handler decides, returns records to append, and its response is
// sent only once those records are committed in the partition (below the
// high watermark). Loading a shard replays its partition from the start.
// Time comes only from Config.Clock, so tests drive timers explicitly.
//
// Records use Kafka's own formats (kmsg.OffsetCommitKey/Value with key
// version 1, kmsg.GroupMetadataKey/Value with key version 2, value versions
// 3; the KIP-848 records 3, 5, 6, 7 and 8 — ConsumerGroupMetadata,
// MemberMetadata, TargetAssignmentMetadata, TargetAssignmentMember,
// CurrentMemberAssignment — encoded here in Kafka's layout since kmsg lacks
// them; the KIP-1071 streams group records 17 and 19–23 — StreamsGroupMetadata,
// MemberMetadata, TargetAssignmentMetadata, TargetAssignmentMember,
// CurrentMemberAssignment, Topology — likewise, in streams_records.go), so a
// log written by Kafka can be loaded and vice versa. A nil value
// is a tombstone (offset deleted / member or group deleted); the topic must
// be compacted (cleanup.policy=compact), which is the broker's and
// logstore's business. Record types this package does not serve (share
// groups, key versions 9-16) are skipped on load.
//
// Groups are classic (JoinGroup/SyncGroup/Heartbeat/LeaveGroup), KIP-848
// consumer groups (ConsumerGroupHeartbeat) or KIP-1071 streams groups
// (StreamsGroupHeartbeat; streams.go); an empty group of one kind turns into
// another on a join of that protocol, a non-empty one refuses
// (INCONSISTENT_GROUP_PROTOCOL / GROUP_ID_NOT_FOUND). Offsets belong
// to the group ID whatever its kind. A consumer group member's OffsetCommit
// carries its member epoch; as in Kafka 4.3+ (KIP-1251), an older epoch
// than the member's — a commit that raced the heartbeat advancing it — is
// accepted for partitions the member has held since that epoch (each held
// partition remembers the epoch it was given at), and the whole commit is
// STALE_MEMBER_EPOCH otherwise.
//
// # What the broker provides
//
// PartitionLog, one per __consumer_offsets partition led here:
//
//   - Append(batch, done): batch is one uncompressed v2 record batch (base
//     offset 0, producer ID -1, CRC set) built by this package; append it as
//     a produce with acks=all would be, and call done(lastOffset, nil) when it
//     is committed (HW past it) or done(-1, err) when it failed (for example
//     leadership lost). done must be called exactly once per Append, in
//     append order, on any goroutine (it may even be called inside Append).
//     Append runs on the shard's goroutine: it must return once the batch is
//     in the local log, not wait for the commit (that is what done is for).
//   - Replay(fn): call fn(batch) for every stored batch from the log start
//     to the current end, in order, control batches included (the shard
//     decodes and decompresses them; a group shard resolves transactional
//     offset commits at their markers).
//
// TopicMetadata (optional, Config.Topics): topic name ↔ ID, partition
// counts and the topic list, from the metadata image. With it, OffsetCommit
// answers UNKNOWN_TOPIC_OR_PARTITION for unknown topics/partitions (as
// Kafka's KafkaApis does), v10 OffsetCommit/OffsetFetch (topic IDs) work, and
// KIP-848 groups can assign partitions (without it they assign nothing).
//
// # Wiring (the broker's API files call these)
//
//	became leader of __consumer_offsets-p   → go c.Load(p, log)   (blocks for the replay)
//	lost leadership / partition deleted      → c.Unload(p)
//	shutdown                                 → c.Close()
//	FindCoordinator (10), key type 0         → node leading __consumer_offsets-c.PartitionFor(key)
//	OffsetCommit (8)       → c.OffsetCommit(ctx, req)
//	OffsetFetch (9)        → c.OffsetFetch(ctx, req)
//	JoinGroup (11)         → c.JoinGroup(ctx, JoinClient{ClientID, ClientHost}, req)   (blocks)
//	Heartbeat (12)         → c.Heartbeat(ctx, req)
//	LeaveGroup (13)        → c.LeaveGroup(ctx, req)
//	SyncGroup (14)         → c.SyncGroup(ctx, req)                                      (blocks)
//	DescribeGroups (15)    → c.DescribeGroups(ctx, req)
//	ListGroups (16)        → c.ListGroups(ctx, req)
//	DeleteGroups (42)      → c.DeleteGroups(ctx, req)
//	OffsetDelete (47)      → c.OffsetDelete(ctx, req)
//	TxnOffsetCommit (28)   → c.TxnOffsetCommit(ctx, req)
//	marker committed on __consumer_offsets-p → c.CompleteTxnOffsets(p, producerID, commit)
//	ConsumerGroupHeartbeat (68) → c.ConsumerGroupHeartbeat(ctx, JoinClient{...}, req)
//	ConsumerGroupDescribe (69)  → c.ConsumerGroupDescribe(ctx, req)
//	StreamsGroupHeartbeat (88)  → c.StreamsGroupHeartbeat(ctx, JoinClient{...}, req)
//	                              (then create the internal topics it returns)
//	StreamsGroupDescribe (89)   → c.StreamsGroupDescribe(ctx, req)
//
// Versions served: OffsetCommit 0–10, OffsetFetch 0–10, JoinGroup 0–9,
// Heartbeat 0–4, LeaveGroup 0–5, SyncGroup 0–5, DescribeGroups 0–6,
// ListGroups 0–5, DeleteGroups 0–3, OffsetDelete 0, ConsumerGroupHeartbeat
// 0–1, ConsumerGroupDescribe 0–1, StreamsGroupHeartbeat 0–1,
// StreamsGroupDescribe 0–1 (the kmsg v1.15.1 maxima).
//
// Load and Unload block (Load for the replay, Unload until the shard has
// answered everything pending): call them without holding locks that
// Append or Replay need.
//
// Every method returns a response whose Version is the request's and whose
// error codes are filled as Kafka fills them (NOT_COORDINATOR when the
// group's partition is not loaded here, COORDINATOR_LOAD_IN_PROGRESS while it
// loads, per partition / per group / top level as each API has it). A
// non-nil Go error only means ctx ended before the answer (the connection or
// the broker is going away); no response should be sent then. The broker
// checks authorization (and fills DescribeGroups' AuthorizedOperations)
// before or after calling; it should run every call on its own goroutine,
// since JoinGroup and SyncGroup wait for other members, and any call waits
// for a log commit.
//
// The request's ClientID and the peer address (formatted "/host" as Kafka
// does) go into JoinClient: DescribeGroups reports them.
//
// # Concurrency
//
// Each loaded shard has one goroutine that owns its state and runs its
// events in order; everything else (request goroutines, timer callbacks,
// PartitionLog completions) only queues events, which never blocks, so the
// broker may call done while holding its partition locks. Waiting callers
// block on a one-slot channel. A timer's callback waits for its event to
// run. The queue is bounded by the callers waiting on the shard (one event
// each), its timers, and its appends in flight. Unload ends the goroutine.
//
// # Not done
//
// Transactions: a transaction the coordinator times out at an exhausted
// epoch (32766) is aborted without a bump and without rolling to a new
// producer ID (Kafka 4.3's KAFKA-20090 rolls it under TV2); the producer
// rolls on its next InitProducerId or EndTxn. A transactional offset commit does not yield to a later
// non-transactional commit of the same partition by log position, as
// Kafka's does (the commit marker always applies it); KIP-939 two-phase
// commit (InitProducerId v6) is not served. Classic members joining a KIP-848 group (online migration) are refused. Offsets of
// topics a Stable consumer group no longer subscribes to do not expire until
// the group is empty. The KIP-848 assignor name is not persisted (after a
// reload it shows the default until the next assignment). The KIP-1251
// assignment epochs are not persisted (sluice does not know Kafka's record
// fields for them): after a load a partition counts from the first replayed
// CurrentMemberAssignment record of the member that holds it.
//
// Streams groups: no warm-up tasks and no lag-aware placement (TaskOffsets
// and TaskEndOffsets are ignored, so a standby is never promoted for being
// caught up); the interactive-queries endpoint epoch is not persisted (after
// a load every member with an endpoint is sent the map again); no topology
// descriptions (KIP-1331); the group-level streams configs
// (acceptable recovery lag 10000, task offset interval 60 s) are fixed; the
// KIP-1251-style assignment epochs of CurrentMemberAssignment's task lists
// are not written; rack-aware standby placement is not done. As in Kafka
// 4.4, a member joining with a topology other than the group's is refused
// (topology updates are not supported).
package coordinator
