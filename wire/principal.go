package wire

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// AnonymousPrincipal is the principal of a connection that did not authenticate (PLAINTEXT, or
// SSL without a client certificate), as Kafka's KafkaPrincipal.ANONYMOUS.
const AnonymousPrincipal = "User:ANONYMOUS"

// PrincipalMapper is ssl.principal.mapping.rules: it turns a client certificate's subject
// distinguished name (RFC 2253, as Java's X500Principal.getName prints it) into a user name,
// as Kafka's SslPrincipalMapper does. Rules are tried in order; the first that applies wins.
// DEFAULT applies to every name and keeps it whole. RULE:pattern/replacement/[LU] applies when
// pattern matches the whole name; the name then becomes replacement with $1.. replaced by the
// pattern's groups, lower- (L) or upper-cased (U). Patterns are Go regular expressions (RE2),
// which agree with Java's for the patterns such rules use, except back-references.
type PrincipalMapper struct {
	rules []principalRule
}

type principalRule struct {
	isDefault   bool
	pattern     *regexp.Regexp // anchored: must match the whole name
	replacement string
	lower       bool
	upper       bool
}

// ErrNoPrincipalRule is returned by PrincipalMapper.Name when no rule applies to the name; the
// connection is then refused, as Kafka refuses it.
var ErrNoPrincipalRule = errors.New("no ssl.principal.mapping.rules rule applies")

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules as Kafka splits and parses them:
// rules separated by commas (a comma inside a RULE's pattern or replacement belongs to it),
// blanks around them ignored, empty rules ignored.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	rest := strings.TrimSpace(s)
	for rest != "" {
		var rule principalRule
		var err error
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			rule.isDefault = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			rule, rest, err = parseRule(rest[len("RULE:"):])
			if err != nil {
				return nil, err
			}
		default:
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			if bad := strings.TrimSpace(rest[:end]); bad != "" {
				return nil, fmt.Errorf("invalid rule: %s", bad)
			}
			rest = rest[end:]
			rest = strings.TrimLeft(strings.TrimPrefix(rest, ","), " \t")
			continue
		}
		// After a RULE anything up to the next comma is ignored, as Kafka's pattern allows;
		// after DEFAULT only blanks may follow.
		rest = strings.TrimLeft(rest, " \t")
		if rest != "" && rest[0] != ',' {
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			if rule.isDefault {
				return nil, fmt.Errorf("invalid rule: `DEFAULT%s`, unmatched substring: `%s`", rest[:end], rest[:end])
			}
			rest = rest[end:]
		}
		rest = strings.TrimLeft(strings.TrimPrefix(rest, ","), " \t")
		m.rules = append(m.rules, rule)
	}
	return m, nil
}

// parseRule parses "pattern/replacement/[LU]..." (after RULE:), where a backslash escapes the
// next character in pattern and replacement. It returns what follows the optional L or U.
func parseRule(s string) (principalRule, string, error) {
	var parts [2]string
	for i := range parts {
		var b strings.Builder
		for {
			if s == "" {
				return principalRule{}, "", fmt.Errorf("invalid rule: RULE:%s (a RULE is RULE:pattern/replacement/[LU])", strings.Join(parts[:i], "/"))
			}
			c := s[0]
			if c == '\\' && len(s) > 1 {
				b.WriteString(s[:2])
				s = s[2:]
				continue
			}
			s = s[1:]
			if c == '/' {
				break
			}
			b.WriteByte(c)
		}
		parts[i] = b.String()
	}
	rule := principalRule{replacement: parts[1]}
	if s != "" && (s[0] == 'L' || s[0] == 'U') {
		rule.lower, rule.upper = s[0] == 'L', s[0] == 'U'
		s = s[1:]
	}
	re, err := regexp.Compile(`^(?:` + parts[0] + `)$`)
	if err != nil {
		return principalRule{}, "", fmt.Errorf("invalid rule pattern %q: %v", parts[0], err)
	}
	rule.pattern = re
	return rule, s, nil
}

// Name maps a distinguished name to the user name of the principal.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		groups := r.pattern.FindStringSubmatchIndex(dn)
		if groups == nil {
			continue
		}
		name := expandReplacement(r.replacement, dn, groups)
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w to %s", ErrNoPrincipalRule, dn)
}

// expandReplacement substitutes $N (Java's replacement syntax: the longest number that names a
// group; a number naming no group is kept literally, as Kafka escapes it) and \x (x literally).
func expandReplacement(repl, src string, groups []int) string {
	ngroups := len(groups)/2 - 1
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c == '\\' && i+1 < len(repl) {
			i++
			b.WriteByte(repl[i])
			continue
		}
		if c != '$' || i+1 >= len(repl) || repl[i+1] < '0' || repl[i+1] > '9' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(repl) && repl[j] >= '0' && repl[j] <= '9' {
			j++
		}
		digits := repl[i+1 : j]
		// Take the longest prefix of digits that names a group.
		k := len(digits)
		n := -1
		for ; k > 0; k-- {
			v, err := strconv.Atoi(digits[:k])
			if err == nil && v <= ngroups && !(k > 1 && digits[0] == '0') {
				n = v
				break
			}
		}
		if n < 0 {
			b.WriteString(repl[i:j]) // no such group: literal
			i = j - 1
			continue
		}
		if s, e := groups[2*n], groups[2*n+1]; s >= 0 {
			b.WriteString(src[s:e])
		}
		i += k
	}
	return b.String()
}

// Attribute keywords Java's X500Principal.getName(RFC2253) prints; other attribute types are
// printed as dotted OIDs with a #hex value.
var dnKeywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DistinguishedName formats a certificate subject (its raw DER) as RFC 2253, most specific RDN
// first, the way Java's X500Principal.getName() does, which is what Kafka's principal mapping
// rules are written against ("CN=alice,OU=eng,O=Example,C=US").
func DistinguishedName(rawSubject []byte) (string, error) {
	var seq pkix.RDNSequence
	rest, err := asn1.Unmarshal(rawSubject, &seq)
	if err != nil {
		return "", fmt.Errorf("certificate subject: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("certificate subject: trailing bytes")
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			kw, known := dnKeywords[oid]
			s, isString := atv.Value.(string)
			if known && isString {
				b.WriteString(kw)
				b.WriteByte('=')
				b.WriteString(escapeDNValue(s))
				continue
			}
			der, err := asn1.Marshal(atv.Value)
			if err != nil {
				return "", fmt.Errorf("certificate subject attribute %s: %w", oid, err)
			}
			b.WriteString(oid)
			b.WriteString("=#")
			b.WriteString(hex.EncodeToString(der))
		}
	}
	return b.String(), nil
}

// escapeDNValue escapes an attribute value as RFC 2253 requires.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(",+\"\\<>;", c) >= 0,
			i == 0 && (c == '#' || c == ' '),
			i == len(s)-1 && c == ' ':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
