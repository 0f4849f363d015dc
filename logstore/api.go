package logstore

// This file is the contract between logstore and its users (broker, coordinator). Exported names
// and signatures here are relied on by other packages: add to them freely, change them only
// together with every caller.

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// Config is one log's configuration, in Kafka's topic-config terms. Zero values are not
// defaults: callers fill every field (internal/config knows Kafka's defaults).
type Config struct {
	SegmentBytes       int64 // segment.bytes
	SegmentMs          int64 // segment.ms
	SegmentJitterMs    int64 // segment.jitter.ms
	SegmentIndexBytes  int64 // segment.index.bytes: max size of .index/.timeindex; a full index rolls the segment
	IndexIntervalBytes int64 // index.interval.bytes
	RetentionMs        int64 // retention.ms, -1 = unlimited
	RetentionBytes     int64 // retention.bytes, -1 = unlimited
	FlushMessages      int64 // flush.messages; 1 = group-commit fsync before every append returns
	FlushMs            int64 // flush.ms
	FileDeleteDelayMs  int64 // file.delete.delay.ms
	Preallocate        bool  // preallocate (accepted; segments are not preallocated)
	// Compaction (cleaner.go). Compact: cleanup.policy contains compact.
	Compact                bool
	DeleteRetentionMs      int64   // delete.retention.ms: how long tombstones survive cleaning
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms (<= 0 or MaxInt64 = none)
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
	// ProducerIDExpirationMs is the broker's producer.id.expiration.ms: producer state idle
	// this long (by its last batch timestamp) is dropped by EnforceRetention. 0 = Kafka's
	// default, one day.
	ProducerIDExpirationMs int64
}

// Options are the non-config dependencies of a Log.
type Options struct {
	FS     FS               // nil = the OS file system
	Now    func() time.Time // nil = time.Now
	Logger *slog.Logger     // nil = slog.Default()
	// Decompress, if set, decodes the records section of a compressed batch (codec is the
	// batch's attribute bits 0-2). Timestamp lookups use it to find the exact record in a
	// compressed batch; without it they answer with the batch's first offset.
	Decompress func(codec int, records []byte) ([]byte, error)
	// CacheWindowBytes, when positive, is how much of the active segment's most recent data
	// the log keeps in the page cache; older appended bytes are written back and dropped from
	// it (dropbehind.go). Zero leaves the page cache to the kernel.
	CacheWindowBytes int64
	// OnFailure, if set, is called once each time the log fails (a write, fsync, create,
	// rename or truncate error makes it refuse further mutations), with the error that made
	// it fail. It runs on the failing goroutine, possibly with the log's locks held: it must
	// not call into the log or block. The owner typically takes the log offline and calls
	// Reopen later.
	OnFailure func(err error)
	// FileCache bounds the segment files open at once (nil = DefaultFileCache(), shared by
	// the process). Segment files are reopened on use after the cache closed them.
	FileCache *FileCache
	// BeforeFirstSync, if set, is called once before the first fsync of appended data of a
	// log that Open created (no segment existed), ahead of the directory fsyncs deferred with
	// it (see "Creation" in the package doc): the owner makes its own files in the directory
	// durable there (the broker's partition.metadata). An error fails that fsync.
	BeforeFirstSync func() error
}

// AppendResult describes a successful append.
type AppendResult struct {
	FirstOffset int64 // base offset of the first batch appended (or of the duplicate)
	LastOffset  int64
	// MaxTimestamp and OffsetOfMaxTimestamp over the appended batches (-1 if none).
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	LogStartOffset       int64
	// Duplicate is true when an idempotent producer re-sent a batch already in the log; the
	// offsets are those of the original batch and nothing was written.
	Duplicate bool
	// ValidBytes appended.
	Bytes int
}

// LeaderAppend qualifies an append as leader (AppendAsLeaderWith).
type LeaderAppend struct {
	// Coordinator: the records are a coordinator's (Kafka's AppendOrigin.COORDINATOR), so
	// producer epochs are checked but not sequences (markers and offset commits carry none).
	Coordinator bool
	// TransactionVersion of a transaction marker (WriteTxnMarkers' field): 2 and above
	// require the marker's epoch to be above the producer's (KIP-890), 0 and 1 not below it.
	TransactionVersion int8
	// VerificationGuard, when non-zero, is the guard BeginTxnVerification handed out before
	// the coordinator verified this transactional batch: a batch that would start a
	// transaction is refused (ErrInvalidTxnState) unless the guard is still the producer's,
	// i.e. no marker ended its transaction meanwhile (KIP-890's VerificationGuard).
	VerificationGuard uint64
	// Validated: the caller checked these bytes as a client's batch (the broker's produce
	// validation: one whole magic-v2 batch, its CRC, its counts and every record's framing) and
	// nothing changed them since, so the log reads only the header and does not walk the
	// records or recompute the CRC again. Followers' bytes, recovery's and every other leader
	// append (coordinators', markers') are checked in full.
	Validated bool
}

// ProducerInfo is one producer's state in a partition, as DescribeProducers reports it.
type ProducerInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence of its newest batch (-1 if none is retained, e.g. after a marker).
	LastSequence  int32
	LastTimestamp int64
	// CoordinatorEpoch of its last transaction marker (-1 if none).
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of its open transaction (-1 if none).
	CurrentTxnStartOffset int64
}

// FileSlice is a byte range of a segment file holding whole record batches, for zero-copy reads.
type FileSlice struct {
	File     File
	Position int64
	Length   int64
}

// ReadResult is the outcome of Log.Read.
type ReadResult struct {
	Slices         []FileSlice
	Bytes          int64 // sum of Slices' lengths
	LogStartOffset int64
	LogEndOffset   int64
}

// OffsetAndEpoch is a position in the log with the leader epoch of the batch holding it.
type OffsetAndEpoch struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
}

// Typed errors. The broker maps them to Kafka error codes in one place.
var (
	ErrCorruptBatch         = errors.New("logstore: corrupt record batch")           // CORRUPT_MESSAGE
	ErrInvalidRecord        = errors.New("logstore: invalid record batch")           // INVALID_RECORD
	ErrUnsupportedMagic     = errors.New("logstore: unsupported record batch magic") // UNSUPPORTED_FOR_MESSAGE_FORMAT
	ErrOffsetOutOfRange     = errors.New("logstore: offset out of range")            // OFFSET_OUT_OF_RANGE
	ErrOutOfOrderSequence   = errors.New("logstore: out of order sequence number")   // OUT_OF_ORDER_SEQUENCE_NUMBER
	ErrInvalidProducerEpoch = errors.New("logstore: invalid producer epoch")         // INVALID_PRODUCER_EPOCH
	// ErrInvalidTxnState: a non-transactional batch from a producer whose transaction is open.
	ErrInvalidTxnState = errors.New("logstore: producer has an open transaction") // INVALID_TXN_STATE
	// ErrTransactionCoordinatorFenced: a marker from an older coordinator epoch.
	ErrTransactionCoordinatorFenced = errors.New("logstore: transaction coordinator fenced") // TRANSACTION_COORDINATOR_FENCED
	ErrClosed                       = errors.New("logstore: log closed")                     // a failed or closed log refuses work
	// ErrStorage marks an error of the file system under the log (ENOSPC, EIO, ...): the
	// sticky error of a failed log wraps both it and ErrClosed. KAFKA_STORAGE_ERROR.
	ErrStorage = errors.New("logstore: storage error")
)

// WriteSlice copies a FileSlice's bytes to w (sendfile when w is a TCP connection and the file is
// an OS file). Declared here so callers need not know File's implementation. Fewer bytes than
// s.Length (the segment was truncated meanwhile) is io.ErrUnexpectedEOF: the caller must drop
// the connection, since it has announced s.Length bytes.
func WriteSlice(w io.Writer, s FileSlice) (int64, error) {
	if cf, ok := s.File.(*cachedFile); ok {
		return cf.writeSlice(w, s) // pinned: the cache cannot close it during the send
	}
	if f, ok := s.File.(*os.File); ok {
		if conn, ok := w.(syscall.Conn); ok {
			if n, handled, err := sendfile(conn, f, s.Position, s.Length); handled {
				return n, err
			}
		}
	}
	n, err := io.Copy(w, io.NewSectionReader(s.File, s.Position, s.Length))
	if err == nil && n < s.Length {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
