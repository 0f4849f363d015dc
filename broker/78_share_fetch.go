package broker

// ShareFetch, key 78: v1–v2 (KIP-932; v0 was early access). v2 adds ShareAcquireMode and
// IsRenewAck (KIP-1222's RENEW acknowledgements), both honoured: the share partition acquires
// at most MaxRecords in either mode, and RENEW is accepted only when IsRenewAck is set.
//
// A request first applies its share session part (coordinator/share/session.go: epoch 0 opens
// a session, replacing the member's old one and releasing its records; -1 closes it; any other
// epoch must be the session's, which then moves on), then its piggybacked acknowledgements
// (answered per partition in AcknowledgeErrorCode), then acquires records on every partition of
// the session led here: from each share partition's next fetch offset, up to the high watermark
// (the last stable offset for a read_committed group, whose aborted records are archived, never
// handed out: share_isolation.go),
// at most MaxRecords in all and within group.share.partition.max.record.locks per partition. It
// returns the batches holding acquired records with the acquired ranges and their delivery
// counts. With nothing to acquire it waits, as Fetch does, in the broker's purgatory until the
// partition's offsets change, an acknowledgement or a lock timeout makes records available, or
// MaxWaitMillis passes.
//
// Only partitions with records, an error or an acknowledgement answer appear in the response,
// except on the request opening the session, which answers every partition it names.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/broker/replica"
	"sluice/controller"
	"sluice/coordinator/share"
	"sluice/wire"
)

func init() {
	register(78, 1, 2, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
		req, ok := w.Body.(*kmsg.ShareFetchRequest)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		b.shares.fetch(ctx, w.Conn, req, respond)
	})
}

// shareFetchPartition is one partition's answer being built.
type shareFetchPartition struct {
	tp       share.TopicIDPartition
	resp     kmsg.ShareFetchResponseTopicPartition
	acked    bool // carries an acknowledgement answer
	acquired bool // carries records
}

func (sg *shareGroups) fetch(ctx context.Context, conn *wire.ConnInfo, req *kmsg.ShareFetchRequest, respond wire.Respond) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = int32(sg.partCfg.LockDuration.Milliseconds())
	group, member := derefString(req.GroupID), derefString(req.MemberID)
	if group == "" || member == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		respond(resp, nil)
		return
	}
	if sg.b.shareGroupDenied(conn, authz.OpRead, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(resp, nil)
		return
	}
	var add, forget []share.TopicIDPartition
	var deniedParts []share.TopicIDPartition
	hasAcks := false
	for _, t := range req.Topics {
		if !sg.b.shareTopicReadable(conn, t.TopicID) {
			for _, p := range t.Partitions {
				deniedParts = append(deniedParts, share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition})
			}
			continue
		}
		for _, p := range t.Partitions {
			if req.Version > 0 || p.PartitionMaxBytes > 0 {
				add = append(add, share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition})
			}
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, share.TopicIDPartition{TopicID: t.TopicID, Partition: p})
		}
	}
	im := sg.b.ctrl.Image()
	parts := make(map[share.TopicIDPartition]*shareFetchPartition)
	var order []share.TopicIDPartition
	part := func(tp share.TopicIDPartition) *shareFetchPartition {
		p := parts[tp]
		if p == nil {
			p = &shareFetchPartition{tp: tp, resp: kmsg.NewShareFetchResponseTopicPartition()}
			p.resp.Partition = tp.Partition
			// Records is not nullable in ShareFetch: Kafka's clients refuse a null (a nil
			// slice here), so a partition without records carries an empty one.
			p.resp.Records = []byte{}
			p.resp.CurrentLeader.LeaderID, p.resp.CurrentLeader.LeaderEpoch = -1, -1
			parts[tp] = p
			order = append(order, tp)
		}
		return p
	}

	for _, tp := range deniedParts {
		fp := part(tp)
		fp.resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
	}

	sg.mu.Lock()
	out := sg.mu.sessions.Fetch(share.SessionKey{Group: group, Member: member}, req.ShareSessionEpoch, add, forget, hasAcks)
	if out.Code != 0 {
		sg.mu.Unlock()
		resp.ErrorCode = out.Code
		respond(resp, nil)
		return
	}
	wake := sg.closeSessionLocked(group, member, out.Replaced)
	for _, t := range req.Topics {
		if !sg.b.shareTopicReadable(conn, t.TopicID) {
			continue
		}
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			batches := make([]share.AckBatch, 0, len(p.AcknowledgementBatches))
			for _, ab := range p.AcknowledgementBatches {
				batches = append(batches, share.AckBatch{FirstOffset: ab.FirstOffset, LastOffset: ab.LastOffset, Types: ackTypes(ab.AcknowledgeTypes)})
			}
			code, woke := sg.acknowledgeLocked(group, member, im, controller.TopicID(t.TopicID), p.Partition, batches, req.IsRenewAck)
			fp := part(share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition})
			fp.resp.AcknowledgeErrorCode, fp.acked = code, true
			if woke != nil {
				wake = append(wake, *woke)
			}
		}
	}
	var targets []share.TopicIDPartition
	if out.Final {
		wake = append(wake, sg.closeSessionLocked(group, member, out.Session)...)
	} else if !req.IsRenewAck { // a renew-only request acquires nothing (KIP-1222)
		targets = append(targets, out.Session.Partitions...)
	}
	sg.scheduleLocked()
	sg.mu.Unlock()
	sg.wake(wake)

	initial := req.ShareSessionEpoch == share.InitialEpoch
	if initial {
		for _, tp := range targets {
			part(tp)
		}
	}
	maxRecords := int(req.MaxRecords)
	if req.Version == 0 || maxRecords <= 0 {
		maxRecords = shareDefaultMaxRecords
	}
	f := &delayedShareFetch{sg: sg, ctx: ctx, req: req, resp: resp, group: group, member: member,
		targets: targets, parts: parts, order: &order, part: part, maxRecords: maxRecords, respond: respond}
	if len(targets) == 0 || req.MaxWaitMillis <= 0 || sg.b.isDraining() {
		f.TryComplete(true)
		return
	}
	if f.attempt() {
		f.finish()
		return
	}
	keys := make([]topicPartition, 0, len(targets))
	for _, tp := range targets {
		if t := im.TopicsByID[controller.TopicID(tp.TopicID)]; t != nil {
			keys = append(keys, topicPartition{t.Name, tp.Partition})
		}
	}
	var held atomic.Pointer[replica.Delayed[topicPartition]]
	f.stopCtx = context.AfterFunc(ctx, func() {
		if d := held.Load(); d != nil {
			d.Wake()
		}
	})
	held.Store(sg.b.purgatory.Add(f, keys, time.Duration(req.MaxWaitMillis)*time.Millisecond))
	if ctx.Err() != nil {
		held.Load().Wake()
	}
}

// delayedShareFetch is a ShareFetch waiting for records to acquire.
type delayedShareFetch struct {
	sg            *shareGroups
	ctx           context.Context
	req           *kmsg.ShareFetchRequest
	resp          *kmsg.ShareFetchResponse
	group, member string
	targets       []share.TopicIDPartition
	parts         map[share.TopicIDPartition]*shareFetchPartition
	order         *[]share.TopicIDPartition
	part          func(share.TopicIDPartition) *shareFetchPartition
	maxRecords    int
	respond       wire.Respond
	stopCtx       func() bool
	answered      bool
}

// TryComplete implements replica.Operation.
func (f *delayedShareFetch) TryComplete(expired bool) bool {
	if f.answered {
		return true
	}
	if !f.attempt() && !expired && f.ctx.Err() == nil && !f.sg.b.isDraining() {
		return false
	}
	f.finish()
	return true
}

// attempt acquires records on the targets; it reports whether the fetch can answer now
// (records acquired, or a partition error).
func (f *delayedShareFetch) attempt() bool {
	sg, b := f.sg, f.sg.b
	im := b.ctrl.Image()
	remaining := f.maxRecords
	done := false
	for _, tp := range f.targets {
		if remaining <= 0 {
			break
		}
		rs := b.resolvePartition(im, "", controller.TopicID(tp.TopicID), true, tp.Partition, true)
		if rs.errCode != 0 {
			fp := f.part(tp)
			fp.resp.ErrorCode = rs.errCode
			done = true
			continue
		}
		p := rs.partition
		snap := p.replica.Snapshot()
		key := sharePartitionKey{f.group, controller.TopicID(tp.TopicID), tp.Partition}
		sg.mu.Lock()
		sp := sg.partitionLocked(key, snap)
		if sp != nil {
			sp.Expire(b.clock.Now())
		}
		if sp == nil || !sp.CanAcquire() {
			sg.mu.Unlock()
			continue
		}
		sg.mu.Unlock()
		// A read_committed group reads up to the LSO and never hands out the records of aborted
		// transactions: they are archived as they are acquired. A read that found only those
		// reads on, a bounded number of times, so that committed records behind a long aborted
		// run are not left waiting for the next wake-up.
		readCommitted := shareGroupReadCommitted(im, f.group)
		visible := snap.HighWatermark
		if readCommitted {
			visible = snap.LastStable
		}
		var read shareRead
		var acquired []share.AcquiredRange
		for attempt := 0; attempt < shareAbortedRereads && len(acquired) == 0 && remaining > 0; attempt++ {
			sg.mu.Lock()
			if !sp.CanAcquire() {
				sg.mu.Unlock()
				break
			}
			offset := sp.NextFetchOffset()
			sg.mu.Unlock()
			read = readForShare(p, offset, visible, sharePartitionReadBytes, readCommitted)
			if read.errCode != 0 || read.last < read.first {
				break
			}
			sg.mu.Lock()
			if read.first > offset {
				// Records from offset up to the first batch read were compacted away.
				sp.ArchiveAvailable(offset, read.first-1)
			}
			acquired = sp.Acquire(f.member, b.clock.Now(), max(read.first, offset), read.last, remaining)
			archivedAborted := false
			if readCommitted && len(acquired) > 0 {
				n := acquiredCount(acquired)
				acquired = sp.ArchiveAcquired(f.member, acquired, abortedBatchRanges(read.records, read.aborted))
				if k := acquiredCount(acquired); k < n {
					remaining -= n - k // the archived records count against MaxRecords, as in Kafka
					archivedAborted = true
				}
			}
			sg.scheduleLocked()
			sg.mu.Unlock()
			if !archivedAborted {
				break
			}
		}
		if read.errCode != 0 {
			fp := f.part(tp)
			fp.resp.ErrorCode = read.errCode
			done = true
			continue
		}
		if len(acquired) == 0 {
			continue
		}
		fp := f.part(tp)
		fp.acquired, done = true, true
		fp.resp.CurrentLeader.LeaderID, fp.resp.CurrentLeader.LeaderEpoch = b.nodeID, snap.LeaderEpoch
		fp.resp.Records = trimToAcquired(read.records, acquired)
		if fp.resp.Records == nil {
			fp.resp.Records = []byte{} // not nullable in ShareFetch
		}
		for _, a := range acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.FirstOffset, a.LastOffset, a.DeliveryCount
			fp.resp.AcquiredRecords = append(fp.resp.AcquiredRecords, ar)
			remaining -= int(a.LastOffset - a.FirstOffset + 1)
		}
	}
	return done
}

// finish answers the fetch with what it has.
func (f *delayedShareFetch) finish() {
	if f.answered {
		return
	}
	f.answered = true
	if f.stopCtx != nil {
		f.stopCtx()
	}
	topics := make(map[[16]byte]int)
	for _, tp := range *f.order {
		fp := f.parts[tp]
		i, ok := topics[tp.TopicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.TopicID
			f.resp.Topics = append(f.resp.Topics, t)
			i = len(f.resp.Topics) - 1
			topics[tp.TopicID] = i
		}
		if fp.resp.CurrentLeader.LeaderID < 0 {
			fp.resp.CurrentLeader.LeaderID, fp.resp.CurrentLeader.LeaderEpoch = f.sg.currentLeader(tp)
		}
		f.resp.Topics[i].Partitions = append(f.resp.Topics[i].Partitions, fp.resp)
	}
	f.respond(f.resp, nil)
}

// currentLeader is tp's leader and epoch from the metadata image (-1, -1 if unknown).
func (sg *shareGroups) currentLeader(tp share.TopicIDPartition) (int32, int32) {
	t := sg.b.ctrl.Image().TopicsByID[controller.TopicID(tp.TopicID)]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return -1, -1
	}
	info := &t.Partitions[tp.Partition]
	return info.Leader, info.LeaderEpoch
}

// ackTypes converts the wire's acknowledge types.
func ackTypes(types []int8) []share.AckType {
	out := make([]share.AckType, len(types))
	for i, t := range types {
		out[i] = share.AckType(t)
	}
	return out
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
