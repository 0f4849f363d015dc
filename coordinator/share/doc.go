// Package share holds the pieces of KIP-932 share groups that are pure state
// machines: for now the share-partition state machine (partition.go), which
// decides which records of one topic partition a share group's members may
// have, and what became of each delivery.
//
// # The share partition
//
// A share group consumes a partition cooperatively: any member may be given
// any record, each record is delivered to one member at a time, and the
// member acknowledges it. The share partition keeps, per offset in its
// in-flight window, a record state (Kafka's ids, which the persisted state on
// __share_group_state also uses):
//
//	AVAILABLE (0)    may be acquired by the next fetch
//	ACQUIRED (1)     delivered to one member, locked until the acquisition
//	                 lock times out (share.record.lock.duration.ms)
//	ACKNOWLEDGED (2) accepted by the member: done
//	ARCHIVED (4)     rejected, or released/timed out once too often
//	                 (share.delivery.count.limit): done, never delivered again
//
// and a delivery count (how many times it was acquired) and, while ACQUIRED,
// the member holding it and the lock's deadline.
//
// The window runs from the share-partition start offset (SPSO: every offset
// below it is done) to the share-partition end offset (SPEO: the last offset
// ever acquired). Its length is bounded by group.share.partition.max.record.locks
// (Config.MaxInFlight): new records beyond SPEO are acquired only while the
// window is shorter than that, so memory is bounded per share partition.
//
// # Transitions (as Kafka 4.4's SharePartition)
//
//	AVAILABLE → ACQUIRED        Acquire; delivery count +1
//	ACQUIRED  → ACKNOWLEDGED    ACCEPT
//	ACQUIRED  → ARCHIVED        REJECT, or GAP (the offset held no record),
//	                            or ArchiveAcquired right after Acquire: a
//	                            read_committed group's records of aborted
//	                            transactions, never handed out
//	ACQUIRED  → AVAILABLE       RELEASE or lock timeout, unless the delivery
//	                            count reached the limit: then ARCHIVED
//	ACQUIRED  → AVAILABLE       the member left or its share session closed
//	                            (ReleaseMember): the delivery count is given
//	                            back (the record may not have reached the
//	                            application) and the limit does not apply
//	ACQUIRED  → ACQUIRED        RENEW: the member extends its lock
//
// ACKNOWLEDGED and ARCHIVED are terminal. After every change the SPSO moves
// past the leading terminal offsets and those offsets leave the window. When
// the log start offset passes the SPSO (retention, DeleteRecords), the SPSO
// follows it and the offsets below leave the window whatever their state;
// acknowledgements for offsets below the SPSO are accepted and ignored, as in
// Kafka.
//
// An acknowledgement request for a partition is applied all or nothing: if
// any offset in it is not ACQUIRED by the acknowledging member, or lies past
// the window, nothing changes and the partition answers INVALID_RECORD_STATE
// (or INVALID_REQUEST for a malformed request: first > last, overlapping or
// unsorted batches, a bad acknowledge type, a type list of the wrong length).
//
// Time is injected: every call that starts or checks a lock takes now, and
// Expire(now) releases the locks due by then; NextDeadline tells the driver
// when to call it. Nothing here sleeps, spawns or locks: the caller serialises
// calls (one mutex or one goroutine per share partition).
package share
