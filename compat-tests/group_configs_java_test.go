package compattests

// Group configs (the GROUP config resource) of KIP-848 consumer groups and KIP-1071 streams
// groups set, described and refused with Apache Kafka 4.4's kafka-configs. That the
// coordinator applies them is shown by broker's TestGroupConfigsConsumerStreams and
// coordinator's TestConsumerGroupOverrides / TestStreamsGroupOverrides.

import (
	"strings"
	"testing"
)

func TestGroupConfigsJava(t *testing.T) {
	b := StartBroker(t)
	const tool = "org.apache.kafka.tools.ConfigCommand"
	javaTool(t, "", tool, "--bootstrap-server", b.Addr, "--alter", "--entity-type", "groups", "--entity-name", "orders",
		"--add-config", "consumer.heartbeat.interval.ms=7000,consumer.session.timeout.ms=50000,streams.num.standby.replicas=1")
	out, _ := javaTool(t, "", tool, "--bootstrap-server", b.Addr, "--describe", "--entity-type", "groups", "--entity-name", "orders")
	for _, want := range []string{"consumer.heartbeat.interval.ms=7000", "consumer.session.timeout.ms=50000", "streams.num.standby.replicas=1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kafka-configs --describe: no %q in\n%s", want, out)
		}
	}
	// Kafka's bounds, with its words.
	stdout, stderr, err := runCmdErr(javaTimeout, "", lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-cp", kafkaJars(t)+"/*", tool, "--bootstrap-server", b.Addr, "--alter", "--entity-type", "groups", "--entity-name", "orders",
		"--add-config", "consumer.heartbeat.interval.ms=1")
	if !strings.Contains(stdout+stderr, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.") {
		t.Fatalf("heartbeat 1 (err %v): %s %s", err, stdout, stderr)
	}
}
