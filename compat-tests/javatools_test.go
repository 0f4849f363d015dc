package compattests

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// javaTimeout bounds one JVM run (startup is slow on a loaded 2-core machine).
const javaTimeout = 90 * time.Second

var (
	kafkaJarsOnce sync.Once
	kafkaJarsDir  string
	kafkaJarsErr  error
)

// kafkaJars returns the directory of Apache Kafka's jars, fetching them (once) with
// scripts/fetch-kafka.sh, which prints the directory on its last line.
func kafkaJars(t testing.TB) string {
	t.Helper()
	kafkaJarsOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			kafkaJarsErr = err
			return
		}
		stdout, stderr, err := runCmdErr(10*time.Minute, "", filepath.Join(root, "scripts", "fetch-kafka.sh"))
		if err != nil {
			kafkaJarsErr = fmt.Errorf("scripts/fetch-kafka.sh: %v\n%s%s", err, clip(stdout), clip(stderr))
			return
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		kafkaJarsDir = strings.TrimSpace(lines[len(lines)-1])
		matches, _ := filepath.Glob(filepath.Join(kafkaJarsDir, "kafka-tools-*.jar"))
		if len(matches) == 0 {
			kafkaJarsErr = fmt.Errorf("no kafka-tools jar in %q (fetch-kafka.sh printed %q)", kafkaJarsDir, stdout)
		}
	})
	if kafkaJarsErr != nil {
		t.Fatal(kafkaJarsErr)
	}
	return kafkaJarsDir
}

// javaTool runs a Kafka tool's main class with the Kafka jars on the class path and returns
// stdout and stderr; it fails the test on a non-zero exit or a timeout.
func javaTool(t *testing.T, stdin string, class string, args ...string) (string, string) {
	t.Helper()
	java := lookPath(t, "java")
	jvm := []string{
		// Faster startup for short-lived tools.
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx256m",
		"-cp", filepath.Join(kafkaJars(t), "*"), class,
	}
	stdout, stderr, err := runCmdErr(javaTimeout, stdin, java, append(jvm, args...)...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", class, strings.Join(args, " "), err, clip(stdout), clip(stderr))
	}
	return stdout, stderr
}

// TestJavaTools drives the broker with Apache Kafka's own command-line tools.
func TestJavaTools(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	b := StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	t.Run("TopicCommand", func(t *testing.T) {
		const topicCommand = "org.apache.kafka.tools.TopicCommand"
		topic := "java-topic"
		out, _ := javaTool(t, "", topicCommand, "--bootstrap-server", b.Addr, "--create", "--topic", topic,
			"--partitions", "3", "--replication-factor", "1", "--config", "retention.ms=3600000")
		if !strings.Contains(out, "Created topic "+topic+".") {
			t.Errorf("--create printed %q", out)
		}

		out, _ = javaTool(t, "", topicCommand, "--bootstrap-server", b.Addr, "--list")
		if !containsLine(out, topic) {
			t.Errorf("--list does not show %s:\n%s", topic, out)
		}

		out, _ = javaTool(t, "", topicCommand, "--bootstrap-server", b.Addr, "--describe", "--topic", topic)
		for _, want := range []string{"Topic: " + topic, "PartitionCount: 3", "ReplicationFactor: 1", "retention.ms=3600000"} {
			if !strings.Contains(out, want) {
				t.Errorf("--describe lacks %q:\n%s", want, out)
			}
		}
		partLine := regexp.MustCompile(`Partition: (\d)\s+Leader: (\d+)\s+Replicas: (\d+)\s+Isr: (\d+)`)
		if got := partLine.FindAllStringSubmatch(out, -1); len(got) != 3 {
			t.Errorf("--describe shows %d partitions with a leader, want 3:\n%s", len(got), out)
		}

		javaTool(t, "", topicCommand, "--bootstrap-server", b.Addr, "--delete", "--topic", topic)
		waitFor(t, 30*time.Second, "topic deleted", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			topics, err := adm.ListTopics(ctx)
			if err != nil {
				return err
			}
			if topics.Has(topic) {
				return fmt.Errorf("%s still listed", topic)
			}
			return nil
		})
		out, _ = javaTool(t, "", topicCommand, "--bootstrap-server", b.Addr, "--list")
		if containsLine(out, topic) {
			t.Errorf("--list still shows %s after --delete:\n%s", topic, out)
		}
	})

	t.Run("ConsoleProducerConsumer", func(t *testing.T) {
		topic := "java-console"
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
		const n = 20
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "key%02d:line %02d from the console\n", i, i)
		}
		javaTool(t, in.String(), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", b.Addr,
			"--topic", topic, "--compression-codec", "gzip", "--reader-property", "parse.key=true", "--reader-property", "key.separator=:")
		if attrs := firstBatchAttributes(t, b.Addr, topic); attrs&0x07 != 1 {
			t.Errorf("ConsoleProducer --compression-codec gzip: first stored batch has attributes %#x, want codec 1", attrs)
		}

		out, stderr := javaTool(t, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", b.Addr,
			"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", fmt.Sprint(n),
			"--timeout-ms", "30000", "--formatter-property", "print.key=true", "--formatter-property", "key.separator=:")
		if out != in.String() {
			t.Errorf("ConsoleConsumer printed:\n%s\nwant:\n%s\nstderr:\n%s", clip(out), clip(in.String()), clip(stderr))
		}
		if !strings.Contains(stderr, fmt.Sprintf("Processed a total of %d messages", n)) {
			t.Errorf("ConsoleConsumer stderr lacks the message count:\n%s", clip(stderr))
		}

		// kafka-get-offsets.sh: the end offset (ListOffsets latest).
		out, _ = javaTool(t, "", "org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", b.Addr, "--topic", topic)
		if want := fmt.Sprintf("%s:0:%d", topic, n); !containsLine(out, want) {
			t.Errorf("GetOffsetShell printed %q, want the line %q", out, want)
		}
		// --time earliest-pending-upload (-6, KIP-1023) needs ListOffsets v11. Without remote
		// storage the answer is offset -1, which the tool leaves out, as against Kafka 4.4; a
		// broker without v11 makes it fail with UnsupportedVersionException.
		out, stderr = javaTool(t, "", "org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", b.Addr, "--topic", topic, "--time", "earliest-pending-upload")
		if strings.Contains(out, topic) || strings.Contains(stderr, "Exception") || strings.Contains(stderr, "Error") {
			t.Errorf("GetOffsetShell --time earliest-pending-upload printed %q, stderr:\n%s\nwant nothing (offset -1)", out, clip(stderr))
		}
	})
}

// containsLine reports whether out has a line equal to want (surrounding space trimmed).
func containsLine(out, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == want {
			return true
		}
	}
	return false
}
