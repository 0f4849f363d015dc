// Package controller is sluice's metadata quorum: an etcd-raft node, the metadata log, the
// metadata state machine and the immutable metadata Image published to the broker.
//
// # Driver
//
// One goroutine (Controller.run) owns the raft.RawNode, the storage and the state machine.
// It loops: feed raft one input — a tick (time enters only as ticks of Config.TickInterval),
// a raft message from another voter (Controller.Step), or a proposal — then drain Ready in
// the order etcd-raft documents: install a received snapshot, append entries and the hard
// state to the WAL (fsync when Ready.MustSync), hand messages to the Transport, apply the
// committed entries, Advance. Each batch of committed entries yields one new Image, stored in
// an atomic pointer, after which the previous image's Changed channel is closed.
//
// Proposals (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, AllocateProducerIDs,
// AlterPartition, AlterPartitionReassignments) travel to the driver over a bounded channel. The driver validates them
// against its working image — the published image with every in-flight proposal applied on
// top — so two requests cannot both create the same topic, proposes the resulting records as
// one raft entry, and answers the caller once that entry is applied and published. Proposals
// reach raft only while this node leads and has applied an entry of its own term; a node that
// does not lead answers NOT_CONTROLLER.
//
// Nothing is special about one node: a cluster of one is a raft configuration with one voter.
// Such a voter campaigns at start and so leads at once; its Transport sends nothing. Raft node
// IDs are Kafka node IDs plus one, because raft reserves 0.
//
// # Transport
//
// Raft messages travel between voters over TCP (NetTransport, nettransport.go), on the
// controller listener. Each voter dials every other voter (the entries of
// controller.quorum.voters, id@host:port, or the endpoints voter changes recorded: SetPeers
// follows the applied voter set) and sends on that connection only; it receives on the
// connections the others dialled. A voter that drops a demoted peer closes the connection
// that peer dialled, so it dials again as an observer. A connection starts with a handshake, then carries
// frames. All integers are big endian; these constants must not change within a protocol
// version:
//
//	hello  (dialer → listener)  "SLCR" | version uint8 = 1 | from int32 | to int32 |
//	                            cluster ID length uint8 | cluster ID
//	ack    (listener → dialer)  "SLCR" | version uint8 = 1 | status uint8
//	frame                       length uint32 (of type and payload) | type uint8 | payload
//
// from and to are Kafka node IDs; the cluster ID is empty while the sender does not know
// one (a new cluster before its first record commits). The listener answers status 0 (ok)
// or refuses — 1 the sender is not a configured voter, nor an observer this voter knows (or is itself), 2 both sides know a
// cluster ID and they differ, 3 the hello names another node as its target, 4 unsupported
// version — and closes the connection. Bytes that do not start with the magic get no answer.
// As a Kafka request size "SLCR" is 1.4 GB, beyond any request bound, so a listener shared
// with the Kafka protocol can tell the two apart by the first four bytes (ServeConn).
//
// Frame types: 1 a raftpb.Message (protobuf), never a MsgSnap; 2 a snapshot header: data
// length uint64 | the MsgSnap with its Snapshot.Data left empty; 3 a snapshot chunk: the next
// bytes of that data (the sender cuts 1 MiB chunks). A frame is at most 16 MiB (an append
// carries at most 1 MiB of entries or one entry of at most 8 MiB); a snapshot at most 1 GiB,
// the bound on a snapshot file, and it is reassembled in memory as its chunks arrive. Every
// length is checked before anything is allocated. A message must be from the voter of the
// handshake and to this node, of a type raft sends between nodes (not one of its local
// types), and in the frame type that matches it; chunks must follow a header and not exceed
// its length. Anything else is ErrBadRaftFrame: the connection is closed, the refusal counted
// and logged at most once per 10 s per kind; the quorum is not affected. On a PLAINTEXT
// controller listener, as Kafka's, the transport belongs on a trusted network; on an SSL one
// every connection is TLS (NetTransportConfig.TLS dials it, the listener handshakes before it
// sniffs the magic), and ssl.client.auth=required makes peers prove they hold a certificate of
// the truststore. On a SASL_PLAINTEXT or SASL_SSL one the dialer authenticates between its
// hello and the ack (NetTransportConfig.Authenticate and AuthenticateInbound): SaslHandshake v1
// and SaslAuthenticate v1 requests and their responses, in Kafka's framing (wire/sasl_stream.go),
// with the listener's mechanisms and credentials; nothing is answered to a hello until then, a
// refused one gets the SaslAuthenticate error and the connection is closed, and a session
// that ends (connections.max.reauth.ms) closes the connection for the dialer to redial.
//
// Sending: Send (in the driver goroutine) encodes each message at once — raft's messages are
// not the transport's to keep — and appends it to its peer's queue, bounded at 1024 messages
// and 64 MiB of encoded bytes (a snapshot's data is shared with storage and not counted; at
// most one snapshot is queued per peer). A message for a full queue is dropped, counted
// (Stats) and reported with Controller.ReportUnreachable; raft retransmits. One goroutine per
// peer dials (2 s connect-and-handshake timeout), streams the queue through a buffered writer
// (each frame or chunk write has a 5 s deadline, so a peer that stops reading is dropped
// instead of stalling), and notices the peer hanging up by reading from the connection.
// After a failure it reports the peer unreachable, drops what is queued (stale by the time the
// peer is back; a snapshot among it is reported failed), and redials after
// an exponential backoff from 50 ms doubling to at most 1 s (Kafka's reconnect.backoff.ms and
// reconnect.backoff.max.ms defaults), each delay jittered uniformly in [d/2, d]; a successful
// handshake resets it. After a MsgSnap is flushed it reports Controller.ReportSnapshot
// (finished); a snapshot dropped or lost with its connection is reported failed, so raft sends
// another when the follower answers again instead of waiting for it forever.
//
// Receiving: Serve accepts connections (at most 64 at a time; a hello must arrive within
// 10 s), and a voter's new connection replaces its previous one. Messages go to
// Controller.Step, which blocks while the driver's inbound queue is full: TCP back-pressure,
// bounded on the sending side by the write deadline. The controller calls the transport's
// Attach from open, so messages are delivered from the start.
//
// Observers (raft learners, see "Observers" below) have no controller listener: an observer's
// transport (NetTransportConfig.Observer) dials every voter only once Connect is called (after
// its broker registered), and reads the voters' messages from the connections it dialled. A
// voter accepts a hello from a node that is not a voter when its controller knows the node as a
// learner or a registered broker (AcceptsObserver; it holds the handshake up to 2 s for its
// image to catch up with the registration, else refuses with status 1), and sends to that
// observer on the connection, with the same bounded queue as a voter's, at most 256 observers
// per voter. Raft's messages for a learner that is not connected are dropped and reported
// unreachable.
//
// Delivery reports and DescribeQuorum reach the driver through driverCalls: recorded under a
// mutex (per voter, so bounded by the voters; queries bounded at 64) and signalled on a
// channel of capacity 1, so a transport never blocks on the driver.
//
// # Records
//
// The state machine (applyRecords) is a pure function of the record sequence. A raft entry
// carrying records is
//
//	version   uint8 = 1
//	proposal  uint64 big endian (the proposing node's ID for the proposal; 0 = none)
//	count     uvarint
//	count × { length uvarint; record }
//
// and a record is: type uint8 | version uint8 (= 1) | JSON payload. The types are:
// 1 ClusterID, 2 RegisterBroker, 3 Topic, 4 Partition, 5 Config, 6 RemoveTopic,
// 7 ProducerIDs, 8 BrokerChange (fenced / in controlled shutdown / log directory offline, for one broker epoch),
// 9 PartitionChange (a partition's new leader, ISR, leader epoch and partition epoch; the
// partition epoch must grow; with replicas set also its new assignment and the adding and
// removing replicas of a reassignment, reassign.go), 10 UnregisterBroker, 12
// UserScramCredential and 13 RemoveUserScramCredential (a user's SCRAM salt, stored key,
// server key and iterations per mechanism, scram.go), 16 ClientQuota (one quota key of one
// user/client-id/ip entity, quotas.go), 14 AccessControlEntry and 15
// RemoveAccessControlEntry (acls.go), 17 FeatureLevel (one feature's finalized level, 0 for
// none; a feature without one is at its default, features.go), 18 ReplicaDirs (which log
// directory of a broker holds its replicas of some partitions, log_dirs.go) — see records.go. Empty entries (a new leader's) and raft
// configuration changes carry no records. A record that does not fit the state (e.g. a
// partition of an unknown topic) is skipped identically on every node. The state machine is
// a pure function of the records and the raft index of the entry carrying each: a
// RegisterBroker record remembers that index (BrokerInfo.RegisteredOffset).
//
// # Membership
//
// Open joins the quorum without waiting for a leader; the first node to lead a log with no
// cluster ID proposes the ClusterID record (exactly one: it is planned against the working
// image, and a leader plans only after applying its whole log). Brokers register through the
// active controller (RegisterBroker, Kafka's BrokerRegistration) and heartbeat (Heartbeat,
// BrokerHeartbeat); a node that does not lead answers NOT_CONTROLLER and cluster.Link finds
// the leader. A registration starts fenced with a new broker epoch (the old epoch plus one);
// one from the same incarnation ID is a retry and keeps its epoch; one from a new incarnation
// while the old one's session is live is refused with DUPLICATE_BROKER_REGISTRATION (and the
// old one probed, evidence.go), and otherwise replaces the old registration in the same entry.
// A new incarnation whose PreviousBrokerEpoch (its clean shutdown file's) is not the epoch of
// the registration it replaces shut down uncleanly: the same entry takes it out of every ISR
// and ELR (KIP-966; elections.go). A heartbeat reporting OfflineLogDirs (the broker's storage
// failed) moves the broker's leadership and ISR memberships to other replicas and marks its
// log directory offline, so it is not active (elected nowhere, refused in an ISR) until a
// heartbeat reports it online again, which elects it where it is the only possible leader.
// A broker with several log directories (registered with their IDs, each replica's directory
// told through AssignReplicaDirs) that reports only some of them offline loses the
// leadership and ISR memberships of the replicas in those directories alone (log_dirs.go).
// UnregisterBroker removes a registration (and a broker-only node's learner; unregister.go).
// CreateACLs and DeleteACLs propose AccessControlEntryRecords and
// RemoveAccessControlEntryRecords (acls.go); the image's ACLs are an authz.Set.
// A heartbeat from an unknown broker is
// BROKER_ID_NOT_REGISTERED, from another epoch STALE_BROKER_EPOCH. A fenced broker whose
// heartbeat reports a metadata offset at or past its registration's raft index is unfenced.
// The active controller keeps each broker's last heartbeat in driver ticks (not replicated;
// a new leader gives every broker a full session) and fences a broker silent for
// Config.SessionTimeout (broker.session.timeout.ms). Controlled shutdown (WantShutDown) moves
// leadership off the broker and marks it in controlled shutdown; the first heartbeat after
// that finding it leading nothing and reporting a metadata offset at or past that entry fences
// it and answers ShouldShutDown. The leadership rules (which replica leads, what the ISR keeps)
// are at the top of membership.go and elections.go: Kafka 4.x's PartitionChangeBuilder with
// eligible leader replicas (KIP-966; Config.EligibleLeaderReplicas) — an ISR shrinking below
// min.insync.replicas moves the replicas it loses to the ELR, the ISR may become empty, an ELR
// member is a clean leader when no ISR member is active — and unclean.leader.election.enable,
// which elects any live replica (in leader recovery) when no ISR or ELR member is; without it
// such a partition has leader -1. A broker that left an ISR re-enters none by itself: partition leaders change
// their ISRs through AlterPartition (alter_partition.go, Kafka's API 56), shrinking it when a
// follower falls behind and expanding it when one has caught up. The controller accepts a
// change only from the current leader at the current leader and partition epochs, to an ISR
// of active replicas holding the leader, as Kafka's ReplicationControlManager does, and
// commits it as a PartitionChange record with the partition epoch plus one. For a partition
// being reassigned the change that brings the last adding replica into the ISR also completes
// the reassignment (reassign.go, which states Kafka's reassignment rules).
//
// # Observers
//
// A node that is not among Config.Voters (process.roles=broker) is an observer: it bootstraps
// the same initial configuration as the voters (so its raft node is in no configuration and
// never campaigns), and follows the log as an etcd-raft learner once the active controller has
// added it. RegisterBroker and Heartbeat on the active controller propose
// ConfChangeAddLearnerNode for a broker that is neither voter nor learner (ensureLearner; etcd
// raft takes one configuration change at a time and turns another into an empty entry, so an
// unapplied change is proposed again after 20 ticks). The learner then receives appends or a
// snapshot like any follower, applies them and publishes images, so the broker on it reads
// metadata exactly as on a voter. Learners were chosen over fetching committed entries from
// the quorum (what Kafka's observers do) because everything a follower has — WAL, snapshots,
// install, apply, images — is reused unchanged, and raft's progress tracking gives
// DescribeQuorum the observers' log end offsets. Learners are never removed (a demoted voter
// stays one). Proposals on an observer answer NOT_CONTROLLER; cluster.Link forwards them to
// the active controller.
//
// # Dynamic voters
//
// voters.go (KIP-853): AddVoter makes a node a learner and, once caught up, a voter;
// RemoveVoter demotes a voter to a learner; UpdateVoter re-records a voter's endpoint. Each
// step is one ConfChangeV2 with a single change whose Context is the voter's endpoint (JSON),
// recorded in Image.VoterEndpoints; one voter change is in flight at a time. Every node
// snapshots right after applying any configuration change. BootstrapVoters writes a new
// metadata directory's first snapshot (index 1, term 1: the initial voters, the cluster ID),
// for `sluice format`. Config.VoterAddrs are the static voters' addresses; the transport
// learns the current voters' addresses through SetPeers.
//
// Registration and heartbeat refusals (INCONSISTENT_CLUSTER_ID, a negative broker ID,
// BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH) are logged at most once per 10 s per kind.
//
// With a Config.Prober the active controller also fences at once on certain evidence that a
// broker's process is gone — its heartbeats stopped and every listener this node saw accept
// for that incarnation now refuses connections — and a follower whose transport finds the
// metadata leader's listener refusing campaigns at once (ReportPeerGone); evidence.go has
// the rules and why they never fence a broker that is merely slow. elections.go has
// ElectLeaders (Kafka's API 43: preferred and unclean elections), the periodic unclean
// elections unclean.leader.election.enable asks for, auto leader rebalance
// (Config.LeaderRebalanceInterval), and buildChange, the one place partition changes are made
// (Kafka's PartitionChangeBuilder: ELR, leader recovery).
//
// Images are copy-on-write: applying a batch copies only the maps and topics it changes and
// shares everything else with the previous image; a published Image is never modified.
//
// # Storage
//
// Config.Dir holds (these constants must not change):
//
//	lock                    flock'ed while a controller has the directory open
//	raft.wal                "SLCWAL01", then frames
//	snap-<index %020d>.snap  "SLCSNAP1" | length uint64 BE | crc32c uint32 BE | raftpb.Snapshot
//
// A WAL frame is length uint32 BE | crc32c uint32 BE | type uint8 | payload, where length and
// the CRC (Castagnoli) cover type and payload; type 1 is a raftpb.Entry, type 2 a
// raftpb.HardState, both protobuf-encoded. Frames are appended in Ready order; a later entry
// with an index already present replaces it and everything after it, as raft's log does. On
// open the WAL is read frame by frame. A torn tail — a frame that runs past the end of the
// file, a zero-filled remainder, or a CRC mismatch on the very last frame — is the trace of
// a write that was never acknowledged: the file is truncated before it. Any other bad frame
// (a CRC mismatch with valid data after it, a frame that does not decode, a gap in the
// indexes, a hard state committing past the log) means durable data was lost, and Start
// fails with ErrCorruptStorage rather than serve a wrong image or mint a new cluster ID.
//
// A failed WAL write or fsync (ENOSPC, EIO) stops nothing for good: the Ready whose persist
// failed is neither sent, applied nor Advanced (etcd-raft's contract), the WAL is rewritten
// whole from the in-memory log and last hard state (dropping the torn tail and not trusting
// pages a failed fsync may have lost) and the Ready is persisted again, with a backoff of 100
// ms doubling to 5 s, until it succeeds. Meanwhile proposals are answered at once with
// KAFKA_STORAGE_ERROR naming the file; one error line names it when the failure starts and
// one info line when it ends. A failed snapshot is not fatal: the WAL still holds everything.
//
// Every Config.SnapshotEvery applied entries the driver fsyncs the WAL, writes a snapshot
// (whose Data is the JSON-encoded state machine, encodeImage) to a temporary file, fsyncs and
// renames it, then rewrites the WAL to hold only the hard state and the entries after the
// snapshot (again temporary file + fsync + rename). The previous snapshot is kept as a
// fallback. Open loads the newest readable snapshot into a raft.MemoryStorage, replays the WAL
// on top, and raft redelivers the committed entries after the snapshot for the state machine
// to apply.
package controller
