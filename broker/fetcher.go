package broker

// The replica fetchers, as Kafka's ReplicaFetcherManager and ReplicaFetcherThread.
//
// Every partition this node follows is fetched from its leader by one fetcher goroutine: there
// are num.replica.fetchers of them per source broker, and a partition goes to the one its
// topic and partition hash to. A fetcher connects to the leader's endpoint on the inter-broker
// listener (the image's endpoints, inter.broker.listener.name) with a franz-go client seeded
// to that one address, and sends raw requests with this node's replica ID (and, from Fetch
// v15, its broker epoch):
//
//   - Truncation first. A partition added at a new leader epoch (or after a restart) finds
//     where its log and the leader's part, as Kafka's fetcher does since 2.7 (KIP-320): its
//     first fetch carries its latest epoch as LastFetchedEpoch, and a leader that does not
//     hold that epoch up to the fetch offset answers DivergingEpoch (the leader's end of the
//     largest epoch not above it) instead of records. Without truncateOnFetch, or when one
//     answer is not enough, it asks with OffsetForLeaderEpoch (KIP-101/279). Either answer is
//     applied by truncationOffset: when the leader's epoch is older than the one asked about,
//     the follower cuts to its own end of that epoch and asks again.
//   - Then sessionless full fetches (SessionEpoch -1): from the log end, with the last
//     fetched epoch (the log's latest), replica.fetch.max.bytes per partition,
//     replica.fetch.response.max.bytes per response, replica.fetch.wait.max.ms and
//     replica.fetch.min.bytes. Records are appended unchanged (Replica.AppendAsFollower: the
//     leader's offsets, epochs, producer IDs and sequences) and the follower's HW becomes
//     min(leader HW, own log end), its log start the leader's (never past its HW), so what
//     retention or DeleteRecords removed on the leader does not come back. Every fetch
//     reports the follower's log start (LogStartOffset), which the leader's DeleteRecords
//     waits on (the low watermark). A DivergingEpoch
//     answer truncates as above; a fetch offset below the leader's log start restarts the log
//     empty there.
//   - A partition throttled as follower (throttle.go) that has not caught up with the leader's
//     HW is left out of a fetch while follower.replication.throttled.rate is exceeded, and
//     tried again after replica.fetch.backoff.ms; its fetched bytes count against the rate.
//   - After an error the fetcher (a connection problem) or the partition (a partition error)
//     waits replica.fetch.backoff.ms. A dead leader is retried with that backoff until a new
//     image moves the partition to another leader's fetcher.
//
// Each partition's fetch state has its own lock, taken for every append and truncation and by
// its removal: once a partition leaves a fetcher (it is removed, becomes leader, or follows a
// new epoch or leader), that fetcher writes nothing more to it, so a late response from an old
// leader can never land after the truncation for the new one. The queues are bounded by the
// partitions hosted: each is in at most one fetcher, once.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// replicaFetchers is the set of fetchers of this node (Kafka's ReplicaFetcherManager).
type replicaFetchers struct {
	b *Broker
	// truncateOnFetch: a partition with epochs in its log starts fetching at once and
	// truncates on a DivergingEpoch answer (Kafka's truncation on fetch, for leaders serving
	// Fetch v12+, which sluice always does); otherwise it asks OffsetForLeaderEpoch first.
	// Set before the first partition is added (tests cover both ways).
	truncateOnFetch bool
	wg              sync.WaitGroup
	mu              struct {
		sync.Mutex
		fetchers map[fetcherKey]*replicaFetcher
		// assigned says which fetcher holds each followed partition.
		// Invariant: tp is in assigned iff it is in exactly that fetcher's parts.
		assigned map[topicPartition]fetcherKey
		closed   bool
	}
}

// fetcherKey names one fetcher: the source broker and its index below num.replica.fetchers.
type fetcherKey struct {
	leader int32
	index  int
}

func newReplicaFetchers(b *Broker) *replicaFetchers {
	m := &replicaFetchers{b: b, truncateOnFetch: true}
	m.mu.fetchers = make(map[fetcherKey]*replicaFetcher)
	m.mu.assigned = make(map[topicPartition]fetcherKey)
	return m
}

// fetchState is one followed partition in its fetcher.
type fetchState struct {
	p       *Partition
	topicID controller.TopicID
	// epoch is the leader epoch followed; the leader fences fetches at another.
	epoch int32
	// lag is the leader's HW minus this log's end after the last applied fetch (Kafka's
	// FetcherLagMetrics ConsumerLag), -1 before the first; read by metrics without the lock.
	lag atomic.Int64

	mu struct {
		sync.Mutex
		// removed: the partition left the fetcher; nothing more is written for it.
		removed bool
		// truncating: the divergence with the leader is not resolved yet; no fetch until it is.
		truncating bool
		// retryAt delays the partition after a partition error.
		retryAt time.Time
		// caughtUp: the last fetch brought the log to the leader's high watermark (Kafka's
		// isReplicaInSync for its fetcher): a follower throttle no longer applies.
		caughtUp bool
	}
}

// apply makes the fetchers match the leadership info says for p, which was just applied to
// the replica: the leader's partitions and those without a leader are fetched by nobody; a
// follower's partition is fetched from its leader, starting with truncation whenever the
// leader or the epoch changed.
func (m *replicaFetchers) apply(p *Partition, info *controller.PartitionInfo) {
	if info.Leader == m.b.nodeID || info.Leader < 0 {
		m.remove(p.tp)
		return
	}
	key := fetcherKey{leader: info.Leader, index: fetcherIndex(p.tp, m.b.cfg.Static.NumReplicaFetchers)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	if old, ok := m.mu.assigned[p.tp]; ok {
		f := m.mu.fetchers[old]
		f.mu.Lock()
		st := f.mu.parts[p.tp]
		same := old == key && st.p == p && st.epoch == info.LeaderEpoch
		f.mu.Unlock()
		if same {
			return
		}
		m.removeLocked(p.tp)
	}
	f := m.mu.fetchers[key]
	if f == nil {
		f = newReplicaFetcher(m, key)
		m.mu.fetchers[key] = f
		m.wg.Add(1)
		go f.run()
	}
	st := &fetchState{p: p, topicID: p.topicID, epoch: info.LeaderEpoch}
	st.lag.Store(-1)
	st.mu.truncating = !m.truncateOnFetch || p.log.LatestEpoch() < 0
	f.mu.Lock()
	f.mu.parts[p.tp] = st
	f.mu.Unlock()
	m.mu.assigned[p.tp] = key
	f.signal()
}

// remove takes tp out of its fetcher, if any; once it returns nothing more is written to tp's
// log by a fetcher.
func (m *replicaFetchers) remove(tp topicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(tp)
}

// REQUIRES: m.mu held.
func (m *replicaFetchers) removeLocked(tp topicPartition) {
	key, ok := m.mu.assigned[tp]
	if !ok {
		return
	}
	delete(m.mu.assigned, tp)
	f := m.mu.fetchers[key]
	f.mu.Lock()
	st := f.mu.parts[tp]
	delete(f.mu.parts, tp)
	empty := len(f.mu.parts) == 0
	f.mu.Unlock()
	st.mu.Lock() // waits for an append or truncation in progress
	st.mu.removed = true
	st.mu.Unlock()
	if empty {
		delete(m.mu.fetchers, key)
		f.stop()
	}
}

// close stops every fetcher and waits for them.
func (m *replicaFetchers) close() {
	m.mu.Lock()
	m.mu.closed = true
	for tp := range m.mu.assigned {
		m.removeLocked(tp)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// followed returns, for tests and status, the leader and epoch each partition is fetched at.
func (m *replicaFetchers) followed(tp topicPartition) (leader int32, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key, ok := m.mu.assigned[tp]
	return key.leader, ok
}

// fetcherIndex spreads partitions over n fetchers per source broker.
func fetcherIndex(tp topicPartition, n int32) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(tp.topic))
	return int((h.Sum32()*31 + uint32(tp.partition)) % uint32(n))
}

// replicaFetcher fetches the partitions this node follows from one leader (Kafka's
// ReplicaFetcherThread).
type replicaFetcher struct {
	m      *replicaFetchers
	key    fetcherKey
	wake   chan struct{} // capacity 1: a partition was added
	stopCh chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	mu struct {
		sync.Mutex
		parts map[topicPartition]*fetchState
	}

	// Owned by run's goroutine.
	client     *kgo.Client
	clientAddr string
}

func newReplicaFetcher(m *replicaFetchers, key fetcherKey) *replicaFetcher {
	f := &replicaFetcher{m: m, key: key, wake: make(chan struct{}, 1), stopCh: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.mu.parts = make(map[topicPartition]*fetchState)
	return f
}

func (f *replicaFetcher) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// stop ends the fetcher: an in-flight request is cancelled.
func (f *replicaFetcher) stop() {
	close(f.stopCh)
	f.cancel()
}

// errLeaderUnreachable is a fetcher without an address for its leader.
var errLeaderUnreachable = errors.New("replica fetcher: the leader has no endpoint on the inter-broker listener")

func (f *replicaFetcher) run() {
	defer f.m.wg.Done()
	defer func() {
		if f.client != nil {
			f.client.Close()
		}
	}()
	b := f.m.b
	backoff := time.Duration(b.cfg.Static.ReplicaFetchBackoffMs) * time.Millisecond
	for {
		select {
		case <-f.stopCh:
			return
		default:
		}
		ready, nextRetry := f.readyParts()
		if len(ready) == 0 {
			var retry <-chan time.Time
			var t *time.Timer
			if !nextRetry.IsZero() {
				t = time.NewTimer(time.Until(nextRetry))
				retry = t.C
			}
			select {
			case <-f.stopCh:
			case <-f.wake:
			case <-retry:
			}
			if t != nil {
				t.Stop()
			}
			continue
		}
		err := f.round(ready)
		if err == nil {
			continue
		}
		if f.ctx.Err() == nil {
			b.logger.Warn("replica fetcher: fetch from leader failed", "leader", f.key.leader, "err", err, "backoff", backoff)
			b.suspectLeader(f.key.leader)
		}
		if f.client != nil {
			f.client.Close()
			f.client = nil // reconnect, possibly to a new address, after the backoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-f.stopCh:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// readyParts returns the partitions that may be fetched or truncated now, and the earliest
// retry time of those waiting.
func (f *replicaFetcher) readyParts() (ready map[topicPartition]*fetchState, nextRetry time.Time) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	ready = make(map[topicPartition]*fetchState, len(f.mu.parts))
	for tp, st := range f.mu.parts {
		st.mu.Lock()
		at := st.mu.retryAt
		st.mu.Unlock()
		if at.After(now) {
			if nextRetry.IsZero() || at.Before(nextRetry) {
				nextRetry = at
			}
			continue
		}
		ready[tp] = st
	}
	return ready, nextRetry
}

// round truncates the partitions that need it, then fetches the others once. A Go error is a
// connection problem: the caller backs off.
func (f *replicaFetcher) round(ready map[topicPartition]*fetchState) error {
	br, err := f.leaderBroker()
	if err != nil {
		return err
	}
	var truncate, fetch []topicPartition
	for tp, st := range ready {
		st.mu.Lock()
		if st.mu.truncating {
			truncate = append(truncate, tp)
		} else {
			fetch = append(fetch, tp)
		}
		st.mu.Unlock()
	}
	if len(truncate) > 0 {
		if err := f.truncate(br, ready, truncate); err != nil {
			return err
		}
	}
	if len(fetch) > 0 {
		return f.fetch(br, ready, fetch)
	}
	return nil
}

// leaderBroker returns the connection to the leader, made from the newest image's endpoint.
func (f *replicaFetcher) leaderBroker() (*kgo.Broker, error) {
	b := f.m.b
	addr := leaderAddress(b.ctrl.Image(), f.key.leader, b.cfg.Static.InterBrokerListenerName)
	if addr == "" {
		return nil, fmt.Errorf("%w (broker %d)", errLeaderUnreachable, f.key.leader)
	}
	if f.client != nil && f.clientAddr != addr {
		f.client.Close()
		f.client = nil
	}
	if f.client == nil {
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.ClientID(fmt.Sprintf("sluice-replica-fetcher-%d-%d-%d", b.nodeID, f.key.leader, f.key.index)),
			// A response holds up to replica.fetch.response.max.bytes, or one partition's first
			// batch when that is larger (replica.fetch.max.bytes or message.max.bytes).
			kgo.FetchMaxBytes(b.cfg.Static.ReplicaFetchResponseMaxBytes),
			kgo.BrokerMaxReadBytes(max(b.cfg.Static.ReplicaFetchResponseMaxBytes, b.cfg.Static.ReplicaFetchMaxBytes, b.cfg.Static.Int32("message.max.bytes")) + 1<<20),
		}, b.cfg.PeerClientOpts...)...)
		if err != nil {
			return nil, err
		}
		f.client, f.clientAddr = cl, addr
	}
	seeds := f.client.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errLeaderUnreachable
	}
	return seeds[0], nil
}

// leaderAddress is broker id's host:port on listener in im, or "".
func leaderAddress(im *controller.Image, id int32, listener string) string {
	info := im.Brokers[id]
	if info == nil {
		return ""
	}
	for _, ep := range info.Endpoints {
		if ep.Listener == listener {
			return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		}
	}
	return ""
}

// partitionBackoff delays st after a partition error (err, nil when there is none).
func (f *replicaFetcher) partitionBackoff(st *fetchState, err error) {
	st.mu.Lock()
	st.mu.retryAt = time.Now().Add(partitionRetryDelay(err, time.Duration(f.m.b.cfg.Static.ReplicaFetchBackoffMs)*time.Millisecond))
	st.mu.Unlock()
}

// leaderCatchUpRetry is how soon a partition is retried when the leader answered with an
// error that means it has not applied the metadata this follower acts on yet.
const leaderCatchUpRetry = 20 * time.Millisecond

// partitionRetryDelay is how long a partition waits after err: replica.fetch.backoff.ms
// (backoff), except for the errors a leader answers in the moment after a leadership change,
// before it applied the image this follower already has (NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_LEADER_EPOCH, FENCED_LEADER_EPOCH): those clear within milliseconds, and waiting a
// whole backoff there holds acks=all produces on the new leader back for as long.
func partitionRetryDelay(err error, backoff time.Duration) time.Duration {
	if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.UnknownLeaderEpoch) || errors.Is(err, kerr.FencedLeaderEpoch) {
		return min(backoff, leaderCatchUpRetry)
	}
	return backoff
}

// truncate resolves the divergence of tps with the leader through OffsetForLeaderEpoch.
func (f *replicaFetcher) truncate(br *kgo.Broker, states map[topicPartition]*fetchState, tps []topicPartition) error {
	b := f.m.b
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = b.nodeID
	byTopic := map[string]int{}
	for _, tp := range tps {
		st := states[tp]
		latest := st.p.log.LatestEpoch()
		if latest < 0 {
			// Nothing with an epoch in the log: nothing can diverge.
			st.mu.Lock()
			st.mu.truncating = false
			st.mu.Unlock()
			continue
		}
		i, ok := byTopic[tp.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = tp.topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tp.partition, st.epoch, latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	kresp, err := br.Request(f.ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			st := states[topicPartition{rt.Topic, rp.Partition}]
			if st == nil {
				continue
			}
			if rp.ErrorCode != 0 {
				b.logger.Debug("replica fetcher: OffsetForLeaderEpoch refused", "partition", st.p.tp.String(), "err", kerr.ErrorForCode(rp.ErrorCode))
				f.partitionBackoff(st, kerr.ErrorForCode(rp.ErrorCode))
				continue
			}
			f.truncateToLeaderEpochEnd(st, rp.LeaderEpoch, rp.EndOffset)
		}
	}
	return nil
}

// truncateToLeaderEpochEnd truncates st's log where it diverges from the leader's, given the
// leader's end (leaderEpoch, leaderEnd) of the epoch the follower asked about
// (truncationOffset), and leaves truncation once it is complete.
func (f *replicaFetcher) truncateToLeaderEpochEnd(st *fetchState, leaderEpoch int32, leaderEnd int64) {
	offset, complete := truncationOffset(st.p, leaderEpoch, leaderEnd)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.removed {
		return
	}
	if offset < st.p.log.LogEndOffset() {
		if err := st.p.replica.TruncateTo(offset); err != nil {
			f.m.b.logger.Warn("replica fetcher: truncation failed", "partition", st.p.tp.String(), "offset", offset, "err", err)
			st.mu.retryAt = time.Now().Add(time.Duration(f.m.b.cfg.Static.ReplicaFetchBackoffMs) * time.Millisecond)
			return
		}
		f.m.b.logger.Info("replica fetcher: truncated a divergent log", "partition", st.p.tp.String(), "offset", offset,
			"leader", f.key.leader, "leaderEpoch", st.epoch)
	}
	st.mu.truncating = !complete
}

// truncationOffset is where a follower cuts its log, given the leader's end offset of the
// follower's latest epoch (Kafka's AbstractFetcherThread.getOffsetTruncationState):
//
//   - the leader cannot place the epoch (UNDEFINED): the follower's HW, all it knows is
//     committed;
//   - the leader answers with an older epoch than asked: the follower's own end of that epoch
//     (if it has it), and another round, since the epochs below may diverge too;
//   - the same epoch: the smaller of the leader's and the follower's end of it, complete.
func truncationOffset(p *Partition, leaderEpoch int32, leaderEnd int64) (offset int64, complete bool) {
	s := p.replica.Snapshot()
	if leaderEpoch < 0 || leaderEnd < 0 {
		return s.HighWatermark, true
	}
	followerEpoch, followerEnd := p.log.EndOffsetForEpoch(leaderEpoch)
	switch {
	case followerEnd < 0:
		return s.HighWatermark, true
	case followerEpoch != leaderEpoch:
		return followerEnd, false
	default:
		return min(leaderEnd, followerEnd), true
	}
}

// fetch sends one Fetch for tps and applies the response.
func (f *replicaFetcher) fetch(br *kgo.Broker, states map[topicPartition]*fetchState, tps []topicPartition) error {
	b := f.m.b
	st := b.cfg.Static
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = b.nodeID
	req.ReplicaState.ID, req.ReplicaState.Epoch = b.nodeID, b.brokerEpoch()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = st.ReplicaFetchWaitMaxMs, st.ReplicaFetchMinBytes, st.ReplicaFetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1 // full fetches, no session
	slices.SortFunc(tps, func(a, c topicPartition) int {
		if a.topic != c.topic {
			if a.topic < c.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - c.partition)
	})
	// Follower throttle (throttle.go): a throttled partition that has not caught up stays
	// out of the fetch while the quota is exceeded.
	im := b.ctrl.Image()
	overQuota := b.throttles.follower.exceeded(b.throttledRate(im, followerThrottledRateKey))
	throttled := map[topicPartition]bool{}
	kept := tps[:0]
	for _, tp := range tps {
		s := states[tp]
		if topic := im.TopicsByID[s.topicID]; topic != nil && b.followerThrottled(topic, tp.partition) {
			throttled[tp] = true
			s.mu.Lock()
			caughtUp := s.mu.caughtUp
			s.mu.Unlock()
			if !caughtUp && overQuota {
				b.throttles.followerSkips.Add(1)
				f.partitionBackoff(s, nil)
				continue
			}
		}
		kept = append(kept, tp)
	}
	tps = kept
	if len(tps) == 0 {
		return nil
	}
	byTopic := map[string]int{}
	byID := map[controller.TopicID]string{}
	for _, tp := range tps {
		s := states[tp]
		i, ok := byTopic[tp.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = tp.topic, s.topicID
			req.Topics = append(req.Topics, t)
			byID[s.topicID] = tp.topic
		}
		snap := s.p.replica.Snapshot()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = tp.partition, s.epoch
		rp.FetchOffset, rp.LogStartOffset = snap.LogEnd, snap.LogStart
		rp.LastFetchedEpoch = s.p.log.LatestEpoch()
		rp.PartitionMaxBytes = st.ReplicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	kresp, err := br.Request(f.ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return fmt.Errorf("fetch from leader %d: %w", f.key.leader, kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, rt := range resp.Topics {
		name := rt.Topic
		if n, ok := byID[controller.TopicID(rt.TopicID)]; ok && rt.TopicID != [16]byte{} {
			name = n
		}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			tp := topicPartition{name, rp.Partition}
			s := states[tp]
			if s == nil {
				continue
			}
			if throttled[tp] {
				b.throttles.follower.record(int64(len(rp.RecordBatches)))
			}
			f.applyFetched(s, rp)
		}
	}
	return nil
}

// offsetOutOfRange handles a fetch offset outside the leader's log. Below the leader's log
// start (retention or DeleteRecords ran there while this follower was behind), the log starts
// over empty at the leader's log start, as Kafka's fetcher does; otherwise (past the leader's
// end) the divergence is resolved again by epochs.
func (f *replicaFetcher) offsetOutOfRange(st *fetchState, leaderLogStart int64) {
	b := f.m.b
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.removed {
		return
	}
	if leaderLogStart > st.p.log.LogEndOffset() {
		if err := st.p.replica.TruncateFullyAndStartAt(leaderLogStart); err != nil {
			b.logger.Warn("replica fetcher: restarting the log at the leader's log start failed", "partition", st.p.tp.String(), "offset", leaderLogStart, "err", err)
			st.mu.retryAt = time.Now().Add(time.Duration(b.cfg.Static.ReplicaFetchBackoffMs) * time.Millisecond)
			return
		}
		b.logger.Info("replica fetcher: log behind the leader's log start, restarted there", "partition", st.p.tp.String(), "offset", leaderLogStart, "leader", f.key.leader)
		return
	}
	st.mu.truncating = true
	st.mu.retryAt = time.Now().Add(time.Duration(b.cfg.Static.ReplicaFetchBackoffMs) * time.Millisecond)
}

// applyFetched applies one partition of a fetch response.
func (f *replicaFetcher) applyFetched(st *fetchState, rp *kmsg.FetchResponseTopicPartition) {
	b := f.m.b
	if rp.ErrorCode != 0 {
		err := kerr.ErrorForCode(rp.ErrorCode)
		if errors.Is(err, kerr.OffsetOutOfRange) {
			f.offsetOutOfRange(st, rp.LogStartOffset)
			return
		}
		b.logger.Debug("replica fetcher: partition error", "partition", st.p.tp.String(), "leader", f.key.leader, "err", err)
		f.partitionBackoff(st, err)
		return
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		// KIP-320: truncate where the leader says the epoch ends; when that is not the whole
		// answer the next round asks OffsetForLeaderEpoch.
		before := st.p.log.LogEndOffset()
		f.truncateToLeaderEpochEnd(st, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		if st.p.log.LogEndOffset() == before {
			// Nothing to cut by this answer (the follower has no epoch at or below the
			// leader's and is at its HW): wait before asking again rather than spin.
			f.partitionBackoff(st, nil)
		}
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.removed {
		return
	}
	if _, err := st.p.replica.AppendAsFollower(rp.RecordBatches, rp.HighWatermark); err != nil {
		b.logger.Warn("replica fetcher: append failed", "partition", st.p.tp.String(), "err", err)
		st.mu.retryAt = time.Now().Add(time.Duration(b.cfg.Static.ReplicaFetchBackoffMs) * time.Millisecond)
		return
	}
	logEnd := st.p.log.LogEndOffset()
	st.mu.caughtUp = logEnd >= rp.HighWatermark
	st.lag.Store(max(rp.HighWatermark-logEnd, 0))
	if err := st.p.replica.FollowLeaderLogStart(rp.LogStartOffset); err != nil {
		// Backed off: the leader answers a follower behind its log start at once, so
		// retrying at once would spin on a failing disk.
		b.logger.Warn("replica fetcher: moving the log start to the leader's failed", "partition", st.p.tp.String(), "offset", rp.LogStartOffset, "err", err)
		st.mu.retryAt = time.Now().Add(time.Duration(b.cfg.Static.ReplicaFetchBackoffMs) * time.Millisecond)
	}
}
