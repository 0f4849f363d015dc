package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnTopicName is the internal topic holding transaction state.
const TxnTopicName = "__transaction_state"

// Transaction states, with Kafka's TransactionState ids (they are stored in
// TransactionLogValue.State).
type txnState int8

const (
	txnEmpty             txnState = 0
	txnOngoing           txnState = 1
	txnPrepareCommit     txnState = 2
	txnPrepareAbort      txnState = 3
	txnCompleteCommit    txnState = 4
	txnCompleteAbort     txnState = 5
	txnDead              txnState = 6
	txnPrepareEpochFence txnState = 7
)

var txnStateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s txnState) String() string {
	if s >= 0 && int(s) < len(txnStateNames) {
		return txnStateNames[s]
	}
	return fmt.Sprintf("Unknown(%d)", s)
}

// ErrCorruptTxnRecord is returned (wrapped) when a __transaction_state
// record cannot be decoded.
var ErrCorruptTxnRecord = errors.New("coordinator: corrupt __transaction_state record")

// txnData is what TransactionLogValue stores of one transactional ID.
type txnData struct {
	producerID     int64
	prevProducerID int64 // -1 if none
	nextProducerID int64 // -1 if none
	epoch          int16
	lastEpoch      int16 // the epoch before the last bump (KIP-360 retries), -1 if none
	timeoutMs      int32
	state          txnState
	// partitions of the transaction, topic → partitions.
	partitions  map[string]map[int32]struct{}
	startMs     int64 // txnStartTimestamp, -1 when no transaction is open
	lastUpdate  int64 // txnLastUpdateTimestamp
	clientTxnV2 bool  // the client ended its last transaction with EndTxn v5+ (KIP-890 part 2)
}

func (d *txnData) clone() txnData {
	c := *d
	c.partitions = make(map[string]map[int32]struct{}, len(d.partitions))
	for t, ps := range d.partitions {
		m := make(map[int32]struct{}, len(ps))
		for p := range ps {
			m[p] = struct{}{}
		}
		c.partitions[t] = m
	}
	return c
}

func (d *txnData) hasPartition(topic string, p int32) bool {
	_, ok := d.partitions[topic][p]
	return ok
}

func (d *txnData) addPartition(topic string, p int32) {
	if d.partitions == nil {
		d.partitions = make(map[string]map[int32]struct{})
	}
	ps := d.partitions[topic]
	if ps == nil {
		ps = make(map[int32]struct{})
		d.partitions[topic] = ps
	}
	ps[p] = struct{}{}
}

// sortedPartitions lists the transaction's partitions in order.
func (d *txnData) sortedPartitions() []TopicPartitions {
	out := make([]TopicPartitions, 0, len(d.partitions))
	for t, ps := range d.partitions {
		tp := TopicPartitions{Topic: t}
		for p := range ps {
			tp.Partitions = append(tp.Partitions, p)
		}
		sort.Slice(tp.Partitions, func(i, j int) bool { return tp.Partitions[i] < tp.Partitions[j] })
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// TopicPartitions names some partitions of one topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// txnKey is TransactionLogKey v0.
func txnKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
	return k.AppendTo(nil)
}

// txnRecord encodes d as TransactionLogValue v1 (flexible, with the
// KIP-890 tagged fields), as Kafka 4.x writes it.
func txnRecord(id string, d *txnData) record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1
	v.ProducerID, v.ProducerEpoch = d.producerID, d.epoch
	v.TimeoutMillis = d.timeoutMs
	v.State = kmsg.TransactionState(d.state)
	for _, tp := range d.sortedPartitions() {
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic, t.Partitions = tp.Topic, tp.Partitions
		v.Topics = append(v.Topics, t)
	}
	v.LastUpdateTimestamp, v.StartTimestamp = d.lastUpdate, d.startMs
	v.PreviousProducerID, v.NextProducerID = d.prevProducerID, d.nextProducerID
	if d.clientTxnV2 {
		v.ClientTransactionVersion = 2
	}
	return record{key: txnKey(id), value: v.AppendTo(nil)}
}

// decodeTxnRecord parses one __transaction_state record; d is nil for a
// tombstone (the transactional ID expired).
func decodeTxnRecord(key, value []byte) (id string, d *txnData, err error) {
	if len(key) < 2 {
		return "", nil, fmt.Errorf("%w: key of %d bytes", ErrCorruptTxnRecord, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return "", nil, fmt.Errorf("%w: key version %d", ErrCorruptTxnRecord, v)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("%w: key: %v", ErrCorruptTxnRecord, err)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	v := new(kmsg.TxnMetadataValue)
	v.Default()
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("%w: value: %v", ErrCorruptTxnRecord, err)
	}
	if v.Version < 0 || v.Version > 1 || v.State < 0 || v.State > 7 {
		return "", nil, fmt.Errorf("%w: value version %d state %d", ErrCorruptTxnRecord, v.Version, v.State)
	}
	d = &txnData{
		producerID: v.ProducerID, epoch: v.ProducerEpoch, lastEpoch: -1,
		prevProducerID: v.PreviousProducerID, nextProducerID: v.NextProducerID,
		timeoutMs: v.TimeoutMillis, state: txnState(v.State),
		startMs: v.StartTimestamp, lastUpdate: v.LastUpdateTimestamp,
		clientTxnV2: v.ClientTransactionVersion >= 2,
	}
	if v.Version == 0 {
		d.prevProducerID, d.nextProducerID = -1, -1
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			d.addPartition(t.Topic, p)
		}
	}
	return k.TransactionalID, d, nil
}
