package config

import "testing"

func BenchmarkTopicValue(b *testing.B) {
	static := DefaultBroker()
	overrides := map[string]string{"retention.ms": "1000"}
	dyn := map[string]string{"log.retention.hours": "2"}
	b.ReportAllocs()
	for b.Loop() {
		TopicValue("max.message.bytes", overrides, dyn, nil, static)
		TopicValue("retention.ms", nil, dyn, nil, static)
	}
}

func BenchmarkResolveTopic(b *testing.B) {
	static := DefaultBroker()
	overrides := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}
	b.ReportAllocs()
	for b.Loop() {
		ResolveTopic(overrides, nil, nil, static)
	}
}

func BenchmarkParseBroker(b *testing.B) {
	props, err := ParseProperties([]byte(kafkaServerProperties))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseBroker(props); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEffectiveTopicValue(b *testing.B) {
	static := DefaultBroker()
	overrides := map[string]string{"retention.ms": "1000"}
	dyn := map[string]string{"log.retention.hours": "2"}
	b.ReportAllocs()
	for b.Loop() {
		EffectiveTopicValue("max.message.bytes", overrides, dyn, nil, static)
		EffectiveTopicValue("retention.ms", overrides, dyn, nil, static)
	}
}
