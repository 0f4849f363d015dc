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
// Proposals (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, AllocateProducerIDs)
// travel to the driver over a bounded channel. The driver validates them against its working
// image — the published image with every in-flight proposal applied on top — so two requests
// cannot both create the same topic, proposes the resulting records as one raft entry, and
// answers the caller once that entry is applied and published. Proposals reach raft only
// while this node leads and has applied an entry of its own term; a node that does not lead
// answers NOT_CONTROLLER.
//
// Nothing is special about one node: a cluster of one is a raft configuration with one voter.
// Such a voter campaigns at start and so leads at once; its Transport sends nothing. Raft node
// IDs are Kafka node IDs plus one, because raft reserves 0.
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
// 7 ProducerIDs (see records.go). Empty entries (a new leader's) and raft configuration
// changes carry no records. A record that does not fit the state (e.g. a partition of an
// unknown topic) is skipped identically on every node.
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
