package compattests

import (
	"fmt"
	"strings"
	"testing"
	"time"
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

	t.Run("MetadataList", func(t *testing.T) {
		// The topic above was auto-created; -L must list the broker and it.
		out := kcat(t, b, "", "-L")
		if !strings.Contains(out, " 1 brokers:") {
			t.Errorf("-L does not list exactly one broker:\n%s", out)
		}
		if !strings.Contains(out, "at "+b.Addr) {
			t.Errorf("-L does not list the broker at %s:\n%s", b.Addr, out)
		}
		if !strings.Contains(out, `topic "kcat-keys" with 1 partitions:`) {
			t.Errorf("-L does not list topic kcat-keys with 1 partition:\n%s", out)
		}
		if !strings.Contains(out, "partition 0, leader ") {
			t.Errorf("-L lists no partition leader:\n%s", out)
		}
		topicOnly := kcat(t, b, "", "-L", "-t", "kcat-keys")
		if !strings.Contains(topicOnly, `topic "kcat-keys" with 1 partitions:`) {
			t.Errorf("-L -t kcat-keys:\n%s", topicOnly)
		}
	})

	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
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
		})
	}
}
