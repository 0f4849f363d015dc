package config

import (
	"math"
	"strconv"
	"strings"
)

// Value resolution, as Kafka's DescribeConfigs and LogConfig resolve values.
//
// Maps:
//   - topicOverrides: the topic's own configs (DYNAMIC_TOPIC_CONFIG).
//   - dynamicBroker: configs set with AlterConfigs for this broker id (DYNAMIC_BROKER_CONFIG).
//   - dynamicDefault: configs set for the cluster-wide default broker resource ""
//     (DYNAMIC_DEFAULT_BROKER_CONFIG).
//   - static: the node's parsed server.properties and overrides (STATIC_BROKER_CONFIG).
//
// Any of them may be nil. Precedence: topic override > dynamic broker > dynamic default >
// static > default.

// BrokerValue returns a broker key's value and source as DescribeConfigs reports them for a
// broker resource. The value is the key's own (for log.retention.ms with only
// log.retention.hours set, nil); the source is that of the key's first synonym that has a
// value, as Kafka reports it (see BrokerSynonyms), or DEFAULT_CONFIG. Unknown keys return
// (nil, SourceUnknown). Pass a nil dynamicBroker when describing the default resource "".
func BrokerValue(key string, dynamicBroker, dynamicDefault map[string]string, static *Broker) (*string, Source) {
	d, ok := BrokerDef(key)
	if !ok {
		return nil, SourceUnknown
	}
	value, _ := lookup(key, d, dynamicBroker, dynamicDefault, static)
	value = canonicalPtr(d.Type, value)
	src := SourceDefaultConfig
	if syns := BrokerSynonyms(key, dynamicBroker, dynamicDefault, static); len(syns) > 0 {
		src = syns[0].Source
	}
	return value, src
}

// BrokerSynonyms returns the synonyms DescribeConfigs lists for a broker key: for each source
// in precedence order (dynamic broker, dynamic default, static, default), each of the key's
// synonyms (Def.BrokerSynonyms) that has a value there. Defaults that are null are left out.
func BrokerSynonyms(key string, dynamicBroker, dynamicDefault map[string]string, static *Broker) []Synonym {
	d, ok := BrokerDef(key)
	if !ok {
		return nil
	}
	return brokerSynonymList(d.synonyms, dynamicBroker, dynamicDefault, static)
}

// TopicValue returns a topic key's effective value, its source and the synonyms
// DescribeConfigs reports for a topic resource. The value is what the storage engine should
// use: the topic override, else the broker's effective default for it, converted to the
// topic key's unit (log.retention.hours=24 gives retention.ms=86400000), else the topic key's
// own default. Broker keys fall back to each other as Kafka's KafkaConfig does:
// log.retention.ms > log.retention.minutes > log.retention.hours, log.roll.ms >
// log.roll.hours, log.flush.interval.ms > log.flush.scheduler.interval.ms. Unknown keys
// return (nil, SourceUnknown, nil).
func TopicValue(key string, topicOverrides, dynamicBroker, dynamicDefault map[string]string, static *Broker) (*string, Source, []Synonym) {
	d, ok := TopicDef(key)
	if !ok {
		return nil, SourceUnknown, nil
	}
	value, src := topicValue(d, topicOverrides, dynamicBroker, dynamicDefault, static)
	syns := brokerSynonymList(d.synonyms, dynamicBroker, dynamicDefault, static)
	if v, ok := topicOverrides[key]; ok {
		syns = append([]Synonym{{Name: key, Value: &v, Source: SourceDynamicTopicConfig}}, syns...)
	}
	return value, src, syns
}

// EffectiveTopicValue is TopicValue without the synonyms, for hot paths (produce, fetch)
// that only need the value. Unknown keys return nil.
func EffectiveTopicValue(key string, topicOverrides, dynamicBroker, dynamicDefault map[string]string, static *Broker) *string {
	d, ok := TopicDef(key)
	if !ok {
		return nil
	}
	v, _ := topicValue(d, topicOverrides, dynamicBroker, dynamicDefault, static)
	return v
}

func topicValue(d *Def, topicOverrides, dynamicBroker, dynamicDefault map[string]string, static *Broker) (*string, Source) {
	if v, ok := topicOverrides[d.Name]; ok {
		return canonicalPtr(d.Type, &v), SourceDynamicTopicConfig
	}
	for _, s := range d.synonyms {
		bd := brokerByName[s.name] // topic synonyms are always plain broker keys
		v, src := lookup(s.name, bd, dynamicBroker, dynamicDefault, static)
		if v == nil {
			continue
		}
		return canonicalPtr(d.Type, convert(d.Name, *v, s.factor)), src
	}
	return d.Default, SourceDefaultConfig
}

// TopicValues returns the effective value of every topic key (nil for null defaults), for
// the storage engine.
func TopicValues(topicOverrides, dynamicBroker, dynamicDefault map[string]string, static *Broker) map[string]*string {
	out := make(map[string]*string, len(topicTable))
	for _, d := range topicTable {
		out[d.Name], _ = topicValue(d, topicOverrides, dynamicBroker, dynamicDefault, static)
	}
	return out
}

// lookup returns a broker key's merged value: dynamic broker, dynamic default, static, then
// the default (which may be nil).
func lookup(key string, d *Def, dynamicBroker, dynamicDefault map[string]string, static *Broker) (*string, Source) {
	if v, ok := dynamicBroker[key]; ok {
		return &v, SourceDynamicBrokerConfig
	}
	if v, ok := dynamicDefault[key]; ok {
		return &v, SourceDynamicDefaultBrokerConfig
	}
	if static != nil {
		if v, ok := static.Raw[key]; ok {
			return &v, SourceStaticBrokerConfig
		}
	}
	if d == nil {
		return nil, SourceUnknown
	}
	return d.Default, SourceDefaultConfig
}

func brokerSynonymList(synonyms []synonymDef, dynamicBroker, dynamicDefault map[string]string, static *Broker) []Synonym {
	var out []Synonym
	var staticRaw map[string]string
	if static != nil {
		staticRaw = static.Raw
	}
	for _, src := range []struct {
		m      map[string]string
		source Source
	}{
		{dynamicBroker, SourceDynamicBrokerConfig},
		{dynamicDefault, SourceDynamicDefaultBrokerConfig},
		{staticRaw, SourceStaticBrokerConfig},
	} {
		for _, s := range synonyms {
			if v, ok := src.m[s.name]; ok {
				out = append(out, Synonym{Name: s.name, Value: &v, Source: src.source})
			}
		}
	}
	for _, s := range synonyms {
		if d, ok := BrokerDef(s.name); ok && d.Default != nil {
			out = append(out, Synonym{Name: s.name, Value: d.Default, Source: SourceDefaultConfig})
		}
	}
	return out
}

// convert turns a broker value into the topic key's unit. Kafka treats any negative retention
// as unlimited and reports it as -1 (KafkaConfig.logRetentionTimeMillis).
func convert(topicKey, value string, factor int64) *string {
	if factor == 1 && topicKey != "retention.ms" {
		return &value
	}
	n, err := ParseInt64(value)
	if err != nil {
		return &value // validated values always parse; keep the text if not
	}
	n *= factor
	if topicKey == "retention.ms" && n < 0 {
		n = -1
	}
	s := strconv.FormatInt(n, 10)
	return &s
}

func canonicalPtr(t Type, v *string) *string {
	if v == nil {
		return nil
	}
	c := Canonical(t, *v)
	if c == *v {
		return v
	}
	return &c
}

// Canonical returns value as Kafka prints a parsed value of type t (ConfigDef.convertToString):
// trimmed, booleans in lower case, numbers without leading zeros or '+', doubles as Java
// prints them ("0.5", "1.0", "1.7976931348623157E308"), lists joined with ",". A value that
// does not parse as t is returned trimmed.
func Canonical(t Type, value string) string {
	v := strings.TrimSpace(value)
	switch t {
	case TypeBoolean:
		if b, err := ParseBool(v); err == nil {
			return strconv.FormatBool(b)
		}
	case TypeInt, TypeShort, TypeLong:
		if n, err := ParseInt64(v); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case TypeDouble:
		if f, err := ParseDouble(v); err == nil {
			return JavaDouble(f)
		}
	case TypeList:
		return strings.Join(ParseList(v), ",")
	}
	return v
}

// JavaDouble formats f as Java's Double.toString does, which is how Kafka shows DOUBLE
// configs.
func JavaDouble(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // 1.7976931348623157E+308
	mantissa, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mantissa, ".") {
		mantissa += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mantissa + "E" + strconv.Itoa(e)
}
