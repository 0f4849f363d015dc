package wire

import (
	"errors"
	"fmt"
	"strings"
)

// JAASModule is one login module of a sasl.jaas.config value:
// "<class> <flag> key=value ... ;", as Kafka's JaasConfig parses it.
type JAASModule struct {
	Class   string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// jaasMaxLength bounds a sasl.jaas.config value sluice parses.
const jaasMaxLength = 1 << 20

// ParseJAASConfig parses a sasl.jaas.config value. Kafka requires exactly one login module in
// it; so does this. Values may be quoted with double quotes (a backslash escapes the next
// character) or be bare words. Errors never repeat the value, which holds passwords.
func ParseJAASConfig(s string) (JAASModule, error) {
	if len(s) > jaasMaxLength {
		return JAASModule{}, errors.New("JAAS configuration too long")
	}
	p := jaasParser{s: s}
	var modules []JAASModule
	for {
		p.skipSpace()
		if p.done() {
			break
		}
		m, err := p.module()
		if err != nil {
			return JAASModule{}, err
		}
		modules = append(modules, m)
	}
	if len(modules) != 1 {
		return JAASModule{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(modules))
	}
	return modules[0], nil
}

type jaasParser struct {
	s   string
	pos int
}

func (p *jaasParser) done() bool { return p.pos >= len(p.s) }

func (p *jaasParser) skipSpace() {
	for !p.done() && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func isJAASWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c == '$' || c == '/' || c == ':' || c == '@' ||
		(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func (p *jaasParser) word() string {
	p.skipSpace()
	start := p.pos
	for !p.done() && isJAASWordByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *jaasParser) value() (string, error) {
	p.skipSpace()
	if p.done() {
		return "", errors.New("JAAS config: an option has no value")
	}
	if p.s[p.pos] != '"' {
		if w := p.word(); w != "" {
			return w, nil
		}
		return "", fmt.Errorf("JAAS config: unexpected character at offset %d", p.pos)
	}
	p.pos++
	var b strings.Builder
	for !p.done() {
		c := p.s[p.pos]
		p.pos++
		switch c {
		case '\\':
			if p.done() {
				return "", errors.New("JAAS config: unterminated quoted value")
			}
			b.WriteByte(p.s[p.pos])
			p.pos++
		case '"':
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("JAAS config: unterminated quoted value")
}

func (p *jaasParser) module() (JAASModule, error) {
	m := JAASModule{Class: p.word(), Options: map[string]string{}}
	if m.Class == "" {
		return m, fmt.Errorf("JAAS config: expected a login module class at offset %d", p.pos)
	}
	m.Flag = strings.ToLower(p.word())
	switch m.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return m, fmt.Errorf("JAAS config: login module %s: the control flag must be required, requisite, sufficient or optional", m.Class)
	}
	for {
		p.skipSpace()
		if p.done() {
			return m, fmt.Errorf("JAAS config: login module %s is not terminated by ';'", m.Class)
		}
		if p.s[p.pos] == ';' {
			p.pos++
			return m, nil
		}
		key := p.word()
		if key == "" {
			return m, fmt.Errorf("JAAS config: unexpected character at offset %d", p.pos)
		}
		p.skipSpace()
		if p.done() || p.s[p.pos] != '=' {
			return m, fmt.Errorf("JAAS config: option %s has no '='", key)
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return m, err
		}
		if _, dup := m.Options[key]; dup {
			return m, fmt.Errorf("JAAS config: option %s is given twice", key)
		}
		m.Options[key] = v
	}
}

// Users returns the user_<name>="password" options of the module, as Kafka's PlainLoginModule
// (and, in sluice, ScramLoginModule) lists a broker's users.
func (m JAASModule) Users() map[string]string {
	users := map[string]string{}
	for k, v := range m.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users
}
