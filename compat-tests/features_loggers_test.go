package compattests

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// javaToolFails runs a Kafka tool that must exit non-zero and returns stdout and stderr.
func javaToolFails(t *testing.T, class string, args ...string) (string, string) {
	t.Helper()
	java := lookPath(t, "java")
	jvm := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx256m",
		"-cp", kafkaJars(t) + "/*", class}
	stdout, stderr, err := runCmdErr(javaTimeout, "", java, append(jvm, args...)...)
	if err == nil || strings.Contains(err.Error(), "timed out") {
		t.Fatalf("%s %s: want a refusal, got %v\nstdout:\n%s\nstderr:\n%s", class, strings.Join(args, " "), err, clip(stdout), clip(stderr))
	}
	return stdout, stderr
}

// TestKafkaFeaturesTool drives UpdateFeatures and the features of ApiVersions with Kafka 4.4's
// kafka-features (FeatureCommand): describe lists every feature sluice knows with its
// supported range and finalized level, an upgrade to a level sluice serves succeeds, and a
// level it does not serve is refused with Kafka's message (the other refusals are
// controller/features_test.go's, without a JVM each).
func TestKafkaFeaturesTool(t *testing.T) {
	b := StartBroker(t)
	const tool = "org.apache.kafka.tools.FeatureCommand"
	out, _ := javaTool(t, "", tool, "--bootstrap-server", b.Addr, "describe")
	t.Logf("describe:\n%s", out)
	for _, want := range []string{
		`Feature: eligible.leader.replicas.version\s+SupportedMinVersion: 1\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: \d+`,
		`Feature: group.version\s+SupportedMinVersion: 1\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: \d+`,
		`Feature: kraft.version\s+SupportedMinVersion: 1\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: \d+`,
		`Feature: metadata.version\s+SupportedMinVersion: 4.4-IV2\s+SupportedMaxVersion: 4.4-IV2\s+FinalizedVersionLevel: 4.4-IV2\s+Epoch: \d+`,
		`Feature: share.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 0\s+FinalizedVersionLevel: 0\s+Epoch: \d+`,
		`Feature: streams.version\s+SupportedMinVersion: 1\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: \d+`,
		`Feature: transaction.version\s+SupportedMinVersion: 2\s+SupportedMaxVersion: 2\s+FinalizedVersionLevel: 2\s+Epoch: \d+`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("describe lacks %q", want)
		}
	}

	out, _ = javaTool(t, "", tool, "--bootstrap-server", b.Addr, "upgrade", "--feature", "group.version=1")
	if !strings.Contains(out, "group.version was upgraded to 1.") {
		t.Errorf("upgrade group.version=1:\n%s", out)
	}

	stdout, stderr := javaToolFails(t, tool, "--bootstrap-server", b.Addr, "downgrade", "--feature", "transaction.version=1")
	if want := "Invalid update version 1 for feature transaction.version. Local controller 1 only supports versions 2"; !strings.Contains(stdout+stderr, want) {
		t.Errorf("downgrade transaction.version=1 lacks %q:\nstdout:\n%s\nstderr:\n%s", want, stdout, clip(stderr))
	}
}

// TestBrokerLoggersTool lists and changes sluice's log components with Kafka 4.4's
// kafka-configs --entity-type broker-loggers: the components are listed at the process's
// level, --add-config wire=DEBUG makes the wire component log at DEBUG at once (a connection
// closed for a bad frame is logged), and --delete-config reverts it to the root's level. The
// refusals are broker/broker_loggers_test.go's, without a JVM each.
func TestBrokerLoggersTool(t *testing.T) {
	b := StartBroker(t)
	const tool = "org.apache.kafka.tools.ConfigCommand"
	describe := func() string {
		out, _ := javaTool(t, "", tool, "--bootstrap-server", b.Addr, "--entity-type", "broker-loggers", "--entity-name", "1", "--describe")
		return out
	}
	out := describe()
	t.Logf("describe:\n%s", out)
	for _, logger := range []string{"root", "broker", "wire", "controller", "coordinator"} {
		if !regexp.MustCompile(`(?m)^\s*` + logger + `=INFO\b`).MatchString(out) {
			t.Errorf("describe lacks %s=INFO", logger)
		}
	}

	out, _ = javaTool(t, "", tool, "--bootstrap-server", b.Addr, "--entity-type", "broker-loggers", "--entity-name", "1", "--alter", "--add-config", "wire=DEBUG")
	if !strings.Contains(out, "Completed updating config for broker-logger 1.") {
		t.Errorf("alter:\n%s", out)
	}
	if out := describe(); !regexp.MustCompile(`(?m)^\s*wire=DEBUG\b`).MatchString(out) || !regexp.MustCompile(`(?m)^\s*broker=INFO\b`).MatchString(out) {
		t.Errorf("after wire=DEBUG:\n%s", out)
	}
	// A frame with an unknown API key closes the connection, which the wire component now logs.
	conn, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0, 0, 0, 8, 0x7f, 0x7f, 0, 0, 0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a DEBUG line of the wire component", func() error {
		if !regexp.MustCompile(`level=DEBUG msg="wire: closing connection"`).MatchString(b.Log()) {
			return errNotYet
		}
		return nil
	})

	javaTool(t, "", tool, "--bootstrap-server", b.Addr, "--entity-type", "broker-loggers", "--entity-name", "1", "--alter", "--delete-config", "wire")
	if out := describe(); !regexp.MustCompile(`(?m)^\s*wire=INFO\b`).MatchString(out) {
		t.Errorf("after --delete-config wire:\n%s", out)
	}
}
