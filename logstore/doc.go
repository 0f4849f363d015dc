// Package logstore is sluice's storage engine: one partition's segmented log, kept in Apache
// Kafka's on-disk format byte for byte so that Kafka's tools (kafka-dump-log) read sluice's
// partition directories and sluice opens directories Kafka wrote. It knows the RecordBatch v2
// header (internal/batch) and nothing else of the protocol, and does all I/O through FS.
//
// # Directory layout
//
// A partition directory (Kafka names it "<topic>-<partition>") holds:
//
//	<base>.log                 segment: RecordBatch v2 bytes exactly as appended
//	<base>.index               sparse offset index of that segment
//	<base>.timeindex           sparse time index of that segment
//	<base>.txnindex            aborted transactions whose ABORT marker is in that segment
//	                           (only once it has one)
//	<offset>.snapshot          producer-state snapshot (sluice's format, below)
//	leader-epoch-checkpoint    leader epoch → start offset
//	recovery-point-offset-checkpoint, log-start-offset-checkpoint
//	cleaner-offset-checkpoint  first dirty offset of a compacted log (see Compaction)
//
// <base> is the segment's base offset, 20 zero-padded decimal digits
// (00000000000000000000.log). Names ending in .tmp (and Kafka's .deleted, .cleaned) are
// leftovers and are removed on open; a <base>.log.swap is a committed cleaned segment and is
// renamed into place first (see Compaction), other .swap files are removed.
//
// # Segment (.log)
//
// A sequence of whole v2 record batches (layout in internal/batch), big-endian, no framing of
// its own: batch i+1 starts right after batch i (12 + batchLength bytes). Offsets strictly
// increase; each batch's baseOffset >= the segment's base. The leader assigns baseOffset and
// partitionLeaderEpoch by patching them in place; both lie outside the CRC, so appended bytes
// are never re-encoded. A segment never exceeds 2^31-1 bytes, and offset - base fits in int32.
//
// What an append checks (format.go validateBatches): every batch's header, length and CRC;
// leader appends also record count == lastOffsetDelta+1 and, uncompressed, every record's
// framing with offset deltas 0, 1, 2, .... A leader append marked LeaderAppend.Validated (a
// client's produce, which the broker has checked in full, compressed records included, and not
// changed since) is read by its header only: length and offset fields, no CRC and no records,
// so the produce path reads a batch's records once. Follower appends, recovery, and every other
// leader append (coordinators', markers') are checked as above.
//
// # Offset index (.index) — matches Kafka's OffsetIndex
//
// Entries of 8 bytes: relative offset (int32, offset - base) then file position (int32) of a
// batch. As Kafka 4.x's LogSegment.append, the indexed offset is the batch's last offset, and
// a batch is indexed when more than index.interval.bytes were appended since the previous
// entry (so the first batch of a segment is not). Offsets and positions strictly increase.
// The file is not preallocated: its length is the number of entries × 8. Entries are kept in
// memory and written to the file before each fsync of the segment (roll, flush, close); the
// active segment's index is rebuilt by recovery anyway. At most segment.index.bytes/8 entries;
// a full index rolls the segment.
//
// # Time index (.timeindex) — matches Kafka's TimeIndex
//
// Entries of 12 bytes: timestamp (int64), relative offset (int32). Written alongside each
// offset-index entry when the segment's max timestamp so far grew: (max timestamp so far, last
// offset of the batch that has it). When a segment stops being active (roll, close) a final
// entry for its max timestamp is added. Timestamps strictly increase.
//
// # Transaction index (.txnindex) — matches Kafka's TransactionIndex
//
// Entries of 34 bytes, one per transaction aborted by an ABORT marker in the segment, in
// marker order: version (int16, 0), producerId (int64), firstOffset (int64, the
// transaction's first batch, possibly in an earlier segment), lastOffset (int64, the
// marker's offset), lastStableOffset (int64, the last stable offset right after the marker:
// the first offset of the oldest transaction of another producer still open, else
// lastOffset+1). lastOffset strictly increases and is >= the segment base. The file is created
// with the first entry, written at once (fsynced with the segment) and deleted with the
// segment. A committed transaction leaves no entry.
//
// # Checkpoints
//
// leader-epoch-checkpoint is Kafka's text format: "0\n", "<count>\n", then "<epoch>
// <startOffset>\n" lines, epochs and offsets increasing. recovery-point-offset-checkpoint and
// log-start-offset-checkpoint use Kafka's offset-checkpoint text format ("0\n1\n<topic>
// <partition> <offset>\n"). Kafka keeps these two per log directory with one line per
// partition; sluice keeps one file per partition directory holding that partition's line.
// Every checkpoint is written to <name>.tmp, fsynced, renamed over <name>, and the directory is
// fsynced.
//
// # Producer snapshot (<offset>.snapshot) — sluice's own format
//
// The producer state as of <offset> (all batches below it), open transactions included
// (currentTxnFirstOffset, -1 when none is open; coordinatorEpoch of the last marker, -1 when
// none). Kafka's own .snapshot files have a different layout; sluice does not read them and
// rebuilds the state by scanning the log.
// Big-endian:
//
//	0   4  magic "SLPS"
//	4   2  version = 1
//	6   4  CRC-32C (Castagnoli) of bytes [10, end)
//	10  8  snapshot offset (equals the file name)
//	18  4  producer count n
//	then n producers: 8 producerId, 2 epoch, 4 coordinatorEpoch, 8 currentTxnFirstOffset,
//	    8 lastTimestamp, 1 batch count m (<= 5), m × (4 firstSeq, 4 lastSeq, 8 firstOffset,
//	    8 lastOffset, 8 maxTimestamp)
//
// Written at every roll (in the background, after the rolled segment's fsync: appends do not
// wait for it; the older snapshots are removed only once it is durable, so a crash before it
// leaves them, and recovery replays from the newest) and on close; the two newest are kept.
//
// All of the above are on-disk formats shared with Kafka or with earlier sluice versions:
// the constants must never change.
//
// # Durability and recovery
//
// Appends write to the OS. fsync happens on roll (the old segment and its indexes, in the
// background as Kafka does; its offsets count as durable only once that is done), on Flush
// and Close, every flush.messages messages, and after flush.ms (checked by EnforceRetention).
// With flush.messages=1 an append returns only after an fsync that covers it, and concurrent
// appenders share fsyncs (group commit). The recovery point is the offset below which every
// batch is known durable; it is checkpointed by each roll's background fsync once done, on
// Flush, Close, truncation and after recovery. What a roll does with the append waiting: the
// final index writes, creating the new segment's three files, and, once per log, a created
// log's deferred directory fsyncs and the first recovery point checkpoint.
//
// Open recovers as Kafka's LogLoader does. Segments wholly below the recovery point are
// trusted: the batch chain after the last index entry is followed to the end of the file, and
// a failed check or a missing index file demotes the segment to recovery; their index files
// are loaded and fully sanity-checked on first use, and a damaged one is then ignored (lookups
// scan that segment from its start). The last segment is trusted only if its chain ends
// exactly at the recovery point, as after a clean close. Every other segment is scanned batch
// by batch — header length, magic, CRC-32C, offsets increasing — and cut at the first invalid
// batch; its indexes are rebuilt and leader epochs from batch headers are added to the epoch
// cache.
//
// What a bad segment may cost depends on whether it was flushed:
//
//   - A segment wholly below the recovery point was fsynced: damage found in it (a truncated
//     file, a bad batch after the last index entry, a damaged index that demotes it to a scan)
//     is damage to the disk's contents. The segment is cut at its first invalid batch, the
//     cut is logged at ERROR naming the file and byte range, and every later segment is kept.
//     The offsets between the segment's new end and the next segment's base are then a gap:
//     a read at an offset in the gap returns the next segment's first batch (offsets jump
//     forward, as a Kafka fetch into a compacted range does); the log end is unchanged.
//   - A segment at or above the recovery point was not known durable: if one other than the
//     last had a bad tail, all later segments are deleted, as Kafka does; so are they when,
//     in a directory sluice wrote, such a recovered segment ends before the next one's base
//     (its unsynced tail was lost while the next segment already existed: sluice always
//     rolls at the log end, so such a hole cannot be legitimate).
//
// The log start is max(checkpoint, first segment base); segments wholly below it are deleted
// (an interrupted retention). A log start checkpoint beyond the log end is clamped to it when
// recovery cut something (DeleteRecords had passed the lost tail); when nothing was cut it
// can only be a damaged file, and it is ignored (logged at ERROR) rather than allowed to
// delete every segment but the last. A checkpoint or snapshot that does not parse is ignored
// and rebuilt: a damaged small file never removes a segment. The epoch cache is cut to the
// log end. The producer state is loaded from the newest valid snapshot at or below the log
// end and the batches after it are replayed. Checkpoints are rewritten only when they
// changed.
//
// # Creation
//
// Open of a directory without segments creates the first segment's files and fsyncs nothing:
// an empty log needs nothing durable (a crash that loses the directory's entries leaves an
// empty or missing directory, which Open makes a log again). The fsyncs are deferred to the
// first fsync of appended data, on every path that makes data durable (Flush, group commit,
// a roll's, close): Options.BeforeFirstSync (the owner's own files, e.g. partition.metadata),
// then the directory (the segment's entries) and its parent (the directory's own entry), once,
// before the data's fsync. The same holds on reopening a log of one empty segment without a
// recovery-point checkpoint (never flushed). Checkpoints whose absence reads back the same are
// not written: no leader-epoch-checkpoint while there are no epochs, no
// log-start-offset-checkpoint while the log start is the first segment's base, and no
// recovery-point-offset-checkpoint for a log of one empty segment; the latter is written at
// the latest on the first roll, since its presence marks a directory sluice wrote (see the
// hole rule above). An idle created partition thus costs no fsync to create, close or reopen.
//
// Ordering rules that make every crash point recoverable: a new segment's directory entry is
// fsynced before anything depends on it (for a created log's first segment, its first data
// fsync); the log start checkpoint is written before segments
// are deleted; truncation lowers the recovery point checkpoint before cutting, deletes the
// newest segments first, and fsyncs the cut before returning.
//
// # Transactions (txnindex.go)
//
// A transactional batch (attribute bit 4) starts its producer's transaction at its base
// offset unless one is open; a transaction marker — a control batch (bit 5) whose first
// record's key is version 0 and type 0 (ABORT) or 1 (COMMIT) and whose value is version 0 and
// the coordinator epoch, Kafka's EndTransactionMarker — ends it. Another control type, or an
// empty control batch, ends nothing. Leader appends are checked as Kafka's
// ProducerAppendInfo checks them: an older epoch is ErrInvalidProducerEpoch (for a marker of
// transaction version 2 also the current epoch while the transaction is open), a
// non-transactional batch while the producer's transaction is open ErrInvalidTxnState, a
// marker from an older coordinator epoch than the producer's last ErrTransactionCoordinatorFenced;
// sequences are checked for client appends only. A transactional batch that would start a
// transaction and carries a verification guard (BeginTxnVerification, KIP-890) is
// ErrInvalidTxnState unless the guard is still the producer's: any transactional batch or
// marker of the producer spends it (guards are in memory only, at most 16384 per log).
// Follower appends and recovery only record.
//
// The last stable offset for a high watermark hw (LastStableOffset) is the smallest of hw,
// the first offset of any open transaction, and the first offset of any transaction whose
// marker is at or past hw (an ended transaction holds the LSO back until its marker is
// replicated, as Kafka's unreplicated transactions do; after a restart those the producer
// state replay saw end, older ones are forgotten as in Kafka); the replica clamps it to the
// log start. Aborted transactions overlapping a read_committed fetch are collected from the
// .txnindex of the segment holding the fetch offset and those after it, stopping at the first
// entry whose lastStableOffset reaches the fetched data's end (Kafka's collectAbortedTxns).
//
// Recovery: a trusted segment's .txnindex is read back; a damaged one (length not a multiple
// of 34, wrong version, offsets out of order or outside the segment) makes the segment be
// recovered. Every recovered segment's .txnindex is emptied and rebuilt by the producer-state
// replay, which then starts at the newest snapshot at or below the first such segment (or at
// the log start with an empty state) and re-adds an entry at each ABORT marker it passes in
// them. Truncation drops the entries of the markers it cuts; the cleaner drops aborted records,
// keeps markers and moves the .txnindex to the cleaned segment unchanged.
//
// # Compaction (cleaner.go) — Kafka's LogCleaner
//
// A log whose cleanup.policy contains compact (Config.Compact) is cleaned by Log.Clean, which
// the broker's cleaner workers call for the dirtiest logs. The cleanable part of the log is
// the segments wholly below the first uncleanable offset: the minimum of the active
// segment's base (the active segment is never touched), the caller's bound (the high
// watermark), the recovery point (a cleaned segment must be one recovery trusts; a hole it
// leaves before the next segment is then a compaction gap, not a lost tail), and the base of
// the first segment whose largest timestamp is within min.compaction.lag.ms of now. Below the
// first dirty offset (cleaner-offset-checkpoint, Kafka's offset-checkpoint format, written
// after each clean; clamped to the log end on open) the log was already cleaned; the dirty ratio is dirty bytes / cleanable bytes, and a log is due
// when it reaches min.cleanable.dirty.ratio or a dirty segment is older than
// max.compaction.lag.ms, or when it has no dirty part but a tombstone kept by its last clean
// has outlived delete.retention.ms since (that clean then runs with an empty map: it only
// drops expired tombstones; the time is kept in memory, so after a restart it waits for the
// next clean).
//
// A clean builds a map key → newest offset over the dirty part, a fixed-size open-addressing
// table of 24-byte slots (128-bit key hash, offset; log.cleaner.dedupe.buffer.size / threads,
// filled to log.cleaner.io.buffer.load.factor; each broker cleaner thread keeps its own). A batch enters the map whole or not at all;
// when the map is full it ends there, and the next clean (pass) starts from that offset.
// Then every segment holding offsets below the map's end is rewritten, oldest first. A
// record is dropped when the map has a newer offset for its key, when it has no key (invalid
// in a compacted log, as in Kafka), or when it is a tombstone (null value) whose timestamp is
// older than delete.retention.ms (sluice judges a tombstone by its own timestamp; Kafka 4
// stamps a delete horizon into the batch on the first clean that sees it). A batch whose
// records all stay is copied byte for byte. Otherwise it is rebuilt with the same base
// offset, last offset delta, base timestamp, max timestamp, producer ID, epoch, base sequence
// and attributes, holding the kept records' bytes unchanged (so their offset and timestamp
// deltas stay), re-compressed with the batch's codec, with a new length, record count and
// CRC. A batch left with no records is dropped, except the newest batch of a producer in the
// producer state, which stays as an empty batch (record count 0, no compression) so its
// sequence survives a restart, as Kafka's cleaner retains it. Control batches are copied
// unchanged (Kafka removes a marker once its transaction's data is gone; sluice keeps it). The
// records of an aborted transaction (a transactional batch inside a span of the .txnindex
// files) neither enter the map nor stay, as in Kafka; the broker bounds cleaning by the last
// stable offset, so no open transaction is ever cleaned. Offsets are never renumbered: the gaps stay, and a read at an offset in a gap
// returns the next batch.
//
// A segment of which nothing stays is deleted instead (its files removed; its offsets become
// a gap after the previous segment), except the first, whose base is the log start. No
// cleaned files are created for it (a copy's files are created with its first kept bytes, or
// empty for the first segment), and the deletions of a group share one directory fsync: the
// one of step 2 below, before any segment of the group is committed (or one of their own when
// the group swaps nothing in), so they are durable before a later segment's cleaned copy,
// which may have dropped the tombstone that superseded their records. A segment left without
// a synced copy that became the first meanwhile (retention) is left uncleaned. Each other rewritten segment is swapped in (the segment keeps its base offset and
// name), with Kafka's file suffixes, in groups of up to 8 segments that share the fsyncs: every
// step below is made for each segment of the group before the fsync that ends it, so each
// segment goes through the same durable states in the same order as if it were alone:
//
//  1. <base>.log.cleaned, <base>.index.cleaned, <base>.timeindex.cleaned are written and
//     fsynced (indexes built as for an appended segment, final time-index entry included; the
//     group's files are fsynced concurrently, all before any rename).
//  2. .index.cleaned and .timeindex.cleaned are renamed to .index.swap, .timeindex.swap; the
//     directory is fsynced.
//  3. .log.cleaned is renamed to .log.swap; the directory is fsynced. This is the commit.
//  4. .index.swap, .timeindex.swap are renamed over .index, .timeindex; directory fsync.
//  5. .log.swap is renamed over .log; directory fsync.
//
// Open first completes every committed swap: for each <base>.log.swap it renames the index
// .swap files that are still there over their final names, fsyncs the directory, then renames
// the .log.swap, and fsyncs again. Then every remaining .cleaned and .swap file (an
// uncommitted clean) is removed. A crash anywhere thus leaves each segment wholly old or
// wholly cleaned; the old segment's files are never removed before the cleaned ones replace
// them. The swap is made under Log.appendMu and only if the segment is still in the log with
// the size it was cleaned at and no truncation happened since the map was started (a
// truncation may have removed the offsets the map points to); otherwise the cleaned files
// are removed and the next clean starts over. Readers holding slices of the old segment keep
// its open file until file.delete.delay.ms has passed, as for a deleted segment.
//
// # Concurrency
//
// Mutations are serialized by Log.appendMu. Readers hold Log.mu shared and only look at bytes
// below each segment's published size; appenders write file bytes first and publish under
// Log.mu exclusively. Files of deleted segments are unlinked at once, but the .log file stays
// open until file.delete.delay.ms has passed, so FileSlices handed to readers stay readable. A
// write error makes the log refuse further mutations (sticky error wrapping ErrClosed and
// ErrStorage) and calls
// Options.OnFailure once. Reopen makes a failed log serve again: it probes the directory with
// a write and an fsync, re-runs recovery on it as Open does (cutting the torn tail a failed
// write left) and continues from the recovered state; an append that was waiting for an
// fsync from before the failure is answered with an error. ErrorFS (errorfs.go) injects
// errors at chosen operations for tests.
//
// # Open files
//
// Segment files are opened through a FileCache (filecache.go; Options.FileCache, by default
// one per process sized to half of RLIMIT_NOFILE, whose soft limit is raised to the hard one
// first). Each operation on a segment file pins it, reopening it by path if the cache closed
// it; idle files are closed, least recently used first (clock), when the cache is full. A
// FileSlice's File is such a file: WriteSlice pins it for the whole sendfile. Open hands the
// descriptors recovery used back to the cache, and FileCache.CloseIdle (the broker calls it
// periodically) closes files unused since its previous call, so idle partitions hold none. The bound can be
// passed only while more files than it are pinned at the same moment. Files written and closed
// at once (checkpoints, snapshots) are outside the cache.
package logstore
