package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/logstore"
)

// listLatest asks for the partition's latest offset (the high watermark).
func (tb *testBroker) listLatest(t *testing.T, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, listLatest, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.direct(t, req).(*kmsg.ListOffsetsResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: error %d", p.ErrorCode)
	}
	return p.Offset
}

// A clean shutdown leaves Kafka's replication-offset-checkpoint with every hosted partition's
// high watermark; a restart serves from it.
func TestHighWatermarkCheckpointWrittenAtShutdown(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "hw", 2, nil)
		tb.produce(t, "hw", 0, 5)
		tb.produce(t, "hw", 1, 2)
	})
	data, err := os.ReadFile(filepath.Join(logDir, replica.HighWatermarkCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "0\n") || !strings.Contains(string(data), "\nhw 0 5\n") || !strings.Contains(string(data), "\nhw 1 2\n") {
		t.Fatalf("checkpoint is %q, want version 0 and the lines \"hw 0 5\", \"hw 1 2\"", data)
	}
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		if hw := tb.listLatest(t, "hw", 0); hw != 5 {
			t.Fatalf("high watermark after restart %d, want 5", hw)
		}
		wantValues(t, consumeValues(t, tb, "hw", 0, 5), 5)
	})
}

// A sole-replica leader restarted with a checkpoint behind its log (records acknowledged after
// the last checkpoint write, then a crash) serves every record in its log at once, as Kafka's
// leader with ISR = {itself} moves the HW to its log end: they are on the whole ISR.
func TestRestartedSoleReplicaServesPastItsCheckpoint(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "behind", 1, nil)
		tb.produce(t, "behind", 0, 6)
	})
	stale := map[replica.TopicPartition]int64{{Topic: "behind", Partition: 0}: 2}
	if err := replica.WriteHighWatermarks(logstore.OSFS{}, logDir, stale); err != nil {
		t.Fatal(err)
	}
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		if hw := tb.listLatest(t, "behind", 0); hw != 6 {
			t.Fatalf("high watermark after restart %d, want the log end 6", hw)
		}
		wantValues(t, consumeValues(t, tb, "behind", 0, 6), 6)
	})
}

// A damaged checkpoint does not stop the broker or hide records: it is ignored (a lower HW is
// always safe) and the sole-replica leader serves its whole log.
func TestDamagedHighWatermarkCheckpointIgnored(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "damaged", 1, nil)
		tb.produce(t, "damaged", 0, 3)
	})
	if err := os.WriteFile(filepath.Join(logDir, replica.HighWatermarkCheckpointFile), []byte("0\n7\ngarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		if hw := tb.listLatest(t, "damaged", 0); hw != 3 {
			t.Fatalf("high watermark after restart %d, want 3", hw)
		}
	})
}
