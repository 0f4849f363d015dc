package coordinator

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the only source of time for the coordinator. Production code uses
// the system clock; tests inject a manual clock whose timers fire when the test
// advances it, so no test sleeps.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has elapsed, on a goroutine that is not
	// running coordinator code (f may block until the shard has run the
	// timer's event). f must not be called if Stop returned true.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}

// TopicMetadata is how the coordinator learns about data topics. The broker
// implements it over its metadata image. It is optional: when nil, commits to
// any topic/partition are accepted, OffsetCommit/OffsetFetch v10 (which name
// topics by ID) answer UNKNOWN_TOPIC_ID, and KIP-848 groups assign nothing.
type TopicMetadata interface {
	// TopicByName returns the topic's ID and partition count.
	TopicByName(name string) (id [16]byte, numPartitions int32, ok bool)
	// TopicByID returns the topic's name and partition count.
	TopicByID(id [16]byte) (name string, numPartitions int32, ok bool)
	// TopicNames lists every topic (for KIP-848 regex subscriptions).
	TopicNames() []string
}

// Config holds the coordinator's settings, named after Kafka's broker keys.
// Start from DefaultConfig; New fills a zero NumPartitions, Clock or Logger
// with defaults.
type Config struct {
	// NumPartitions is offsets.topic.num.partitions (default 50). It must
	// equal the partition count of __consumer_offsets, or groups map to the
	// wrong shard.
	NumPartitions int32
	// GroupMinSessionTimeout is group.min.session.timeout.ms (6s).
	GroupMinSessionTimeout time.Duration
	// GroupMaxSessionTimeout is group.max.session.timeout.ms (30m).
	GroupMaxSessionTimeout time.Duration
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms (3s).
	GroupInitialRebalanceDelay time.Duration
	// GroupMaxSize is group.max.size (MaxInt32).
	GroupMaxSize int
	// OffsetsRetention is offsets.retention.minutes (7 days).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms (10m).
	OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int

	// ConsumerGroupSessionTimeout is group.consumer.session.timeout.ms (45s)
	// for KIP-848 groups.
	ConsumerGroupSessionTimeout time.Duration
	// ConsumerGroupHeartbeatInterval is group.consumer.heartbeat.interval.ms (5s).
	ConsumerGroupHeartbeatInterval time.Duration
	// ConsumerGroupMaxSize is group.consumer.max.size (MaxInt32).
	ConsumerGroupMaxSize int

	// StreamsGroupSessionTimeout is group.streams.session.timeout.ms (45s)
	// for KIP-1071 streams groups.
	StreamsGroupSessionTimeout time.Duration
	// StreamsGroupHeartbeatInterval is group.streams.heartbeat.interval.ms (5s).
	StreamsGroupHeartbeatInterval time.Duration
	// StreamsGroupMaxSize is group.streams.max.size (MaxInt32).
	StreamsGroupMaxSize int
	// StreamsGroupNumStandbyReplicas is group.streams.num.standby.replicas (0).
	StreamsGroupNumStandbyReplicas int
	// StreamsGroupInitialRebalanceDelay is
	// group.streams.initial.rebalance.delay.ms (3s): a member joining an
	// empty streams group starts it, and no target assignment is computed
	// before it ends, so that the application's other members join first.
	// 0: none.
	StreamsGroupInitialRebalanceDelay time.Duration

	// GroupOverrides, if set, reads a group's dynamic group configs (consumer.* and
	// streams.* session timeouts, heartbeat intervals, standby replicas, initial rebalance
	// delay); it is called on the shard's goroutine and must not block.
	GroupOverrides func(group string) GroupOverrides

	// Topics resolves data topics; see TopicMetadata. May be nil.
	Topics TopicMetadata
	// Clock is the time source (system clock if nil).
	Clock Clock
	// Logger receives operator-level events (slog.Default if nil).
	Logger *slog.Logger
}

// DefaultConfig returns Kafka 4.x's defaults.
func DefaultConfig() Config {
	return Config{
		NumPartitions:                     50,
		GroupMinSessionTimeout:            6 * time.Second,
		GroupMaxSessionTimeout:            30 * time.Minute,
		GroupInitialRebalanceDelay:        3 * time.Second,
		GroupMaxSize:                      math.MaxInt32,
		OffsetsRetention:                  7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval:     10 * time.Minute,
		OffsetMetadataMaxBytes:            4096,
		ConsumerGroupSessionTimeout:       45 * time.Second,
		ConsumerGroupHeartbeatInterval:    5 * time.Second,
		ConsumerGroupMaxSize:              math.MaxInt32,
		StreamsGroupSessionTimeout:        45 * time.Second,
		StreamsGroupHeartbeatInterval:     5 * time.Second,
		StreamsGroupMaxSize:               math.MaxInt32,
		StreamsGroupInitialRebalanceDelay: 3 * time.Second,
	}
}

// ErrShardLoaded is returned by Load when the partition is already loaded or
// loading.
var ErrShardLoaded = errors.New("coordinator: partition already loaded")

// ErrClosed is returned by Load after Close.
var ErrClosed = errors.New("coordinator: closed")

// Coordinator routes group requests to the shards this broker leads.
type Coordinator struct {
	cfg Config
	log *slog.Logger
	// memberIDs replaces random member IDs in tests (nil in production).
	memberIDs func(clientID string) string
	// eventHook, when set by tests, runs after every shard event, still
	// inside the shard's serial section.
	eventHook atomic.Pointer[func(*shard)]

	mu struct {
		sync.Mutex
		// shards holds every partition that is loading or loaded here.
		// Invariant: a shard is in the map from the start of Load until
		// Unload (or a failed Load) removes it.
		shards map[int32]*shard
		closed bool
	}
}

// New returns a coordinator with no shards loaded.
func New(cfg Config) *Coordinator {
	def := DefaultConfig()
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = def.NumPartitions
	}
	if cfg.GroupMaxSessionTimeout <= 0 {
		cfg.GroupMaxSessionTimeout = def.GroupMaxSessionTimeout
	}
	if cfg.GroupMaxSize <= 0 {
		cfg.GroupMaxSize = def.GroupMaxSize
	}
	if cfg.OffsetsRetention <= 0 {
		cfg.OffsetsRetention = def.OffsetsRetention
	}
	if cfg.OffsetsRetentionCheckInterval <= 0 {
		cfg.OffsetsRetentionCheckInterval = def.OffsetsRetentionCheckInterval
	}
	if cfg.OffsetMetadataMaxBytes <= 0 {
		cfg.OffsetMetadataMaxBytes = def.OffsetMetadataMaxBytes
	}
	if cfg.ConsumerGroupSessionTimeout <= 0 {
		cfg.ConsumerGroupSessionTimeout = def.ConsumerGroupSessionTimeout
	}
	if cfg.ConsumerGroupHeartbeatInterval <= 0 {
		cfg.ConsumerGroupHeartbeatInterval = def.ConsumerGroupHeartbeatInterval
	}
	if cfg.StreamsGroupSessionTimeout <= 0 {
		cfg.StreamsGroupSessionTimeout = def.StreamsGroupSessionTimeout
	}
	if cfg.StreamsGroupHeartbeatInterval <= 0 {
		cfg.StreamsGroupHeartbeatInterval = def.StreamsGroupHeartbeatInterval
	}
	if cfg.StreamsGroupMaxSize <= 0 {
		cfg.StreamsGroupMaxSize = def.StreamsGroupMaxSize
	}
	if cfg.ConsumerGroupMaxSize <= 0 {
		cfg.ConsumerGroupMaxSize = def.ConsumerGroupMaxSize
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Coordinator{cfg: cfg, log: cfg.Logger.With("component", "coordinator")}
	c.mu.shards = make(map[int32]*shard)
	return c
}

// PartitionFor returns the __consumer_offsets partition that owns groupID:
// Utils.abs(groupID.hashCode()) % numPartitions, with Java's String.hashCode
// over UTF-16 code units, exactly as Kafka computes it (clients and other
// brokers depend on the same mapping through FindCoordinator).
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return partitionFor(groupID, c.cfg.NumPartitions)
}

func partitionFor(groupID string, numPartitions int32) int32 {
	h := javaStringHashCode(groupID)
	// Kafka's Utils.abs maps MinInt32 to 0 rather than overflowing.
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % numPartitions
}

func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			// Supplementary code point: Java strings hold it as a
			// surrogate pair, and hashCode iterates code units.
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// Load makes this broker the coordinator for a __consumer_offsets partition:
// it replays log from its start (requests for the partition's groups get
// COORDINATOR_LOAD_IN_PROGRESS meanwhile), then starts serving. Load blocks
// for the replay; the broker calls it from its own goroutine when it becomes
// leader of the partition. A failed replay leaves the partition unloaded.
func (c *Coordinator) Load(partition int32, log PartitionLog) error {
	if partition < 0 || partition >= c.cfg.NumPartitions {
		return fmt.Errorf("coordinator: partition %d out of range [0,%d)", partition, c.cfg.NumPartitions)
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
	s := newShard(c, partition, log)
	s.start()
	c.mu.shards[partition] = s
	c.mu.Unlock()

	start := c.cfg.Clock.Now()
	// The replay runs as the shard's first event, so an Unload meanwhile
	// waits for it instead of racing with it.
	var err error
	done := make(chan struct{})
	s.submit(func() {
		defer close(done)
		if s.unloaded {
			err = ErrClosed
			return
		}
		if err = s.replayGroups(); err == nil {
			s.activate()
		}
	})
	<-done
	if err != nil {
		c.mu.Lock()
		if c.mu.shards[partition] == s {
			delete(c.mu.shards, partition)
		}
		c.mu.Unlock()
		s.unload()
		c.log.Error("loading coordinator shard failed", "partition", partition, "err", err)
		return fmt.Errorf("coordinator: loading partition %d: %w", partition, err)
	}
	c.log.Debug("loaded coordinator shard", "partition", partition,
		"groups", s.numGroups(), "elapsed", c.cfg.Clock.Now().Sub(start))
	return nil
}

// Unload stops coordinating a partition (leadership moved away or the broker
// is stopping). Pending requests of its groups are answered NOT_COORDINATOR;
// later append completions from its PartitionLog are ignored.
func (c *Coordinator) Unload(partition int32) {
	c.mu.Lock()
	s := c.mu.shards[partition]
	delete(c.mu.shards, partition)
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.unload()
	c.log.Debug("unloaded coordinator shard", "partition", partition)
}

// Close unloads every shard. Later calls answer NOT_COORDINATOR.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.mu.closed = true
	shards := c.mu.shards
	c.mu.shards = make(map[int32]*shard)
	c.mu.Unlock()
	for _, s := range shards {
		s.unload()
	}
}

// lookup returns the shard owning groupID, or the Kafka error code to answer
// with: NOT_COORDINATOR when the partition is not led here,
// COORDINATOR_LOAD_IN_PROGRESS while it loads.
func (c *Coordinator) lookup(groupID string) (*shard, int16) {
	return c.lookupPartition(c.PartitionFor(groupID))
}

func (c *Coordinator) lookupPartition(p int32) (*shard, int16) {
	c.mu.Lock()
	s := c.mu.shards[p]
	c.mu.Unlock()
	if s == nil {
		return nil, errNotCoordinator
	}
	if !s.isActive() {
		return nil, errLoadInProgress
	}
	return s, 0
}

// allShards returns the loaded shards and whether any is still loading.
func (c *Coordinator) allShards() (active []*shard, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.mu.shards {
		if s.isActive() {
			active = append(active, s)
		} else {
			loading = true
		}
	}
	return active, loading
}
