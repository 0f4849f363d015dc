package broker

// Replication throttles, as Kafka's ReplicationQuotaManager applies them (KIP-73), used by
// kafka-reassign-partitions --throttle:
//
//   - Which replicas: a topic's leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas list "partition:broker" pairs (or "*" for all).
//     A broker throttles, as leader, the partitions listed with its own ID in the leader list
//     and, as follower, those listed with its own ID in the follower list.
//   - How fast: the broker configs leader.replication.throttled.rate and
//     follower.replication.throttled.rate (bytes per second; dynamic only, per broker ID or as
//     the cluster default; unset is unlimited). Each is one quota per broker, shared by all its
//     throttled partitions, measured as Kafka's Rate over replication.quota.window.num samples
//     of replication.quota.window.size.seconds. Like Kafka's, it admits bursts: a move starts
//     with up to rate × (samples−1) × window bytes at full speed (measured: 40 MB moved at
//     --throttle 2000000 took 11.2 s, 0.15 s unthrottled), and averages the rate after that.
//   - Leader side (serving a follower fetch, follower_fetch.go's caller readTargets): a
//     throttled partition fetched by a replica outside its ISR gets no records while the
//     leader quota is exceeded; the bytes sent for throttled partitions are recorded.
//   - Follower side (fetcher.go): a throttled partition that has not caught up with the
//     leader's high watermark is left out of the fetch while the follower quota is exceeded
//     (and retried after replica.fetch.backoff.ms); the bytes fetched for throttled
//     partitions are recorded.
//
// In-sync replicas are never throttled, so a throttle slows only the replicas a reassignment
// adds, never acks=all produces.

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluice/broker/replica"
	"sluice/controller"
)

// Topic and broker keys of the throttles.
const (
	leaderThrottledReplicasKey   = "leader.replication.throttled.replicas"
	followerThrottledReplicasKey = "follower.replication.throttled.replicas"
	leaderThrottledRateKey       = "leader.replication.throttled.rate"
	followerThrottledRateKey     = "follower.replication.throttled.rate"
)

// rateMeter measures a byte rate as Kafka's Rate over a SampledStat does: samples of window
// each, at most samples of them kept; the rate is their total over the time they span, and
// that span is at least samples-1 windows (so one burst right after a quiet period is not
// measured over a tiny interval).
type rateMeter struct {
	clock   replica.Clock
	window  time.Duration
	samples int
	mu      struct {
		sync.Mutex
		// ring holds the kept samples. Invariant: len(ring) <= samples, starts increasing.
		ring []rateSample
	}
}

type rateSample struct {
	start time.Time
	bytes int64
}

func newRateMeter(clock replica.Clock, samples int, window time.Duration) *rateMeter {
	return &rateMeter{clock: clock, window: window, samples: max(samples, 2)}
}

// record adds bytes at now.
func (m *rateMeter) record(bytes int64) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	if n := len(m.mu.ring); n > 0 && now.Sub(m.mu.ring[n-1].start) < m.window {
		m.mu.ring[n-1].bytes += bytes
		return
	}
	if len(m.mu.ring) == m.samples {
		m.mu.ring = append(m.mu.ring[:0], m.mu.ring[1:]...)
	}
	m.mu.ring = append(m.mu.ring, rateSample{start: now, bytes: bytes})
}

// exceeded reports whether the measured rate is above bound bytes per second.
func (m *rateMeter) exceeded(bound int64) bool {
	if bound == math.MaxInt64 {
		return false
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	if len(m.mu.ring) == 0 {
		return false
	}
	var total int64
	for _, s := range m.mu.ring {
		total += s.bytes
	}
	elapsed := now.Sub(m.mu.ring[0].start)
	if full := time.Duration(m.samples-1) * m.window; elapsed < full {
		elapsed = full
	}
	return float64(total)/elapsed.Seconds() > float64(bound)
}

// purgeLocked drops samples older than the kept span. REQUIRES: m.mu held.
func (m *rateMeter) purgeLocked(now time.Time) {
	keep := time.Duration(m.samples) * m.window
	i := 0
	for i < len(m.mu.ring) && now.Sub(m.mu.ring[i].start) >= keep {
		i++
	}
	if i > 0 {
		m.mu.ring = append(m.mu.ring[:0], m.mu.ring[i:]...)
	}
}

// replicationThrottles are this broker's two replication quotas.
type replicationThrottles struct {
	leader, follower *rateMeter
	// leaderSkips and followerSkips count the partitions left without records (leader) or
	// out of a fetch (follower) by a throttle, for tests and status.
	leaderSkips, followerSkips atomic.Int64
}

func newReplicationThrottles(b *Broker) *replicationThrottles {
	samples := int(b.cfg.Static.Int32("replication.quota.window.num"))
	window := time.Duration(b.cfg.Static.Int32("replication.quota.window.size.seconds")) * time.Second
	return &replicationThrottles{leader: newRateMeter(b.clock, samples, window), follower: newRateMeter(b.clock, samples, window)}
}

// throttledReplica reports whether list (a *.replication.throttled.replicas value) names
// partition on broker: "*", or a "partition:broker" entry.
func throttledReplica(list string, partition, broker int32) bool {
	list = strings.TrimSpace(list)
	if list == "" {
		return false
	}
	if list == "*" {
		return true
	}
	for _, e := range strings.Split(list, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(e), ":")
		if !ok {
			continue
		}
		pn, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bn, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 == nil && err2 == nil && int32(pn) == partition && int32(bn) == broker {
			return true
		}
	}
	return false
}

// throttledRate is this broker's value of a throttle rate key: per broker, then the cluster
// default, else unlimited.
func (b *Broker) throttledRate(im *controller.Image, key string) int64 {
	perBroker, clusterDefault := b.dynamicBrokerConfigs(im)
	for _, m := range []map[string]string{perBroker, clusterDefault} {
		if v, ok := m[key]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
				return n
			}
		}
	}
	return math.MaxInt64
}

// leaderThrottled reports whether this broker throttles, as leader, partition of topic.
func (b *Broker) leaderThrottled(topic *controller.TopicInfo, partition int32) bool {
	return throttledReplica(topic.Configs[leaderThrottledReplicasKey], partition, b.nodeID)
}

// followerThrottled reports whether this broker throttles, as follower, partition of topic.
func (b *Broker) followerThrottled(topic *controller.TopicInfo, partition int32) bool {
	return throttledReplica(topic.Configs[followerThrottledReplicasKey], partition, b.nodeID)
}
