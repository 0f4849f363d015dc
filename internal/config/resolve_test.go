package config

import (
	"fmt"
	"testing"
)

func mustBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	b, err := parseBroker(props) // resolution is tested for keys sluice will honour later too
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fmtSynonyms(syns []Synonym) string {
	s := ""
	for _, y := range syns {
		s += fmt.Sprintf("%v:%s=%s ", y.Source, y.Name, deref(y.Value))
	}
	return s
}

func TestTopicValuePrecedence(t *testing.T) {
	for _, tc := range []struct {
		name                                 string
		key                                  string
		topic, dynBroker, dynDefault, static map[string]string
		value                                string
		src                                  Source
		synonyms                             string
	}{
		{name: "default", key: "retention.ms",
			value: "604800000", src: SourceDefaultConfig,
			synonyms: "DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "static hours", key: "retention.ms", static: map[string]string{"log.retention.hours": "24"},
			value: "86400000", src: SourceStaticBrokerConfig,
			synonyms: "STATIC_BROKER_CONFIG:log.retention.hours=24 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "minutes beat hours", key: "retention.ms", static: map[string]string{"log.retention.hours": "24", "log.retention.minutes": "5"},
			value: "300000", src: SourceStaticBrokerConfig,
			synonyms: "STATIC_BROKER_CONFIG:log.retention.minutes=5 STATIC_BROKER_CONFIG:log.retention.hours=24 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "ms beats minutes", key: "retention.ms", static: map[string]string{"log.retention.ms": "1000", "log.retention.minutes": "5"},
			value: "1000", src: SourceStaticBrokerConfig,
			synonyms: "STATIC_BROKER_CONFIG:log.retention.ms=1000 STATIC_BROKER_CONFIG:log.retention.minutes=5 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "static ms beats dynamic hours", key: "retention.ms",
			dynDefault: map[string]string{"log.retention.hours": "1"}, static: map[string]string{"log.retention.ms": "1000"},
			value: "1000", src: SourceStaticBrokerConfig,
			synonyms: "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=1 STATIC_BROKER_CONFIG:log.retention.ms=1000 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "dynamic default beats static", key: "retention.ms",
			dynDefault: map[string]string{"log.retention.ms": "2000"}, static: map[string]string{"log.retention.ms": "1000"},
			value: "2000", src: SourceDynamicDefaultBrokerConfig,
			synonyms: "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=2000 STATIC_BROKER_CONFIG:log.retention.ms=1000 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "dynamic broker beats dynamic default", key: "retention.ms",
			dynBroker: map[string]string{"log.retention.ms": "3000"}, dynDefault: map[string]string{"log.retention.ms": "2000"},
			value: "3000", src: SourceDynamicBrokerConfig,
			synonyms: "DYNAMIC_BROKER_CONFIG:log.retention.ms=3000 DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=2000 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "topic override beats everything", key: "retention.ms",
			topic: map[string]string{"retention.ms": "4000"}, dynBroker: map[string]string{"log.retention.ms": "3000"},
			value: "4000", src: SourceDynamicTopicConfig,
			synonyms: "DYNAMIC_TOPIC_CONFIG:retention.ms=4000 DYNAMIC_BROKER_CONFIG:log.retention.ms=3000 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "negative broker retention is unlimited", key: "retention.ms", static: map[string]string{"log.retention.hours": "-1"},
			value: "-1", src: SourceStaticBrokerConfig,
			synonyms: "STATIC_BROKER_CONFIG:log.retention.hours=-1 DEFAULT_CONFIG:log.retention.hours=168 "},
		{name: "roll hours", key: "segment.ms", static: map[string]string{"log.roll.hours": "1"},
			value: "3600000", src: SourceStaticBrokerConfig,
			synonyms: "STATIC_BROKER_CONFIG:log.roll.hours=1 DEFAULT_CONFIG:log.roll.hours=168 "},
		{name: "flush.ms falls back to scheduler interval", key: "flush.ms", static: map[string]string{"log.flush.scheduler.interval.ms": "500"},
			value: "500", src: SourceStaticBrokerConfig,
			synonyms: "STATIC_BROKER_CONFIG:log.flush.scheduler.interval.ms=500 DEFAULT_CONFIG:log.flush.scheduler.interval.ms=9223372036854775807 "},
		{name: "renamed broker key", key: "max.message.bytes", dynDefault: map[string]string{"message.max.bytes": "2000000"},
			value: "2000000", src: SourceDynamicDefaultBrokerConfig,
			synonyms: "DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=2000000 DEFAULT_CONFIG:message.max.bytes=1048588 "},
		{name: "no broker synonym", key: "remote.storage.enable",
			value: "false", src: SourceDefaultConfig, synonyms: ""},
		{name: "values are canonical, synonyms raw", key: "min.cleanable.dirty.ratio", topic: map[string]string{"min.cleanable.dirty.ratio": " 1 "},
			value: "1.0", src: SourceDynamicTopicConfig,
			synonyms: "DYNAMIC_TOPIC_CONFIG:min.cleanable.dirty.ratio= 1  DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5 "},
		{name: "list canonical", key: "cleanup.policy", static: map[string]string{"log.cleanup.policy": "compact , delete"},
			value: "compact,delete", src: SourceStaticBrokerConfig,
			synonyms: "STATIC_BROKER_CONFIG:log.cleanup.policy=compact , delete DEFAULT_CONFIG:log.cleanup.policy=delete "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			static := mustBroker(t, tc.static)
			v, src, syns := TopicValue(tc.key, tc.topic, tc.dynBroker, tc.dynDefault, static)
			if deref(v) != tc.value || src != tc.src || fmtSynonyms(syns) != tc.synonyms {
				t.Fatalf("got %s %v [%s], want %s %v [%s]", deref(v), src, fmtSynonyms(syns), tc.value, tc.src, tc.synonyms)
			}
		})
	}
	if v, src, syns := TopicValue("nope", nil, nil, nil, nil); v != nil || src != SourceUnknown || syns != nil {
		t.Fatal("unknown key resolved")
	}
}

func TestBrokerValue(t *testing.T) {
	static := mustBroker(t, map[string]string{"log.retention.hours": "24", "num.partitions": "3", "ssl.keystore.password": "secret"})
	for _, tc := range []struct {
		key                   string
		dynBroker, dynDefault map[string]string
		value                 string
		src                   Source
	}{
		{key: "num.partitions", value: "3", src: SourceStaticBrokerConfig},
		{key: "default.replication.factor", value: "1", src: SourceDefaultConfig},
		{key: "log.retention.hours", value: "24", src: SourceStaticBrokerConfig},
		// As Kafka: the key's own value (unset), the source of its first synonym with a value.
		{key: "log.retention.ms", value: "<nil>", src: SourceStaticBrokerConfig},
		{key: "log.retention.ms", dynDefault: map[string]string{"log.retention.ms": "5"}, value: "5", src: SourceDynamicDefaultBrokerConfig},
		{key: "log.retention.ms", dynBroker: map[string]string{"log.retention.ms": "6"}, dynDefault: map[string]string{"log.retention.ms": "5"}, value: "6", src: SourceDynamicBrokerConfig},
		{key: "log.cleaner.min.cleanable.ratio", value: "0.5", src: SourceDefaultConfig},
		{key: "log.cleaner.io.max.bytes.per.second", value: "1.7976931348623157E308", src: SourceDefaultConfig},
		{key: "auto.create.topics.enable", dynBroker: map[string]string{"auto.create.topics.enable": "FALSE"}, value: "false", src: SourceDynamicBrokerConfig},
		{key: "ssl.keystore.password", value: "secret", src: SourceStaticBrokerConfig},
		// A listener override falls back to the unprefixed key, which is set statically.
		{key: "listener.name.plaintext.ssl.keystore.password", value: "<nil>", src: SourceStaticBrokerConfig},
		{key: "nope", value: "<nil>", src: SourceUnknown},
	} {
		v, src := BrokerValue(tc.key, tc.dynBroker, tc.dynDefault, static)
		if deref(v) != tc.value || src != tc.src {
			t.Errorf("BrokerValue(%s, %v, %v) = %s %v, want %s %v", tc.key, tc.dynBroker, tc.dynDefault, deref(v), src, tc.value, tc.src)
		}
	}
	got := fmtSynonyms(BrokerSynonyms("log.retention.ms", nil, nil, static))
	if want := "STATIC_BROKER_CONFIG:log.retention.hours=24 DEFAULT_CONFIG:log.retention.hours=168 "; got != want {
		t.Errorf("synonyms %s, want %s", got, want)
	}
	got = fmtSynonyms(BrokerSynonyms("listener.name.ssl.ssl.client.auth", map[string]string{"listener.name.ssl.ssl.client.auth": "required"}, nil, static))
	if want := "DYNAMIC_BROKER_CONFIG:listener.name.ssl.ssl.client.auth=required DEFAULT_CONFIG:ssl.client.auth=none "; got != want {
		t.Errorf("prefixed synonyms %s, want %s", got, want)
	}
}

func TestTopicValues(t *testing.T) {
	vals := TopicValues(map[string]string{"segment.bytes": "2097152"}, nil, nil, mustBroker(t, map[string]string{"log.retention.hours": "1"}))
	if len(vals) != len(TopicDefs()) {
		t.Fatalf("%d values", len(vals))
	}
	if deref(vals["segment.bytes"]) != "2097152" || deref(vals["retention.ms"]) != "3600000" || vals["internal.segment.bytes"] != nil {
		t.Fatalf("values %v %v", deref(vals["segment.bytes"]), deref(vals["retention.ms"]))
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 0.5: "0.5", 1: "1.0", 1e7: "1.0E7", 1234567: "1234567.0", 0.001: "0.001", 0.0001: "1.0E-4",
		1.7976931348623157e308: "1.7976931348623157E308", -2.5: "-2.5",
	} {
		if got := JavaDouble(f); got != want {
			t.Errorf("JavaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestResolveTopic(t *testing.T) {
	def := ResolveTopic(nil, nil, nil, nil)
	want := TopicSettings{
		CleanupDelete: true, CompressionType: "producer", CompressionGzipLevel: -1, CompressionLz4Level: 9, CompressionZstdLevel: 3,
		DeleteRetentionMs: 86400000, FileDeleteDelayMs: 60000, FlushMessages: 1<<63 - 1, FlushMs: 1<<63 - 1,
		IndexIntervalBytes: 4096, MaxCompactionLagMs: 1<<63 - 1, MinCleanableDirtyRatio: 0.5,
		MaxMessageBytes: 1048588, MessageTimestampType: "CreateTime", MessageTimestampAfterMaxMs: 3600000, MessageTimestampBeforeMaxMs: 1<<63 - 1,
		MinInsyncReplicas: 1, RetentionBytes: -1, RetentionMs: 604800000, RetentionConsumedRequireCommit: true, SegmentBytes: 1 << 30, SegmentIndexBytes: 10 << 20, SegmentMs: 604800000,
	}
	if def != want {
		t.Fatalf("defaults\n got %+v\nwant %+v", def, want)
	}
	s := ResolveTopic(map[string]string{"cleanup.policy": "compact,delete", "internal.segment.bytes": "4096", "flush.messages": "1"},
		nil, map[string]string{"log.retention.ms": "-1"}, mustBroker(t, map[string]string{"log.roll.hours": "2"}))
	if !s.CleanupCompact || !s.CleanupDelete || s.SegmentBytes != 4096 || s.FlushMessages != 1 || s.RetentionMs != -1 || s.SegmentMs != 7200000 {
		t.Fatalf("%+v", s)
	}
}
