package chaos

import "time"

// A TxnHistory is everything one transactional run observed (RunTxn), in the test's clock.
// CheckTxn reads nothing else.
//
// The run has an input topic, fed by an idempotent producer (Input: the queue history of that
// topic, checked as a queue by Check), and an output topic written only in transactions: by
// consume-transform-produce sessions (one output value per input value and attempt) and by an
// aborter that deliberately aborts every k-th of its own transactions.
type TxnHistory struct {
	// Input is the input topic's queue history: its producer's sends and its final read.
	Input History
	// Partitions of the output topic (as many as the input's: input partition p is transformed
	// into output partition p).
	Partitions int32
	// WorkloadStart and WorkloadEnd bound the time transactions were being run.
	WorkloadStart, WorkloadEnd time.Duration
	// Attempts are every transaction begun, in no particular order.
	Attempts []TxnAttempt
	// Polls are the records a read_committed reader of the output returned during the run.
	Polls []Poll
	// Final and Final2 are two read_committed reads of the whole output topic, one after the
	// other, after the workload stopped and every transaction was resolved (the last stable
	// offset equal to the high watermark on every partition). FinalComplete is false when
	// either could not be taken to the end.
	Final, Final2 map[int32][]Record
	FinalComplete bool
	// GroupOffsets are the transform group's committed offsets of the input topic at the end
	// (an OffsetFetch with require_stable), when GroupOffsetsKnown.
	GroupOffsets      map[int32]int64
	GroupOffsetsKnown bool
	Nemesis           []NemesisEvent
}

// Transaction outcomes as the client saw them.
const (
	TxnCommitted = "committed" // the commit was acknowledged
	TxnAborted   = "aborted"   // the abort was acknowledged (asked for, or the session's own)
	TxnUnknown   = "unknown"   // EndTxn failed or its outcome was unconfirmed: either may hold
)

// TxnAttempt is one transaction: the values produced in it and how it ended.
type TxnAttempt struct {
	TxnID string // the transactional id
	Seq   int    // the attempt's number for its transactional id
	// Transform marks a consume-transform-produce attempt (Values then carry Input); otherwise
	// it is the aborter's.
	Transform bool
	// WantAbort marks an attempt the workload meant to abort.
	WantAbort       bool
	Outcome         string
	Err             string
	Begin, Complete time.Duration
	Values          []TxnValue
}

// TxnValue is one record produced in a transaction: a value unique over the whole run.
type TxnValue struct {
	Partition int32
	Value     string
	// Input is the input value this output transforms ("" for the aborter's), and InputOffset
	// its offset in partition Partition of the input topic.
	Input       string
	InputOffset int64
}
