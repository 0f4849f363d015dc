package broker

// Transactions: the broker hosts the transaction coordinator's shards on the
// __transaction_state partitions it leads (coordinator.TxnCoordinator), creates that topic on
// first use (FindCoordinator for a transactional ID) as Kafka does, writes the coordinator's
// markers to each partition's leader (WriteTxnMarkers, locally or over the inter-broker
// listener), verifies transactional produces with the coordinator that owns their
// transactional ID (KIP-890), and tells the group coordinator when a marker lands on
// __consumer_offsets so that transactional offsets become visible or are dropped.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/coordinator"
)

// txnTopic is Kafka's internal topic of transaction state.
const txnTopic = coordinator.TxnTopicName

// transactionVersion is the finalized transaction.version feature level this broker
// advertises in ApiVersions: 2 is KIP-890 part 2, as Kafka 4.x clusters finalize it.
const transactionVersion = 2

func newTxnCoordinator(b *Broker) *coordinator.TxnCoordinator {
	s := b.cfg.Static
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	cfg := coordinator.DefaultTxnConfig()
	cfg.NumPartitions = s.TransactionStateLogNumPartitions
	cfg.MaxTimeout = ms(int64(s.TransactionMaxTimeoutMs))
	cfg.AbortTimedOutInterval = ms(int64(s.Int32("transaction.abort.timed.out.transaction.cleanup.interval.ms")))
	cfg.RemoveExpiredInterval = ms(int64(s.Int32("transaction.remove.expired.transaction.cleanup.interval.ms")))
	cfg.IDExpiration = ms(int64(s.Int32("transactional.id.expiration.ms")))
	cfg.TransactionVersion2 = transactionVersion >= 2
	cfg.ProducerIDs = b.nextProducerID
	cfg.Markers = &brokerMarkers{b: b}
	cfg.OffsetsPartitionFor = b.coord.PartitionFor
	cfg.Topics = imageTopics{b.ctrl}
	cfg.Logger = b.logger.With("component", "txn-coordinator")
	return coordinator.NewTxn(cfg)
}

// ensureTxnTopic creates __transaction_state if it does not exist yet and waits until this node
// has applied it. Its replication factor is transaction.state.log.replication.factor, capped to
// the registered brokers as ensureOffsetsTopic caps offsets.topic.replication.factor, and its
// min.insync.replicas transaction.state.log.min.isr, capped to that replication factor.
func (b *Broker) ensureTxnTopic(ctx context.Context) error {
	if b.ctrl.Image().Topics[txnTopic] != nil {
		return nil
	}
	s := b.cfg.Static
	rf := s.TransactionStateLogReplicationFactor
	if brokers := int16(len(b.ctrl.Image().Brokers)); rf > brokers {
		rf = brokers
	}
	minISR := min(s.TransactionStateLogMinISR, int32(rf))
	res, err := b.ctrl.CreateTopics(ctx, []controller.CreateTopic{{
		Name:              txnTopic,
		NumPartitions:     s.TransactionStateLogNumPartitions,
		ReplicationFactor: rf,
		Internal:          true,
		Configs: map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "producer",
			"min.insync.replicas": strconv.Itoa(int(minISR)),
			"segment.bytes":       strconv.Itoa(int(s.TransactionStateLogSegmentBytes)),
		},
	}}, false)
	if err != nil {
		return err
	}
	if len(res) == 1 && res[0].Err != nil && res[0].Err != kerr.TopicAlreadyExists {
		return fmt.Errorf("creating %s: %w", txnTopic, res[0].Err)
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)
	return nil
}

// txnLoaded is a __transaction_state partition whose shard is loaded here, at a leader epoch.
type txnLoaded struct {
	log   *offsetsPartitionLog
	epoch int32
}

// reconcileTxnCoordinator loads the shards of the __transaction_state partitions this node
// leads (their leader epoch is the coordinator epoch markers carry) and unloads the others.
// REQUIRES: called from reconcile only.
func (b *Broker) reconcileTxnCoordinator(im *controller.Image) {
	type want struct {
		p     *Partition
		epoch int32
	}
	wanted := map[int32]want{}
	if topic := im.Topics[txnTopic]; topic != nil {
		for _, info := range topic.Partitions {
			if info.Leader != b.nodeID {
				continue
			}
			if p := b.partition(txnTopic, info.Partition); p != nil {
				wanted[info.Partition] = want{p, info.LeaderEpoch}
			}
		}
	}
	for partition, l := range b.txnLoaded {
		if w, ok := wanted[partition]; !ok || w.p != l.log.p || w.epoch != l.epoch {
			b.txnCoord.Unload(partition)
			delete(b.txnLoaded, partition)
		}
	}
	for partition, w := range wanted {
		if _, ok := b.txnLoaded[partition]; ok {
			continue
		}
		log := &offsetsPartitionLog{b: b, p: w.p}
		b.txnLoaded[partition] = txnLoaded{log: log, epoch: w.epoch}
		go func() {
			if err := b.txnCoord.Load(partition, w.epoch, log); err != nil && !errors.Is(err, coordinator.ErrClosed) {
				b.logger.Error("loading transaction coordinator shard", "partition", partition, "err", err)
			}
		}()
	}
}

// txnCoordinatorNode returns the node leading the __transaction_state partition of id.
func (b *Broker) txnCoordinatorNode(id string) (int32, bool) {
	topic := b.ctrl.Image().Topics[txnTopic]
	partition := b.txnCoord.PartitionFor(id)
	if topic == nil || int(partition) >= len(topic.Partitions) {
		return -1, false
	}
	leader := topic.Partitions[partition].Leader
	return leader, leader >= 0
}

// peerClients are kgo clients to other brokers' inter-broker listeners, one per node, for the
// transaction coordinator's markers and the partitions' verification requests.
type peerClients struct {
	mu      sync.Mutex
	clients map[int32]*peerClient // Guarded by mu.
}

type peerClient struct {
	addr string
	cl   *kgo.Client
}

// peer returns a client to node id (reconnecting when its address changed).
func (b *Broker) peer(id int32) (*kgo.Client, error) {
	addr := leaderAddress(b.ctrl.Image(), id, b.cfg.Static.InterBrokerListenerName)
	if addr == "" {
		return nil, fmt.Errorf("%w (broker %d)", errLeaderUnreachable, id)
	}
	pc := &b.peers
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.clients == nil {
		pc.clients = map[int32]*peerClient{}
	}
	if c := pc.clients[id]; c != nil {
		if c.addr == addr {
			return c.cl, nil
		}
		c.cl.Close()
		delete(pc.clients, id)
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("sluice-txn-%d-%d", b.nodeID, id))}, b.cfg.PeerClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	pc.clients[id] = &peerClient{addr: addr, cl: cl}
	return cl, nil
}

func (pc *peerClients) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for id, c := range pc.clients {
		c.cl.Close()
		delete(pc.clients, id)
	}
}

// brokerMarkers writes the transaction coordinator's markers: one WriteTxnMarkers request per
// partition leader, served locally when the leader is this node.
type brokerMarkers struct{ b *Broker }

// markerRequestTimeout bounds one round of marker writes; the coordinator retries what fails.
const markerRequestTimeout = 30 * time.Second

// WriteTxnMarkers implements coordinator.TxnMarkerWriter.
func (w *brokerMarkers) WriteTxnMarkers(ctx context.Context, m coordinator.TxnMarker) map[coordinator.TopicPartition]error {
	b := w.b
	ctx, cancel := context.WithTimeout(ctx, markerRequestTimeout)
	defer cancel()
	failed := map[coordinator.TopicPartition]error{}
	im := b.ctrl.Image()
	byLeader := map[int32][]coordinator.TopicPartitions{}
	for _, tp := range m.Partitions {
		topic := im.Topics[tp.Topic]
		for _, p := range tp.Partitions {
			key := coordinator.TopicPartition{Topic: tp.Topic, Partition: p}
			if topic == nil || int(p) >= len(topic.Partitions) {
				failed[key] = kerr.UnknownTopicOrPartition
				continue
			}
			leader := topic.Partitions[p].Leader
			if leader < 0 {
				failed[key] = kerr.LeaderNotAvailable
				continue
			}
			parts := byLeader[leader]
			if n := len(parts); n > 0 && parts[n-1].Topic == tp.Topic {
				parts[n-1].Partitions = append(parts[n-1].Partitions, p)
			} else {
				parts = append(parts, coordinator.TopicPartitions{Topic: tp.Topic, Partitions: []int32{p}})
			}
			byLeader[leader] = parts
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, parts := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := b.writeMarkersTo(ctx, leader, m, parts)
			mu.Lock()
			defer mu.Unlock()
			for k, err := range got {
				failed[k] = err
			}
		}()
	}
	wg.Wait()
	return failed
}

// writeMarkersTo sends one WriteTxnMarkers for parts to leader and returns the partitions that
// did not take their marker.
func (b *Broker) writeMarkersTo(ctx context.Context, leader int32, m coordinator.TxnMarker, parts []coordinator.TopicPartitions) map[coordinator.TopicPartition]error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	if m.TransactionVersion >= 2 {
		req.Version = 2
	}
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	mk.TransactionVersion = m.TransactionVersion
	for _, tp := range parts {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = tp.Topic, tp.Partitions
		mk.Topics = append(mk.Topics, t)
	}
	req.Markers = append(req.Markers, mk)
	failAll := func(err error) map[coordinator.TopicPartition]error {
		out := map[coordinator.TopicPartition]error{}
		for _, tp := range parts {
			for _, p := range tp.Partitions {
				out[coordinator.TopicPartition{Topic: tp.Topic, Partition: p}] = err
			}
		}
		return out
	}
	var resp *kmsg.WriteTxnMarkersResponse
	if leader == b.nodeID {
		resp = b.WriteTxnMarkers(ctx, req)
	} else {
		cl, err := b.peer(leader)
		if err != nil {
			return failAll(kerr.NotLeaderForPartition)
		}
		// To that broker itself: the client's own routing would pick any broker it knows.
		seeds := cl.SeedBrokers()
		if len(seeds) == 0 {
			return failAll(kerr.NotLeaderForPartition)
		}
		kresp, err := req.RequestWith(ctx, seeds[0])
		if err != nil {
			return failAll(kerr.NotLeaderForPartition)
		}
		resp = kresp
	}
	out := failAll(kerr.UnknownServerError) // anything the response leaves out is retried
	for _, rm := range resp.Markers {
		for _, t := range rm.Topics {
			for _, p := range t.Partitions {
				k := coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				if p.ErrorCode == 0 {
					delete(out, k)
				} else {
					out[k] = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	return out
}

// brokerTxnVerifier is the TxnVerifier the produce path asks (KIP-890): the transaction
// coordinator here when it owns the transactional ID, otherwise the node that does, with an
// AddPartitionsToTxn v5 (verifyOnly unless transaction version 2 adds partitions implicitly).
type brokerTxnVerifier struct{ b *Broker }

// VerifyTxnPartition implements TxnVerifier.
func (v brokerTxnVerifier) VerifyTxnPartition(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) error {
	return v.verify(ctx, transactionalID, producerID, producerEpoch, topic, partition, transactionVersion >= 2)
}

// verifyOnly is VerifyTxnPartition that never adds the partition to the transaction, even
// under transaction version 2 (TxnOffsetCommit v0–v4, whose producer sent AddOffsetsToTxn).
func (v brokerTxnVerifier) verifyOnly(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) error {
	return v.verify(ctx, transactionalID, producerID, producerEpoch, topic, partition, false)
}

func (v brokerTxnVerifier) verify(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32, add bool) error {
	b := v.b
	node, ok := b.txnCoordinatorNode(transactionalID)
	if !ok {
		return kerr.CoordinatorNotAvailable
	}
	if node == b.nodeID {
		if !add {
			return b.txnCoord.VerifyTxnPartitionOnly(ctx, transactionalID, producerID, producerEpoch, topic, partition)
		}
		return b.txnCoord.VerifyTxnPartition(ctx, transactionalID, producerID, producerEpoch, topic, partition)
	}
	cl, err := b.peer(node)
	if err != nil {
		return kerr.CoordinatorNotAvailable
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = transactionalID, producerID, producerEpoch
	tx.VerifyOnly = !add
	t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	t.Topic, t.Partitions = topic, []int32{partition}
	tx.Topics = append(tx.Topics, t)
	req.Transactions = append(req.Transactions, tx)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kerr.CoordinatorNotAvailable
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, rtx := range resp.Transactions {
		for _, rt := range rtx.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	}
	return nil
}
