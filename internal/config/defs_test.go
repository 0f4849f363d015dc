package config

import (
	"bufio"
	"os"
	"sort"
	"strings"
	"testing"
)

// kafkaDefaults are the keys whose default sluice changes on purpose (see the package doc).
// controller.listener.names has no default in Kafka 4.4 (it must be set); sluice's single-node
// default needs none.
var kafkaDefaults = map[string]bool{"node.id": true, "process.roles": true, "listeners": true, "log.dir": true,
	"controller.listener.names": true}

// authorizerKeys are the StandardAuthorizer's own keys: Kafka reads them from the broker's
// properties but they are in the authorizer's ConfigDef, not in the dumped KafkaConfig one.
var authorizerKeys = map[string]bool{"super.users": true, "allow.everyone.if.no.acl.found": true}

// TestDefsMatchKafka checks every definition against the ConfigDefs dumped from Kafka 4.4.0:
// the same keys, types and defaults, nothing missing and nothing invented.
func TestDefsMatchKafka(t *testing.T) {
	f, err := os.Open("testdata/kafka-4.4.0-configdefs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		p := strings.Split(line, "\t")
		scope, name, typ, dflt, internal := p[0], p[1], p[2], p[3], p[6] == "true"
		d, ok := dumpedDef(scope, name)
		if !ok {
			t.Errorf("%s key %s is missing", scope, name)
			continue
		}
		seen[scope+" "+name] = true
		if d.Type.String() != typ {
			t.Errorf("%s: type %v, Kafka has %s", name, d.Type, typ)
		}
		if d.Internal != internal {
			t.Errorf("%s: Internal=%v, Kafka has %v", name, d.Internal, internal)
		}
		got := "<null>"
		if d.Default != nil {
			got = *d.Default
		}
		if scope == "BROKER" && kafkaDefaults[name] {
			continue
		}
		if got != dflt {
			t.Errorf("%s: default %q, Kafka has %q", name, got, dflt)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, d := range TopicDefs() {
		if !seen["TOPIC "+d.Name] && !ownTopicKeys[d.Name] {
			t.Errorf("topic key %s is not Kafka's", d.Name)
		}
	}
	for _, d := range BrokerDefs() {
		if !seen["BROKER "+d.Name] && !authorizerKeys[d.Name] {
			t.Errorf("broker key %s is not Kafka's", d.Name)
		}
	}
}

func TestDefsAreConsistent(t *testing.T) {
	for scope, defs := range map[string][]*Def{"topic": TopicDefs(), "broker": BrokerDefs()} {
		if !sort.SliceIsSorted(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name }) {
			t.Errorf("%s defs are not sorted", scope)
		}
		for i, d := range defs {
			if i > 0 && defs[i-1].Name == d.Name {
				t.Errorf("%s key %s defined twice", scope, d.Name)
			}
			if d.Doc == "" {
				t.Errorf("%s has no doc", d.Name)
			}
			if d.Sensitive != (d.Type == TypePassword) {
				t.Errorf("%s: Sensitive=%v for type %v", d.Name, d.Sensitive, d.Type)
			}
			if d.Default != nil {
				if err := d.Check(*d.Default); err != nil {
					t.Errorf("default of %s fails its own validation: %v", d.Name, err)
				}
			}
		}
	}
	for _, d := range TopicDefs() {
		if d.ReadOnly {
			t.Errorf("topic key %s is ReadOnly", d.Name)
		}
		for _, s := range d.BrokerSynonyms() {
			if _, ok := BrokerDef(s); !ok {
				t.Errorf("topic key %s: synonym %s is not a broker key", d.Name, s)
			}
		}
		if len(d.synonyms) > 0 && d.BrokerKey != d.synonyms[0].name {
			t.Errorf("topic key %s: BrokerKey %q", d.Name, d.BrokerKey)
		}
	}
}

// TestTopicDefaultsFollowBrokerDefaults: with no configuration at all, every topic key's
// effective value is its own default, i.e. the topic and broker tables agree.
func TestTopicDefaultsFollowBrokerDefaults(t *testing.T) {
	static := DefaultBroker()
	for _, d := range TopicDefs() {
		v, src, _ := TopicValue(d.Name, nil, nil, nil, static)
		if (v == nil) != (d.Default == nil) || (v != nil && *v != *d.Default) {
			t.Errorf("%s: effective default %v, topic default %v", d.Name, deref(v), deref(d.Default))
		}
		if src != SourceDefaultConfig {
			t.Errorf("%s: source %v", d.Name, src)
		}
	}
}

func TestBrokerDefListenerPrefix(t *testing.T) {
	for _, tc := range []struct {
		key       string
		ok        bool
		sensitive bool
	}{
		{"listener.name.sasl_plaintext.plain.sasl.jaas.config", true, true},
		{"listener.name.SSL.ssl.keystore.location", true, false},
		{"listener.name.ssl.ssl.keystore.password", true, true},
		{"listener.name.internal.sasl.enabled.mechanisms", true, false},
		{"listener.name.x.no.such.key", false, false},
		{"listener.name.x.plain.ssl.keystore.location", false, false},
		{"listener.name..ssl.keystore.location", false, false},
		{"listener.name.x.listeners", false, false},
		{"listener.name.x", false, false},
	} {
		d, ok := BrokerDef(tc.key)
		if ok != tc.ok {
			t.Errorf("BrokerDef(%q) ok=%v, want %v", tc.key, ok, tc.ok)
			continue
		}
		if ok && (d.Name != tc.key || d.Sensitive != tc.sensitive) {
			t.Errorf("BrokerDef(%q) = %+v", tc.key, d)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// dumpedDef is sluice's definition of a key of the Kafka ConfigDefs dump, by its scope there
// (TOPIC, or a broker scope).
func dumpedDef(scope, name string) (*Def, bool) {
	if scope == "TOPIC" {
		return TopicDef(name)
	}
	d, ok := brokerByName[name]
	return d, ok
}
