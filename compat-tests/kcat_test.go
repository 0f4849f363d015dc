package compattests

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kcatTimeout bounds one kcat invocation.
// A consumer run with -e ends only when the broker reports the partition's end, so a
// broker that never does costs this much per test.
const kcatTimeout = 20 * time.Second

// kcat runs kcat against b with the given arguments and stdin, failing the test on error.
func kcat(t *testing.T, b *Broker, stdin string, args ...string) string {
	t.Helper()
	bin := lookPath(t, "kcat")
	all := append([]string{"-b", b.Addr, "-X", "socket.timeout.ms=20000"}, args...)
	return runCmd(t, kcatTimeout, stdin, bin, all...)
}

// TestKcat drives one broker with librdkafka's kcat: metadata listing, keyed produce with
// headers to an auto-created topic and read-back in order, and every compression codec.
func TestKcat(t *testing.T) {
	b := StartBroker(t, "num.partitions=1", "auto.create.topics.enable=true")

	t.Run("ProduceConsumeKeysHeaders", func(t *testing.T) {
		topic := "kcat-keys"
		var in strings.Builder
		const n = 25
		for i := range n {
			fmt.Fprintf(&in, "key-%02d:value %02d with spaces\n", i, i)
		}
		// -p 0 pins the partition so the read-back order is the produce order.
		kcat(t, b, in.String(), "-P", "-t", topic, "-p", "0", "-K:", "-H", "h1=v1", "-H", "trace=abc-123")
		out := kcat(t, b, "", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
			"-f", `%k|%s|%h|%o\n`)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("read back %d records, want %d:\n%s", len(lines), n, out)
		}
		for i, line := range lines {
			want := fmt.Sprintf("key-%02d|value %02d with spaces|h1=v1,trace=abc-123|%d", i, i, i)
			if line != want {
				t.Errorf("record %d: got %q, want %q", i, line, want)
			}
		}
	})

	t.Run("OffsetsFromEndAndByTime", func(t *testing.T) {
		topic := "kcat-offsets"
		var in strings.Builder
		for i := range 10 {
			fmt.Fprintf(&in, "k%d:v%d\n", i, i)
		}
		kcat(t, b, in.String(), "-P", "-t", topic, "-p", "0", "-K:")
		// -o -3: the last three records (ListOffsets latest, then fetch from end-3).
		out := kcat(t, b, "", "-C", "-t", topic, "-p", "0", "-o", "-3", "-e", "-f", `%o:%k\n`)
		if want := "7:k7\n8:k8\n9:k9\n"; out != want {
			t.Errorf("-o -3 printed %q, want %q", out, want)
		}
		// -Q with a timestamp far in the future: no record at or after it, so Kafka answers
		// offset -1 (ListOffsets by timestamp).
		out = kcat(t, b, "", "-Q", "-t", topic+":0:"+fmt.Sprint(time.Now().Add(time.Hour).UnixMilli()))
		if !strings.Contains(out, "offset -1") {
			t.Errorf("-Q for a future timestamp printed %q, want offset -1", out)
		}
		// -Q with timestamp 0: the first record (offset 0).
		out = kcat(t, b, "", "-Q", "-t", topic+":0:1")
		if !strings.Contains(out, "offset 0") {
			t.Errorf("-Q for timestamp 1 printed %q, want offset 0", out)
		}
	})

	t.Run("MetadataList", func(t *testing.T) {
		// Producing auto-creates the topic; -L must list the broker and it.
		kcat(t, b, "m:1\n", "-P", "-t", "kcat-meta", "-K:")
		out := kcat(t, b, "", "-L")
		if !strings.Contains(out, " 1 brokers:") {
			t.Errorf("-L does not list exactly one broker:\n%s", out)
		}
		if !strings.Contains(out, "at "+b.Addr) {
			t.Errorf("-L does not list the broker at %s:\n%s", b.Addr, out)
		}
		if !strings.Contains(out, `topic "kcat-meta" with 1 partitions:`) {
			t.Errorf("-L does not list topic kcat-meta with 1 partition:\n%s", out)
		}
		if !strings.Contains(out, "partition 0, leader ") {
			t.Errorf("-L lists no partition leader:\n%s", out)
		}
		topicOnly := kcat(t, b, "", "-L", "-t", "kcat-meta")
		if !strings.Contains(topicOnly, `topic "kcat-meta" with 1 partitions:`) {
			t.Errorf("-L -t kcat-meta:\n%s", topicOnly)
		}
	})

	for codecID, codec := range []string{1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"} {
		if codec == "" {
			continue
		}
		t.Run("Compression_"+codec, func(t *testing.T) {
			topic := "kcat-z-" + codec
			const n = 200
			var in strings.Builder
			for i := range n {
				// Repetitive values so every codec actually compresses.
				fmt.Fprintf(&in, "k%03d:%s-%03d-%s\n", i, codec, i, strings.Repeat("abcdefgh", 16))
			}
			kcat(t, b, in.String(), "-P", "-t", topic, "-p", "0", "-K:", "-z", codec,
				"-X", "linger.ms=50", "-X", "batch.num.messages=100")
			out := kcat(t, b, "", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", `%k:%s\n`)
			if out != in.String() {
				got := strings.Split(out, "\n")
				t.Fatalf("%s: read back %d lines, differing from the %d produced; first lines:\n%s",
					codec, len(got)-1, n, strings.Join(got[:min(len(got), 5)], "\n"))
			}
			// The broker keeps the producer's batches as they came: compressed with the codec.
			if attrs := firstBatchAttributes(t, b.Addr, topic); int(attrs&0x07) != codecID {
				// Older librdkafka (Debian's kcat has 2.0.2) compresses gzip/snappy/lz4 only if
				// ApiVersions lists Produce v2, which is why Kafka 4.x advertises Produce from v0
				// and rejects v0-v2 on use (KAFKA-18659).
				minV, maxV := advertisedVersions(t, b.Addr, 0)
				t.Errorf("first stored batch has attributes %#x, want codec %d (%s); ApiVersions advertises Produce v%d-v%d (Kafka 4.x: v0-v%d)",
					attrs, codecID, codec, minV, maxV, maxV)
			}
		})
	}
}

// firstBatchAttributes fetches topic's partition 0 from offset 0 with a raw Fetch v11 and
// returns the attributes of the first record batch in the response.
func firstBatchAttributes(t *testing.T, addr, topic string) int16 {
	attrs, _ := firstBatchHeader(t, addr, topic)
	return attrs
}

// firstBatchHeader returns the attributes and producer ID of the first record batch of
// topic's partition 0, read with a raw Fetch v11.
func firstBatchHeader(t *testing.T, addr, topic string) (attributes int16, producerID int64) {
	t.Helper()
	conn := dialRaw(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 500
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = 0
	rp.FetchOffset = 0
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrFetchResponse()
	if err := roundTrip(conn, req, resp, 3); err != nil {
		t.Fatalf("raw fetch: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("raw fetch: %d topics in response", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	// RecordBatch v2: attributes are the int16 at byte 21, after baseOffset(8) length(4)
	// partitionLeaderEpoch(4) magic(1) crc(4).
	if p.ErrorCode != 0 || len(p.RecordBatches) < 61 {
		t.Fatalf("raw fetch: error %d, %d bytes of records", p.ErrorCode, len(p.RecordBatches))
	}
	if magic := p.RecordBatches[16]; magic != 2 {
		t.Fatalf("raw fetch: first batch has magic %d", magic)
	}
	rb := p.RecordBatches
	// ... attributes(2) lastOffsetDelta(4) firstTimestamp(8) maxTimestamp(8) producerId(8).
	return int16(binary.BigEndian.Uint16(rb[21:23])), int64(binary.BigEndian.Uint64(rb[43:51]))
}

// advertisedVersions returns the version range the broker's ApiVersions lists for apiKey.
func advertisedVersions(t *testing.T, addr string, apiKey int16) (minVersion, maxVersion int16) {
	t.Helper()
	conn := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "compat", "1"
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := roundTrip(conn, req, resp, 5); err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == apiKey {
			return k.MinVersion, k.MaxVersion
		}
	}
	return -1, -1
}
