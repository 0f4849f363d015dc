package broker

// How a share partition's state reaches the persister (share_state.go) and comes back: see the
// durability paragraph of share_groups.go.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/coordinator"
	"sluice/coordinator/share"
)

// sharePersisted is one loaded share partition's persistence bookkeeping.
type sharePersisted struct {
	// wmu serialises the share partition's writes, so that a later write always carries a later
	// state. Never taken while holding shareGroups.mu.
	wmu sync.Mutex
	// The fields below are guarded by shareGroups.mu.

	// version counts the changes that must be persisted; persisted is the version the last
	// successful write carried. Invariant: persisted <= version.
	version, persisted uint64
	// leaderEpoch is the topic partition's leader epoch this share partition was loaded at: a
	// new epoch (leadership moved away and back) reloads it from the persister.
	leaderEpoch int32
	// stateEpoch is the persisted state epoch (bumped by AlterShareGroupOffsets).
	stateEpoch int32
}

func (k sharePartitionKey) coordinatorKey() coordinator.SharePartitionKey {
	return coordinator.SharePartitionKey{Group: k.group, TopicID: k.topicID, Partition: k.partition}
}

// markDirtyLocked records a change of key's share partition that must be persisted.
// REQUIRES: mu held.
func (sg *shareGroups) markDirtyLocked(key sharePartitionKey) {
	if ps := sg.mu.persist[key]; ps != nil {
		ps.version++
	}
}

// dropLocked forgets a share partition. REQUIRES: mu held.
func (sg *shareGroups) dropLocked(key sharePartitionKey) {
	delete(sg.mu.partitions, key)
	delete(sg.mu.persist, key)
}

// ensureLoaded makes key's share partition present in memory at the topic partition's current
// leader epoch: from its persisted state, or, with none, started from share.auto.offset.reset
// and that start persisted. It reports false when the persister could not answer (the share
// partition then acquires nothing until a later attempt).
func (sg *shareGroups) ensureLoaded(ctx context.Context, key sharePartitionKey, snap replica.Snapshot) bool {
	if sg.inMemory {
		return true // partitionLocked starts it
	}
	sg.mu.Lock()
	ps := sg.mu.persist[key]
	if ps != nil && sg.mu.partitions[key] != nil && ps.leaderEpoch == snap.LeaderEpoch {
		sg.mu.Unlock()
		return true
	}
	sg.mu.Unlock()

	res := sg.b.persistRead(ctx, key.coordinatorKey(), snap.LeaderEpoch)
	if res.ErrorCode != 0 {
		sg.b.logger.Debug("reading share partition state", "group", key.group, "topic_id", key.topicID,
			"partition", key.partition, "err", kerr.ErrorForCode(res.ErrorCode))
		return false
	}
	sg.mu.Lock()
	if ps := sg.mu.persist[key]; ps != nil && sg.mu.partitions[key] != nil && ps.leaderEpoch == snap.LeaderEpoch {
		sg.mu.Unlock()
		return true // loaded meanwhile
	}
	fresh := res.StartOffset < 0
	var sp *share.Partition
	if fresh {
		sg.dropLocked(key)
		sp = sg.partitionLocked(key, snap) // from share.auto.offset.reset
	} else {
		batches := make([]share.StateBatch, 0, len(res.Batches))
		for _, b := range res.Batches {
			batches = append(batches, share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
				State: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
		}
		var err error
		sp, err = share.RestorePartition(sg.partCfg, res.StartOffset, batches)
		if err == nil {
			sg.mu.partitions[key] = sp
			sp = sg.partitionLocked(key, snap) // group configs, log start
		}
	}
	if sp == nil {
		sg.mu.Unlock()
		return false
	}
	sg.mu.known[key] = true
	ps = &sharePersisted{leaderEpoch: snap.LeaderEpoch, stateEpoch: res.StateEpoch}
	if fresh {
		ps.version = 1
	}
	sg.mu.persist[key] = ps
	sg.mu.Unlock()
	if fresh {
		if code := sg.persist(ctx, key); code != 0 {
			sg.mu.Lock()
			if sg.mu.persist[key] == ps {
				sg.dropLocked(key)
			}
			sg.mu.Unlock()
			return false
		}
	}
	return true
}

// persist writes key's share partition state if it changed since the last write, and returns
// 0 or the error code to answer an acknowledgement with (as Kafka's SharePartition maps
// persister errors).
func (sg *shareGroups) persist(ctx context.Context, key sharePartitionKey) int16 {
	if sg.inMemory {
		return 0
	}
	sg.mu.Lock()
	ps := sg.mu.persist[key]
	sg.mu.Unlock()
	if ps == nil {
		return 0 // gone (deleted, or no longer led here): nothing to make durable here
	}
	ps.wmu.Lock()
	defer ps.wmu.Unlock()
	sg.mu.Lock()
	sp := sg.mu.partitions[key]
	if sp == nil || sg.mu.persist[key] != ps || ps.persisted >= ps.version {
		sg.mu.Unlock()
		return 0
	}
	v := ps.version
	w := coordinator.ShareWrite{StateEpoch: ps.stateEpoch, LeaderEpoch: ps.leaderEpoch, StartOffset: sp.StartOffset(),
		DeliveryCompleteCount: int32(sp.DoneInWindow())}
	for _, b := range sp.PersistedBatches() {
		w.Batches = append(w.Batches, coordinator.ShareStateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
			DeliveryState: int8(b.State), DeliveryCount: b.DeliveryCount})
	}
	sg.mu.Unlock()
	code := sg.b.persistWrite(ctx, key.coordinatorKey(), w)
	if code == 0 {
		sg.mu.Lock()
		ps.persisted = max(ps.persisted, v)
		sg.mu.Unlock()
		return 0
	}
	sg.b.logger.Warn("writing share partition state", "group", key.group, "topic_id", key.topicID,
		"partition", key.partition, "err", kerr.ErrorForCode(code))
	if code == kerr.FencedStateEpoch.Code || code == kerr.FencedLeaderEpoch.Code {
		// Another writer moved the state on (offsets altered, or a newer leader): what is in
		// memory here is stale, so the next fetch reloads it.
		sg.mu.Lock()
		if sg.mu.persist[key] == ps {
			sg.dropLocked(key)
		}
		sg.mu.Unlock()
	}
	switch code {
	case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.FencedStateEpoch.Code:
		return code
	case kerr.FencedLeaderEpoch.Code:
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownServerError.Code
}

// persistAsync persists keys in the background (lock timeouts: nothing waits to answer).
func (sg *shareGroups) persistAsync(keys []sharePartitionKey) {
	if len(keys) == 0 {
		return
	}
	go func() {
		for _, k := range keys {
			sg.persist(context.Background(), k)
		}
	}()
}

// persistAcked persists the share partitions whose acknowledgements were applied (code 0 in
// codes) and replaces each code by the persister's answer: an acknowledgement is answered as
// done only once it is durable.
func (sg *shareGroups) persistAcked(ctx context.Context, group string, codes map[share.TopicIDPartition]*int16) {
	for tp, code := range codes {
		if *code != 0 {
			continue
		}
		*code = sg.persist(ctx, sharePartitionKey{group, controller.TopicID(tp.TopicID), tp.Partition})
	}
}

// reconcile drops the share partitions of topic partitions this node no longer leads or that
// were deleted (their state is persisted; the next leader loads it), and deletes the persisted
// state of deleted topics' share partitions. Called from the broker's reconcile.
func (sg *shareGroups) reconcile(im *controller.Image) {
	var deleted []sharePartitionKey
	sg.mu.Lock()
	for key := range sg.mu.known {
		if t := im.TopicsByID[key.topicID]; t == nil || int(key.partition) >= len(t.Partitions) {
			delete(sg.mu.known, key)
			if sg.mu.partitions[key] == nil {
				deleted = append(deleted, key)
			}
		}
	}
	for key := range sg.mu.partitions {
		t := im.TopicsByID[key.topicID]
		if t == nil || int(key.partition) >= len(t.Partitions) {
			deleted = append(deleted, key)
			sg.dropLocked(key)
			continue
		}
		if t.Partitions[key.partition].Leader != sg.b.nodeID {
			sg.dropLocked(key)
		}
	}
	sg.mu.Unlock()
	if len(deleted) == 0 {
		return
	}
	go func() {
		for _, k := range deleted {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			sg.b.persistDelete(ctx, k.coordinatorKey())
			cancel()
		}
	}()
}

// watchConn closes member's share session when conn closes, unless a newer session replaced it,
// releasing the member's records on its partitions with their delivery counted.
func (sg *shareGroups) watchConn(conn interface{ OnClose(string, func()) }, group, member string, s *share.Session) {
	conn.OnClose("share-session\x00"+group+"\x00"+member, func() {
		sg.mu.Lock()
		key := share.SessionKey{Group: group, Member: member}
		if sg.mu.sessions.Get(key) != s {
			sg.mu.Unlock()
			return
		}
		sg.mu.sessions.Remove(key)
		// As Kafka 4.4 releases a lost session's records (KAFKA-19972): the deliveries count,
		// so a client that crashes on a record does not get it forever.
		var wake []topicPartition
		var changed []sharePartitionKey
		im := sg.b.ctrl.Image()
		for _, tp := range s.Partitions {
			pk := sharePartitionKey{group, controller.TopicID(tp.TopicID), tp.Partition}
			if sp := sg.mu.partitions[pk]; sp != nil && sp.ReleaseMemberCounted(member) {
				sg.markDirtyLocked(pk)
				changed = append(changed, pk)
				if t := im.TopicsByID[pk.topicID]; t != nil {
					wake = append(wake, topicPartition{t.Name, tp.Partition})
				}
			}
		}
		sg.scheduleLocked()
		sg.mu.Unlock()
		sg.wake(wake)
		sg.persistAsync(changed)
	})
}
