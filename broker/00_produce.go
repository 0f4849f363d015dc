package broker

// Produce, key 0: v0–v13.
//
// v0–v2 are advertised but refused per partition with UNSUPPORTED_VERSION, as Kafka 4 does
// (KAFKA-18659): librdkafka only compresses when the broker lists Produce v0 in ApiVersions.
// v3 is the first version whose records must be one RecordBatch v2 (magic 2) per partition,
// the only format sluice's log stores. v13 names topics by ID. When an acks=0 produce fails
// the connection is closed, Kafka's only way to tell such a client.
// acks=0 gets no response; acks=1 is answered after the local append; acks=all after the batch
// is below the high watermark, i.e. on every ISR member, and only while the ISR has at least
// min.insync.replicas members (NOT_ENOUGH_REPLICAS otherwise). Each batch is checked against
// the topic's max.message.bytes (MESSAGE_TOO_LARGE); the log validates headers, CRCs and
// producer sequences and assigns offsets without re-encoding.
//
// Timestamps are checked against message.timestamp.{before,after}.max.ms, and batches of
// LogAppendTime topics are stamped (produce_validate.go).
//
// Not yet: transactional produce (answered INVALID_REQUEST until transactions land).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/logstore"
	"sluice/wire"
)

func init() { register(0, 0, 13, (*Broker).handleProduce) }

// errAcksZeroFailed closes the connection of an acks=0 producer whose produce failed.
var errAcksZeroFailed = errors.New("broker: acks=0 produce failed; closing the connection as Kafka does")

func (b *Broker) handleProduce(_ context.Context, wreq *wire.Request, respond wire.Respond) {
	req, ok := wreq.Body.(*kmsg.ProduceRequest)
	if !ok {
		respond(nil, errUnexpectedBody)
		return
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	im := b.ctrl.Image()
	byID := req.Version >= 13

	topLevelErr := int16(0)
	switch {
	case req.Version < 3:
		topLevelErr = kerr.UnsupportedVersion.Code
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		topLevelErr = kerr.InvalidRequiredAcks.Code
	case req.TransactionID != nil:
		topLevelErr = kerr.InvalidRequest.Code
	}

	var syncs []pendingSync
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	for ti, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		t.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
		for pi, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			if topLevelErr != 0 {
				p.ErrorCode = topLevelErr
			} else {
				durable := b.producePartition(im, req.Version, rt.Topic, controller.TopicID(rt.TopicID), byID, req.Acks, &rp, &p)
				if durable != (logstore.SyncWait{}) {
					syncs = append(syncs, pendingSync{durable, ti, pi})
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	// The records are in the log (copied into its files) and nothing above kept a reference
	// into the request, so its frame can serve the next request.
	wreq.ReleaseFrame()
	if len(syncs) == 0 {
		finishProduce(req.Acks, resp, respond)
		return
	}
	// An fsync per write is configured: wait for the partitions' fsyncs together, off the
	// connection's handler, so the next request appends (and shares group commits) meanwhile.
	// The wire layer still answers in request order.
	go func() {
		var wg sync.WaitGroup
		for _, s := range syncs {
			wg.Go(func() {
				if err := s.sync.Wait(); err != nil {
					p := &resp.Topics[s.topic].Partitions[s.partition]
					p.ErrorCode, p.BaseOffset = storageErrorCode(err), -1
				}
			})
		}
		wg.Wait()
		finishProduce(req.Acks, resp, respond)
	}()
}

// pendingSync is a partition's append waiting to be durable, with its place in the response.
type pendingSync struct {
	sync             logstore.SyncWait
	topic, partition int
}

// finishProduce answers a produce whose appends are done (and durable, if the flush policy
// asks for it).
func finishProduce(acks int16, resp *kmsg.ProduceResponse, respond wire.Respond) {
	if acks == 0 {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					respond(nil, errAcksZeroFailed)
					return
				}
			}
		}
		respond(nil, nil)
		return
	}
	respond(resp, nil)
}

// producePartition appends one partition's records and fills its response. When the flush
// policy wants the append durable before it is acknowledged, it returns the wait.
func (b *Broker) producePartition(im *controller.Image, version int16, topicName string, topicID controller.TopicID, byID bool, acks int16, rp *kmsg.ProduceRequestTopicPartition, out *kmsg.ProduceResponseTopicPartition) logstore.SyncWait {
	rs := b.resolvePartition(im, topicName, topicID, byID, rp.Partition, true)
	if rs.errCode != 0 {
		out.ErrorCode = rs.errCode
		return logstore.SyncWait{}
	}
	if rs.topic.Internal {
		// Only the coordinators write the internal topics.
		out.ErrorCode = kerr.InvalidTopicException.Code
		return logstore.SyncWait{}
	}
	p := rs.partition
	settings := p.settings.Load()
	code, logAppendTime := checkProduceBatches(rp.Records, version, settings, time.Now())
	if code != 0 {
		out.ErrorCode = code
		return logstore.SyncWait{}
	}
	if acks == -1 && p.isrSize() < int(settings.MinInsyncReplicas) {
		out.ErrorCode = kerr.NotEnoughReplicas.Code
		return logstore.SyncWait{}
	}
	_, leaderEpoch := p.leaderState()
	res, sync, err := p.log.AppendAsLeaderDeferSync(rp.Records, leaderEpoch)
	if err != nil {
		out.ErrorCode = storageErrorCode(err)
		out.LogStartOffset = p.log.LogStartOffset()
		return logstore.SyncWait{}
	}
	if !res.Duplicate {
		p.appended()
	}
	out.BaseOffset = res.FirstOffset
	out.LogStartOffset = res.LogStartOffset
	out.LogAppendTime = logAppendTime
	return sync
}
