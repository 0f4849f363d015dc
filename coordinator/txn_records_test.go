package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A TransactionLogValue v0 as Kafka 3.x writes it (no tagged fields) loads;
// the v1 records written here decode back to what was written.
func TestTxnRecordFormats(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 42, 3, 60000, kmsg.TransactionState(txnOngoing)
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{2, 0}}}
	v.LastUpdateTimestamp, v.StartTimestamp = 20, 10
	id, d, err := decodeTxnRecord(txnKey("tx"), v.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	if id != "tx" || d.producerID != 42 || d.epoch != 3 || d.state != txnOngoing || !d.hasPartition("t", 2) || d.prevProducerID != -1 || d.startMs != 10 {
		t.Fatalf("v0: %s %+v", id, d)
	}
	d.clientTxnV2, d.prevProducerID = true, 41
	r := txnRecord("tx", d)
	_, back, err := decodeTxnRecord(r.key, r.value)
	if err != nil {
		t.Fatal(err)
	}
	if !back.clientTxnV2 || back.prevProducerID != 41 || !back.hasPartition("t", 0) || back.timeoutMs != 60000 {
		t.Fatalf("v1 round trip: %+v", back)
	}
	if _, gone, err := decodeTxnRecord(txnKey("tx"), nil); err != nil || gone != nil {
		t.Fatalf("tombstone: %v %v", gone, err)
	}
	if _, _, err := decodeTxnRecord([]byte{0, 1, 0, 0}, nil); err == nil {
		t.Fatal("key version 1 accepted")
	}
}

func FuzzDecodeTxnRecord(f *testing.F) {
	d := &txnData{producerID: 1, epoch: 0, state: txnOngoing}
	d.addPartition("t", 0)
	r := txnRecord("tx", d)
	f.Add(r.key, r.value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_, _, _ = decodeTxnRecord(key, value)
	})
}
