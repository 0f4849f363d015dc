package broker

// WriteTxnMarkers, key 27: v0–v2 (Kafka 4 removed v0, KIP-896; v1 only made it flexible). An inter-broker API: the transaction
// coordinator asks each partition leader to end a producer's transaction with a COMMIT or
// ABORT marker (Kafka's EndTransactionMarker control batch). v2 adds the marker's
// TransactionVersion: under TV2 the marker's epoch must be above the producer's (the
// coordinator bumped it), under TV0/1 not below it.
//
// Each named partition this broker leads gets one control batch (attributes control and
// transactional, the marker's producer ID and epoch, no sequence; one record: key version 0
// and the type, value version 0 and the coordinator epoch), appended as the coordinator's
// (no sequence check) with acks=all semantics: a partition is answered once its marker is
// below the high watermark, as Kafka's ReplicaManager.appendRecords with requiredAcks -1
// does, or with its error: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
// KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH (an epoch older than the producer's),
// TRANSACTION_COORDINATOR_FENCED (an older coordinator epoch than the partition's last
// marker), NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT. Once a marker is committed on a partition
// of __consumer_offsets the group coordinator's hook runs (offsetsTxnMarker).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/broker/replica"
	"sluice/controller"
	"sluice/logstore"
	"sluice/wire"
)

func init() { register(27, 0, 2, (*Broker).handleWriteTxnMarkers) }

// writeTxnMarkersTimeout bounds the wait for markers to be replicated when the caller's
// context has no deadline (Kafka waits request.timeout.ms, 30 s by default).
const writeTxnMarkersTimeout = 30 * time.Second

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, wreq *wire.Request, respond wire.Respond) {
	req, ok := wreq.Body.(*kmsg.WriteTxnMarkersRequest)
	if !ok {
		respond(nil, errUnexpectedBody)
		return
	}
	if b.authzOn() && !b.allowedCluster(wreq.Conn, authz.OpClusterAction) {
		respond(writeTxnMarkersDenied(req), nil) // authorize_txn.go
		return
	}
	// Off the connection's goroutine: the answer waits for replication.
	go func() { respond(b.WriteTxnMarkers(ctx, req), nil) }()
}

// markerWait is one partition's marker waiting to be below the HW, with its place in the
// response.
type markerWait struct {
	replica.AckWait
	key                   topicPartition
	marker, topic, partit int
}

// delayedMarkers is a WriteTxnMarkers whose markers wait for the ISR.
type delayedMarkers struct {
	waits []markerWait
	done  chan struct{}
}

// TryComplete implements replica.Operation.
func (d *delayedMarkers) TryComplete(expired bool) bool {
	for i := range d.waits {
		if !d.waits[i].Check(expired) {
			return false
		}
	}
	close(d.done)
	return true
}

// WriteTxnMarkers writes the request's markers to the partitions this broker leads and
// returns once each is below the high watermark or has failed (see the file comment). It
// blocks for at most ctx's deadline (30 s without one). The transaction coordinator calls it
// directly for partitions led by its own node.
func (b *Broker) WriteTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	im := b.ctrl.Image()
	now := b.clock.Now().UnixMilli()
	var waits []markerWait
	var syncs []logstore.SyncWait
	type placed struct{ marker, topic, partit int }
	var synced []placed
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for mi := range req.Markers {
		m := &req.Markers[mi]
		rm := &resp.Markers[mi]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for ti := range m.Topics {
			t := &m.Topics[ti]
			rt := &rm.Topics[ti]
			*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for pi, partition := range t.Partitions {
				rp := &rt.Partitions[pi]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = partition
				rs := b.resolvePartition(im, t.Topic, controller.TopicID{}, false, partition, true)
				if rs.errCode != 0 {
					rp.ErrorCode = rs.errCode
					continue
				}
				p := rs.partition
				marker := logstore.MarkerBatch(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed, now)
				info, err := p.replica.AppendAsLeader(replica.OriginCoordinator, marker, replica.AppendOptions{
					RequiredAcks: -1, MinInsync: p.settings.Load().MinInsyncReplicas, LeaderEpoch: -1,
					TransactionVersion: m.TransactionVersion,
				})
				if err != nil {
					rp.ErrorCode = appendErrorCode(err)
					continue
				}
				syncs = append(syncs, info.Sync)
				synced = append(synced, placed{mi, ti, pi})
				waits = append(waits, markerWait{
					AckWait: replica.AckWait{Replica: p.replica, Required: info.LastOffset + 1,
						AppendEpoch: info.LeaderEpoch, MinInsync: p.settings.Load().MinInsyncReplicas},
					key: p.tp, marker: mi, topic: ti, partit: pi,
				})
			}
		}
	}
	// Durable under the flush policy first, then on the ISR.
	failed := map[placed]bool{}
	for i, s := range syncs {
		if err := s.Wait(); err != nil {
			at := synced[i]
			resp.Markers[at.marker].Topics[at.topic].Partitions[at.partit].ErrorCode = storageErrorCode(err)
			failed[at] = true
		}
	}
	kept := waits[:0]
	for _, w := range waits {
		if !failed[placed{w.marker, w.topic, w.partit}] {
			kept = append(kept, w)
		}
	}
	waits = kept
	if len(waits) > 0 {
		timeout := writeTxnMarkersTimeout
		if deadline, ok := ctx.Deadline(); ok {
			timeout = min(timeout, max(time.Until(deadline), 0))
		}
		op := &delayedMarkers{waits: waits, done: make(chan struct{})}
		keys := make([]topicPartition, len(waits))
		for i, w := range waits {
			keys[i] = w.key
		}
		b.purgatory.Add(op, keys, timeout)
		<-op.done // the purgatory completes every operation: at the latest at its timeout or Close
	}
	for _, w := range waits {
		rp := &resp.Markers[w.marker].Topics[w.topic].Partitions[w.partit]
		if w.Err != nil {
			rp.ErrorCode = appendErrorCode(w.Err)
			continue
		}
		if w.key.topic == offsetsTopic && b.offsetsTxnMarker != nil {
			m := &req.Markers[w.marker]
			b.offsetsTxnMarker(w.key.partition, m.ProducerID, m.Committed)
		}
	}
	return resp
}
