package chaos

import "time"

// A History is everything one run observed, in the test's clock (durations since the run's
// start). Check reads nothing else.
type History struct {
	Topic      string
	Partitions int32
	// WorkloadStart and WorkloadEnd bound the time producers were sending; unavailability is
	// measured inside it.
	WorkloadStart, WorkloadEnd time.Duration
	Sends                      []Send
	Polls                      []Poll
	Commits                    []CommitObservation
	Nemesis                    []NemesisEvent
	// Final is the final read: every partition from its log start to its end offset, in offset
	// order. FinalComplete is false when some partition could not be read to its end (then
	// lost writes cannot be judged and Check says so).
	Final         map[int32][]Record
	FinalComplete bool
}

// Send is one produce of a unique value by one producer.
type Send struct {
	Producer int
	Seq      int64 // the producer's issue order for this partition (0, 1, 2, ...)
	Value    string
	// Partition is chosen by the producer before the send (manual partitioning).
	Partition int32
	Invoke    time.Duration
	Complete  time.Duration
	// OK is an acks=all acknowledgement; Offset is then the acknowledged offset. A failed send
	// is indeterminate: the value may or may not be in the log.
	OK     bool
	Offset int64
	Err    string
}

// Poll is one record returned to a consumer.
type Poll struct {
	Consumer string // "group-1", "reader", ...
	// Session numbers the consumer's continuous ownership of the partition: a group member's
	// session changes whenever the partition is assigned to it again, as it then resumes from
	// the committed offset. Offsets must only grow within one session.
	Session   int
	Time      time.Duration
	Partition int32
	Offset    int64
	Value     string
}

// CommitObservation is the group's committed offset for a partition, as an OffsetFetch saw it.
type CommitObservation struct {
	Time      time.Duration
	Partition int32
	Offset    int64
}

// NemesisEvent is one fault or heal.
type NemesisEvent struct {
	Time time.Duration
	Kind string // "kill", "restart", "pause", "resume", "partition", "heal"
	// Nodes are the node ids acted on.
	Nodes []int32
	// Led are the partitions the killed node led just before a kill (from Metadata), for the
	// recovery-time measurement.
	Led  []int32
	Note string
}

// Record is one record of the final read.
type Record struct {
	Offset int64
	Value  string
}
