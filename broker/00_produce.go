package broker

// Produce, key 0: v0–v13.
//
// v0–v2 carry magic 0/1 message sets (v1 adds the throttle time, v2 magic 1's timestamps and
// the LogAppendTime answer), served as Kafka 3.x served them, though Kafka 4 refuses them
// (KIP-896): each partition's messages are checked and converted to one v2 batch before the
// usual checks (legacy_records.go, as Kafka's LogValidator). v3 is the first version whose
// records must be one RecordBatch v2 (magic 2) per partition, the only format sluice's log
// stores. v13 names topics by ID. When an acks=0 produce fails
// the connection is closed, Kafka's only way to tell such a client.
// acks=0 gets no response; acks=1 is answered after the local append; acks=all after the batch
// is below the high watermark, i.e. on every ISR member: at once on a sole replica, otherwise
// as a delayed produce (delayed_fetch.go) answered when the HW passes it, with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then below min.insync.replicas, or
// REQUEST_TIMED_OUT after the request's timeout. An acks=all produce is refused
// (NOT_ENOUGH_REPLICAS) while the ISR is below min.insync.replicas, checked under the
// replica's lock with the append (package replica). Each partition's records are validated
// once, as Kafka's ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords and
// LogValidator do (produce_validate.go: one batch, max.message.bytes, CRC, counts, control
// and producer fields, every record's framing, keys on compacted topics, timestamps against
// message.timestamp.{before,after}.max.ms), with Kafka's codes; v8+ answers per-record errors
// as record_errors and error_message. The batch's max timestamp is set as Kafka sets it (the
// records' max, or now on LogAppendTime topics). The log then checks producer epochs and
// sequences and assigns offsets without re-encoding, trusting the validated records.
//
// v10+: a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its
// current leader, and the response those leaders' endpoints (KIP-951, leader_hints.go).
//
// Transactional batches (KIP-98) are accepted when the request names a transactional ID
// (otherwise TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole request, as Kafka): the log checks the producer's epoch against
// its state (INVALID_PRODUCER_EPOCH for an older one), refuses a non-transactional batch while
// the producer's transaction is open (INVALID_TXN_STATE), and starts the transaction at the
// batch's offset. A transactional batch that would start a transaction on the partition is
// first verified with the transaction coordinator (KIP-890 part 1, txn_verify.go) when the
// request names its transactional ID and a verifier is installed; its error is the
// partition's. A verification guard taken before asking is checked with the append, so a
// marker written meanwhile (the transaction was ended) makes the batch INVALID_TXN_STATE
// rather than the start of a hanging transaction. Clients may not write control batches
// (INVALID_RECORD). The verification call runs on the connection's goroutine.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/broker/replica"
	"sluice/controller"
	"sluice/internal/batch"
	"sluice/logstore"
	"sluice/wire"
)

func init() { register(0, 0, 13, (*Broker).handleProduce) }

// errAcksZeroFailed closes the connection of an acks=0 producer whose produce failed.
var errAcksZeroFailed = errors.New("broker: acks=0 produce failed; closing the connection as Kafka does")

func (b *Broker) handleProduce(ctx context.Context, wreq *wire.Request, respond wire.Respond) {
	req, ok := wreq.Body.(*kmsg.ProduceRequest)
	if !ok {
		respond(nil, errUnexpectedBody)
		return
	}
	respond = b.withProduceLeaderHints(wreq, respond) // KIP-951 (leader_hints.go)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	im := b.ctrl.Image()
	byID := req.Version >= 13

	topLevelErr := int16(0)
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		topLevelErr = kerr.InvalidRequiredAcks.Code
	case req.TransactionID == nil && hasTransactionalBatch(req):
		// Kafka's KafkaApis: transactional records need the request's transactional ID
		// (authorized to write it); every partition gets the error.
		topLevelErr = kerr.TransactionalIDAuthorizationFailed.Code
	case req.TransactionID != nil && !b.allowed(wreq.Conn, authz.OpWrite, authz.ResourceTransactionalID, *req.TransactionID):
		topLevelErr = kerr.TransactionalIDAuthorizationFailed.Code
	}

	var syncs []pendingSync
	var acksPending []ackWait
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	for ti, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		t.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
		denied := topLevelErr == 0 && b.authzOn() && !b.produceAllowed(wreq.Conn, im, &rt, byID)
		for pi, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			if topLevelErr != 0 {
				p.ErrorCode = topLevelErr
			} else if denied {
				p.ErrorCode, p.BaseOffset = kerr.TopicAuthorizationFailed.Code, -1
			} else {
				durable, wait := b.producePartition(ctx, im, req, rt.Topic, controller.TopicID(rt.TopicID), byID, &rp, &p)
				if durable != (logstore.SyncWait{}) {
					syncs = append(syncs, pendingSync{durable, ti, pi})
				}
				if wait != nil {
					wait.topic, wait.partition = ti, pi
					acksPending = append(acksPending, *wait)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	// The records are in the log (copied into its files) and nothing above kept a reference
	// into the request, so its frame can serve the next request.
	wreq.ReleaseFrame()
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	if len(syncs) == 0 {
		b.finishProduce(req.Acks, resp, acksPending, timeout, respond)
		return
	}
	// An fsync per write is configured: wait for the partitions' fsyncs together, off the
	// connection's handler, so the next request appends (and shares group commits) meanwhile.
	// The wire layer still answers in request order.
	go func(acksPending []ackWait) { // a parameter, so the slice does not escape on the fast path
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
		// A partition whose fsync failed is answered with the error, not held for acks.
		acksPending = slices.DeleteFunc(acksPending, func(w ackWait) bool {
			return resp.Topics[w.topic].Partitions[w.partition].ErrorCode != 0
		})
		b.finishProduce(req.Acks, resp, acksPending, timeout, respond)
	}(acksPending)
}

// pendingSync is a partition's append waiting to be durable, with its place in the response.
type pendingSync struct {
	sync             logstore.SyncWait
	topic, partition int
}

// finishProduce answers a produce whose appends are done (and durable, if the flush policy
// asks for it): at once, or for acks=all partitions whose records are not yet below the HW,
// once they are (a delayed produce in the purgatory, at most timeout).
func (b *Broker) finishProduce(acks int16, resp *kmsg.ProduceResponse, acksPending []ackWait, timeout time.Duration, respond wire.Respond) {
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
	if len(acksPending) == 0 {
		respond(resp, nil)
		return
	}
	keys := make([]topicPartition, len(acksPending))
	for i, w := range acksPending {
		keys[i] = w.key
	}
	b.purgatory.Add(&delayedProduce{resp: resp, respond: respond, waits: acksPending}, keys, timeout)
}

// producePartition appends one partition's records and fills its response. When the flush
// policy wants the append durable before it is acknowledged, it returns the wait; when acks=all
// and the records are not yet below the high watermark, the replication wait.
func (b *Broker) producePartition(ctx context.Context, im *controller.Image, req *kmsg.ProduceRequest, topicName string, topicID controller.TopicID, byID bool, rp *kmsg.ProduceRequestTopicPartition, out *kmsg.ProduceResponseTopicPartition) (logstore.SyncWait, *ackWait) {
	version, acks := req.Version, req.Acks
	rs := b.resolvePartition(im, topicName, topicID, byID, rp.Partition, true)
	if rs.errCode != 0 {
		out.ErrorCode = rs.errCode
		return logstore.SyncWait{}, nil
	}
	p := rs.partition
	records := rp.Records
	if version < 3 {
		// Magic 0/1 message sets become one v2 batch (legacy_records.go).
		var err error
		s := p.settings.Load()
		if records, err = convertMessageSet(records, s.MaxMessageBytes, max(maxDecompressedBatch, 32*int(s.MaxMessageBytes))); err != nil {
			out.ErrorCode = legacyCode(err)
			return logstore.SyncWait{}, nil
		}
	}
	guard, code := b.verifyTransactionalProduce(ctx, req.TransactionID, rs.topic.Name, p, records)
	if code != 0 {
		out.ErrorCode = code
		return logstore.SyncWait{}, nil
	}
	res := p.appendAsLeaderGuarded(replica.OriginClient, rs.topic.Internal, records, version, acks, -1, guard)
	if res.errCode != 0 {
		out.ErrorCode, out.ErrorMessage, out.ErrorRecords = res.errCode, res.errMessage, res.recordErrors
		if res.withLogStart {
			out.LogStartOffset = p.replica.Snapshot().LogStart
		}
		return logstore.SyncWait{}, nil
	}
	info := &res.info
	out.BaseOffset = info.FirstOffset
	out.LogStartOffset = info.LogStartOffset
	out.LogAppendTime = res.logAppendTime
	var wait *ackWait
	if acks == -1 && info.HighWatermark <= info.LastOffset {
		wait = &ackWait{key: p.tp, AckWait: replica.AckWait{Replica: p.replica, Required: info.LastOffset + 1,
			AppendEpoch: info.LeaderEpoch, MinInsync: p.settings.Load().MinInsyncReplicas}}
	}
	return info.Sync, wait
}

// verifyTransactionalProduce asks the transaction coordinator (TxnVerifier) whether a
// transactional batch may start a transaction on p, as Kafka's ReplicaManager does before
// appending (KIP-890 part 1): only when the request names a transactional ID, a verifier is
// installed, and the producer has no transaction open on p at the batch's epoch. It returns
// the verification guard for the append (0: none needed) or the partition's error code. A
// control batch from a client is INVALID_RECORD.
func (b *Broker) verifyTransactionalProduce(ctx context.Context, transactionalID *string, topic string, p *Partition, records []byte) (guard uint64, code int16) {
	h, err := batch.ParseHeader(records)
	if err != nil {
		return 0, 0 // the log answers malformed batches with their precise code
	}
	if h.IsControl() {
		return 0, kerr.InvalidRecord.Code // Kafka: clients cannot write control records
	}
	if !h.IsTransactional() || transactionalID == nil || b.txnVerifier == nil || !h.HasProducerID() {
		return 0, 0
	}
	backoff := b.txnVerifyBackoff()
	for {
		// A fresh guard each attempt: a marker written meanwhile (the previous transaction's,
		// which a CONCURRENT_TRANSACTIONS answer waits for) ends the last one's verification.
		guard, ongoing := p.log.BeginTxnVerification(h.ProducerID, h.ProducerEpoch)
		if ongoing {
			return 0, 0
		}
		err := b.txnVerifier.VerifyTxnPartition(ctx, *transactionalID, h.ProducerID, h.ProducerEpoch, topic, p.tp.partition)
		if err == nil {
			return guard, 0
		}
		p.log.EndTxnVerification(h.ProducerID, guard)
		if errors.Is(err, kerr.ConcurrentTransactions) && backoff.wait(ctx) {
			continue
		}
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return 0, ke.Code
		}
		// The coordinator could not be asked (a network error): retriable for the
		// producer, as Kafka answers old clients.
		return 0, kerr.NotEnoughReplicas.Code
	}
}

// txnVerifyBackoff is the wait between verifications answered CONCURRENT_TRANSACTIONS (the
// producer's previous transaction still writing its markers, as when a client starts the next
// transaction at once under transaction version 2): add.partitions.to.txn.retry.backoff.ms,
// doubling, for add.partitions.to.txn.retry.backoff.max.ms in all, as Kafka's ReplicaManager
// retries its AddPartitionsToTxn verification before the producer hears of it. Clients such
// as franz-go retry that error only after a metadata refresh (5 s by default), so answering it
// at once made one transaction in ten take 5 s (bench/results/2026-12-01-analysis.md).
func (b *Broker) txnVerifyBackoff() *verifyBackoff {
	return &verifyBackoff{clock: b.clock, began: b.clock.Now(),
		next:   time.Duration(b.cfg.Static.Int64("add.partitions.to.txn.retry.backoff.ms")) * time.Millisecond,
		budget: time.Duration(b.cfg.Static.Int64("add.partitions.to.txn.retry.backoff.max.ms")) * time.Millisecond}
}

// verifyBackoff paces one produce's verification retries.
type verifyBackoff struct {
	clock        replica.Clock
	began        time.Time
	next, budget time.Duration
}

// wait sleeps the next backoff and reports true, or reports false at once when the budget is
// spent (or ctx ends during the wait).
func (v *verifyBackoff) wait(ctx context.Context) bool {
	left := v.budget - v.clock.Now().Sub(v.began)
	if left <= 0 {
		return false
	}
	waited := make(chan struct{})
	t := v.clock.AfterFunc(min(v.next, left), func() { close(waited) })
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-waited:
	}
	v.next *= 2
	return true
}

// hasTransactionalBatch reports whether any partition's first batch is transactional, as
// Kafka's RequestUtils.hasTransactionalRecords (v3+ carries one batch per partition).
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if h, err := batch.ParseHeader(p.Records); err == nil && h.IsTransactional() {
				return true
			}
		}
	}
	return false
}

// produceAllowed reports whether conn may WRITE the topic (named, or by ID from v13; an
// unknown ID is left to the partition's UNKNOWN_TOPIC_ID).
func (b *Broker) produceAllowed(conn *wire.ConnInfo, im *controller.Image, rt *kmsg.ProduceRequestTopic, byID bool) bool {
	name := rt.Topic
	if byID {
		if name = topicNameOf(im, rt.TopicID); name == "" {
			return true
		}
	}
	return b.allowedTopic(conn, authz.OpWrite, name)
}
