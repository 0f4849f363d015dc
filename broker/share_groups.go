package broker

// Share groups (KIP-932) on this node: the share group coordinator (membership, the simple
// assignor), the share session cache and the share partitions, all in memory for now
// (coordinator/share holds the pure state machines; this file is their driver). One mutex
// guards all of it: every ShareGroupHeartbeat, ShareFetch and ShareAcknowledge takes it for
// the state change only, never across a log read's I/O wait or a long poll. Lock timeouts and
// member session timeouts fire from one clock timer armed at the earliest deadline; what they
// release wakes the share fetches parked in the broker's purgatory on those partitions.
//
// Durability (share_state.go has the persister): a share partition is loaded from its persisted
// state (ReadShareGroupState) when a ShareFetch first needs it here, or after this node became
// its topic partition's leader again; a share partition with no state starts from
// share.auto.offset.reset and that start is written before anything is acquired. Every
// acknowledgement is written (WriteShareGroupState: the SPSO and the window's state batches) before
// its answer is sent, so an acknowledged record is never delivered again after a crash; lock
// timeouts are written in the background. As in Kafka, an acquisition is not written: a record
// acquired at a crash is delivered again, with the delivery count it had before. When this node
// stops leading a topic partition, or the topic is deleted, its share partitions leave memory
// (a deleted topic's persisted state is deleted too). A share session whose connection closes is
// closed, and its member's records on it are released with their delivery counted, as Kafka
// 4.4's share session cache does.
// Group configs (group_configs.go): share.auto.offset.reset (earliest, latest),
// share.record.lock.duration.ms and share.isolation.level (share_isolation.go) are honoured per
// group; the other share.* group keys are refused, so every group uses the broker's values for
// them.

import (
	"context"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/coordinator/share"
	"sluice/internal/batch"
	"sluice/logstore"
)

// sharePartitionReadBytes bounds one share partition's log read per ShareFetch: the records
// are copied into the response (a share fetch returns only the batches it acquired).
const sharePartitionReadBytes = 1 << 20

// shareDefaultMaxRecords is the records a ShareFetch v0 (which has no MaxRecords) may acquire.
const shareDefaultMaxRecords = 500

// sharePartitionKey names one share partition: a group's view of one topic partition.
type sharePartitionKey struct {
	group     string
	topicID   controller.TopicID
	partition int32
}

// shareGroups is this node's share group state.
type shareGroups struct {
	b                 *Broker
	partCfg           share.Config
	heartbeatInterval time.Duration
	// inMemory is set when group.share.persister.class.name names no persister (empty or
	// NoOpStatePersister): share partitions start from share.auto.offset.reset and nothing is
	// written, as before the persister existed.
	inMemory bool

	mu struct {
		sync.Mutex
		groups   *share.Groups
		sessions *share.Sessions
		// partitions are the share partitions led here, created by the first ShareFetch that
		// names them. Bounded by groups × partitions of their subscribed topics.
		partitions map[sharePartitionKey]*share.Partition
		// persist holds, for every share partition in partitions, what its persisted state
		// needs: the same keys.
		persist map[sharePartitionKey]*sharePersisted
		// known are the share partitions with persisted state that this node started or
		// initialized (a fetch here, AlterShareGroupOffsets here), kept after they leave memory
		// so DescribeShareGroupOffsets without topics lists them (Kafka's group coordinator
		// records the initialized partitions of a group). Bounded by groups × partitions.
		known map[sharePartitionKey]bool
		// timer fires at timerAt, the earliest lock or member deadline when it was armed.
		timer   replica.Timer
		timerAt time.Time
		// closed is set at broker shutdown: no timer is armed any more.
		closed bool
	}
}

func newShareGroups(b *Broker) *shareGroups {
	s := b.cfg.Static
	ms := func(n int32) time.Duration { return time.Duration(n) * time.Millisecond }
	sg := &shareGroups{
		b: b,
		partCfg: share.Config{
			MaxInFlight:      int(s.Int32("group.share.partition.max.record.locks")),
			MaxDeliveryCount: int(s.Int32("group.share.delivery.count.limit")),
			LockDuration:     ms(s.Int32("group.share.record.lock.duration.ms")),
		},
		heartbeatInterval: ms(s.Int32("group.share.heartbeat.interval.ms")),
	}
	switch strings.TrimSpace(s.String("group.share.persister.class.name")) {
	case "", "org.apache.kafka.server.share.persister.NoOpStatePersister":
		sg.inMemory = true
	}
	sg.mu.groups = share.NewGroups(share.GroupConfig{
		SessionTimeout:    ms(s.Int32("group.share.session.timeout.ms")),
		HeartbeatInterval: sg.heartbeatInterval,
		MaxSize:           int(s.Int32("group.share.max.size")),
	})
	sg.mu.sessions = share.NewSessions(int(s.Int32("group.share.max.share.sessions")))
	sg.mu.partitions = make(map[sharePartitionKey]*share.Partition)
	sg.mu.persist = make(map[sharePartitionKey]*sharePersisted)
	sg.mu.known = make(map[sharePartitionKey]bool)
	return sg
}

// partitionLocked returns the share partition for key, creating it the first time at the
// partition's log start when the group's share.auto.offset.reset is earliest, else at its high
// watermark (latest, Kafka's default). The group's share.record.lock.duration.ms,
// share.delivery.count.limit and share.partition.max.record.locks, when set, apply from now
// on. REQUIRES: mu held.
func (sg *shareGroups) partitionLocked(key sharePartitionKey, snap replica.Snapshot) *share.Partition {
	o := sg.b.shareGroupOverrides(key.group)
	sp := sg.mu.partitions[key]
	if sp == nil {
		start := snap.HighWatermark
		if o.earliest {
			start = snap.LogStart
		}
		var err error
		sp, err = share.NewPartition(sg.partCfg, start)
		if err != nil {
			return nil // the config was validated at startup; unreachable
		}
		sg.mu.partitions[key] = sp
	}
	cfg := sg.partCfg
	if o.lockMs > 0 {
		cfg.LockDuration = time.Duration(o.lockMs) * time.Millisecond
	}
	if o.deliveryLimit > 0 {
		cfg.MaxDeliveryCount = o.deliveryLimit
	}
	if o.maxRecordLocks > 0 {
		cfg.MaxInFlight = o.maxRecordLocks
	}
	_ = sp.SetConfig(cfg) // valid: the broker's limits, and a lock duration checked when set
	sp.AdvanceLogStart(snap.LogStart)
	return sp
}

// releaseMemberLocked gives back every record member of group holds, on every share partition
// of the group, and returns the partitions to wake. REQUIRES: mu held.
func (sg *shareGroups) releaseMemberLocked(group, member string) []topicPartition {
	var wake []topicPartition
	im := sg.b.ctrl.Image()
	for key, sp := range sg.mu.partitions {
		if key.group == group && sp.ReleaseMember(member) {
			if t := im.TopicsByID[key.topicID]; t != nil {
				wake = append(wake, topicPartition{t.Name, key.partition})
			}
		}
	}
	return wake
}

// wake re-evaluates the share fetches parked on these partitions.
func (sg *shareGroups) wake(tps []topicPartition) {
	for _, tp := range tps {
		sg.b.purgatory.Wake(tp)
	}
}

// scheduleLocked arms the timer for the earliest lock or member deadline, if it is earlier than
// the one armed. REQUIRES: mu held.
func (sg *shareGroups) scheduleLocked() {
	var next time.Time
	found := false
	if t, ok := sg.mu.groups.NextExpiry(); ok {
		next, found = t, true
	}
	for _, sp := range sg.mu.partitions {
		if t, ok := sp.NextDeadline(); ok && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	if !found || sg.mu.closed {
		return
	}
	if sg.mu.timer != nil && !sg.mu.timerAt.After(next) {
		return // armed for earlier already; it re-arms when it fires
	}
	if sg.mu.timer != nil {
		sg.mu.timer.Stop()
	}
	sg.mu.timerAt = next
	sg.mu.timer = sg.b.clock.AfterFunc(max(next.Sub(sg.b.clock.Now()), 0), sg.expire)
}

// close stops the timer at broker shutdown.
func (sg *shareGroups) close() {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	sg.mu.closed = true
	if sg.mu.timer != nil {
		sg.mu.timer.Stop()
		sg.mu.timer = nil
	}
}

// expire runs the due lock and member timeouts.
func (sg *shareGroups) expire() {
	sg.mu.Lock()
	if sg.mu.closed {
		sg.mu.Unlock()
		return
	}
	sg.mu.timer = nil
	now := sg.b.clock.Now()
	var wake []topicPartition
	for _, gone := range sg.mu.groups.Expire(now) {
		sg.mu.sessions.RemoveMember(gone.Group, gone.Member)
		wake = append(wake, sg.releaseMemberLocked(gone.Group, gone.Member)...)
	}
	im := sg.b.ctrl.Image()
	var changed []sharePartitionKey
	for key, sp := range sg.mu.partitions {
		if sp.Expire(now) {
			sg.markDirtyLocked(key)
			changed = append(changed, key)
			if t := im.TopicsByID[key.topicID]; t != nil {
				wake = append(wake, topicPartition{t.Name, key.partition})
			}
		}
	}
	sg.scheduleLocked()
	sg.mu.Unlock()
	sg.wake(wake)
	sg.persistAsync(changed)
}

// shareRead is one share partition's log read for a ShareFetch: the bytes of whole batches and
// the offsets they span.
type shareRead struct {
	records     []byte
	first, last int64 // base offset of the first batch, last offset of the last; last < first if none
	// aborted are the aborted transactions overlapping the read (read_committed only).
	aborted []logstore.AbortedTxn
	errCode int16
}

// readForShare reads up to maxBytes of p's log from offset, below visible, into memory; with
// readCommitted (visible is then the LSO) it also collects the aborted transactions the read
// overlaps, as a read_committed Fetch does.
func readForShare(p *Partition, offset, visible int64, maxBytes int64, readCommitted bool) shareRead {
	out := shareRead{first: 0, last: -1}
	if offset >= visible {
		return out
	}
	res, err := p.log.Read(offset, maxBytes, visible, true)
	if err != nil {
		out.errCode = storageErrorCode(err)
		return out
	}
	buf := make([]byte, 0, res.Bytes)
	for _, s := range res.Slices {
		start := len(buf)
		buf = buf[:start+int(s.Length)]
		if _, err := s.File.ReadAt(buf[start:], s.Position); err != nil && err != io.EOF {
			out.errCode = storageErrorCode(logstore.ErrCorruptBatch)
			return out
		}
	}
	out.records = buf
	if readCommitted && len(res.Slices) > 0 {
		out.aborted = p.log.AbortedTransactionsInRead(offset, res, visible)
	}
	first := true
	for rest := buf; len(rest) >= batch.HeaderSize; {
		h, err := batch.ParseHeader(rest)
		if err != nil || h.Size() > int64(len(rest)) {
			break
		}
		if first {
			out.first, first = h.BaseOffset, false
		}
		out.last = h.LastOffset()
		rest = rest[h.Size():]
	}
	if first {
		out.records = nil
	}
	return out
}

// trimToAcquired keeps the batches of records that hold an acquired offset. When they are one
// run of batches, as usual, it returns that part of records without copying (the read's buffer
// is the fetch's own); otherwise a new slice with the kept batches.
func trimToAcquired(records []byte, acquired []share.AcquiredRange) []byte {
	var out []byte
	runStart, runEnd := -1, -1 // the contiguous kept run so far, while out is nil
	pos := 0
	for rest := records; len(rest) >= batch.HeaderSize; {
		h, err := batch.ParseHeader(rest)
		if err != nil || h.Size() > int64(len(rest)) || h.Size() <= 0 {
			break
		}
		size := int(h.Size())
		for _, a := range acquired {
			if a.FirstOffset <= h.LastOffset() && a.LastOffset >= h.BaseOffset {
				switch {
				case out != nil:
					out = append(out, rest[:size]...)
				case runStart < 0:
					runStart, runEnd = pos, pos+size
				case runEnd == pos:
					runEnd = pos + size
				default: // a gap: copy the run so far and go on copying
					out = append(append([]byte{}, records[runStart:runEnd]...), rest[:size]...)
				}
				break
			}
		}
		rest, pos = rest[size:], pos+size
	}
	if out == nil && runStart >= 0 {
		return records[runStart:runEnd:runEnd]
	}
	return out
}

// shareAckResult applies one partition's acknowledgements for member and returns the code to
// answer, waking the partition's parked fetches when records became available again.
// REQUIRES: mu held.
func (sg *shareGroups) acknowledgeLocked(group, member string, im *controller.Image, topicID controller.TopicID, partition int32, batches []share.AckBatch, allowRenew bool) (code int16, woke *topicPartition) {
	if code := share.ValidateAckBatches(batches, allowRenew); code != 0 {
		return code, nil
	}
	topic := im.TopicsByID[topicID]
	if topic == nil {
		return kerr.UnknownTopicID.Code, nil
	}
	if partition < 0 || int(partition) >= len(topic.Partitions) {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	if topic.Partitions[partition].Leader != sg.b.nodeID {
		// The share partition lives on the topic partition's leader.
		return kerr.NotLeaderForPartition.Code, nil
	}
	sp := sg.mu.partitions[sharePartitionKey{group, topicID, partition}]
	if sp == nil {
		// Nothing was ever acquired here on this node.
		return kerr.InvalidRecordState.Code, nil
	}
	now := sg.b.clock.Now()
	key := sharePartitionKey{group, topicID, partition}
	if sp.Expire(now) {
		sg.markDirtyLocked(key)
	}
	if code := sp.Acknowledge(member, now, batches); code != 0 {
		return code, nil
	}
	sg.markDirtyLocked(key)
	return 0, &topicPartition{topic.Name, partition}
}

// closeSessionLocked releases member's records on the closed session's partitions (Kafka's
// releaseSession) and returns the partitions to wake. REQUIRES: mu held.
func (sg *shareGroups) closeSessionLocked(group, member string, s *share.Session) []topicPartition {
	if s == nil {
		return nil
	}
	var wake []topicPartition
	im := sg.b.ctrl.Image()
	for _, tp := range s.Partitions {
		sp := sg.mu.partitions[sharePartitionKey{group, controller.TopicID(tp.TopicID), tp.Partition}]
		if sp != nil && sp.ReleaseMember(member) {
			if t := im.TopicsByID[controller.TopicID(tp.TopicID)]; t != nil {
				wake = append(wake, topicPartition{t.Name, tp.Partition})
			}
		}
	}
	return wake
}

// ctxDone reports whether ctx ended.
func ctxDone(ctx context.Context) bool { return ctx.Err() != nil }

// listGroups answers ListGroups with the coordinator's groups and the share groups (type
// "share", protocol type "share", state Empty or Stable), under the same state and type filters.
func (b *Broker) listGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp, err := b.coord.ListGroups(ctx, req)
	if err != nil {
		return nil, err
	}
	matches := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	sg := b.shares
	sg.mu.Lock()
	for _, g := range sg.mu.groups.List() {
		if !matches(req.StatesFilter, g.State()) || !matches(req.TypesFilter, "share") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State(), "share"
		resp.Groups = append(resp.Groups, lg)
	}
	sg.mu.Unlock()
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	return resp, nil
}

// deleteGroups answers DeleteGroups: a share group is deleted (with its share partitions and
// their persisted state: those in memory here and those on this node's share coordinator) when
// it has no members, NON_EMPTY_GROUP otherwise; other groups are the coordinator's.
func (b *Broker) deleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	resp, err := b.coord.DeleteGroups(ctx, req)
	if err != nil {
		return nil, err
	}
	sg := b.shares
	var deleted []sharePartitionKey
	sg.mu.Lock()
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if sg.mu.groups.Get(g.Group) == nil {
			continue
		}
		// A share group ID is not also a consumer group's (the heartbeat keeps them apart), so
		// the coordinator's answer (not found, or not coordinator before its shard loaded)
		// does not apply.
		g.ErrorCode = sg.mu.groups.Delete(g.Group)
		if g.ErrorCode == 0 {
			for key := range sg.mu.partitions {
				if key.group == g.Group {
					sg.dropLocked(key)
					deleted = append(deleted, key)
				}
			}
			for key := range sg.mu.known {
				if key.group == g.Group {
					delete(sg.mu.known, key)
					deleted = append(deleted, key)
				}
			}
			for _, k := range b.shareCoord.Keys() {
				if k.Group == g.Group {
					deleted = append(deleted, sharePartitionKey{k.Group, controller.TopicID(k.TopicID), k.Partition})
				}
			}
		}
	}
	sg.mu.Unlock()
	for _, key := range deleted {
		b.persistDelete(ctx, key.coordinatorKey())
	}
	return resp, nil
}
