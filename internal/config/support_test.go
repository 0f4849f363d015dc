package config

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md")

// TestEveryKeyIsClassified walks both tables: every key is honoured, not supported yet, or a
// no-effect hint. A key added to a table without a place in support.go fails here.
func TestEveryKeyIsClassified(t *testing.T) {
	for _, d := range append(BrokerDefs(), TopicDefs()...) {
		switch d.Support {
		case Honoured:
		case NoEffect, NotYet:
			if d.supportWhy == "" {
				t.Errorf("%s is %v without a reason", d.Name, d.Support)
			}
		default:
			t.Errorf("%s is not classified: add it to brokerSupport or topicSupport in support.go", d.Name)
		}
		if d.refuseValue != nil && refusedValuesNote[d.Name] == "" {
			t.Errorf("%s refuses some values but refusedValuesNote does not say which", d.Name)
		}
	}
}

// TestConfigurationDocIsCurrent keeps docs/configuration.md generated from the tables.
func TestConfigurationDocIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteReference(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "configuration.md")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatal("docs/configuration.md is out of date: go test ./internal/config -run TestConfigurationDocIsCurrent -update")
	}
}

// consumedAs names, for honoured broker keys that ParseBroker does not copy into a field of
// their own with a typed getter, the Broker field that carries them to the rest of sluice.
var consumedAs = map[string]string{
	"node.id": "NodeID", "broker.id": "NodeID", "process.roles": "ProcessRoles", "listeners": "Listeners",
	"advertised.listeners": "AdvertisedListeners", "listener.security.protocol.map": "Listeners",
	"controller.listener.names": "ControllerListeners", "log.dir": "LogDirs", "log.dirs": "LogDirs",
	"metadata.log.dir": "MetadataLogDir", "broker.rack": "BrokerRack",
	"inter.broker.listener.name": "InterBrokerListenerName", "security.inter.broker.protocol": "InterBrokerListenerName",
}

// honouredByRefusal are honoured keys that need no code to act on them: every value other than
// the one sluice's behaviour already is gets refused (valueRefusals, checkSupported).
var honouredByRefusal = map[string]bool{
	"compression.type": true, "remote.log.storage.system.enable": true, "remote.storage.enable": true,
	"controller.quorum.voters": true, "controller.quorum.bootstrap.servers": true,
	"group.consumer.assignors": true, "group.coordinator.rebalance.protocols": true, "process.roles": true,
	"transaction.partition.verification.enable": true,
}

// TestHonouredKeysAreRead checks that sluice's code outside this package reads every honoured
// key: by name, through the Broker or TopicSettings field it is parsed into, or as a broker
// synonym of an honoured topic key. A key that is parsed and then never looked at is exactly
// the "accepted and silently ignored" this classification exists to prevent.
func TestHonouredKeysAreRead(t *testing.T) {
	used := usedOutsideConfig(t)
	brokerFields := fieldsFromSource(t, "broker.go", `b\.(\w+) = b\.\w+\("([a-z0-9.]+)"\)`)
	topicFields := fieldsFromSource(t, "settings.go", `(\w+):\s+\w+\("([a-z0-9.]+)"\)`)
	topicFields["cleanup.policy"] = "CleanupDelete"
	topicFields["min.cleanable.dirty.ratio"] = "MinCleanableDirtyRatio"
	topicFields["internal.segment.bytes"] = "SegmentBytes"
	for k, f := range consumedAs {
		brokerFields[k] = f
	}
	read := func(key string, fields map[string]string) bool {
		return honouredByRefusal[key] || used[key] || fields[key] != "" && used[fields[key]]
	}
	honouredTopic := map[string]bool{}
	for _, d := range TopicDefs() {
		if d.Support != Honoured {
			continue
		}
		if !read(d.Name, topicFields) {
			t.Errorf("topic key %s is honoured, but nothing outside internal/config reads it (field %q)", d.Name, topicFields[d.Name])
		}
		for _, s := range d.BrokerSynonyms() {
			honouredTopic[s] = true
		}
	}
	for _, d := range BrokerDefs() {
		if d.Support != Honoured || honouredTopic[d.Name] {
			continue
		}
		if !read(d.Name, brokerFields) {
			t.Errorf("broker key %s is honoured, but nothing outside internal/config reads it (field %q)", d.Name, brokerFields[d.Name])
		}
	}
}

// fieldsFromSource maps keys to the struct fields a file of this package assigns them to.
func fieldsFromSource(t *testing.T, file, pattern string) map[string]string {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(string(src), -1) {
		out[m[2]] = m[1]
	}
	if len(out) == 0 {
		t.Fatalf("no key assignments found in %s", file)
	}
	return out
}

// usedOutsideConfig collects the string literals and selected field names of every non-test
// Go file of the module outside internal/config (and outside the bench and test tools, which
// only write configurations).
func usedOutsideConfig(t *testing.T) map[string]bool {
	root := filepath.Join("..", "..")
	used := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case filepath.Join("internal", "config"), "bench", "compat-tests", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, err := strconv.Unquote(n.Value); err == nil {
						used[s] = true
					}
				}
			case *ast.SelectorExpr:
				used[n.Sel.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return used
}

// TestUnsupportedBrokerSettingsRefused: every setting that asks for a feature sluice lacks
// stops the start with an error that names the key and says it is not supported yet.
func TestUnsupportedBrokerSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`}, "sasl.jaas.config"},
		{map[string]string{"listener.name.nosuch.ssl.client.auth": "required"}, "listener.name.nosuch.ssl.client.auth"},
		{map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}, "authorizer.class.name"},
		{map[string]string{"create.topic.policy.class.name": "com.example.Policy"}, "create.topic.policy.class.name"},
		{map[string]string{"delegation.token.secret.key": "s3cret"}, "delegation.token.secret.key"},
		{map[string]string{"compression.type": "zstd"}, "compression.type"},
		{map[string]string{"group.coordinator.rebalance.protocols": "classic,consumer,share"}, "group.coordinator.rebalance.protocols"},
	} {
		_, err := ParseBroker(tc.props)
		if err == nil {
			t.Errorf("%v: accepted", tc.props)
			continue
		}
		if e, ok := err.(*Error); !ok || e.Key != tc.key || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "not supported by sluice yet") {
			t.Errorf("%v: error %q, want one naming %s as not supported yet", tc.props, err, tc.key)
		}
	}
	// Secrets are not repeated in the message.
	if _, err := ParseBroker(map[string]string{"sasl.jaas.config": `x required user_a="hunter2";`}); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("password setting: %v", err)
	}
}

// TestQuorumSettingsAccepted: Kafka's single-node combined configurations (static and dynamic
// quorum naming only this node), a combined node of a static multi-node quorum, and
// broker-only and controller-only nodes of a static quorum start.
func TestQuorumSettingsAccepted(t *testing.T) {
	for _, props := range []map[string]string{
		{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@localhost:9093"},
		{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER", "controller.quorum.bootstrap.servers": "localhost:9093"},
		{"ssl.client.auth": "none", "authorizer.class.name": ""}, // the defaults, written out
		{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin;User:ops"},
		// A combined node of a three-voter quorum.
		{"node.id": "2", "listeners": "PLAINTEXT://127.0.0.2:9092,CONTROLLER://127.0.0.2:9093", "controller.listener.names": "CONTROLLER",
			"controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.2:9093,3@127.0.0.3:9093"},
		// SASL on the controller listener (the mechanism and credentials are checked where
		// the client side is built, cmd/sluice/peer_security.go), and a broker-only node
		// reaching the controllers over SASL.
		{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL", "sasl.mechanism.controller.protocol": "PLAIN"},
		{"process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.1:9092", "controller.listener.names": "CONTROLLER",
			"controller.quorum.voters": "2@127.0.0.1:9093", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"},
		// A broker-only node and a controller-only node of a static quorum.
		{"node.id": "4", "process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.4:9092", "controller.listener.names": "CONTROLLER",
			"controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.2:9093,3@127.0.0.3:9093"},
		{"node.id": "3", "process.roles": "controller", "listeners": "CONTROLLER://127.0.0.3:9093", "controller.listener.names": "CONTROLLER",
			"controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.2:9093,3@127.0.0.3:9093"},
		// A broker-only node that learns the voters from the controllers.
		{"node.id": "4", "process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.4:9092", "controller.listener.names": "CONTROLLER",
			"controller.quorum.bootstrap.servers": "127.0.0.1:9093,127.0.0.2:9093"},
		// A controller that joins a dynamic quorum through another node (KIP-853).
		{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
			"controller.quorum.bootstrap.servers": "127.0.0.2:9093"},
		// A controller-only node alone.
		{"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER"},
	} {
		if _, err := ParseBroker(props); err != nil {
			t.Errorf("%v: %v", props, err)
		}
	}
}

// TestUnsupportedTopicSettingsRefused: CreateTopics, AlterConfigs and dynamic broker defaults
// refuse recompression with a message naming the key; compaction is accepted.
func TestUnsupportedTopicSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		validate   func(k, v string) error
		key, value string
	}{
		{ValidateTopic, "compression.type", "gzip"},
		{ValidateBrokerDynamic, "compression.type", "lz4"},
	} {
		err := tc.validate(tc.key, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.key+"="+tc.value+" is not supported by sluice yet") {
			t.Errorf("%s=%s: %v", tc.key, tc.value, err)
		}
	}
	for _, kv := range [][2]string{{"cleanup.policy", "delete"}, {"cleanup.policy", "compact"}, {"cleanup.policy", "delete,compact"},
		{"compression.type", "producer"}, {"retention.ms", "1000"}} {
		if err := ValidateTopic(kv[0], kv[1]); err != nil {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	if err := ValidateTopicValue("cleanup.policy", "compact"); err != nil {
		t.Errorf("internal topics may be compacted: %v", err)
	}
	if err := ValidateBrokerDynamic("log.cleanup.policy", "compact"); err != nil {
		t.Errorf("log.cleanup.policy=compact: %v", err)
	}
}
