package compattests

// Client telemetry (KIP-714) with Apache Kafka 4.4's own tools: kafka-client-metrics
// (ClientMetricsCommand) sets, describes and lists a subscription, kafka-configs describes it
// as a client-metrics entity, and the Java producer of kafka-producer-perf-test and
// librdkafka 2.16 (confluent-kafka from PyPI) push their metrics, which /metrics then shows
// under their Prometheus names with the client's id.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClientMetricsJava(t *testing.T) {
	b, base := startBrokerWithHTTP(t)
	const cm = "org.apache.kafka.tools.ClientMetricsCommand"
	out, _ := javaTool(t, "", cm, "--bootstrap-server", b.Addr, "--alter", "--name", "perf",
		"--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.", "--interval", "1000", "--match", "client_id=telemetry-.*")
	if !strings.Contains(out, "Altered client metrics config for perf.") {
		t.Fatalf("--alter: %s", out)
	}
	out, _ = javaTool(t, "", cm, "--bootstrap-server", b.Addr, "--describe", "--name", "perf")
	for _, want := range []string{"interval.ms=1000", "match=client_id=telemetry-.*", "metrics=org.apache.kafka.producer.,org.apache.kafka.consumer."} {
		if !containsLine(out, want) {
			t.Fatalf("--describe: no %q in\n%s", want, out)
		}
	}
	if out, _ = javaTool(t, "", cm, "--bootstrap-server", b.Addr, "--list"); !containsLine(out, "perf") {
		t.Fatalf("--list: %s", out)
	}
	out, _ = javaTool(t, "", "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.Addr, "--describe",
		"--entity-type", "client-metrics", "--entity-name", "perf")
	if !strings.Contains(out, "interval.ms=1000") {
		t.Fatalf("kafka-configs --describe: %s", out)
	}
	// Kafka's validation, with its words.
	stdout, stderr, err := runCmdErr(javaTimeout, "", lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-cp", kafkaJars(t)+"/*", cm, "--bootstrap-server", b.Addr, "--alter", "--name", "bad", "--interval", "10")
	if err == nil && !strings.Contains(stdout+stderr, "interval must be between 100 and 3600000") {
		t.Fatalf("--interval 10 accepted: %s %s", stdout, stderr)
	}

	// A client no subscription matches (librdkafka asks for telemetry too) still works.
	kcat(t, b, "a\nb\n", "-P", "-t", "telemetry-other", "-X", "client.id=other")

	// A running Java producer finds the subscription and pushes every second: its send
	// counter appears on /metrics and grows with the deltas it pushes.
	perf := exec.Command(lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-cp", kafkaJars(t)+"/*", "org.apache.kafka.tools.ProducerPerformance", "--topic", "telemetry",
		"--num-records", "1000000", "--throughput", "20", "--record-size", "10",
		"--producer-props", "bootstrap.servers="+b.Addr, "client.id=telemetry-perf")
	if err := perf.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = perf.Process.Kill(); _ = perf.Wait() })
	sent := func() (float64, error) {
		families := scrape(t, base)
		if _, n := series(families, "org_apache_kafka_producer_record_send_total", map[string]string{"client_id": "other"}); n != 0 {
			t.Fatal("a client no subscription matches was exported")
		}
		v, n := series(families, "org_apache_kafka_producer_record_send_total", map[string]string{"client_id": "telemetry-perf"})
		if n != 1 || v <= 0 {
			return 0, fmt.Errorf("org_apache_kafka_producer_record_send_total{client_id=telemetry-perf}: %d series, %v", n, v)
		}
		if typ := families["org_apache_kafka_producer_record_send_total"].GetType().String(); typ != "COUNTER" {
			t.Fatalf("type %s", typ)
		}
		return v, nil
	}
	var first float64
	waitFor(t, 60*time.Second, "the producer's pushed record.send.total on /metrics", func() (err error) {
		first, err = sent()
		return err
	})
	waitFor(t, 60*time.Second, "record.send.total to grow with the next pushes", func() error {
		v, err := sent()
		if err == nil && v <= first {
			err = fmt.Errorf("still %v", v)
		}
		return err
	})

	// --delete removes the subscription.
	javaTool(t, "", cm, "--bootstrap-server", b.Addr, "--delete", "--name", "perf")
	if out, _ = javaTool(t, "", cm, "--bootstrap-server", b.Addr, "--list"); containsLine(out, "perf") {
		t.Fatalf("--list after --delete: %s", out)
	}
}

// rdkafkaPython is the python of the venv scripts/install-test-deps.sh makes with
// confluent-kafka from PyPI (librdkafka 2.5+, which pushes telemetry).
func rdkafkaPython(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("SLUICE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "sluice")
	}
	// The compatibility matrix's PyPI venv (compat-tests/matrix/installers.go), which
	// scripts/install-test-deps.sh installs for make test.
	py := filepath.Join(cache, "pyvenv", "bin", "python")
	if _, _, err := runCmdErr(time.Minute, "", py, "-c", "import confluent_kafka"); err != nil {
		t.Fatalf("%s cannot import confluent_kafka (run scripts/install-test-deps.sh): %v", py, err)
	}
	return py
}

// TestClientMetricsLibrdkafka: librdkafka (2.5+, through confluent-kafka) finds a subscription
// set over the protocol and pushes its producer metrics, which /metrics shows.
func TestClientMetricsLibrdkafka(t *testing.T) {
	py := rdkafkaPython(t)
	b, base := startBrokerWithHTTP(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "rdk"
	for k, v := range map[string]string{"metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_id=rdk-.*"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("setting the subscription: %v %+v", err, resp)
	}
	producer := exec.Command(py, "-c", `
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "client.id": "rdk-1"})
end = time.time() + 120
while time.time() < end:
    p.produce("telemetry-rdk", b"x")
    p.poll(0.05)
`, b.Addr)
	if err := producer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = producer.Process.Kill(); _ = producer.Wait() })
	waitFor(t, 60*time.Second, "librdkafka's pushed producer metrics on /metrics", func() error {
		families := scrape(t, base)
		if _, n := series(families, "org_apache_kafka_producer_request_latency_avg", map[string]string{"client_id": "rdk-1"}); n != 1 {
			return fmt.Errorf("org_apache_kafka_producer_request_latency_avg{client_id=rdk-1}: %d series", n)
		}
		return nil
	})
}
