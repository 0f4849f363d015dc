package config

import (
	"fmt"
	"net"
	"strings"
)

// Kafka's security protocols, the values listener.security.protocol.map may name.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

func init() {
	for _, d := range brokerTable {
		brokerByName[d.Name] = d
	}
	// Broker keys that fall back to others, as Kafka's DynamicBrokerConfig.brokerConfigSynonyms
	// lists them: a key's synonyms start with the key itself.
	for _, group := range [][]string{
		{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		{"log.roll.ms", "log.roll.hours"},
		{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
	} {
		for _, name := range group {
			brokerByName[name].synonyms = syn(group...)
		}
	}
	for _, d := range brokerTable {
		if d.synonyms == nil {
			d.synonyms = syn(d.Name)
		}
		d.PerBroker = !d.ReadOnly && isPerBrokerName(d.Name)
	}
	brokerSorted = append([]*Def(nil), brokerTable...)
	sortDefs(brokerSorted)
}

// BrokerDefs returns every broker key, sorted by name, including Internal ones. Listener-
// prefixed keys (listener.name.NAME.key) are not listed; BrokerDef resolves them. Callers
// must not modify the Defs.
func BrokerDefs() []*Def { return append([]*Def(nil), brokerSorted...) }

// BrokerDef looks up a broker key. Besides the keys BrokerDefs lists it accepts Kafka's
// per-listener overrides, "listener.name.<listener>.<key>" and, for SASL settings,
// "listener.name.<listener>.<mechanism>.<key>"; the returned Def then carries the full name
// and the underlying key's type, validation and sensitivity, and its synonyms are the full
// name followed by the unprefixed key (as Kafka reports them).
func BrokerDef(name string) (*Def, bool) {
	if d, ok := brokerByName[name]; ok {
		return d, true
	}
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return nil, false
	}
	listener, key, ok := strings.Cut(rest, ".")
	if !ok || listener == "" {
		return nil, false
	}
	base, ok := brokerByName[key]
	if !ok {
		// listener.name.<listener>.<mechanism>.sasl.*: Kafka's per-mechanism SASL overrides.
		mechanism, saslKey, found := strings.Cut(key, ".")
		if !found || mechanism == "" || !strings.HasPrefix(saslKey, "sasl.") {
			return nil, false
		}
		if base, ok = brokerByName[saslKey]; !ok {
			return nil, false
		}
		key = saslKey
	}
	if strings.HasPrefix(key, "listener.name.") || key == "listeners" || key == "advertised.listeners" {
		return nil, false
	}
	d := *base
	d.Name = name
	d.Default = nil
	d.Internal = false
	d.PerBroker = !d.ReadOnly && (strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl."))
	d.synonyms = syn(name, key)
	return &d, true
}

// ValidateBroker checks one broker key and value, for server.properties, --set overrides and
// AlterConfigs on brokers. The error is an *Error naming the key. It checks the value alone;
// ParseBroker also checks keys against each other.
func ValidateBroker(key, value string) error {
	d, ok := BrokerDef(key)
	if !ok {
		return &Error{Key: key, Value: value, Unknown: true}
	}
	return d.Check(value)
}

// isPerBrokerName: listener and security settings and cordoned.log.dirs (whose entries are one
// broker's directories), which Kafka only lets change per broker (PER_BROKER_CONFIGS).
func isPerBrokerName(name string) bool {
	switch name {
	case "listeners", "listener.security.protocol.map", "principal.builder.class", "cordoned.log.dirs":
		return true
	}
	return strings.HasPrefix(name, "ssl.") || strings.HasPrefix(name, "sasl.")
}

// dynamicSecurityKeys are the keystore/truststore settings Kafka lets change dynamically only
// with a listener prefix (DynamicBrokerConfig.DynamicSecurityConfigs).
var dynamicSecurityKeys = map[string]bool{
	"ssl.key.password": true, "ssl.keystore.type": true, "ssl.keystore.certificate.chain": true,
	"ssl.keystore.password": true, "ssl.truststore.password": true, "ssl.truststore.certificates": true,
	"ssl.truststore.location": true, "ssl.keystore.location": true, "ssl.truststore.type": true,
	"ssl.keystore.key": true,
}

// ValidateBrokerDynamic is ValidateBroker for AlterConfigs/IncrementalAlterConfigs of one
// broker id on a running cluster: it also refuses keys that cannot change dynamically, with
// Kafka's messages.
// Values that ask for features sluice lacks are refused after Kafka's own rules.
func ValidateBrokerDynamic(key, value string) error {
	if err := validateBrokerDynamicRules(key, value); err != nil {
		return err
	}
	d, _ := DynamicBrokerDef(key)
	if err := refuseDynamicSecurity(d, value); err != nil {
		return err
	}
	return d.CheckSupported(value)
}

// refuseDynamicSecurity refuses changing TLS and SASL settings on a running broker: sluice
// reads them when a listener starts, and would otherwise store the change and ignore it.
func refuseDynamicSecurity(d *Def, value string) error {
	base := d.Name
	if rest, ok := strings.CutPrefix(base, "listener.name."); ok {
		_, base, _ = strings.Cut(rest, ".")
	}
	if d.Support != Honoured || !(strings.HasPrefix(base, "ssl.") || strings.Contains(base, "sasl.") ||
		base == "connections.max.reauth.ms" || base == "connection.failed.authentication.delay.ms") {
		return nil
	}
	shown := value
	if d.Sensitive {
		shown = "[hidden]"
	}
	return notSupported(d.Name, shown, "TLS and SASL settings are read when a listener starts; changing them on a running broker is not implemented yet (set them in server.properties and restart)", false)
}

// validateBrokerDynamicRules is ValidateBrokerDynamic with Kafka's rules alone.
func validateBrokerDynamicRules(key, value string) error {
	d, ok := DynamicBrokerDef(key)
	if !ok {
		return &Error{Key: key, Value: value, Unknown: true}
	}
	if d.ReadOnly {
		// Kafka's DynamicBrokerConfig.validateConfigs words it so (with a Scala Set).
		return &Error{Key: key, Value: value, Message: "Cannot update these configs dynamically: Set(" + key + ")"}
	}
	if dynamicSecurityKeys[key] {
		return &Error{Key: key, Value: value, Message: "Dynamic security configs can only be updated using listener prefix, base configs may be updated only using static broker configs: " + key}
	}
	return d.Check(value)
}

// ValidateBrokerDynamicDefault is ValidateBrokerDynamic for the cluster-wide default broker
// resource "": it also refuses per-broker keys (Def.PerBroker), as Kafka does.
func ValidateBrokerDynamicDefault(key, value string) error {
	if err := validateBrokerDynamicRules(key, value); err != nil {
		return err
	}
	d, _ := DynamicBrokerDef(key)
	if d.PerBroker {
		return &Error{Key: key, Value: value, Message: "Cannot update these configs at default cluster level, broker id must be specified: " + key}
	}
	if err := refuseDynamicSecurity(d, value); err != nil {
		return err
	}
	return d.CheckSupported(value)
}

func notSupportedTrue(what string) func(string) error {
	return func(v string) error {
		if b, err := ParseBool(v); err == nil && b {
			return fmt.Errorf("%s is not supported by sluice", what)
		}
		return nil
	}
}

// Listener is one entry of listeners or advertised.listeners:
// PLAINTEXT://127.0.0.1:9092 -> {PLAINTEXT, 127.0.0.1, 9092}.
type Listener struct {
	// Name is upper-cased, as Kafka normalises listener names.
	Name string
	// Host is empty for "every interface" (listeners) or "this machine's host name"
	// (advertised.listeners). IPv6 addresses are given without brackets.
	Host string
	Port int32
	// SecurityProtocol is filled by ParseBroker from listener.security.protocol.map.
	SecurityProtocol string
}

// Address is host:port suitable for net.Listen and net.Dial.
func (l Listener) Address() string {
	return net.JoinHostPort(l.Host, fmt.Sprint(l.Port))
}

func (l Listener) String() string {
	return l.Name + "://" + l.Address()
}

// ParseListeners parses a listeners value: comma-separated NAME://host:port entries, host
// optionally a bracketed IPv6 address or empty. Names must be unique.
func ParseListeners(value string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, e := range ParseList(value) {
		name, hostPort, ok := strings.Cut(e, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("Unable to parse %s to a broker endpoint", e)
		}
		host, port, err := splitHostPort(hostPort)
		if err != nil {
			return nil, fmt.Errorf("Unable to parse %s to a broker endpoint", e)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Errorf("Each listener must have a different name, %s appears more than once", name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: host, Port: port})
	}
	return out, nil
}

func listenerList(v string) error {
	_, err := ParseListeners(v)
	return err
}

// ParseProtocolMap parses listener.security.protocol.map (NAME:PROTOCOL,...), upper-casing
// names as Kafka does.
func ParseProtocolMap(value string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range ParseList(value) {
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("Map entry %q is not of the form LISTENER:PROTOCOL", e)
		}
		valid := false
		for _, p := range securityProtocols {
			valid = valid || p == proto
		}
		if !valid {
			return nil, fmt.Errorf("No security protocol %s (listener %s); use one of %s", proto, name, strings.Join(securityProtocols, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("Duplicate listener %s", name)
		}
		out[name] = proto
	}
	return out, nil
}

func protocolMap(v string) error {
	_, err := ParseProtocolMap(v)
	return err
}
