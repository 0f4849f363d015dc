package config

import (
	"fmt"
	"sort"
)

// Type is a configuration value's type, numbered as DescribeConfigs' ConfigType codes.
type Type int8

// Type codes as Kafka's DescribeConfigsResponse reports them (KIP-569).
const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "BOOLEAN"
	case TypeString:
		return "STRING"
	case TypeInt:
		return "INT"
	case TypeShort:
		return "SHORT"
	case TypeLong:
		return "LONG"
	case TypeDouble:
		return "DOUBLE"
	case TypeList:
		return "LIST"
	case TypeClass:
		return "CLASS"
	case TypePassword:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Source says where a configuration value came from, numbered as DescribeConfigs' source
// codes.
type Source int8

// Source codes as Kafka's DescribeConfigsResponse reports them.
const (
	SourceUnknown                    Source = 0
	SourceDynamicTopicConfig         Source = 1
	SourceDynamicBrokerConfig        Source = 2
	SourceDynamicDefaultBrokerConfig Source = 3
	SourceStaticBrokerConfig         Source = 4
	SourceDefaultConfig              Source = 5
	SourceDynamicBrokerLoggerConfig  Source = 6
	SourceClientMetricsConfig        Source = 7
	SourceGroupConfig                Source = 8
)

func (s Source) String() string {
	switch s {
	case SourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case SourceDefaultConfig:
		return "DEFAULT_CONFIG"
	case SourceDynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case SourceClientMetricsConfig:
		return "CLIENT_METRICS_CONFIG"
	case SourceGroupConfig:
		return "GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// Def defines one configuration key. Defs are immutable once the package is initialised.
type Def struct {
	Name string
	Type Type
	// Default is the value used when nothing sets the key; nil is a null default, shown as
	// null by DescribeConfigs as Kafka does.
	// Invariant: a non-nil Default passes Check.
	Default *string
	Doc     string
	// Sensitive values (passwords, keys, JAAS configs) are never returned by DescribeConfigs.
	Sensitive bool
	// ReadOnly broker keys cannot be changed with AlterConfigs on a running cluster (Kafka's
	// DynamicBrokerConfig decides which can). Always false for topic keys.
	ReadOnly bool
	// PerBroker broker keys may be changed dynamically only for one broker id, not for the
	// cluster-wide default resource "" (Kafka's DynamicBrokerConfig.perBrokerConfigs: listener
	// and security settings).
	PerBroker bool
	// BrokerKey, for a topic key, is the broker key that supplies the default when the topic
	// does not override it (retention.ms <- log.retention.ms). Empty when there is none.
	// BrokerSynonyms lists all of them in precedence order.
	BrokerKey string
	// Validate checks the value beyond its type (ranges, enumerations). May be nil. Check
	// always applies the type check first, then Validate.
	Validate func(value string) error
	// Support says what sluice does with the key when it is set (support.go classifies every
	// key; supportWhy is the reason given to the user, refuseValue the honoured key's values
	// that need a feature sluice lacks).
	Support     Support
	supportWhy  string
	refuseValue func(value string) string
	topic       bool // a topic key, for error messages
	// Internal keys are accepted but, as in Kafka, not listed by DescribeConfigs.
	Internal bool

	// synonyms for topic keys: broker keys in precedence order with the factor that turns the
	// broker value into the topic key's unit (log.retention.hours -> retention.ms: 3600000).
	synonyms []synonymDef
}

type synonymDef struct {
	name   string
	factor int64 // 1 unless the broker key is in minutes or hours
}

// BrokerSynonyms returns, for a topic key, the broker keys that supply its default in
// precedence order (retention.ms: log.retention.ms, log.retention.minutes,
// log.retention.hours). For a broker key it returns the key itself followed by the keys it
// falls back to (log.retention.ms: log.retention.minutes, log.retention.hours).
func (d *Def) BrokerSynonyms() []string {
	out := make([]string, len(d.synonyms))
	for i, s := range d.synonyms {
		out[i] = s.name
	}
	return out
}

// Check validates value for this key: the type check (as Kafka's ConfigDef.parseType does it),
// then Validate. The error is an *Error naming the key.
func (d *Def) Check(value string) error {
	if err := checkType(d.Type, value); err != nil {
		return &Error{Key: d.Name, Value: value, Reason: err.Error()}
	}
	if d.Validate != nil {
		if err := d.Validate(value); err != nil {
			// Kafka's validators see the parsed value, so the message shows it that way.
			shown := Canonical(d.Type, value)
			if be, ok := err.(badValue); ok {
				shown = be.shown
			}
			return &Error{Key: d.Name, Value: shown, Reason: err.Error()}
		}
	}
	return nil
}

// badValue is a validation error that names what Kafka's message shows as the value: for
// lists, the offending element (ValidList) or the whole parsed list.
type badValue struct {
	shown string
	err   error
}

func (b badValue) Error() string { return b.err.Error() }

// Synonym is one entry of DescribeConfigs' synonyms list.
type Synonym struct {
	Name   string
	Value  *string
	Source Source
}

// Error is a configuration problem with one key. Controllers and brokers answer it with
// INVALID_CONFIG (or UNKNOWN... where Kafka does) and Error() as the error message.
type Error struct {
	Key   string
	Value string
	// Unknown is set when the key itself is not a known configuration.
	Unknown bool
	// Reason says what is wrong with Value; empty for Unknown.
	Reason string
	// Topic is set for topic keys so the message reads as Kafka's does.
	Topic bool
	// Message, when set, is the whole message (problems that involve several keys).
	Message string
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if e.Unknown {
		if e.Topic {
			// As Kafka's controller (ConfigurationControlManager) words it.
			return "Unknown topic config name: " + e.Key
		}
		return "Unknown broker config name: " + e.Key
	}
	// As Kafka's ConfigException(name, value, message) words it.
	return fmt.Sprintf("Invalid value %s for configuration %s: %s", e.Value, e.Key, e.Reason)
}

func sortDefs(defs []*Def) {
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
}

func str(s string) *string { return &s }
