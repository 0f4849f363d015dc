package coordinator

import (
	"context"
	"errors"
	"math"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fencedCode is PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for request
// versions from before KIP-588 (the threshold is the first version that
// knows PRODUCER_FENCED), as Kafka's KafkaApis maps it.
func fencedCode(version, firstFencedVersion int16) int16 {
	if version < firstFencedVersion {
		return kerr.InvalidProducerEpoch.Code
	}
	return kerr.ProducerFenced.Code
}

// InitProducerID handles InitProducerId (key 22) v0–v5 for a
// transactional ID (the broker serves idempotent producers itself). It
// allocates a producer ID for a new ID, bumps the epoch otherwise (fencing
// the previous producer), accepts KIP-360 re-initialisation with the
// producer's current (or previous) ID and epoch, and, when a transaction of
// the previous epoch is still open, aborts it and answers
// CONCURRENT_TRANSACTIONS until the abort completes (the client retries).
func (t *TxnCoordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) (*kmsg.InitProducerIDResponse, error) {
	errResp := func(code int16) *kmsg.InitProducerIDResponse {
		r := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		r.ProducerID, r.ProducerEpoch, r.ErrorCode = -1, -1, code
		return r
	}
	if req.TransactionalID == nil || *req.TransactionalID == "" {
		return errResp(kerr.InvalidRequest.Code), nil
	}
	id := *req.TransactionalID
	if req.TransactionTimeoutMillis <= 0 || time.Duration(req.TransactionTimeoutMillis)*time.Millisecond > t.cfg.MaxTimeout {
		return errResp(kerr.InvalidTransactionTimeout.Code), nil
	}
	// A fresh producer ID is needed for a new transactional ID or an
	// exhausted epoch; it is allocated here, off the shard's loop, since
	// the allocation may wait for the controller.
	need, err := onTxnShard(ctx, t, id, func(int16) bool { return false }, func(s *txnShard, reply func(bool)) {
		m := s.txns[id]
		// An open transaction is fenced and aborted first; the ID is
		// rolled on the retry that follows.
		reply(m == nil || (epochExhausted(&m.txnData) && (m.state == txnEmpty || m.state == txnCompleteCommit || m.state == txnCompleteAbort)))
	})
	if err != nil {
		return nil, err
	}
	newID := int64(-1)
	if need {
		if t.cfg.ProducerIDs == nil {
			return errResp(kerr.CoordinatorNotAvailable.Code), nil
		}
		if newID, err = t.cfg.ProducerIDs(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			t.log.Warn("allocating a producer ID", "err", err)
			return errResp(kerr.CoordinatorNotAvailable.Code), nil
		}
	}
	return onTxnShard(ctx, t, id, errResp, func(s *txnShard, reply func(*kmsg.InitProducerIDResponse)) {
		s.initProducerID(req, id, newID, errResp, reply)
	})
}

func (s *txnShard) initProducerID(req *kmsg.InitProducerIDRequest, id string, newID int64, errResp func(int16) *kmsg.InitProducerIDResponse, reply func(*kmsg.InitProducerIDResponse)) {
	answer := func(d *txnData) {
		r := errResp(0)
		r.ProducerID, r.ProducerEpoch = d.producerID, d.epoch
		reply(r)
	}
	now := s.nowMs()
	m := s.txns[id]
	if m == nil {
		if newID < 0 {
			// Expired between the two events: the client retries.
			reply(errResp(kerr.ConcurrentTransactions.Code))
			return
		}
		m = &txnMeta{id: id}
		next := txnData{producerID: newID, prevProducerID: -1, nextProducerID: -1, epoch: 0, lastEpoch: -1,
			timeoutMs: req.TransactionTimeoutMillis, state: txnEmpty, startMs: -1, lastUpdate: now}
		s.persist(m, next, func(code int16) {
			if code != 0 {
				reply(errResp(code))
				return
			}
			answer(&m.txnData)
		})
		return
	}
	if m.pending {
		reply(errResp(kerr.ConcurrentTransactions.Code))
		return
	}
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerID != m.producerID && req.ProducerID == m.prevProducerID &&
		req.ProducerEpoch >= math.MaxInt16-1 && m.epoch == 0 && m.state == txnEmpty {
		// A retry of the InitProducerId that rolled the exhausted ID to
		// the current one (its answer was lost): answer it again, as
		// Kafka accepts the previous ID with an exhausted epoch.
		answer(&m.txnData)
		return
	}
	if req.Version >= 3 && req.ProducerID >= 0 {
		// KIP-360: the producer names the ID and epoch it had.
		valid := req.ProducerID == m.producerID && (req.ProducerEpoch == m.epoch || req.ProducerEpoch == m.lastEpoch)
		if !valid {
			reply(errResp(fencedCode(req.Version, 4)))
			return
		}
		if req.ProducerEpoch == m.lastEpoch && m.state == txnEmpty {
			// A retry of a bump that already happened: answer it again.
			answer(&m.txnData)
			return
		}
	}
	switch m.state {
	case txnPrepareCommit, txnPrepareAbort, txnPrepareEpochFence, txnDead:
		reply(errResp(kerr.ConcurrentTransactions.Code))
	case txnOngoing:
		// Fence the previous producer and abort its transaction; the
		// client retries until the abort is complete.
		s.prepareEnd(m, false, true, m.clientTxnV2, -1, func(code int16) {
			if code == 0 {
				code = kerr.ConcurrentTransactions.Code
			}
			reply(errResp(code))
		})
	default: // Empty, CompleteCommit, CompleteAbort
		next := bumpEpoch(m.txnData.clone(), newID)
		next.timeoutMs = req.TransactionTimeoutMillis
		next.state = txnEmpty
		next.partitions = nil
		next.startMs = -1
		next.lastUpdate = now
		s.persist(m, next, func(code int16) {
			if code != 0 {
				reply(errResp(code))
				return
			}
			answer(&m.txnData)
		})
	}
}

// checkProducer is the common identity check of a transactional request:
// INVALID_PRODUCER_ID_MAPPING for an unknown ID or another producer ID,
// the fenced code for another epoch, CONCURRENT_TRANSACTIONS while a state
// write is in flight.
func (s *txnShard) checkProducer(id string, producerID int64, epoch int16, fenced int16) (*txnMeta, int16) {
	m := s.txns[id]
	if m != nil && m.nextProducerID >= 0 && producerID == m.nextProducerID {
		// The producer ID an exhausted epoch rolls to, used while the
		// ending transaction's markers are written: wait for them.
		return nil, kerr.ConcurrentTransactions.Code
	}
	if m == nil || m.producerID != producerID {
		return nil, kerr.InvalidProducerIDMapping.Code
	}
	if m.epoch != epoch {
		return nil, fenced
	}
	if m.pending {
		return nil, kerr.ConcurrentTransactions.Code
	}
	return m, 0
}

// addPartitions adds tps to m's transaction (starting one if none is open),
// writing the state only when something changes. REQUIRES: shard event,
// m not pending.
func (s *txnShard) addPartitions(m *txnMeta, tps []TopicPartition, onDone func(code int16)) {
	switch m.state {
	case txnPrepareCommit, txnPrepareAbort, txnPrepareEpochFence, txnDead:
		onDone(kerr.ConcurrentTransactions.Code)
		return
	}
	if m.state == txnOngoing {
		missing := false
		for _, tp := range tps {
			if !m.hasPartition(tp.Topic, tp.Partition) {
				missing = true
				break
			}
		}
		if !missing {
			onDone(0)
			return
		}
	}
	next := m.txnData.clone()
	now := s.nowMs()
	if next.state != txnOngoing {
		next.startMs = now
		next.partitions = nil
	}
	for _, tp := range tps {
		next.addPartition(tp.Topic, tp.Partition)
	}
	next.state = txnOngoing
	next.lastUpdate = now
	s.persist(m, next, onDone)
	m.pendingAdd = m.pending
}

// AddPartitionsToTxn handles AddPartitionsToTxn (key 24) v0–v5: v0–v3 from
// producers (one transaction), v4+ from brokers (several, each may be
// VerifyOnly: KIP-890 part 1's check that a partition is in the ongoing
// transaction). Topics unknown to the metadata answer
// UNKNOWN_TOPIC_OR_PARTITION and the rest of the transaction's partitions
// OPERATION_NOT_ATTEMPTED, as Kafka's KafkaApis does.
func (t *TxnCoordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version <= 3 {
		topics := make([]TopicPartitions, 0, len(req.Topics))
		for _, tp := range req.Topics {
			topics = append(topics, TopicPartitions{tp.Topic, tp.Partitions})
		}
		codes, err := t.addPartitions(ctx, req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics)
		if err != nil {
			return nil, err
		}
		for _, tp := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[TopicPartition{tp.Topic, p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, tx := range req.Transactions {
		topics := make([]TopicPartitions, 0, len(tx.Topics))
		for _, tp := range tx.Topics {
			topics = append(topics, TopicPartitions{tp.Topic, tp.Partitions})
		}
		codes, err := t.addPartitions(ctx, req.Version, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, topics)
		if err != nil {
			return nil, err
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, tp := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[TopicPartition{tp.Topic, p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}

// addPartitions serves one transaction of an AddPartitionsToTxn and returns
// each partition's code.
func (t *TxnCoordinator) addPartitions(ctx context.Context, version int16, id string, producerID int64, epoch int16, verifyOnly bool, topics []TopicPartitions) (map[TopicPartition]int16, error) {
	codes := make(map[TopicPartition]int16)
	var tps []TopicPartition
	all := func(code int16) map[TopicPartition]int16 {
		for _, tp := range topics {
			for _, p := range tp.Partitions {
				codes[TopicPartition{tp.Topic, p}] = code
			}
		}
		return codes
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code), nil
	}
	unknown := false
	for _, tp := range topics {
		n := int32(-1)
		if t.cfg.Topics != nil {
			if _, parts, ok := t.cfg.Topics.TopicByName(tp.Topic); ok {
				n = parts
			} else {
				n = 0
			}
		}
		for _, p := range tp.Partitions {
			if n >= 0 && (p < 0 || p >= n) {
				codes[TopicPartition{tp.Topic, p}] = kerr.UnknownTopicOrPartition.Code
				unknown = true
				continue
			}
			tps = append(tps, TopicPartition{tp.Topic, p})
		}
	}
	if unknown {
		for _, tp := range tps {
			codes[tp] = kerr.OperationNotAttempted.Code
		}
		return codes, nil
	}
	code, err := onTxnShard(ctx, t, id, func(code int16) int16 { return code }, func(s *txnShard, reply func(int16)) {
		s.whenSettled(id, func() {
			m, code := s.checkProducer(id, producerID, epoch, fencedCode(version, 2))
			if code != 0 {
				reply(code)
				return
			}
			if verifyOnly {
				for _, tp := range tps {
					if m.state != txnOngoing || !m.hasPartition(tp.Topic, tp.Partition) {
						codes[tp] = kerr.InvalidTxnState.Code
					}
				}
				reply(0)
				return
			}
			s.addPartitions(m, tps, reply)
		})
	})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return all(code), nil
	}
	return codes, nil
}

// AddOffsetsToTxn handles AddOffsetsToTxn (key 25) v0–v4: the group's
// __consumer_offsets partition joins the transaction, so that the
// transaction's markers reach the offsets the producer commits with
// TxnOffsetCommit.
func (t *TxnCoordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) (*kmsg.AddOffsetsToTxnResponse, error) {
	errResp := func(code int16) *kmsg.AddOffsetsToTxnResponse {
		r := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		r.ErrorCode = code
		return r
	}
	if req.TransactionalID == "" || req.Group == "" || t.cfg.OffsetsPartitionFor == nil {
		return errResp(kerr.InvalidRequest.Code), nil
	}
	tp := TopicPartition{TopicName, t.cfg.OffsetsPartitionFor(req.Group)}
	return onTxnShard(ctx, t, req.TransactionalID, errResp, func(s *txnShard, reply func(*kmsg.AddOffsetsToTxnResponse)) {
		s.whenSettled(req.TransactionalID, func() {
			m, code := s.checkProducer(req.TransactionalID, req.ProducerID, req.ProducerEpoch, fencedCode(req.Version, 2))
			if code != 0 {
				reply(errResp(code))
				return
			}
			s.addPartitions(m, []TopicPartition{tp}, func(code int16) { reply(errResp(code)) })
		})
	})
}

// EndTxn handles EndTxn (key 26) v0–v5. It answers once
// PrepareCommit/PrepareAbort is written; the markers follow. v5 is
// transaction version 2: every end bumps the epoch, and the response
// carries the producer ID and epoch to use next; a retry with the epoch
// before the bump is answered again.
func (t *TxnCoordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) (*kmsg.EndTxnResponse, error) {
	errResp := func(code int16) *kmsg.EndTxnResponse {
		r := req.ResponseKind().(*kmsg.EndTxnResponse)
		r.ErrorCode, r.ProducerID, r.ProducerEpoch = code, -1, -1
		return r
	}
	if req.TransactionalID == "" {
		return errResp(kerr.InvalidRequest.Code), nil
	}
	// Under transaction version 2 the end of a transaction at an
	// exhausted epoch rolls to a new producer ID, allocated here, off the
	// shard's loop, as InitProducerID does.
	newID := int64(-1)
	if req.Version >= 5 {
		need, err := onTxnShard(ctx, t, req.TransactionalID, func(int16) bool { return false }, func(s *txnShard, reply func(bool)) {
			m := s.txns[req.TransactionalID]
			reply(m != nil && m.producerID == req.ProducerID && m.epoch == req.ProducerEpoch && m.state == txnOngoing && epochExhausted(&m.txnData))
		})
		if err != nil {
			return nil, err
		}
		if need {
			if t.cfg.ProducerIDs == nil {
				return errResp(kerr.CoordinatorNotAvailable.Code), nil
			}
			if newID, err = t.cfg.ProducerIDs(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				t.log.Warn("allocating a producer ID", "err", err)
				return errResp(kerr.CoordinatorNotAvailable.Code), nil
			}
		}
	}
	return onTxnShard(ctx, t, req.TransactionalID, errResp, func(s *txnShard, reply func(*kmsg.EndTxnResponse)) {
		s.endTxn(req, newID, errResp, reply)
	})
}

func (s *txnShard) endTxn(req *kmsg.EndTxnRequest, newID int64, errResp func(int16) *kmsg.EndTxnResponse, reply func(*kmsg.EndTxnResponse)) {
	tv2 := req.Version >= 5
	ok := func(m *txnMeta) {
		r := errResp(0)
		if tv2 {
			r.ProducerID, r.ProducerEpoch = m.producerID, m.epoch
			if m.nextProducerID >= 0 {
				// Rolling to a new producer ID: the client goes on with it.
				r.ProducerID, r.ProducerEpoch = m.nextProducerID, 0
			}
		}
		reply(r)
	}
	completeFor := txnCompleteAbort
	prepareFor := txnPrepareAbort
	if req.Commit {
		completeFor, prepareFor = txnCompleteCommit, txnPrepareCommit
	}
	m := s.txns[req.TransactionalID]
	if tv2 && m != nil && m.producerID != req.ProducerID && m.nextProducerID >= 0 && req.ProducerID == m.nextProducerID {
		// The rolled-to producer ID while the end that rolled is still
		// writing its markers: it waits, as any request does meanwhile.
		reply(errResp(kerr.ConcurrentTransactions.Code))
		return
	}
	if tv2 && m != nil && m.producerID != req.ProducerID && req.ProducerID == m.prevProducerID &&
		req.ProducerEpoch >= math.MaxInt16-1 && m.epoch == 0 && !m.pending {
		// A retry of the end that rolled the exhausted producer ID to
		// the current one: answered again if it asked the same.
		if m.state == completeFor {
			ok(m)
		} else {
			reply(errResp(kerr.ProducerFenced.Code))
		}
		return
	}
	if m == nil || m.producerID != req.ProducerID {
		reply(errResp(kerr.InvalidProducerIDMapping.Code))
		return
	}
	if tv2 && req.ProducerEpoch == m.lastEpoch && m.epoch == req.ProducerEpoch+1 && !m.pending {
		// A retry of an end whose epoch bump already happened.
		switch m.state {
		case completeFor:
			ok(m)
		case prepareFor:
			reply(errResp(kerr.ConcurrentTransactions.Code))
		default:
			reply(errResp(kerr.InvalidTxnState.Code))
		}
		return
	}
	if m.epoch != req.ProducerEpoch {
		reply(errResp(fencedCode(req.Version, 2)))
		return
	}
	if m.pending {
		reply(errResp(kerr.ConcurrentTransactions.Code))
		return
	}
	if tv2 && !req.Commit && (m.state == txnEmpty || m.state == txnCompleteCommit || m.state == txnCompleteAbort) {
		// KIP-890 part 2: an abort with nothing open still bumps the
		// epoch, so a producer can always fence its past.
		s.prepareEnd(m, false, true, true, -1, func(code int16) {
			if code != 0 {
				reply(errResp(code))
				return
			}
			ok(m)
		})
		return
	}
	if tv2 && (m.state == txnPrepareCommit || m.state == txnPrepareAbort) {
		// The previous transaction (whose end bumped the epoch to the
		// request's) is still writing its markers: whatever this end
		// asks, it waits for that one, as any request does meanwhile.
		reply(errResp(kerr.ConcurrentTransactions.Code))
		return
	}
	switch m.state {
	case txnOngoing:
		if tv2 && epochExhausted(&m.txnData) && newID < 0 {
			// It became exhausted between the two events: the client
			// retries, and the next call allocates the new ID.
			reply(errResp(kerr.ConcurrentTransactions.Code))
			return
		}
		s.prepareEnd(m, req.Commit, tv2, tv2, newID, func(code int16) {
			if code != 0 {
				reply(errResp(code))
				return
			}
			ok(m)
		})
	case prepareFor:
		reply(errResp(kerr.ConcurrentTransactions.Code))
	case completeFor, txnEmpty:
		if m.state == txnEmpty {
			reply(errResp(kerr.InvalidTxnState.Code))
			return
		}
		ok(m) // a TV1 retry of the same end
	case txnPrepareEpochFence, txnDead:
		reply(errResp(kerr.ConcurrentTransactions.Code))
	default:
		reply(errResp(kerr.InvalidTxnState.Code))
	}
}

// VerifyTxnPartition is KIP-890's check by a partition leader before it
// accepts a transactional batch: the producer's ID and epoch must be the
// transactional ID's, and the partition must be in its ongoing transaction.
// Under transaction version 2 a partition not yet in the transaction is
// added (the implicit AddPartitionsToTxn of KIP-890 part 2). The error is a
// *kerr.Error: INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH,
// INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, ...
func (t *TxnCoordinator) VerifyTxnPartition(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) error {
	return t.verifyTxnPartition(ctx, transactionalID, producerID, producerEpoch, topic, partition, t.cfg.TransactionVersion2)
}

// VerifyTxnPartitionOnly is VerifyTxnPartition that never adds the
// partition (Kafka's verify-only AddPartitionsToTxn): TxnOffsetCommit
// v0–v4 is checked this way, its producer having added the group's
// __consumer_offsets partition with AddOffsetsToTxn (INVALID_TXN_STATE if
// it did not).
func (t *TxnCoordinator) VerifyTxnPartitionOnly(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) error {
	return t.verifyTxnPartition(ctx, transactionalID, producerID, producerEpoch, topic, partition, false)
}

func (t *TxnCoordinator) verifyTxnPartition(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32, add bool) error {
	if transactionalID == "" {
		return kerr.InvalidRequest
	}
	code, err := onTxnShard(ctx, t, transactionalID, func(code int16) int16 { return code }, func(s *txnShard, reply func(int16)) {
		s.whenSettled(transactionalID, func() {
			m, code := s.checkProducer(transactionalID, producerID, producerEpoch, kerr.InvalidProducerEpoch.Code)
			if code != 0 {
				reply(code)
				return
			}
			if m.state == txnOngoing && m.hasPartition(topic, partition) {
				reply(0)
				return
			}
			if !add {
				reply(kerr.InvalidTxnState.Code)
				return
			}
			s.addPartitions(m, []TopicPartition{{topic, partition}}, reply)
		})
	})
	if err != nil {
		return err
	}
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// DescribeTransactions handles DescribeTransactions (key 65) v0.
func (t *TxnCoordinator) DescribeTransactions(ctx context.Context, req *kmsg.DescribeTransactionsRequest) (*kmsg.DescribeTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		errResp := func(code int16) kmsg.DescribeTransactionsResponseTransactionState {
			e := st
			e.ErrorCode = code
			return e
		}
		if id == "" {
			resp.TransactionStates = append(resp.TransactionStates, errResp(kerr.TransactionalIDNotFound.Code))
			continue
		}
		got, err := onTxnShard(ctx, t, id, errResp, func(s *txnShard, reply func(kmsg.DescribeTransactionsResponseTransactionState)) {
			m := s.txns[id]
			if m == nil {
				reply(errResp(kerr.TransactionalIDNotFound.Code))
				return
			}
			d := st
			d.State = m.state.String()
			d.TimeoutMillis, d.StartTimestamp = m.timeoutMs, m.startMs
			d.ProducerID, d.ProducerEpoch = m.producerID, m.epoch
			for _, tp := range m.sortedPartitions() {
				rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				rt.Topic, rt.Partitions = tp.Topic, tp.Partitions
				d.Topics = append(d.Topics, rt)
			}
			reply(d)
		})
		if err != nil {
			return nil, err
		}
		resp.TransactionStates = append(resp.TransactionStates, got)
	}
	return resp, nil
}

// ListTransactions handles ListTransactions (key 66) v0–v2: the
// transactional IDs of every shard led here, filtered by state, producer
// ID, v1's minimum duration of the open transaction and v2's ID pattern.
// While a shard loads the answer carries COORDINATOR_LOAD_IN_PROGRESS.
func (t *TxnCoordinator) ListTransactions(ctx context.Context, req *kmsg.ListTransactionsRequest) (*kmsg.ListTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[string]bool{}
	for _, f := range req.StateFilters {
		known := false
		for _, n := range txnStateNames {
			if n == f {
				known = true
			}
		}
		if !known {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
			continue
		}
		states[f] = true
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		pattern = re
	}
	shards, loading := t.activeShards()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	for _, s := range shards {
		var list []kmsg.ListTransactionsResponseTransactionState
		ch := make(chan struct{})
		s.submit(func() {
			defer close(ch)
			if s.unloaded {
				return
			}
			now := s.nowMs()
			for _, id := range s.sortedIDs() {
				m := s.txns[id]
				if len(req.StateFilters) > 0 && !states[m.state.String()] {
					continue
				}
				if len(pids) > 0 && !pids[m.producerID] {
					continue
				}
				if req.Version >= 1 && req.DurationFilterMillis >= 0 && (m.startMs < 0 || now-m.startMs < req.DurationFilterMillis) {
					continue
				}
				if pattern != nil && !pattern.MatchString(id) {
					continue
				}
				st := kmsg.NewListTransactionsResponseTransactionState()
				st.TransactionalID, st.ProducerID, st.TransactionState = id, m.producerID, m.state.String()
				list = append(list, st)
			}
		})
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		resp.TransactionStates = append(resp.TransactionStates, list...)
	}
	return resp, nil
}

// errIsUnknownTopic reports a marker write refused because the partition is
// gone.
func errIsUnknownTopic(err error) bool { return errors.Is(err, kerr.UnknownTopicOrPartition) }
