package share

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordState is a record's state in a share partition, with Kafka's ids
// (SharePartition.RecordState, also the deliveryState of a persisted state
// batch on __share_group_state).
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// terminal reports whether a record in this state is done for good.
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// AckType is an acknowledgement type as ShareFetch and ShareAcknowledge carry
// it (Kafka's AcknowledgeType ids; 0 is the client's GAP marker).
type AckType int8

const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

func (a AckType) String() string {
	switch a {
	case AckGap:
		return "gap"
	case AckAccept:
		return "accept"
	case AckRelease:
		return "release"
	case AckReject:
		return "reject"
	case AckRenew:
		return "renew"
	}
	return fmt.Sprintf("AckType(%d)", int8(a))
}

// Config is one share partition's limits, from the broker's group.share.*
// keys and the group's own share.* configs.
type Config struct {
	// MaxInFlight bounds the window SPSO..SPEO
	// (group.share.partition.max.record.locks). Must be > 0.
	MaxInFlight int
	// MaxDeliveryCount is share.delivery.count.limit: a record released or
	// timed out after this many deliveries is archived. Must be > 0.
	MaxDeliveryCount int
	// LockDuration is share.record.lock.duration.ms. Must be > 0.
	LockDuration time.Duration
}

// AcquiredRange is a run of acquired offsets with one delivery count, as a
// ShareFetch response's AcquiredRecords entry carries it.
type AcquiredRange struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryCount int16
}

// AckBatch is one acknowledgement batch of a ShareFetch or ShareAcknowledge
// request: Types holds one type for the whole range or one per offset.
type AckBatch struct {
	FirstOffset int64
	LastOffset  int64
	Types       []AckType
}

// StateBatch is a run of offsets with one state and delivery count, as
// WriteShareGroupState persists it.
type StateBatch struct {
	FirstOffset   int64
	LastOffset    int64
	State         RecordState
	DeliveryCount int16
}

// record is one offset's state in the window.
type record struct {
	state RecordState
	// deliveries counts acquisitions; Invariant: 0 <= deliveries <=
	// Config.MaxDeliveryCount.
	deliveries int16
	// member and lockDeadline are set only while state == Acquired.
	member       string
	lockDeadline time.Time
}

// Partition is one share group's view of one topic partition. It is not
// safe for concurrent use; the caller serialises calls.
type Partition struct {
	cfg Config
	// startOffset is the SPSO: every offset below it is done (or was never
	// to be delivered).
	startOffset int64
	// window[i] is offset startOffset+i. Invariant: len(window) <=
	// cfg.MaxInFlight, except transiently inside a call; window[0], if any,
	// is not terminal (the SPSO has moved past every leading terminal
	// offset).
	window []record
}

// NewPartition starts a share partition whose first record to deliver is
// startOffset (from share.auto.offset.reset, or the persisted SPSO).
func NewPartition(cfg Config, startOffset int64) (*Partition, error) {
	if cfg.MaxInFlight <= 0 || cfg.MaxDeliveryCount <= 0 || cfg.LockDuration <= 0 {
		return nil, fmt.Errorf("share partition: invalid config %+v", cfg)
	}
	if cfg.MaxDeliveryCount > 1<<15-1 {
		return nil, fmt.Errorf("share partition: delivery count limit %d over int16", cfg.MaxDeliveryCount)
	}
	if startOffset < 0 {
		return nil, fmt.Errorf("share partition: negative start offset %d", startOffset)
	}
	return &Partition{cfg: cfg, startOffset: startOffset}, nil
}

// SetConfig changes the limits (a group config altered). A lower
// MaxInFlight only stops new acquisitions until the window shrinks.
func (p *Partition) SetConfig(cfg Config) error {
	if cfg.MaxInFlight <= 0 || cfg.MaxDeliveryCount <= 0 || cfg.LockDuration <= 0 || cfg.MaxDeliveryCount > 1<<15-1 {
		return fmt.Errorf("share partition: invalid config %+v", cfg)
	}
	p.cfg = cfg
	return nil
}

// StartOffset is the SPSO.
func (p *Partition) StartOffset() int64 { return p.startOffset }

// EndOffset is the SPEO as Kafka reports it: the last offset in the window,
// or the SPSO when the window is empty.
func (p *Partition) EndOffset() int64 {
	if len(p.window) == 0 {
		return p.startOffset
	}
	return p.windowEnd() - 1
}

// windowEnd is the first offset past the window: where new records start.
func (p *Partition) windowEnd() int64 { return p.startOffset + int64(len(p.window)) }

// InFlight is the number of offsets in the window.
func (p *Partition) InFlight() int { return len(p.window) }

// NextFetchOffset is where the next read of the log for this share partition
// should start: the first AVAILABLE offset in the window, else the first
// offset past it.
func (p *Partition) NextFetchOffset() int64 {
	for i := range p.window {
		if p.window[i].state == Available {
			return p.startOffset + int64(i)
		}
	}
	return p.windowEnd()
}

// CanAcquire reports whether a fetch could acquire anything: some offset in
// the window is AVAILABLE, or the window has room for new records.
func (p *Partition) CanAcquire() bool {
	return p.NextFetchOffset() < p.windowEnd() || len(p.window) < p.cfg.MaxInFlight
}

// Acquire gives member up to maxRecords records of a log read that returned
// offsets fetchFirst..fetchLast (the first batch's base offset and the last
// batch's last offset; offsets in between that hold no record, compacted or
// control records, are acquired too and the client acknowledges them as
// GAP). It re-acquires AVAILABLE offsets of the window in that range and
// then new offsets past the window, while the window has room. A record on
// its last permitted delivery is delivered alone, so that a poison record
// does not take other records' deliveries with it (as Kafka does when the
// limit is over 2). It returns the acquired ranges in offset order.
func (p *Partition) Acquire(member string, now time.Time, fetchFirst, fetchLast int64, maxRecords int) []AcquiredRange {
	if maxRecords <= 0 || fetchLast < fetchFirst || member == "" {
		return nil
	}
	if fetchFirst < p.startOffset {
		fetchFirst = p.startOffset
	}
	var out []AcquiredRange
	acquired := 0
	deadline := now.Add(p.cfg.LockDuration)
	take := func(offset int64, rec *record) {
		rec.state = Acquired
		rec.deliveries++
		rec.member = member
		rec.lockDeadline = deadline
		acquired++
		if n := len(out); n > 0 && out[n-1].LastOffset == offset-1 && out[n-1].DeliveryCount == rec.deliveries {
			out[n-1].LastOffset = offset
			return
		}
		out = append(out, AcquiredRange{FirstOffset: offset, LastOffset: offset, DeliveryCount: rec.deliveries})
	}
	end := p.windowEnd()
	for offset := fetchFirst; offset <= fetchLast && offset < end && acquired < maxRecords; offset++ {
		rec := &p.window[offset-p.startOffset]
		if rec.state != Available {
			continue
		}
		lastChance := p.cfg.MaxDeliveryCount > 2 && int(rec.deliveries) == p.cfg.MaxDeliveryCount-1
		if lastChance && acquired > 0 {
			return out
		}
		take(offset, rec)
		if lastChance {
			return out
		}
	}
	if acquired >= maxRecords || fetchLast < p.windowEnd() {
		return out
	}
	// New records past the window. The read found no record between the
	// window's end and fetchFirst (compacted away, or the window is empty
	// and the log starts later): with an empty window the SPSO jumps there,
	// otherwise those offsets join the window as ARCHIVED, as they hold
	// nothing to deliver.
	if gap := fetchFirst - p.windowEnd(); gap > 0 {
		if len(p.window) == 0 {
			p.startOffset = fetchFirst
		} else {
			if int64(len(p.window))+gap >= int64(p.cfg.MaxInFlight) {
				return out
			}
			for i := int64(0); i < gap; i++ {
				p.window = append(p.window, record{state: Archived})
			}
		}
	}
	for offset := p.windowEnd(); offset <= fetchLast && acquired < maxRecords && len(p.window) < p.cfg.MaxInFlight; offset++ {
		p.window = append(p.window, record{})
		take(offset, &p.window[len(p.window)-1])
	}
	return out
}

// ValidateAckBatches checks an acknowledgement request's shape for one
// partition as Kafka's KafkaApis does before the share partition sees it:
// each batch first <= last, batches sorted and not overlapping, types of
// length 1 or last-first+1, each a known type (RENEW only if allowRenew).
// It returns 0 or INVALID_REQUEST.
func ValidateAckBatches(batches []AckBatch, allowRenew bool) int16 {
	prevLast := int64(-1)
	for i, b := range batches {
		if b.FirstOffset < 0 || b.FirstOffset > b.LastOffset {
			return kerr.InvalidRequest.Code
		}
		if i > 0 && b.FirstOffset <= prevLast {
			return kerr.InvalidRequest.Code
		}
		prevLast = b.LastOffset
		if n := len(b.Types); n != 1 && int64(n) != b.LastOffset-b.FirstOffset+1 {
			return kerr.InvalidRequest.Code
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew || (t == AckRenew && !allowRenew) {
				return kerr.InvalidRequest.Code
			}
		}
	}
	return 0
}

// Acknowledge applies member's acknowledgements, all or nothing, and moves
// the SPSO. It returns 0, INVALID_REQUEST (a malformed request, see
// ValidateAckBatches) or INVALID_RECORD_STATE (an offset not ACQUIRED by
// member, or past the window); on an error nothing changed.
func (p *Partition) Acknowledge(member string, now time.Time, batches []AckBatch) int16 {
	if code := ValidateAckBatches(batches, true); code != 0 {
		return code
	}
	// Check everything before changing anything.
	end := p.windowEnd()
	for _, b := range batches {
		if b.LastOffset < p.startOffset {
			continue // already done: Kafka accepts and ignores these
		}
		if len(p.window) == 0 {
			return kerr.InvalidRecordState.Code
		}
		if b.LastOffset >= end {
			// Kafka: offsets past the acquired records are a bad request.
			return kerr.InvalidRequest.Code
		}
		for offset := max(b.FirstOffset, p.startOffset); offset <= b.LastOffset; offset++ {
			rec := &p.window[offset-p.startOffset]
			if rec.state != Acquired || rec.member != member {
				return kerr.InvalidRecordState.Code
			}
		}
	}
	for _, b := range batches {
		for offset := max(b.FirstOffset, p.startOffset); offset <= b.LastOffset; offset++ {
			typ := b.Types[0]
			if len(b.Types) > 1 {
				typ = b.Types[offset-b.FirstOffset]
			}
			rec := &p.window[offset-p.startOffset]
			switch typ {
			case AckAccept:
				*rec = record{state: Acknowledged, deliveries: rec.deliveries}
			case AckReject, AckGap:
				*rec = record{state: Archived, deliveries: rec.deliveries}
			case AckRelease:
				p.makeAvailableOrArchive(rec)
			case AckRenew:
				rec.lockDeadline = now.Add(p.cfg.LockDuration)
			}
		}
	}
	p.advanceStart()
	return 0
}

// makeAvailableOrArchive ends an acquisition that used up a delivery:
// AVAILABLE again, or ARCHIVED when the delivery count reached the limit.
func (p *Partition) makeAvailableOrArchive(rec *record) {
	state := Available
	if int(rec.deliveries) >= p.cfg.MaxDeliveryCount {
		state = Archived
	}
	*rec = record{state: state, deliveries: rec.deliveries}
}

// Expire releases every acquisition lock due at or before now (AVAILABLE
// again, or ARCHIVED at the delivery limit) and moves the SPSO. It reports
// whether anything changed, so the caller can wake waiting fetches.
func (p *Partition) Expire(now time.Time) bool {
	changed := false
	for i := range p.window {
		rec := &p.window[i]
		if rec.state == Acquired && !rec.lockDeadline.After(now) {
			p.makeAvailableOrArchive(rec)
			changed = true
		}
	}
	if changed {
		p.advanceStart()
	}
	return changed
}

// NextDeadline is the earliest acquisition lock deadline, and false when no
// record is acquired.
func (p *Partition) NextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	for i := range p.window {
		rec := &p.window[i]
		if rec.state == Acquired && (!found || rec.lockDeadline.Before(next)) {
			next, found = rec.lockDeadline, true
		}
	}
	return next, found
}

// ReleaseMember makes every record member holds AVAILABLE again, giving back
// the delivery (Kafka's releaseAcquiredRecords on a share session's close or
// the member's departure: the records may never have reached the
// application). It reports whether anything changed.
func (p *Partition) ReleaseMember(member string) bool {
	changed := false
	for i := range p.window {
		rec := &p.window[i]
		if rec.state == Acquired && rec.member == member {
			deliveries := rec.deliveries
			if deliveries > 0 {
				deliveries--
			}
			*rec = record{state: Available, deliveries: deliveries}
			changed = true
		}
	}
	if changed {
		p.advanceStart()
	}
	return changed
}

// AdvanceLogStart moves the SPSO to the log start offset when the log start
// has passed it: offsets below it leave the window whatever their state (an
// acquired record there can no longer be read; its acknowledgement will be
// ignored).
func (p *Partition) AdvanceLogStart(logStart int64) {
	if logStart <= p.startOffset {
		return
	}
	drop := logStart - p.startOffset
	if drop >= int64(len(p.window)) {
		p.window = p.window[:0]
	} else {
		p.window = p.window[drop:]
	}
	p.startOffset = logStart
	p.advanceStart()
}

// advanceStart moves the SPSO past the leading terminal offsets.
func (p *Partition) advanceStart() {
	n := 0
	for n < len(p.window) && p.window[n].state.terminal() {
		n++
	}
	if n == 0 {
		return
	}
	p.startOffset += int64(n)
	if n == len(p.window) {
		p.window = nil
		return
	}
	p.window = p.window[n:]
}

// StateBatches is the window as runs of one state and delivery count, as
// WriteShareGroupState persists it. ACQUIRED records are written as
// AVAILABLE-with-their-count would load: Kafka persists the ACQUIRED state
// only transiently, and a loaded ACQUIRED record becomes AVAILABLE, so the
// caller may persist these as they are.
func (p *Partition) StateBatches() []StateBatch {
	var out []StateBatch
	for i := range p.window {
		rec := &p.window[i]
		offset := p.startOffset + int64(i)
		if n := len(out); n > 0 && out[n-1].State == rec.state && out[n-1].DeliveryCount == rec.deliveries {
			out[n-1].LastOffset = offset
			continue
		}
		out = append(out, StateBatch{FirstOffset: offset, LastOffset: offset, State: rec.state, DeliveryCount: rec.deliveries})
	}
	return out
}

// Holders lists, per offset range, who holds what; for describe output and
// tests: each entry is a run of offsets with one state, delivery count and
// member.
func (p *Partition) Holders() []Holding {
	var out []Holding
	for i := range p.window {
		rec := &p.window[i]
		offset := p.startOffset + int64(i)
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.State == rec.state && last.DeliveryCount == rec.deliveries && last.Member == rec.member && last.LockDeadline.Equal(rec.lockDeadline) {
				last.LastOffset = offset
				continue
			}
		}
		out = append(out, Holding{FirstOffset: offset, LastOffset: offset, State: rec.state,
			DeliveryCount: rec.deliveries, Member: rec.member, LockDeadline: rec.lockDeadline})
	}
	return out
}

// Holding is a run of offsets in one state with one delivery count and, if
// acquired, one holder and lock deadline.
type Holding struct {
	FirstOffset, LastOffset int64
	State                   RecordState
	DeliveryCount           int16
	Member                  string
	LockDeadline            time.Time
}

// DoneInWindow counts the ACKNOWLEDGED and ARCHIVED offsets in the window: with the SPSO and
// the high watermark it gives a share partition's lag (records not yet done, KIP-1226).
func (p *Partition) DoneInWindow() int {
	n := 0
	for i := range p.window {
		if p.window[i].state.terminal() {
			n++
		}
	}
	return n
}

// ArchiveAvailable archives the AVAILABLE offsets in first..last: a read from first found its
// first batch only past last, so they hold no record any more (compacted away), and without
// this the SPSO could never pass them (as Kafka's maybeArchiveStaleBatches). ACQUIRED offsets
// there are left to their holder's acknowledgement (GAP) or lock timeout. It reports whether
// anything changed.
func (p *Partition) ArchiveAvailable(first, last int64) bool {
	changed := false
	for offset := max(first, p.startOffset); offset <= last && offset < p.windowEnd(); offset++ {
		rec := &p.window[offset-p.startOffset]
		if rec.state == Available {
			*rec = record{state: Archived, deliveries: rec.deliveries}
			changed = true
		}
	}
	if changed {
		p.advanceStart()
	}
	return changed
}

// OffsetRange is a run of offsets, first to last inclusive.
type OffsetRange struct {
	FirstOffset, LastOffset int64
}

// ArchiveAcquired archives the offsets of acquired that lie in one of the ranges (sorted, not
// overlapping) while member still holds them, and returns acquired without them, in offset
// order. A read_committed share group calls it right after Acquire with the batches of aborted
// transactions in the read: those records are never delivered and never will be (Kafka's
// SharePartition.filterAbortedTransactionalAcquiredRecords archives them the same way, keeping
// the delivery the acquisition counted).
func (p *Partition) ArchiveAcquired(member string, acquired []AcquiredRange, ranges []OffsetRange) []AcquiredRange {
	if len(ranges) == 0 || len(acquired) == 0 {
		return acquired
	}
	inRanges := func(offset int64) bool {
		for _, r := range ranges {
			if offset < r.FirstOffset {
				return false
			}
			if offset <= r.LastOffset {
				return true
			}
		}
		return false
	}
	var out []AcquiredRange
	changed := false
	for _, a := range acquired {
		for offset := a.FirstOffset; offset <= a.LastOffset; offset++ {
			if offset >= p.startOffset && offset < p.windowEnd() && inRanges(offset) {
				rec := &p.window[offset-p.startOffset]
				if rec.state == Acquired && rec.member == member {
					*rec = record{state: Archived, deliveries: rec.deliveries}
					changed = true
					continue
				}
			}
			if n := len(out); n > 0 && out[n-1].LastOffset == offset-1 && out[n-1].DeliveryCount == a.DeliveryCount {
				out[n-1].LastOffset = offset
				continue
			}
			out = append(out, AcquiredRange{FirstOffset: offset, LastOffset: offset, DeliveryCount: a.DeliveryCount})
		}
	}
	if changed {
		p.advanceStart()
	}
	return out
}
