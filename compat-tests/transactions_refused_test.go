package compattests

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactions are not served yet. These tests check that every client family's transactional
// producer (and Java's transaction admin tool) stops at once with an error that says so,
// instead of retrying a retriable COORDINATOR_NOT_AVAILABLE for minutes (Java waited 60 s,
// sarama over 4 minutes, the admin client sent ~400,000 FindCoordinator requests a minute).
// The deadlines below only bound a hang; the assertions are on the error each client reports.

// refusalDeadline bounds each client's run; a client that retried would end on it instead of
// the fatal error the test expects.
const refusalDeadline = 60 * time.Second

func TestTransactionalProducersRefusedFranz(t *testing.T) {
	b := StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("tx-franz"), kgo.DefaultProduceTopic("txn"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), refusalDeadline)
	defer cancel()
	// kgo initialises the producer ID eagerly, so BeginTransaction already reports the
	// refusal; if it did not, the first produce would.
	err = cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	}
	// kgo reports the InitProducerId failure as text around the Kafka error.
	if err == nil || !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) && !strings.Contains(err.Error(), kerr.TransactionalIDAuthorizationFailed.Message) {
		t.Fatalf("produce in a transaction: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
}

func TestTransactionalProducersRefusedKcat(t *testing.T) {
	b := StartBroker(t)
	stdout, stderr, err := runCmdErr(refusalDeadline, "v\n", lookPath(t, "kcat"), "-b", b.Addr, "-P", "-t", "txn", "-X", "transactional.id=tx-kcat")
	if err == nil {
		t.Fatalf("kcat with transactional.id succeeded:\n%s%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "Transactional Id authorization failed") || !strings.Contains(stderr, "sluice does not serve transactions yet") {
		t.Fatalf("kcat: %v\nstderr:\n%s", err, clip(stderr))
	}
}

func TestTransactionalProducersRefusedJava(t *testing.T) {
	b := StartBroker(t)
	java := lookPath(t, "java")
	cp := filepath.Join(kafkaJars(t), "*")
	jvm := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", cp}

	// The producer perf tool calls initTransactions when given a transactional ID.
	stdout, stderr, err := runCmdErr(refusalDeadline, "", java, append(jvm, "org.apache.kafka.tools.ProducerPerformance",
		"--topic", "txn", "--num-records", "10", "--record-size", "10", "--throughput", "-1",
		"--transactional-id", "tx-java", "--producer-props", "bootstrap.servers="+b.Addr)...)
	if err == nil || !strings.Contains(stdout+stderr, "TransactionalIdAuthorizationException") {
		t.Fatalf("ProducerPerformance --transactional-id: %v\nstdout:\n%s\nstderr:\n%s", err, clip(stdout), clip(stderr))
	}

	// kafka-transactions.sh describe looks up the transaction coordinator first; the admin
	// client words the fatal code as an authorization failure and drops the message.
	stdout, stderr, err = runCmdErr(refusalDeadline, "", java, append(jvm, "org.apache.kafka.tools.TransactionsCommand",
		"--bootstrap-server", b.Addr, "describe", "--transactional-id", "tx-java")...)
	if err == nil || !strings.Contains(stdout+stderr, "failed due to authorization failure") {
		t.Fatalf("TransactionsCommand describe: %v\nstdout:\n%s\nstderr:\n%s", err, clip(stdout), clip(stderr))
	}
}
