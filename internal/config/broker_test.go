package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseBrokerDefaults(t *testing.T) {
	b, err := ParseBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"NodeID":                             int32(1),
		"ProcessRoles":                       []string{"broker", "controller"},
		"Listeners":                          []Listener{{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"}},
		"AdvertisedListeners":                []Listener{{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"}},
		"InterBrokerListenerName":            "PLAINTEXT",
		"LogDirs":                            []string{"./data"},
		"MetadataLogDir":                     "./data",
		"NumPartitions":                      int32(1),
		"DefaultReplicationFactor":           int16(1),
		"MinInsyncReplicas":                  int32(1),
		"AutoCreateTopicsEnable":             true,
		"DeleteTopicEnable":                  true,
		"MessageMaxBytes":                    int32(1048588),
		"SocketRequestMaxBytes":              int32(104857600),
		"ConnectionsMaxIdleMs":               int64(600000),
		"QueuedMaxRequests":                  int32(500),
		"LogRetentionCheckIntervalMs":        int64(300000),
		"OffsetsTopicNumPartitions":          int32(50),
		"OffsetsTopicReplicationFactor":      int16(3),
		"OffsetsRetentionMinutes":            int32(10080),
		"TransactionStateLogNumPartitions":   int32(50),
		"TransactionStateLogMinISR":          int32(2),
		"GroupInitialRebalanceDelayMs":       int32(3000),
		"GroupMinSessionTimeoutMs":           int32(6000),
		"GroupMaxSessionTimeoutMs":           int32(1800000),
		"GroupConsumerSessionTimeoutMs":      int32(45000),
		"GroupConsumerHeartbeatIntervalMs":   int32(5000),
		"GroupConsumerAssignors":             []string{"uniform", "range"},
		"GroupCoordinatorRebalanceProtocols": []string{"classic", "consumer", "streams"},
		"ReplicaLagTimeMaxMs":                int64(30000),
		"ReplicaFetchWaitMaxMs":              int32(500),
		"ReplicaFetchMaxBytes":               int32(1048576),
		"TransactionMaxTimeoutMs":            int32(900000),
		"CompressionType":                    "producer",
		"SaslEnabledMechanisms":              []string{"GSSAPI"},
	}
	v := reflect.ValueOf(b).Elem()
	for field, w := range want {
		if got := v.FieldByName(field).Interface(); !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", field, got, w)
		}
	}
	if len(b.Raw) != 0 || len(b.Warnings) != 0 || b.ControllerListeners != nil || b.QuorumVoters != nil {
		t.Errorf("defaults: %+v", b)
	}
	if b.Int64("log.flush.scheduler.interval.ms") != 1<<63-1 || b.Float64("log.cleaner.min.cleanable.ratio") != 0.5 || b.Value("log.retention.ms") != nil {
		t.Error("typed getters disagree with the defaults")
	}
}

func TestParseBrokerValues(t *testing.T) {
	b, err := parseBroker(map[string]string{
		"node.id":                        "4",
		"process.roles":                  "broker",
		"listeners":                      "plaintext://0.0.0.0:19092,INTERNAL://10.0.0.1:19093",
		"advertised.listeners":           "PLAINTEXT://kafka-3.example:19092,INTERNAL://10.0.0.1:19093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "internal",
		"controller.listener.names":      "CONTROLLER",
		"controller.quorum.voters":       "1@c1:9093,2@c2:9093,3@[fd00::3]:9093",
		"log.dirs":                       "/d1, /d2",
		"num.partitions":                 "6",
		"default.replication.factor":     "3",
		"auto.create.topics.enable":      "FALSE",
		"broker.rack":                    "eu-1a",
		"num.io.threads":                 "16",
		"listener.name.internal.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 4 || !b.HasRole("broker") || b.HasRole("controller") {
		t.Errorf("identity: %+v", b)
	}
	wantListeners := []Listener{{"PLAINTEXT", "0.0.0.0", 19092, "PLAINTEXT"}, {"INTERNAL", "10.0.0.1", 19093, "SASL_PLAINTEXT"}}
	if !reflect.DeepEqual(b.Listeners, wantListeners) {
		t.Errorf("listeners %+v", b.Listeners)
	}
	if b.AdvertisedListeners[0].Address() != "kafka-3.example:19092" || b.InterBrokerListenerName != "INTERNAL" {
		t.Errorf("advertised %+v, inter-broker %q", b.AdvertisedListeners, b.InterBrokerListenerName)
	}
	if len(b.QuorumVoters) != 3 || b.QuorumVoters[2] != (QuorumVoter{3, "fd00::3", 9093}) {
		t.Errorf("voters %+v", b.QuorumVoters)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"/d1", "/d2"}) || b.MetadataLogDir != "/d1" {
		t.Errorf("dirs %v %v", b.LogDirs, b.MetadataLogDir)
	}
	if b.NumPartitions != 6 || b.DefaultReplicationFactor != 3 || b.AutoCreateTopicsEnable || b.BrokerRack != "eu-1a" {
		t.Errorf("topic defaults: %+v", b)
	}
	if len(b.Warnings) != 1 || !strings.HasPrefix(b.Warnings[0], "num.io.threads ") {
		t.Errorf("warnings %q", b.Warnings)
	}
}

func TestParseBrokerBrokerID(t *testing.T) {
	b, err := ParseBroker(map[string]string{"broker.id": "7"})
	if err != nil || b.NodeID != 7 {
		t.Fatalf("broker.id alone: %v %+v", err, b)
	}
	if _, err := ParseBroker(map[string]string{"broker.id": "7", "node.id": "7"}); err != nil {
		t.Fatal(err)
	}
}

// TestParseBrokerErrors: every rejected configuration is reported with an *Error naming the
// key to fix.
func TestParseBrokerErrors(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		key   string
		want  string
	}{
		{map[string]string{"no.such.key": "1"}, "no.such.key", "Unknown broker config name: no.such.key"},
		{map[string]string{"retention.ms": "1"}, "retention.ms", "Unknown broker config name"},
		{map[string]string{"node.id": "-1"}, "node.id", "Value must be at least 0"},
		{map[string]string{"node.id": "x"}, "node.id", "Not a number of type INT"},
		{map[string]string{"broker.id": "2", "node.id": "1"}, "broker.id", "must equal node.id (1)"},
		{map[string]string{"process.roles": ""}, "process.roles", "must name broker, controller or both"},
		{map[string]string{"process.roles": "broker,zookeeper"}, "process.roles", "String must be one of: broker, controller"},
		{map[string]string{"listeners": ""}, "listeners", "must name at least one listener"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1"}, "listeners", "Unable to parse"},
		{map[string]string{"listeners": "FOO://:9092"}, "listeners", "listener FOO is not in listener.security.protocol.map"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "listeners", "use the same port 9092"},
		{map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "advertised.listeners", "nonroutable meta-address"},
		{map[string]string{"advertised.listeners": "SSL://host:9093"}, "advertised.listeners", "listener SSL is not in listeners"},
		{map[string]string{"listeners": "SSL://:9093"}, "security.inter.broker.protocol", "no advertised listener uses protocol PLAINTEXT"},
		{map[string]string{"inter.broker.listener.name": "SSL"}, "inter.broker.listener.name", "must be a listener name in advertised.listeners"},
		{map[string]string{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "inter.broker.listener.name", "only one of"},
		{map[string]string{"controller.quorum.voters": "1@h:9093"}, "controller.listener.names", "must be set on a controller of a multi-node quorum"},
		{map[string]string{"controller.quorum.voters": "1@h:9093", "controller.quorum.bootstrap.servers": "h:9093", "controller.listener.names": "PLAINTEXT"}, "controller.quorum.bootstrap.servers", "cannot be set together"},
		{map[string]string{"controller.listener.names": "CONTROLLER"}, "controller.listener.names", "must appear in listeners"},
		{map[string]string{"process.roles": "broker"}, "controller.quorum.voters", "needs controller.quorum.voters"},
		{map[string]string{"process.roles": "broker", "controller.quorum.voters": "2@h:9093"}, "controller.listener.names", "must be set so a broker"},
		{map[string]string{"process.roles": "broker", "controller.quorum.voters": "2@h:9093", "controller.listener.names": "PLAINTEXT"}, "controller.listener.names", "must not name a listener"},
		{map[string]string{"process.roles": "controller", "controller.listener.names": "CONTROLLER", "listeners": "CONTROLLER://:9093,PLAINTEXT://:9092"}, "listeners", "must only contain controller listeners"},
		{map[string]string{"log.dirs": ""}, "log.dirs", "must list one or more directories"},
		{map[string]string{"log.dirs": "/a,,/b"}, "log.dirs", "without empty entries"},
		{map[string]string{"log.dirs": "/a,/b,/a/"}, "log.dirs", "lists /a/ twice"},
		{map[string]string{"log.dir": " "}, "log.dir", "must not be empty"},
		{map[string]string{"cordoned.log.dirs": "/a"}, "cordoned.log.dirs", "cordoning log directories (KIP-1066) is not implemented yet"},
		{map[string]string{"replica.fetch.wait.max.ms": "31000", "replica.lag.time.max.ms": "60000"}, "replica.fetch.wait.max.ms", "must not be greater than replica.socket.timeout.ms"},
		{map[string]string{"controller.quorum.voters": "2@h:9093", "controller.listener.names": "C", "listeners": "PLAINTEXT://:9092,C://:9093", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,C:PLAINTEXT"}, "controller.quorum.voters", "must include this node (node.id 1)"},
		{map[string]string{"process.roles": "broker", "controller.quorum.voters": "1@h:9093", "controller.listener.names": "C"}, "controller.quorum.voters", "must not include this node"},
		{map[string]string{"group.consumer.session.timeout.ms": "1000"}, "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms (45000) must not be greater than group.consumer.session.timeout.ms (1000)"},
		{map[string]string{"replica.fetch.wait.max.ms": "40000", "replica.socket.timeout.ms": "60000"}, "replica.fetch.wait.max.ms", "must not be greater than replica.lag.time.max.ms"},
		{map[string]string{"group.consumer.assignors": "org.example.MyAssignor"}, "group.consumer.assignors", "uniform and range"},
		{map[string]string{"group.coordinator.rebalance.protocols": "consumer"}, "group.coordinator.rebalance.protocols", "must include classic"},
		{map[string]string{"remote.log.storage.system.enable": "true"}, "remote.log.storage.system.enable", "not supported"},
		{map[string]string{"listener.name.plaintext.no.such": "1"}, "listener.name.plaintext.no.such", "Unknown broker config name"},
	} {
		t.Run(fmt.Sprint(tc.props), func(t *testing.T) {
			b, err := ParseBroker(tc.props)
			if err == nil {
				t.Fatalf("accepted: %+v", b)
			}
			var cerr *Error
			if !errors.As(err, &cerr) || cerr.Key != tc.key {
				t.Fatalf("error %q names %+v, want key %s", err, cerr, tc.key)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error %q, want it to name %s and contain %q", err, tc.key, tc.want)
			}
		})
	}
}

func TestParseBrokerMultiNode(t *testing.T) {
	// A combined node of a three-node quorum, as the sluice docs suggest running it.
	b, err := parseBroker(map[string]string{
		"node.id":                   "2",
		"listeners":                 "PLAINTEXT://127.0.0.2:9092,CONTROLLER://127.0.0.2:9093",
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  "1@127.0.0.1:9093,2@127.0.0.2:9093,3@127.0.0.3:9093",
	})
	if err != nil {
		t.Fatal(err)
	}
	// The controller listener maps to PLAINTEXT without an explicit protocol map (Kafka 4)
	// and is not advertised to clients.
	if b.Listeners[1].SecurityProtocol != "PLAINTEXT" || len(b.AdvertisedListeners) != 1 || b.AdvertisedListeners[0].Name != "PLAINTEXT" {
		t.Fatalf("%+v / %+v", b.Listeners, b.AdvertisedListeners)
	}
	if !reflect.DeepEqual(b.ControllerListeners, []string{"CONTROLLER"}) || len(b.QuorumVoters) != 3 {
		t.Fatalf("%+v", b)
	}
}

func TestParseBrokerDoesNotRetainInput(t *testing.T) {
	props := map[string]string{"num.partitions": "3"}
	b, err := ParseBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	props["num.partitions"] = "4"
	if b.Raw["num.partitions"] != "3" {
		t.Fatal("Raw aliases the input map")
	}
}

// TestCordonedLogDirsRefused: cordoned.log.dirs (KIP-1066) is refused on a running broker too,
// naming the key; the cluster-wide default resource refuses it first as a per-broker key, as
// Kafka does. Empty (its default) is accepted.
func TestCordonedLogDirsRefused(t *testing.T) {
	if err := ValidateBrokerDynamic("cordoned.log.dirs", "/a"); err == nil || !strings.Contains(err.Error(), "cordoned.log.dirs") || !strings.Contains(err.Error(), "KIP-1066") {
		t.Errorf("per broker: %v", err)
	}
	if err := ValidateBrokerDynamicDefault("cordoned.log.dirs", "*"); err == nil || !strings.Contains(err.Error(), "broker id must be specified: cordoned.log.dirs") {
		t.Errorf("cluster default: %v", err)
	}
	if err := ValidateBrokerDynamic("cordoned.log.dirs", ""); err != nil {
		t.Errorf("empty: %v", err)
	}
}
