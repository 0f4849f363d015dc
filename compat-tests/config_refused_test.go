package compattests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUnsupportedSettingsStopTheStart runs the real binary as a new user would, with each
// setting that asks for something sluice does not implement yet: it must exit at once, non-zero,
// with an error naming the key, and never serve (an SSL listener serving plaintext, a replica
// selector that is never asked, a second log directory left unused).
func TestUnsupportedSettingsStopTheStart(t *testing.T) {
	bin := sluiceBinary(t)
	for _, tc := range []struct {
		settings []string
		key      string
	}{
		// SASL between brokers with Kafka's default mechanism, GSSAPI (interbroker_tls_test.go
		// has the TLS and SCRAM set-ups sluice speaks between nodes).
		{[]string{"listeners=SASL_PLAINTEXT://127.0.0.1:0", "security.inter.broker.protocol=SASL_PLAINTEXT",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainModule + ` required user_a="b";`}, "sasl.mechanism.inter.broker.protocol"},
		{[]string{"authorizer.class.name=kafka.security.authorizer.AclAuthorizer"}, "authorizer.class.name"}, // only the StandardAuthorizer
		{[]string{"replica.selector.class=com.example.NearestReplicaSelector"}, "replica.selector.class"},    // only the rack-aware one
		{[]string{"cordoned.log.dirs=" + t.TempDir()}, "cordoned.log.dirs"},                                  // KIP-1066 (several log.dirs are served now)
		{[]string{"config.providers=file"}, "config.providers"},                                              // Kafka 4.2+: ${file:...} would be taken literally
	} {
		args := []string{"--set", "log.dirs=" + t.TempDir(), "--set", "listeners=PLAINTEXT://127.0.0.1:0"}
		for _, s := range tc.settings {
			args = append(args, "--set", s)
		}
		stdout, stderr, err := runCmdErr(startDeadline, "", bin, args...)
		if err == nil {
			t.Errorf("%v: sluice exited 0\n%s%s", tc.settings, stdout, stderr)
			continue
		}
		if !strings.Contains(stderr, tc.key+"=") || !strings.Contains(stderr, "is not supported by sluice yet") {
			t.Errorf("%v: %v, stderr does not name %s as not supported yet:\n%s", tc.settings, err, tc.key, clip(stderr))
		}
		if strings.Contains(stderr, "listening") {
			t.Errorf("%v: sluice listened before refusing:\n%s", tc.settings, clip(stderr))
		}
	}
}

// TestNoEffectSettingsAreLogged: a Kafka tuning hint starts, with one log line saying it has
// no effect and why.
func TestNoEffectSettingsAreLogged(t *testing.T) {
	// group.coordinator.background.threads is a Kafka 4.2+ key.
	b := StartBroker(t, "num.io.threads=16", "group.coordinator.background.threads=4")
	for _, key := range []string{"num.io.threads", "group.coordinator.background.threads"} {
		waitFor(t, 10*time.Second, "the no-effect line of "+key, func() error {
			if !strings.Contains(b.Log(), key+" is accepted for compatibility with Kafka but has no effect in sluice") {
				return os.ErrNotExist
			}
			return nil
		})
	}
}

// TestCompactedTopicsAccepted: CreateTopics and AlterConfigs take cleanup.policy=compact (and
// compact,delete), now that the cleaner compacts (compaction_test.go), and a broker started
// with log.cleanup.policy=compact serves.
func TestCompactedTopicsAccepted(t *testing.T) {
	b := StartBroker(t, "log.cleanup.policy=compact")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	compact, both := "compact", "compact,delete"
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "compacted"); err != nil || resp.Err != nil {
		t.Fatalf("create compacted topic: %v %v %q", err, resp.Err, resp.ErrMessage)
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &both}, "compacted-and-deleted"); err != nil || resp.Err != nil {
		t.Fatalf("create compact,delete topic: %v %v %q", err, resp.Err, resp.ErrMessage)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &compact}}, "plain")
	if err != nil || len(alter) != 1 || alter[0].Err != nil {
		t.Fatalf("alter to compact: %v %+v", err, alter)
	}
	described, err := adm.DescribeTopicConfigs(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := described.On("plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "compact") {
			t.Fatalf("cleanup.policy of plain after the alter: %v", c.MaybeValue())
		}
	}
}

// TestMetadataLogDirHonoured: metadata.log.dir holds the metadata log, and the cluster it
// describes survives a restart.
func TestMetadataLogDirHonoured(t *testing.T) {
	metaDir := t.TempDir()
	b := StartBroker(t, "metadata.log.dir="+metaDir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(metaDir, "__cluster_metadata-0")); err != nil {
		t.Fatalf("metadata log not in metadata.log.dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "__cluster_metadata-0")); err == nil {
		t.Fatal("metadata log written to log.dirs as well")
	}
	b.Stop()
	b.Restart()
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	topics, err := kadm.NewClient(cl2).ListTopics(ctx, "kept")
	if err != nil || topics["kept"].Err != nil || len(topics["kept"].Partitions) != 2 {
		t.Fatalf("after restart: %v %+v", err, topics)
	}
}
