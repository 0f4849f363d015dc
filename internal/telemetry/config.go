package telemetry

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The keys of a CLIENT_METRICS config resource (a subscription), as Kafka's
// ClientMetricsConfigs names them.
const (
	KeyMetrics    = "metrics"
	KeyIntervalMs = "interval.ms"
	KeyMatch      = "match"
)

// Defaults and bounds of interval.ms, as Kafka's ClientMetricsConfigs has them.
const (
	DefaultIntervalMs = 5 * 60 * 1000
	minIntervalMs     = 100
	maxIntervalMs     = 3600000
)

// AllMetrics in a subscription's metrics list subscribes to every metric.
const AllMetrics = "*"

// Match attributes, the names a match entry may test.
const (
	MatchClientInstanceID      = "client_instance_id"
	MatchClientID              = "client_id"
	MatchClientSoftwareName    = "client_software_name"
	MatchClientSoftwareVersion = "client_software_version"
	MatchClientSourceAddress   = "client_source_address"
	MatchClientSourcePort      = "client_source_port"
)

var matchParams = []string{
	MatchClientInstanceID, MatchClientID, MatchClientSoftwareName,
	MatchClientSoftwareVersion, MatchClientSourceAddress, MatchClientSourcePort,
}

// KeyDoc is each subscription key's documentation, its type and its default, in the order
// DescribeConfigs lists them.
var KeyDocs = []struct {
	Name, Type, Default, Doc string
}{
	{KeyMetrics, "LIST", "", "Telemetry metric name prefix list"},
	{KeyIntervalMs, "INT", strconv.Itoa(DefaultIntervalMs), "Metrics push interval in milliseconds"},
	{KeyMatch, "LIST", "", "Client match criteria"},
}

// ConfigError is a refused subscription change: the Kafka error code and Kafka's message.
type ConfigError struct {
	Code    int16
	Message string
}

func (e *ConfigError) Error() string { return e.Message }

// ValidateKey checks one key of a subscription as Kafka's ClientMetricsConfigs.validate does:
// an unknown key is INVALID_REQUEST, a value that does not parse INVALID_CONFIG, an interval
// out of [100, 3600000] INVALID_REQUEST, a match entry that is not name=regex with a known
// name INVALID_CONFIG. Regexes are Go's (RE2): a Java-only construct (backreferences,
// lookaround) is refused as an illegal pattern.
func ValidateKey(key, value string) *ConfigError {
	switch key {
	case KeyMetrics:
		if _, err := parseList(key, value); err != nil {
			return err
		}
	case KeyIntervalMs:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil {
			return &ConfigError{kerr.InvalidConfig.Code, "Invalid value " + value + " for configuration " + key + ": Not a number of type INT"}
		}
		if n < minIntervalMs || n > maxIntervalMs {
			return &ConfigError{kerr.InvalidRequest.Code, "Invalid value " + strconv.FormatInt(n, 10) + " for interval.ms, interval must be between 100 and 3600000 (1 hour)"}
		}
	case KeyMatch:
		entries, err := parseList(key, value)
		if err != nil {
			return err
		}
		if _, err := parseMatch(entries); err != nil {
			return err
		}
	default:
		return &ConfigError{kerr.InvalidRequest.Code, "Unknown client metrics configuration: " + key}
	}
	return nil
}

// parseList splits a LIST value as Kafka's ConfigDef does (comma-separated, trimmed, "" is
// the empty list) and refuses duplicates, as the keys' ValidList.anyNonDuplicateValues does.
func parseList(key, value string) ([]string, *ConfigError) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	parts := strings.Split(value, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	seen := make(map[string]bool, len(parts))
	for _, p := range parts {
		if seen[p] {
			return nil, &ConfigError{kerr.InvalidConfig.Code, "Invalid value " + value + " for configuration " + key + ": Configuration '" + key + "' values must not be duplicated."}
		}
		seen[p] = true
	}
	return parts, nil
}

// parseMatch turns name=regex entries into anchored regexes (Kafka matches the whole
// attribute, Matcher.matches). Like Java's String.split("="), an entry with a second '='
// (other than trailing ones) is illegal.
func parseMatch(entries []string) (map[string]*regexp.Regexp, *ConfigError) {
	out := make(map[string]*regexp.Regexp, len(entries))
	for _, e := range entries {
		parts := strings.Split(e, "=")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		illegal := &ConfigError{kerr.InvalidConfig.Code, "Illegal client matching pattern: " + e}
		if len(parts) != 2 {
			return nil, illegal
		}
		name := strings.TrimSpace(parts[0])
		if !slices.Contains(matchParams, name) {
			return nil, illegal
		}
		re, err := regexp.Compile(`^(?:` + strings.TrimSpace(parts[1]) + `)$`)
		if err != nil {
			return nil, illegal
		}
		out[name] = re
	}
	return out, nil
}

// Subscription is one parsed CLIENT_METRICS resource.
type Subscription struct {
	Name       string
	Metrics    []string
	IntervalMs int32
	// Match holds the anchored regex per attribute; all must match (an empty Match matches
	// every client).
	Match map[string]*regexp.Regexp
}

// ParseSubscription reads a stored subscription, taking each key's default when unset. The
// keys were validated before they were stored; one that no longer parses (a snapshot from a
// newer version, say) is taken at its default.
func ParseSubscription(name string, cfg map[string]string) Subscription {
	s := Subscription{Name: name, IntervalMs: DefaultIntervalMs}
	if v, ok := cfg[KeyMetrics]; ok {
		s.Metrics, _ = parseList(KeyMetrics, v)
	}
	if v, ok := cfg[KeyIntervalMs]; ok && ValidateKey(KeyIntervalMs, v) == nil {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		s.IntervalMs = int32(n)
	}
	if v, ok := cfg[KeyMatch]; ok {
		if entries, err := parseList(KeyMatch, v); err == nil {
			if m, err := parseMatch(entries); err == nil {
				s.Match = m
			}
		}
	}
	return s
}

// ClientInfo is what a subscription's match is tested against.
type ClientInfo struct {
	ClientID, SoftwareName, SoftwareVersion string
	// SourceAddress is the connection's remote IP, SourcePort its port ("" when unknown).
	SourceAddress, SourcePort string
}

// matches reports whether every match entry matches the client's attribute; an attribute the
// client did not send matches nothing, as in Kafka's ClientMetricsInstanceMetadata.isMatch.
func (s *Subscription) matches(instanceID string, c ClientInfo) bool {
	for name, re := range s.Match {
		var v string
		switch name {
		case MatchClientInstanceID:
			v = instanceID
		case MatchClientID:
			v = c.ClientID
		case MatchClientSoftwareName:
			v = c.SoftwareName
		case MatchClientSoftwareVersion:
			v = c.SoftwareVersion
		case MatchClientSourceAddress:
			v = c.SourceAddress
		case MatchClientSourcePort:
			v = c.SourcePort
		}
		if v == "" || !re.MatchString(v) {
			return false
		}
	}
	return true
}
