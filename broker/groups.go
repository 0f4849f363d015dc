package broker

// Consumer groups: the broker hosts the coordinator's shards on the __consumer_offsets
// partitions it leads. The topic is created on first use (FindCoordinator for a group), as
// Kafka does, with offsets.topic.num.partitions partitions, compacted.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/coordinator"
	"sluice/internal/batch"
)

// offsetsTopic is Kafka's internal topic of committed offsets and group metadata.
const offsetsTopic = controller.ConsumerOffsetsTopic

func newCoordinator(b *Broker) *coordinator.Coordinator {
	s := b.cfg.Static
	cfg := coordinator.DefaultConfig()
	cfg.NumPartitions = s.OffsetsTopicNumPartitions
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	cfg.GroupMinSessionTimeout = ms(int64(s.GroupMinSessionTimeoutMs))
	cfg.GroupMaxSessionTimeout = ms(int64(s.GroupMaxSessionTimeoutMs))
	cfg.GroupInitialRebalanceDelay = ms(int64(s.GroupInitialRebalanceDelayMs))
	cfg.GroupMaxSize = int(s.GroupMaxSize)
	cfg.OffsetsRetention = time.Duration(s.OffsetsRetentionMinutes) * time.Minute
	cfg.OffsetsRetentionCheckInterval = ms(s.OffsetsRetentionCheckIntervalMs)
	cfg.OffsetMetadataMaxBytes = int(s.OffsetMetadataMaxBytes)
	cfg.ConsumerGroupSessionTimeout = ms(int64(s.GroupConsumerSessionTimeoutMs))
	cfg.ConsumerGroupHeartbeatInterval = ms(int64(s.GroupConsumerHeartbeatIntervalMs))
	cfg.ConsumerGroupMaxSize = int(s.GroupConsumerMaxSize)
	cfg.StreamsGroupSessionTimeout = ms(int64(s.Int32("group.streams.session.timeout.ms")))
	cfg.StreamsGroupHeartbeatInterval = ms(int64(s.Int32("group.streams.heartbeat.interval.ms")))
	cfg.StreamsGroupMaxSize = int(s.Int32("group.streams.max.size"))
	cfg.StreamsGroupNumStandbyReplicas = int(s.Int32("group.streams.num.standby.replicas"))
	cfg.StreamsGroupInitialRebalanceDelay = ms(int64(s.Int32("group.streams.initial.rebalance.delay.ms")))
	cfg.GroupOverrides = b.groupOverrides
	cfg.Topics = imageTopics{b.ctrl}
	cfg.Logger = b.logger.With("component", "coordinator")
	return coordinator.New(cfg)
}

// imageTopics answers the coordinator's topic questions from the newest metadata image.
type imageTopics struct{ ctrl Metadata }

func (t imageTopics) TopicByName(name string) ([16]byte, int32, bool) {
	topic := t.ctrl.Image().Topics[name]
	if topic == nil {
		return [16]byte{}, 0, false
	}
	return topic.ID, int32(len(topic.Partitions)), true
}

func (t imageTopics) TopicByID(id [16]byte) (string, int32, bool) {
	topic := t.ctrl.Image().TopicsByID[controller.TopicID(id)]
	if topic == nil {
		return "", 0, false
	}
	return topic.Name, int32(len(topic.Partitions)), true
}

// TopicNames lists every topic, internal ones included: Kafka resolves KIP-848 regex
// subscriptions against all topics, so a pattern naming __consumer_offsets matches it.
func (t imageTopics) TopicNames() []string {
	im := t.ctrl.Image()
	names := make([]string, 0, len(im.Topics))
	for name := range im.Topics {
		names = append(names, name)
	}
	return names
}

// ensureOffsetsTopic creates __consumer_offsets if it does not exist yet and waits until this
// node has applied it.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	if b.ctrl.Image().Topics[offsetsTopic] != nil {
		return nil
	}
	s := b.cfg.Static
	rf := s.OffsetsTopicReplicationFactor
	if brokers := int16(len(b.ctrl.Image().Brokers)); rf > brokers {
		rf = brokers // Kafka refuses until enough brokers are up; sluice serves with what it has
	}
	res, err := b.ctrl.CreateTopics(ctx, []controller.CreateTopic{{
		Name:              offsetsTopic,
		NumPartitions:     s.OffsetsTopicNumPartitions,
		ReplicationFactor: rf,
		Internal:          true,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.Itoa(int(s.OffsetsTopicSegmentBytes)),
		},
	}}, false)
	if err != nil {
		return err
	}
	if len(res) == 1 && res[0].Err != nil && res[0].Err != kerr.TopicAlreadyExists {
		return fmt.Errorf("creating %s: %w", offsetsTopic, res[0].Err)
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)
	return nil
}

// reconcileCoordinator loads the coordinator shards of the __consumer_offsets partitions this
// node leads and unloads the others. REQUIRES: called from reconcile only.
func (b *Broker) reconcileCoordinator(im *controller.Image) {
	want := map[int32]*Partition{}
	if topic := im.Topics[offsetsTopic]; topic != nil {
		for _, info := range topic.Partitions {
			if info.Leader != b.nodeID {
				continue
			}
			if p := b.partition(offsetsTopic, info.Partition); p != nil {
				want[info.Partition] = p
			}
		}
	}
	for partition, log := range b.coordinatorLoaded {
		if want[partition] != log.p {
			b.coord.Unload(partition)
			delete(b.coordinatorLoaded, partition)
		}
	}
	for partition, p := range want {
		if _, ok := b.coordinatorLoaded[partition]; ok {
			continue
		}
		log := &offsetsPartitionLog{b: b, p: p}
		b.coordinatorLoaded[partition] = log
		go func() {
			if err := b.coord.Load(partition, log); err != nil {
				b.logger.Error("loading group coordinator shard", "partition", partition, "err", err)
			}
		}()
	}
}

// offsetsPartitionLog is one __consumer_offsets partition as a coordinator shard sees it.
type offsetsPartitionLog struct {
	b *Broker
	p *Partition
}

// Append writes the coordinator's batch as an acks=all produce would (OriginCoordinator: no
// client rules) and reports when it is committed: at once when the HW is past it (with this
// node the only ISR member, always), otherwise when replication moves the HW past it, as a
// delayed operation bounded by offsets.commit.timeout.ms.
func (l *offsetsPartitionLog) Append(batchBytes []byte, done func(lastOffset int64, err error)) {
	res := l.p.appendAsLeader(replica.OriginCoordinator, true, batchBytes, 0, -1, -1)
	if res.errCode != 0 {
		if res.err != nil {
			done(-1, res.err)
		} else {
			done(-1, kerr.ErrorForCode(res.errCode))
		}
		return
	}
	info := res.info
	if err := info.Sync.Wait(); err != nil {
		done(-1, err)
		return
	}
	if info.HighWatermark > info.LastOffset {
		done(info.LastOffset, nil)
		return
	}
	w := &coordinatorAckWait{done: done, last: info.LastOffset, wait: replica.AckWait{Replica: l.p.replica,
		Required: info.LastOffset + 1, AppendEpoch: info.LeaderEpoch, MinInsync: l.p.settings.Load().MinInsyncReplicas}}
	timeout := time.Duration(l.b.cfg.Static.Int32("offsets.commit.timeout.ms")) * time.Millisecond
	l.b.purgatory.Add(w, []topicPartition{l.p.tp}, timeout)
}

// coordinatorAckWait is a coordinator append waiting for the HW.
type coordinatorAckWait struct {
	done func(lastOffset int64, err error)
	last int64
	wait replica.AckWait
}

// TryComplete implements replica.Operation.
func (w *coordinatorAckWait) TryComplete(expired bool) bool {
	if !w.wait.Check(expired) {
		return false
	}
	if w.wait.Err != nil {
		w.done(-1, w.wait.Err)
	} else {
		w.done(w.last, nil)
	}
	return true
}

// replayChunk is how many bytes Replay reads from the log at a time.
const replayChunk = 1 << 20

// Replay calls fn for every batch from the log start to the current end, control batches
// included (the coordinator resolves transactional offset commits at their markers).
func (l *offsetsPartitionLog) Replay(fn func(batch []byte) error) error {
	return replayPartition(l.p, fn)
}

// replayPartition calls fn for every whole batch of p's log from its start to its current end.
func replayPartition(p *Partition, fn func(batch []byte) error) error {
	log := p.log
	offset, end := log.LogStartOffset(), log.LogEndOffset()
	for offset < end {
		read, err := log.Read(offset, replayChunk, end, true)
		if err != nil {
			return err
		}
		if read.Bytes == 0 {
			return nil
		}
		buf := make([]byte, read.Bytes)
		pos := 0
		for _, s := range read.Slices {
			if _, err := s.File.ReadAt(buf[pos:pos+int(s.Length)], s.Position); err != nil {
				return err
			}
			pos += int(s.Length)
		}
		for len(buf) > 0 {
			h, err := batch.ParseHeader(buf)
			if err != nil {
				return err
			}
			if h.Size() > int64(len(buf)) {
				return fmt.Errorf("%s: batch at %d is %d bytes, read returned %d", p.tp, h.BaseOffset, h.Size(), len(buf))
			}
			one := buf[:h.Size()]
			buf = buf[h.Size():]
			next := h.NextOffset()
			if next <= offset {
				continue
			}
			if err := fn(one); err != nil {
				return err
			}
			offset = next
		}
	}
	return nil
}
