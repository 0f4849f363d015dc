package config

import (
	"strings"
	"testing"
)

// TestKafka44KeysAtDefaultStart: a server.properties that sets every key Kafka 4.2-4.4 added
// to its Kafka 4.4 default starts, and the defaults of the NotYet ones are not refused.
func TestKafka44KeysAtDefaultStart(t *testing.T) {
	props := map[string]string{}
	for _, k := range []string{
		"config.providers", "controller.quorum.auto.join.enable", "errors.deadletterqueue.auto.create.topics.enable",
		"errors.deadletterqueue.topic.name.prefix", "follower.fetch.last.tiered.offset.enable",
		"group.consumer.assignment.interval.ms", "group.share.dlq.manager.class.name", "group.streams.assignors",
		"group.streams.num.warmup.replicas", "group.streams.rack.aware.assignment.tags",
		"max.decompressed.message.bytes", "sasl.oauthbearer.allow.unverified.audience",
		"sasl.oauthbearer.allow.unverified.issuer", "log.remote.copy.lag.ms",
	} {
		d, ok := BrokerDef(k)
		if !ok {
			t.Fatalf("%s is unknown", k)
		}
		props[k] = deref(d.Default)
	}
	if _, err := ParseBroker(props); err != nil {
		t.Fatalf("Kafka 4.4 defaults refused: %v", err)
	}
	for _, kv := range [][2]string{{"max.decompressed.message.bytes", "2147483639"}, {"errors.deadletterqueue.group.enable", "false"}, {"remote.copy.lag.ms", "5000"}} {
		if err := ValidateTopic(kv[0], kv[1]); err != nil {
			t.Errorf("topic %s=%s: %v", kv[0], kv[1], err)
		}
	}
}

// TestKafka44KeysRefused: the keys Kafka 4.2-4.4 added that ask for a feature sluice lacks
// stop the start (or fail CreateTopics) naming the key.
func TestKafka44KeysRefused(t *testing.T) {
	for _, kv := range [][2]string{
		{"config.providers", "file"},
		{"controller.quorum.auto.join.enable", "true"},
		{"errors.deadletterqueue.auto.create.topics.enable", "true"},
		{"errors.deadletterqueue.topic.name.prefix", "dead."},
		{"follower.fetch.last.tiered.offset.enable", "true"},
		{"group.consumer.assignment.interval.ms", "5000"},
		{"group.share.assignor.offload.enable", "false"},
		{"group.streams.num.warmup.replicas", "0"},
		{"group.streams.assignors", "balanced"},
		{"group.streams.rack.aware.assignment.tags", "zone"},
		{"group.streams.topology.description.plugin.class", "com.example.Plugin"},
		{"max.decompressed.message.bytes", "1048576"},
	} {
		_, err := ParseBroker(map[string]string{kv[0]: kv[1]})
		if e, ok := err.(*Error); !ok || e.Key != kv[0] || !strings.Contains(err.Error(), kv[0]+"="+kv[1]+" is not supported by sluice yet") {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	for _, kv := range [][2]string{{"max.decompressed.message.bytes", "1048576"}, {"errors.deadletterqueue.group.enable", "true"}} {
		if err := ValidateTopic(kv[0], kv[1]); err == nil || !strings.Contains(err.Error(), kv[0]+"="+kv[1]+" is not supported by sluice yet") {
			t.Errorf("topic %s=%s: %v", kv[0], kv[1], err)
		}
	}
	if err := ValidateBrokerDynamic("max.decompressed.message.bytes", "1048576"); err == nil || !strings.Contains(err.Error(), "max.decompressed.message.bytes") {
		t.Errorf("dynamic max.decompressed.message.bytes: %v", err)
	}
}

// TestKafka44TuningHintsWarn: new Kafka 4.4 tuning keys start with one warning each.
func TestKafka44TuningHintsWarn(t *testing.T) {
	props := map[string]string{
		"group.coordinator.background.threads":      "4",
		"share.coordinator.cached.buffer.max.bytes": "2097152",
		"controller.quorum.fetch.max.bytes":         "2097152",
		"group.consumer.max.assignment.interval.ms": "20000",
	}
	b, err := ParseBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	for k := range props {
		n := 0
		for _, w := range b.Warnings {
			if strings.HasPrefix(w, k+" is accepted for compatibility with Kafka but has no effect") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d warnings in %q", k, n, b.Warnings)
		}
	}
}

// TestKafka44RemovedKeysUnknown: Kafka 4.2 removed group.share.enable and
// internal.metadata.max.fetch.size.in.bytes; Kafka 4.4's jars do not know them, so neither
// does sluice.
func TestKafka44RemovedKeysUnknown(t *testing.T) {
	for _, k := range []string{"group.share.enable", "internal.metadata.max.fetch.size.in.bytes"} {
		_, err := ParseBroker(map[string]string{k: "true"})
		if e, ok := err.(*Error); !ok || !e.Unknown || e.Key != k {
			t.Errorf("%s: %v", k, err)
		}
	}
}

// TestKafka44TypesAndBounds: list-typed listener keys (KIP-1161 made them LIST in Kafka 4.2)
// still parse as before; the new bounds of existing keys hold.
func TestKafka44TypesAndBounds(t *testing.T) {
	b, err := ParseBroker(map[string]string{"listeners": " PLAINTEXT://127.0.0.1:9092 ", "log.dirs": "/a, /b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Listeners) != 1 || b.Listeners[0].Port != 9092 || len(b.LogDirs) != 2 || b.LogDirs[1] != "/b" {
		t.Errorf("listeners %v, log.dirs %v", b.Listeners, b.LogDirs)
	}
	for _, kv := range [][2]string{{"num.replica.fetchers", "0"}, {"share.coordinator.snapshot.update.records.per.snapshot", "501"}, {"group.coordinator.append.linger.ms", "-2"}} {
		if err := ValidateBroker(kv[0], kv[1]); err == nil {
			t.Errorf("%s=%s accepted", kv[0], kv[1])
		}
	}
	if err := ValidateBroker("group.coordinator.append.linger.ms", "-1"); err != nil {
		t.Errorf("group.coordinator.append.linger.ms=-1: %v", err)
	}
}

// TestKafka44DynamicKeys: the new keys Kafka 4.4 lets change on a running cluster
// (GroupCoordinatorConfig and ShareCoordinatorConfig RECONFIGURABLE_CONFIGS,
// DynamicReplicationConfig, DynamicRemoteLogConfig, topic-config synonyms) are dynamic here
// too, and the ones sluice does not support are still refused there, naming the key.
func TestKafka44DynamicKeys(t *testing.T) {
	for _, kv := range [][2]string{
		{"group.coordinator.cached.buffer.max.bytes", "2097152"}, {"share.coordinator.cached.buffer.max.bytes", "2097152"},
		{"remote.log.manager.follower.thread.pool.size", "4"}, {"log.remote.copy.lag.ms", "1000"},
	} {
		if err := ValidateBrokerDynamic(kv[0], kv[1]); err != nil {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	for _, kv := range [][2]string{
		{"group.consumer.assignment.interval.ms", "5000"}, {"errors.deadletterqueue.topic.name.prefix", "dead."},
		{"follower.fetch.last.tiered.offset.enable", "true"}, {"group.streams.assignor.offload.enable", "false"},
	} {
		if err := ValidateBrokerDynamic(kv[0], kv[1]); err == nil || !strings.Contains(err.Error(), kv[0]+"="+kv[1]+" is not supported by sluice yet") {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	if err := ValidateBrokerDynamic("group.streams.assignors", "sticky"); err == nil || !strings.Contains(err.Error(), "Cannot update these configs dynamically") {
		t.Errorf("group.streams.assignors: %v", err)
	}
}
