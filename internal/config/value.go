package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// checkType checks value against t the way Kafka's ConfigDef.parseType does: numbers and
// booleans are trimmed first, booleans are case-insensitive, lists split on commas.
func checkType(t Type, value string) error {
	v := strings.TrimSpace(value)
	switch t {
	case TypeBoolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return errors.New("Expected value to be either true or false")
		}
	case TypeInt:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return errors.New("Not a number of type INT")
		}
	case TypeShort:
		if _, err := strconv.ParseInt(v, 10, 16); err != nil {
			return errors.New("Not a number of type SHORT")
		}
	case TypeLong:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return errors.New("Not a number of type LONG")
		}
	case TypeDouble:
		if _, err := ParseDouble(v); err != nil {
			return errors.New("Not a number of type DOUBLE")
		}
	case TypeClass:
		if v == "" {
			return errors.New("Class name must not be empty")
		}
	}
	return nil
}

// ParseBool parses a BOOLEAN value as Kafka does (trimmed, case-insensitive).
func ParseBool(value string) (bool, error) {
	v := strings.TrimSpace(value)
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", value)
}

// ParseInt32 parses an INT value (trimmed).
func ParseInt32(value string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
	return int32(n), err
}

// ParseInt16 parses a SHORT value (trimmed).
func ParseInt16(value string) (int16, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 16)
	return int16(n), err
}

// ParseInt64 parses a LONG value (trimmed).
func ParseInt64(value string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(value), 10, 64)
}

// ParseDouble parses a DOUBLE value (trimmed). Like Java's Double.parseDouble it accepts a
// trailing d/D/f/F suffix; NaN and infinities are rejected since no Kafka setting means them.
func ParseDouble(value string) (float64, error) {
	v := strings.TrimSpace(value)
	if n := len(v); n > 1 && strings.ContainsRune("dDfF", rune(v[n-1])) {
		v = v[:n-1]
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", value)
	}
	return f, nil
}

// ParseList splits a LIST value as Kafka does: on commas with surrounding whitespace
// removed; an empty (or all-blank) value is the empty list.
func ParseList(value string) []string {
	v := strings.TrimSpace(value)
	if v == "" {
		return []string{}
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Validators. Messages follow Kafka's ConfigDef validators word for word where a Kafka user
// may script against them.

func intRange(v string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

func atLeast(minimum int64) func(string) error {
	return func(v string) error {
		if n, ok := intRange(v); ok && n < minimum {
			return fmt.Errorf("Value must be at least %d", minimum)
		}
		return nil
	}
}

func between(minimum, maximum int64) func(string) error {
	return func(v string) error {
		n, ok := intRange(v)
		switch {
		case !ok:
		case n < minimum:
			return fmt.Errorf("Value must be at least %d", minimum)
		case n > maximum:
			return fmt.Errorf("Value must be no more than %d", maximum)
		}
		return nil
	}
}

// betweenOr is Kafka's Range.between(...) or a single extra value (compression.gzip.level).
func betweenOr(minimum, maximum, orValue int64) func(string) error {
	return func(v string) error {
		if n, ok := intRange(v); ok && n != orValue && (n < minimum || n > maximum) {
			return fmt.Errorf("Value must be between %d and %d or equal to %d", minimum, maximum, orValue)
		}
		return nil
	}
}

func doubleBetween(minimum, maximum float64) func(string) error {
	return func(v string) error {
		f, err := ParseDouble(v)
		switch {
		case err != nil:
		case f < minimum:
			return fmt.Errorf("Value must be at least %s", formatNumber(minimum))
		case f > maximum:
			return fmt.Errorf("Value must be no more than %s", formatNumber(maximum))
		}
		return nil
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// oneOf is Kafka's ValidString: the trimmed value must be exactly one of allowed.
func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(allowed, ", "))
	}
}

// oneOfFold is Kafka's CaseInsensitiveValidString.
func oneOfFold(allowed ...string) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				return nil
			}
		}
		return fmt.Errorf("String must be one of (case insensitive): %s", strings.Join(allowed, ", "))
	}
}

// listOf is Kafka's ValidList: every element must be one of allowed; the empty list passes.
func listOf(allowed ...string) func(string) error {
	check := oneOf(allowed...)
	return func(v string) error {
		for _, e := range ParseList(v) {
			if err := check(e); err != nil {
				return badValue{shown: e, err: err}
			}
		}
		return nil
	}
}

func nonEmptyString(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("String must be non-empty")
	}
	return nil
}

var replicaEntry = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// throttledReplicas is Kafka's ThrottledReplicaListValidator: "*" or partition:broker pairs.
func throttledReplicas(key string) func(string) error {
	return func(v string) error {
		list := ParseList(v)
		if strings.Join(list, "") == "*" {
			return nil
		}
		for _, e := range list {
			if !replicaEntry.MatchString(e) {
				return badValue{shown: "[" + strings.Join(list, ", ") + "]", err: fmt.Errorf("%s must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...", key)}
			}
		}
		return nil
	}
}

// QuorumVoter is one entry of controller.quorum.voters: id@host:port.
type QuorumVoter struct {
	ID   int32
	Host string
	Port int32
}

// ParseQuorumVoters parses controller.quorum.voters ("1@host:9093,2@[::1]:9093").
func ParseQuorumVoters(value string) ([]QuorumVoter, error) {
	var out []QuorumVoter
	for _, e := range ParseList(value) {
		id, hostPort, ok := strings.Cut(e, "@")
		if !ok {
			return nil, errVoterFormat
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, errVoterFormat
		}
		host, port, err := splitHostPort(hostPort)
		if err != nil || host == "" {
			return nil, errVoterFormat
		}
		out = append(out, QuorumVoter{ID: int32(n), Host: host, Port: port})
	}
	return out, nil
}

var errVoterFormat = errors.New("Each entry should be in the form `{id}@{host}:{port}`.")

func quorumVoters(v string) error {
	_, err := ParseQuorumVoters(v)
	return err
}

func hostPortList(v string) error {
	for _, e := range ParseList(v) {
		if host, _, err := splitHostPort(e); err != nil || host == "" {
			return fmt.Errorf("%q is not host:port", e)
		}
	}
	return nil
}

// splitHostPort splits host:port where host may be a bracketed IPv6 address or empty.
func splitHostPort(s string) (string, int32, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q has no port", s)
	}
	host, portStr := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.ContainsAny(host, "[]") {
		return "", 0, fmt.Errorf("%q has a malformed host", s)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q has an invalid port", s)
	}
	return host, int32(port), nil
}

func all(validators ...func(string) error) func(string) error {
	return func(v string) error {
		for _, f := range validators {
			if err := f(v); err != nil {
				return err
			}
		}
		return nil
	}
}
