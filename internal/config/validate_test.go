package config

import (
	"errors"
	"testing"
)

// The messages are those Kafka 4.1.1's ConfigDef produces for the same input, so scripts that
// match on them keep working. (Beyond these cases, every key with a validator was compared with
// the Kafka jars on ~40 values each, ~10k cases, with no difference.)
func TestValidateTopic(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       string // "" = valid
	}{
		{"cleanup.policy", "delete", ""},
		{"cleanup.policy", "delete, compact", ""},
		{"cleanup.policy", "", ""},
		{"cleanup.policy", "foo", "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"},
		{"cleanup.policy", "compact,,delete", "Invalid value  for configuration cleanup.policy: String must be one of: compact, delete"},
		{"segment.bytes", "1048576", ""},
		{"segment.bytes", " 2000000 ", ""},
		{"segment.bytes", "1000", "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"},
		{"segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number of type INT"},
		{"segment.bytes", "2147483648", "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"},
		{"internal.segment.bytes", "1000", ""},
		{"preallocate", "TRUE", ""},
		{"preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"},
		{"preallocate", "", "Invalid value  for configuration preallocate: Expected value to be either true or false"},
		{"compression.gzip.level", "-1", ""},
		{"compression.gzip.level", "9", ""},
		{"compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"},
		{"compression.type", "zstd", "compression.type=zstd is not supported by sluice yet: recompressing batches on the broker is not implemented yet; use producer (batches are stored as the producer compressed them)"},
		{"compression.type", "ZSTD", "Invalid value ZSTD for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"message.timestamp.type", "LogAppendTime", ""},
		{"message.timestamp.type", "logappendtime", "Invalid value logappendtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"min.cleanable.dirty.ratio", "0.01", ""},
		{"min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", "abc", "Invalid value abc for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"},
		{"min.cleanable.dirty.ratio", "1e3", "Invalid value 1000.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"compression.type", " 5 ", "Invalid value 5 for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"segment.bytes", " 1000 ", "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"},
		{"follower.replication.throttled.replicas", "*,0:1", "Invalid value [*, 0:1] for configuration follower.replication.throttled.replicas: follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{"retention.ms", "-1", ""},
		{"retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"retention.ms", "99999999999999999999", "Invalid value 99999999999999999999 for configuration retention.ms: Not a number of type LONG"},
		{"retention.ms", "", "Invalid value  for configuration retention.ms: Not a number of type LONG"},
		{"retention.bytes", "-5", ""},
		{"max.message.bytes", "2.5", "Invalid value 2.5 for configuration max.message.bytes: Not a number of type INT"},
		{"min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{"follower.replication.throttled.replicas", "*", ""},
		{"follower.replication.throttled.replicas", "0:1, 1:2", ""},
		{"leader.replication.throttled.replicas", "", ""},
		{"follower.replication.throttled.replicas", "x", "Invalid value [x] for configuration follower.replication.throttled.replicas: follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{"remote.storage.enable", "false", ""},
		{"remote.storage.enable", "true", "Invalid value true for configuration remote.storage.enable: Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."},
		{"message.downconversion.enable", "true", "Unknown topic config name: message.downconversion.enable"},
		{"log.retention.ms", "1", "Unknown topic config name: log.retention.ms"},
		{"no.such.key", "1", "Unknown topic config name: no.such.key"},
	} {
		err := ValidateTopic(tc.key, tc.value)
		got := ""
		if err != nil {
			got = err.Error()
			var cerr *Error
			if !errors.As(err, &cerr) || cerr.Key != tc.key {
				t.Errorf("ValidateTopic(%q, %q): error %T does not name the key", tc.key, tc.value, err)
			}
		}
		if got != tc.want {
			t.Errorf("ValidateTopic(%q, %q)\n got %q\nwant %q", tc.key, tc.value, got, tc.want)
		}
	}
}

func TestValidateBroker(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       string
	}{
		{"group.consumer.migration.policy", "upgrade", ""},
		{"group.consumer.migration.policy", "foo", "Invalid value foo for configuration group.consumer.migration.policy: String must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL"},
		{"remote.log.metadata.manager.impl.prefix", "", "Invalid value  for configuration remote.log.metadata.manager.impl.prefix: String must be non-empty"},
		{"group.coordinator.rebalance.protocols", "classic,foo", "Invalid value foo for configuration group.coordinator.rebalance.protocols: String must be one of: consumer, classic, share, streams"},
		{"ssl.client.auth", "REQUIRED", "Invalid value REQUIRED for configuration ssl.client.auth: String must be one of: required, requested, none"},
		{"offsets.topic.replication.factor", "40000", "Invalid value 40000 for configuration offsets.topic.replication.factor: Not a number of type SHORT"},
		{"offsets.topic.replication.factor", "0", "Invalid value 0 for configuration offsets.topic.replication.factor: Value must be at least 1"},
		{"log.cleaner.io.max.bytes.per.second", "1e3", ""},
		{"log.cleaner.io.max.bytes.per.second", "NaN", "Invalid value NaN for configuration log.cleaner.io.max.bytes.per.second: Not a number of type DOUBLE"},
		{"num.partitions", "0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"},
		{"sasl.oauthbearer.assertion.claim.exp.seconds", "99999", "Invalid value 99999 for configuration sasl.oauthbearer.assertion.claim.exp.seconds: Value must be no more than 86400"},
		{"security.inter.broker.protocol", "ssl", "Invalid value ssl for configuration security.inter.broker.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{"metadata.log.segment.bytes", "10", "Invalid value 10 for configuration metadata.log.segment.bytes: Value must be at least 8388608"},
		{"controller.quorum.voters", "", ""},
		{"controller.quorum.voters", "1@localhost:9093,2@[::1]:9093", ""},
		{"controller.quorum.voters", "a,,b", "Invalid value a,,b for configuration controller.quorum.voters: Each entry should be in the form `{id}@{host}:{port}`."},
		{"controller.quorum.voters", "1@:9093", "Invalid value 1@:9093 for configuration controller.quorum.voters: Each entry should be in the form `{id}@{host}:{port}`."},
		{"controller.quorum.bootstrap.servers", "localhost:9093, [::1]:9093", ""},
		{"controller.quorum.bootstrap.servers", "localhost", `Invalid value localhost for configuration controller.quorum.bootstrap.servers: "localhost" is not host:port`},
		{"listeners", "PLAINTEXT://:9092,SSL://[::1]:9093", ""},
		{"listeners", "PLAINTEXT://9092", "Invalid value PLAINTEXT://9092 for configuration listeners: Unable to parse PLAINTEXT://9092 to a broker endpoint"},
		{"listeners", "PLAINTEXT://:9092,plaintext://:9093", "Invalid value PLAINTEXT://:9092,plaintext://:9093 for configuration listeners: Each listener must have a different name, PLAINTEXT appears more than once"},
		{"listener.security.protocol.map", "A:PLAINTEXT,b:sasl_ssl", ""},
		{"listener.security.protocol.map", "A:TLS", "Invalid value A:TLS for configuration listener.security.protocol.map: No security protocol TLS (listener A); use one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{"remote.log.storage.system.enable", "true", "Invalid value true for configuration remote.log.storage.system.enable: Tiered storage is not supported by sluice"},
		{"listener.name.sasl_plaintext.plain.sasl.jaas.config", "x required;", ""},
		{"listener.name.ssl.ssl.client.auth", "maybe", "Invalid value maybe for configuration listener.name.ssl.ssl.client.auth: String must be one of: required, requested, none"},
		{"retention.ms", "1", "Unknown broker config name: retention.ms"},
	} {
		err := ValidateBroker(tc.key, tc.value)
		got := ""
		if err != nil {
			got = err.Error()
			var cerr *Error
			if !errors.As(err, &cerr) || cerr.Key != tc.key {
				t.Errorf("ValidateBroker(%q, %q): error %T does not name the key", tc.key, tc.value, err)
			}
		}
		if got != tc.want {
			t.Errorf("ValidateBroker(%q, %q)\n got %q\nwant %q", tc.key, tc.value, got, tc.want)
		}
	}
}

func TestValidateBrokerDynamic(t *testing.T) {
	if err := ValidateBrokerDynamic("log.retention.ms", "1000"); err != nil {
		t.Fatal(err)
	}
	if err := ValidateBrokerDynamic("num.partitions", "3"); err == nil || err.Error() != "Cannot update these configs dynamically: Set(num.partitions)" {
		t.Fatalf("read-only key: %v", err)
	}
	if err := ValidateBrokerDynamic("nope", "3"); err == nil || !err.(*Error).Unknown {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	for _, tc := range []struct {
		configs map[string]string
		want    string
	}{
		{nil, ""},
		{map[string]string{"cleanup.policy": "delete", "min.compaction.lag.ms": "10", "max.compaction.lag.ms": "10"}, ""},
		{map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"},
		{map[string]string{"zzz": "1", "segment.bytes": "1"}, "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576"},
		{map[string]string{"foo.bar": "1"}, "Unknown topic config name: foo.bar"},
	} {
		err := ValidateTopicConfigs(tc.configs)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("ValidateTopicConfigs(%v) = %q, want %q", tc.configs, got, tc.want)
		}
	}
}

func TestValidateBrokerDynamicDefault(t *testing.T) {
	for _, tc := range []struct {
		key, value      string
		perBroker, dflt string // expected errors, "" = accepted
	}{
		{"log.retention.ms", "1000", "", ""},
		{"message.max.bytes", "2000000", "", ""},
		{"listeners", "PLAINTEXT://:9092", "", "Cannot update these configs at default cluster level, broker id must be specified: listeners"},
		{"ssl.client.auth", "required", "ssl.client.auth=required is not supported by sluice yet: " + "TLS and SASL settings are read when a listener starts; changing them on a running broker is not implemented yet (set them in server.properties and restart)", "Cannot update these configs at default cluster level, broker id must be specified: ssl.client.auth"},
		{"listener.name.ssl.ssl.keystore.location", "/k.jks", "listener.name.ssl.ssl.keystore.location=/k.jks is not supported by sluice yet: " + "TLS and SASL settings are read when a listener starts; changing them on a running broker is not implemented yet (set them in server.properties and restart)", "Cannot update these configs at default cluster level, broker id must be specified: listener.name.ssl.ssl.keystore.location"},
		{"listener.name.sasl_ssl.plain.sasl.jaas.config", "x;", "listener.name.sasl_ssl.plain.sasl.jaas.config=[hidden] is not supported by sluice yet: " + "TLS and SASL settings are read when a listener starts; changing them on a running broker is not implemented yet (set them in server.properties and restart)", "Cannot update these configs at default cluster level, broker id must be specified: listener.name.sasl_ssl.plain.sasl.jaas.config"},
		{"ssl.keystore.location", "/k.jks", "Dynamic security configs can only be updated using listener prefix, base configs may be updated only using static broker configs: ssl.keystore.location", "Dynamic security configs can only be updated using listener prefix, base configs may be updated only using static broker configs: ssl.keystore.location"},
		{"num.partitions", "2", "Cannot update these configs dynamically: Set(num.partitions)", "Cannot update these configs dynamically: Set(num.partitions)"},
	} {
		for _, c := range []struct {
			f    func(string, string) error
			want string
		}{{ValidateBrokerDynamic, tc.perBroker}, {ValidateBrokerDynamicDefault, tc.dflt}} {
			err := c.f(tc.key, tc.value)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("%s=%s: got %q, want %q", tc.key, tc.value, got, c.want)
			}
		}
	}
}
