package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/batch"
	"sluice/internal/compress"
	"sluice/internal/config"
)

// TestCompactedTopicRefusesRecordsWithoutKey: as Kafka's LogValidator, a batch holding a
// record with a null key is INVALID_RECORD on a compacted topic (compressed or not), and fine
// on a delete topic.
func TestCompactedTopicRefusesRecordsWithoutKey(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	settings := func(compact bool) *config.TopicSettings {
		return &config.TopicSettings{MaxMessageBytes: 1 << 20, MessageTimestampType: "CreateTime",
			MessageTimestampBeforeMaxMs: 1 << 62, MessageTimestampAfterMaxMs: 3_600_000, CleanupCompact: compact, CleanupDelete: !compact}
	}
	build := func(codec int, keys ...[]byte) []byte {
		recs := make([]batch.Record, len(keys))
		for i, k := range keys {
			recs[i] = batch.Record{TimestampDelta: int64(i), Key: k, Value: []byte("v")}
		}
		b := batch.Build(batch.Header{BaseTimestamp: now.UnixMilli(), MaxTimestamp: now.UnixMilli() + int64(len(keys)) - 1,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if codec == 0 {
			return b
		}
		body, err := compress.Compress(codec, nil, b[batch.HeaderSize:], 0)
		if err != nil {
			t.Fatal(err)
		}
		out := append(append([]byte(nil), b[:batch.HeaderSize]...), body...)
		batch.SetLength(out, int32(len(out)-batch.LogOverhead))
		batch.SetCompression(out, codec)
		c := batch.CRC(out)
		out[17], out[18], out[19], out[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
		return out
	}
	for _, codec := range []int{0, compress.Gzip, compress.LZ4} {
		if code := validateProduceRecords(build(codec, []byte("a"), nil, []byte("c")), 9, settings(true), topicPartition{"t", 0}, now).code; code != kerr.InvalidRecord.Code {
			t.Errorf("codec %d: keyless record on a compacted topic answered %v, want INVALID_RECORD", codec, kerr.ErrorForCode(code))
		}
		if code := validateProduceRecords(build(codec, []byte("a"), []byte("b")), 9, settings(true), topicPartition{"t", 0}, now).code; code != 0 {
			t.Errorf("codec %d: keyed records on a compacted topic answered %v", codec, kerr.ErrorForCode(code))
		}
		if code := validateProduceRecords(build(codec, nil), 9, settings(false), topicPartition{"t", 0}, now).code; code != 0 {
			t.Errorf("codec %d: keyless record on a delete topic answered %v", codec, kerr.ErrorForCode(code))
		}
	}
}

func TestIOThrottleStopsWhenTheBrokerCloses(t *testing.T) {
	closing := make(chan struct{})
	th := newIOThrottle(1, closing) // one byte a second: a megabyte waits for days
	done := make(chan error, 1)
	go func() { done <- th.wait(1 << 20) }()
	close(closing)
	if err := <-done; err != errCleanerStopped {
		t.Fatalf("wait after close: %v", err)
	}
}
