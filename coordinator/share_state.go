package coordinator

// The share coordinator (KIP-932's share-group state persister), as Kafka
// 4.4's ShareCoordinatorShard behaves: one shard per partition of
// __share_group_state led here, each holding the persisted state of the
// share partitions that map to it. A share partition (group, topic ID,
// partition) belongs to partition abs(hashCode("group:topicId:partition"))
// % share.coordinator.state.topic.num.partitions, topicId in Kafka's
// base64 form. Its state is the SPSO, the state epoch, the leader epoch of
// the last writer and the state batches (offset runs that are AVAILABLE with
// a delivery count, ACKNOWLEDGED or ARCHIVED).
//
// Every write appends one record and answers once it is committed: a
// ShareSnapshot (the whole merged state) when the share partition has none
// yet or has had share.coordinator.snapshot.update.records.per.snapshot
// updates since the last one, else a ShareUpdate of the same snapshot epoch,
// which replay folds into the state (mergeShareStateBatches); a snapshot
// replaces the state, and an update of an older snapshot epoch is ignored.
//
// Where this differs from Kafka: Kafka's topic has cleanup.policy=delete and
// is pruned (share.coordinator.state.topic.prune.interval.ms: DeleteRecords
// below the oldest snapshot still needed, with cold partitions snapshotted
// again), and its updates carry only the request's batches. Here the topic
// is compacted (sluice's log cleaner keeps the latest snapshot and the latest
// update of each share partition), so each update carries the whole state
// folded since its snapshot and stands for every update before it. Replay
// reads either kind of log the same way (folding a full-state update gives
// the same result as folding the deltas it replaced).

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareStateTopicName is Kafka's internal topic of share-group state.
const ShareStateTopicName = "__share_group_state"

// ShareConfig holds the share coordinator's settings.
type ShareConfig struct {
	// NumPartitions is share.coordinator.state.topic.num.partitions (50).
	NumPartitions int32
	// UpdatesPerSnapshot is
	// share.coordinator.snapshot.update.records.per.snapshot (500): after
	// this many ShareUpdates a write records a ShareSnapshot instead.
	UpdatesPerSnapshot int
	// Topics, if set, lets writes answer UNKNOWN_TOPIC_OR_PARTITION for
	// topics or partitions that do not exist, as Kafka does.
	Topics TopicMetadata
	Clock  Clock
	Logger *slog.Logger
}

// ShareCoordinator serves the persister APIs (InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
// ReadShareGroupStateSummary) for the __share_group_state partitions led
// here.
type ShareCoordinator struct {
	cfg  ShareConfig
	rcfg Config
	log  *slog.Logger

	mu struct {
		sync.Mutex
		shards map[int32]*shareShard
		closed bool
	}
}

// NewShare returns a share coordinator with no shards loaded.
func NewShare(cfg ShareConfig) *ShareCoordinator {
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 50
	}
	if cfg.UpdatesPerSnapshot < 0 {
		cfg.UpdatesPerSnapshot = 0
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &ShareCoordinator{cfg: cfg, rcfg: Config{Clock: cfg.Clock}, log: cfg.Logger.With("component", "share-coordinator")}
	c.mu.shards = make(map[int32]*shareShard)
	return c
}

// ShareCoordinatorKey is the FindCoordinator key (key type SHARE) of a share
// partition: "group:topicId:partition", topicId in Kafka's base64 form.
func ShareCoordinatorKey(group string, topicID [16]byte, partition int32) string {
	return group + ":" + base64.RawURLEncoding.EncodeToString(topicID[:]) + ":" + strconv.Itoa(int(partition))
}

// ParseShareCoordinatorKey parses a FindCoordinator SHARE key; the group may
// itself contain colons (the last two fields are the topic and partition).
func ParseShareCoordinatorKey(key string) (SharePartitionKey, bool) {
	var k SharePartitionKey
	last := -1
	prev := -1
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == ':' {
			if last < 0 {
				last = i
			} else {
				prev = i
				break
			}
		}
	}
	if prev <= 0 {
		return k, false
	}
	id, err := base64.RawURLEncoding.DecodeString(key[prev+1 : last])
	if err != nil || len(id) != 16 {
		return k, false
	}
	p, err := strconv.ParseInt(key[last+1:], 10, 32)
	if err != nil || p < 0 {
		return k, false
	}
	k.Group = key[:prev]
	copy(k.TopicID[:], id)
	k.Partition = int32(p)
	return k, true
}

// PartitionFor returns the __share_group_state partition of a share
// partition, as Kafka's ShareCoordinatorService.partitionFor.
func (c *ShareCoordinator) PartitionFor(k SharePartitionKey) int32 {
	return partitionFor(ShareCoordinatorKey(k.Group, k.TopicID, k.Partition), c.cfg.NumPartitions)
}

// PartitionForKey is PartitionFor of a FindCoordinator SHARE key string.
func (c *ShareCoordinator) PartitionForKey(key string) int32 {
	return partitionFor(key, c.cfg.NumPartitions)
}

// Load makes this broker the share coordinator for a __share_group_state
// partition: it replays the partition (blocking) and then serves it.
func (c *ShareCoordinator) Load(partition int32, log PartitionLog) error {
	if partition < 0 || partition >= c.cfg.NumPartitions {
		return fmt.Errorf("coordinator: share state partition %d out of range [0,%d)", partition, c.cfg.NumPartitions)
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if _, ok := c.mu.shards[partition]; ok {
		c.mu.Unlock()
		return ErrShardLoaded
	}
	s := &shareShard{c: c, states: make(map[SharePartitionKey]*shareState)}
	s.runtime.init(&c.rcfg, partition, log)
	s.start()
	c.mu.shards[partition] = s
	c.mu.Unlock()

	var err error
	s.call(func() {
		if s.unloaded {
			err = ErrClosed
			return
		}
		if err = s.replayStates(); err == nil {
			s.status.Store(shardActive)
		}
	})
	if err != nil {
		c.mu.Lock()
		if c.mu.shards[partition] == s {
			delete(c.mu.shards, partition)
		}
		c.mu.Unlock()
		s.unload()
		c.log.Error("loading share coordinator shard failed", "partition", partition, "err", err)
		return fmt.Errorf("coordinator: loading share state partition %d: %w", partition, err)
	}
	return nil
}

// Unload stops coordinating a partition; pending requests answer
// NOT_COORDINATOR.
func (c *ShareCoordinator) Unload(partition int32) {
	c.mu.Lock()
	s := c.mu.shards[partition]
	delete(c.mu.shards, partition)
	c.mu.Unlock()
	if s != nil {
		s.unload()
	}
}

// Close unloads every shard.
func (c *ShareCoordinator) Close() {
	c.mu.Lock()
	c.mu.closed = true
	shards := c.mu.shards
	c.mu.shards = make(map[int32]*shareShard)
	c.mu.Unlock()
	for _, s := range shards {
		s.unload()
	}
}

func (c *ShareCoordinator) lookup(k SharePartitionKey) (*shareShard, int16) {
	c.mu.Lock()
	s := c.mu.shards[c.PartitionFor(k)]
	c.mu.Unlock()
	if s == nil {
		return nil, errNotCoordinator
	}
	if !s.isActive() {
		return nil, errLoadInProgress
	}
	return s, 0
}

// shareState is one share partition's persisted state.
type shareState struct {
	snapshotEpoch int32
	stateEpoch    int32
	leaderEpoch   int32
	startOffset   int64
	// deliveryCompleteCount is the last writer's count (KIP-1226), -1 unset.
	deliveryCompleteCount int32
	createTimestamp       int64
	batches               []ShareStateBatch
	// updates counts the ShareUpdates since the last ShareSnapshot.
	// Invariant: 0 <= updates <= UpdatesPerSnapshot once written by us.
	updates int
}

// shareShard is the share state of one __share_group_state partition.
type shareShard struct {
	runtime
	c *ShareCoordinator
	// states are the share partitions with state here. Bounded by the
	// share partitions of the groups mapping to this partition.
	states map[SharePartitionKey]*shareState
}

func (s *shareShard) replayStates() error {
	return s.replay(func(r *logRecord) error {
		if r.control {
			return nil
		}
		return s.applyShareRecord(r.key, r.value)
	})
}

// applyShareRecord folds one record into the state (replay, and after a
// write committed).
func (s *shareShard) applyShareRecord(key, value []byte) error {
	kind, k, err := decodeShareStateKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		delete(s.states, k)
		return nil
	}
	v, err := decodeShareStateValue(kind, value)
	if err != nil {
		return err
	}
	applyShareValue(s.states, k, kind, v)
	return nil
}

// applyShareValue folds a decoded record into states: a snapshot replaces
// the share partition's state; an update (of the current snapshot epoch, or
// any when there is no snapshot yet) moves the start offset and merges its
// batches.
func applyShareValue(states map[SharePartitionKey]*shareState, k SharePartitionKey, kind int16, v *shareStateValue) {
	st := states[k]
	if kind == keyShareSnapshot {
		states[k] = &shareState{
			snapshotEpoch: v.SnapshotEpoch, stateEpoch: v.StateEpoch, leaderEpoch: v.LeaderEpoch,
			startOffset: v.StartOffset, deliveryCompleteCount: v.DeliveryCompleteCount,
			createTimestamp: v.CreateTimestamp,
			batches:         mergeShareStateBatches(nil, v.Batches, v.StartOffset),
		}
		return
	}
	if st == nil {
		// An update with no snapshot before it (compacted away with a
		// deleted state, or written by a peer that never snapshotted).
		st = &shareState{snapshotEpoch: v.SnapshotEpoch, startOffset: -1}
		states[k] = st
	}
	if v.SnapshotEpoch != st.snapshotEpoch {
		return // an update of an older snapshot, superseded
	}
	if v.StartOffset >= 0 {
		st.startOffset = max(st.startOffset, v.StartOffset)
	}
	st.leaderEpoch = max(st.leaderEpoch, v.LeaderEpoch)
	st.deliveryCompleteCount = v.DeliveryCompleteCount
	st.batches = mergeShareStateBatches(st.batches, v.Batches, st.startOffset)
	st.updates++
}

// onShareShard runs start on the shard owning k and waits for its reply.
func onShareShard[R any](ctx context.Context, c *ShareCoordinator, k SharePartitionKey, errResp func(code int16) R, start func(s *shareShard, reply func(R))) R {
	s, code := c.lookup(k)
	if code != 0 {
		return errResp(code)
	}
	ch := make(chan R, 1)
	s.submit(func() {
		if s.unloaded {
			ch <- errResp(errNotCoordinator)
			return
		}
		start(s, func(r R) { ch <- r })
	})
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return errResp(kerr.RequestTimedOut.Code)
	}
}

// validKey is Kafka's request check: a group ID and a non-negative
// partition (the topic ID is never null on the wire here).
func validShareKey(k SharePartitionKey) bool {
	return k.Group != "" && k.Partition >= 0
}

// topicKnown reports whether the topic partition exists (when the
// coordinator has metadata).
func (c *ShareCoordinator) topicKnown(k SharePartitionKey) bool {
	if c.cfg.Topics == nil {
		return true
	}
	_, n, ok := c.cfg.Topics.TopicByID(k.TopicID)
	return ok && k.Partition < n
}

// ShareWrite is one WriteShareGroupState partition's data.
type ShareWrite struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []ShareStateBatch
}

// Write persists one share partition's changed state (WriteShareGroupState)
// and returns the error code once it is committed.
func (c *ShareCoordinator) Write(ctx context.Context, k SharePartitionKey, w ShareWrite) int16 {
	if !validShareKey(k) {
		return kerr.InvalidRequest.Code
	}
	for _, b := range w.Batches {
		if b.FirstOffset < 0 || b.LastOffset < b.FirstOffset || (b.DeliveryState != 0 && b.DeliveryState != 2 && b.DeliveryState != 4) || b.DeliveryCount < 0 {
			return kerr.InvalidRequest.Code
		}
	}
	if !c.topicKnown(k) {
		return kerr.UnknownTopicOrPartition.Code
	}
	fail := func(code int16) int16 { return code }
	return onShareShard(ctx, c, k, fail, func(s *shareShard, reply func(int16)) {
		st := s.states[k]
		if st != nil && st.leaderEpoch > w.LeaderEpoch {
			reply(kerr.FencedLeaderEpoch.Code)
			return
		}
		if st != nil && st.stateEpoch > w.StateEpoch {
			reply(kerr.FencedStateEpoch.Code)
			return
		}
		now := s.now().UnixMilli()
		var kind int16
		var v shareStateValue
		if st == nil || st.updates >= s.c.cfg.UpdatesPerSnapshot {
			// A snapshot: the whole state with the write folded in.
			kind = keyShareSnapshot
			v = shareStateValue{StateEpoch: w.StateEpoch, LeaderEpoch: w.LeaderEpoch,
				DeliveryCompleteCount: w.DeliveryCompleteCount, CreateTimestamp: now, WriteTimestamp: now}
			var cur []ShareStateBatch
			start := w.StartOffset
			if st != nil {
				v.SnapshotEpoch = st.snapshotEpoch + 1
				v.CreateTimestamp = st.createTimestamp
				v.LeaderEpoch = max(st.leaderEpoch, w.LeaderEpoch)
				cur = st.batches
				if start < 0 {
					start = st.startOffset
				}
				start = max(start, st.startOffset)
			}
			v.StartOffset = start
			v.Batches = mergeShareStateBatches(cur, w.Batches, start)
		} else {
			// An update carries the whole state folded since its snapshot, not only the
			// request's batches: the topic is compacted, which keeps one update per share
			// partition, so each must stand for every update before it.
			kind = keyShareUpdate
			start := max(w.StartOffset, st.startOffset)
			v = shareStateValue{SnapshotEpoch: st.snapshotEpoch, LeaderEpoch: w.LeaderEpoch,
				StartOffset: start, DeliveryCompleteCount: w.DeliveryCompleteCount,
				Batches: mergeShareStateBatches(st.batches, w.Batches, start)}
		}
		rec := record{key: shareStateKey(kind, k), value: encodeShareStateValue(kind, &v)}
		s.write([]record{rec}, func(code int16) {
			if code == 0 {
				applyShareValue(s.states, k, kind, &v)
			}
			reply(code)
		})
	})
}

// ShareReadResult is ReadShareGroupState's answer for one partition.
type ShareReadResult struct {
	ErrorCode             int16
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64 // -1: no state
	DeliveryCompleteCount int32
	Batches               []ShareStateBatch
}

// Read returns one share partition's state (ReadShareGroupState); a share
// partition with no state answers start offset -1 and state epoch 0, as
// Kafka does. A read at a leader epoch older than the last writer's is
// FENCED_LEADER_EPOCH; a newer one is remembered (fencing older writers).
func (c *ShareCoordinator) Read(ctx context.Context, k SharePartitionKey, leaderEpoch int32, summary bool) ShareReadResult {
	fail := func(code int16) ShareReadResult { return ShareReadResult{ErrorCode: code, StartOffset: -1} }
	if !validShareKey(k) {
		return fail(kerr.InvalidRequest.Code)
	}
	return onShareShard(ctx, c, k, fail, func(s *shareShard, reply func(ShareReadResult)) {
		st := s.states[k]
		if st == nil {
			reply(ShareReadResult{StartOffset: -1, LeaderEpoch: -1, DeliveryCompleteCount: -1})
			return
		}
		if !summary && leaderEpoch >= 0 {
			if st.leaderEpoch > leaderEpoch {
				reply(fail(kerr.FencedLeaderEpoch.Code))
				return
			}
			st.leaderEpoch = leaderEpoch
		}
		reply(ShareReadResult{StateEpoch: st.stateEpoch, LeaderEpoch: st.leaderEpoch, StartOffset: st.startOffset,
			DeliveryCompleteCount: st.deliveryCompleteCount, Batches: append([]ShareStateBatch(nil), st.batches...)})
	})
}

// Initialize sets a share partition's state epoch and start offset
// (InitializeShareGroupState): a fresh snapshot with no batches. A state
// epoch not above the current one is FENCED_STATE_EPOCH.
func (c *ShareCoordinator) Initialize(ctx context.Context, k SharePartitionKey, stateEpoch int32, startOffset int64) int16 {
	if !validShareKey(k) || startOffset < -1 {
		return kerr.InvalidRequest.Code
	}
	fail := func(code int16) int16 { return code }
	return onShareShard(ctx, c, k, fail, func(s *shareShard, reply func(int16)) {
		st := s.states[k]
		if st != nil && st.stateEpoch >= stateEpoch {
			reply(kerr.FencedStateEpoch.Code)
			return
		}
		now := s.now().UnixMilli()
		v := shareStateValue{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: startOffset,
			DeliveryCompleteCount: -1, CreateTimestamp: now, WriteTimestamp: now}
		if st != nil {
			v.SnapshotEpoch = st.snapshotEpoch + 1
			v.LeaderEpoch = st.leaderEpoch
		}
		rec := record{key: shareStateKey(keyShareSnapshot, k), value: encodeShareStateValue(keyShareSnapshot, &v)}
		s.write([]record{rec}, func(code int16) {
			if code == 0 {
				applyShareValue(s.states, k, keyShareSnapshot, &v)
			}
			reply(code)
		})
	})
}

// Delete removes a share partition's state (DeleteShareGroupState):
// tombstones for its snapshot and update keys. Deleting what is not there
// succeeds.
func (c *ShareCoordinator) Delete(ctx context.Context, k SharePartitionKey) int16 {
	if !validShareKey(k) {
		return kerr.InvalidRequest.Code
	}
	fail := func(code int16) int16 { return code }
	return onShareShard(ctx, c, k, fail, func(s *shareShard, reply func(int16)) {
		if s.states[k] == nil {
			reply(0)
			return
		}
		recs := []record{{key: shareStateKey(keyShareSnapshot, k)}, {key: shareStateKey(keyShareUpdate, k)}}
		s.write(recs, func(code int16) {
			if code == 0 {
				delete(s.states, k)
			}
			reply(code)
		})
	})
}

// Keys lists the share partitions with state in loaded shards (tests,
// describe).
func (c *ShareCoordinator) Keys() []SharePartitionKey {
	c.mu.Lock()
	shards := make([]*shareShard, 0, len(c.mu.shards))
	for _, s := range c.mu.shards {
		shards = append(shards, s)
	}
	c.mu.Unlock()
	var out []SharePartitionKey
	for _, s := range shards {
		if !s.isActive() {
			continue
		}
		s.call(func() {
			for k := range s.states {
				out = append(out, k)
			}
		})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.TopicID != b.TopicID {
			return string(a.TopicID[:]) < string(b.TopicID[:])
		}
		return a.Partition < b.Partition
	})
	return out
}

// The persister APIs over kmsg: each partition of a request is answered on
// its own (Kafka's coordinator splits requests the same way). A non-zero
// refuse answers every partition with that code and touches no state (the
// caller's authorization refused the request).

// HandleWrite answers WriteShareGroupState.
func (c *ShareCoordinator) HandleWrite(ctx context.Context, req *kmsg.WriteShareGroupStateRequest, refuse int16) *kmsg.WriteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if refuse != 0 {
				rp.ErrorCode = refuse
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			w := ShareWrite{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset, DeliveryCompleteCount: p.DeliveryCompleteCount}
			if req.Version < 1 {
				w.DeliveryCompleteCount = -1
			}
			for _, b := range p.StateBatches {
				w.Batches = append(w.Batches, ShareStateBatch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
			}
			rp.ErrorCode = c.Write(ctx, SharePartitionKey{req.GroupID, t.TopicID, p.Partition}, w)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// HandleRead answers ReadShareGroupState.
func (c *ShareCoordinator) HandleRead(ctx context.Context, req *kmsg.ReadShareGroupStateRequest, refuse int16) *kmsg.ReadShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			if refuse != 0 {
				rp.Partition, rp.ErrorCode = p.Partition, refuse
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			r := c.Read(ctx, SharePartitionKey{req.GroupID, t.TopicID, p.Partition}, p.LeaderEpoch, false)
			rp.Partition, rp.ErrorCode, rp.StateEpoch, rp.StartOffset = p.Partition, r.ErrorCode, r.StateEpoch, r.StartOffset
			for _, b := range r.Batches {
				sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
				sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
				rp.StateBatches = append(rp.StateBatches, sb)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// HandleReadSummary answers ReadShareGroupStateSummary.
func (c *ShareCoordinator) HandleReadSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest, refuse int16) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			if refuse != 0 {
				rp.Partition, rp.ErrorCode = p.Partition, refuse
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			r := c.Read(ctx, SharePartitionKey{req.GroupID, t.TopicID, p.Partition}, p.LeaderEpoch, true)
			rp.Partition, rp.ErrorCode, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = p.Partition, r.ErrorCode, r.StateEpoch, r.LeaderEpoch, r.StartOffset
			rp.DeliveryCompleteCount = r.DeliveryCompleteCount
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// HandleInitialize answers InitializeShareGroupState.
func (c *ShareCoordinator) HandleInitialize(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest, refuse int16) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if rp.ErrorCode = refuse; refuse == 0 {
				rp.ErrorCode = c.Initialize(ctx, SharePartitionKey{req.GroupID, t.TopicID, p.Partition}, p.StateEpoch, p.StartOffset)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// HandleDelete answers DeleteShareGroupState.
func (c *ShareCoordinator) HandleDelete(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest, refuse int16) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if rp.ErrorCode = refuse; refuse == 0 {
				rp.ErrorCode = c.Delete(ctx, SharePartitionKey{req.GroupID, t.TopicID, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
