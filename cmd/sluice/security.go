package main

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

// listenerSecurity is what wire.Config needs for one listener's security protocol.
type listenerSecurity struct {
	protocol string
	tls      *tls.Config
	mapper   *wire.PrincipalMapper
	sasl     *wire.SASLConfig
}

// listenerKey returns the effective value of key for listener l: Kafka's per-listener override
// listener.name.<lower-case name>.<key> when set, else the broker-wide key.
func listenerKey(cfg *config.Broker, l config.Listener, key string) wire.Setting {
	prefixed := "listener.name." + strings.ToLower(l.Name) + "." + key
	if cfg.IsSet(prefixed) {
		return wire.Setting{Key: prefixed, Value: cfg.String(prefixed)}
	}
	return wire.Setting{Key: key, Value: cfg.String(key)}
}

// securityFor reads a listener's ssl.* and sasl.* keys (with their listener.name.NAME.
// overrides) into the wire layer's settings. Errors name the key at fault.
func securityFor(cfg *config.Broker, l config.Listener) (listenerSecurity, error) {
	sec := listenerSecurity{protocol: l.SecurityProtocol}
	get := func(key string) wire.Setting { return listenerKey(cfg, l, key) }
	if l.SecurityProtocol == "SSL" || l.SecurityProtocol == "SASL_SSL" {
		tlsCfg, err := wire.BuildTLSConfig(tlsSettingsFor(cfg, l))
		if err != nil {
			return sec, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		sec.tls = tlsCfg
		rules := get("ssl.principal.mapping.rules")
		if sec.mapper, err = wire.ParsePrincipalMappingRules(rules.Value); err != nil {
			return sec, fmt.Errorf("listener %s: %s: %w", l.Name, rules.Key, err)
		}
	}
	if l.SecurityProtocol == "SASL_PLAINTEXT" || l.SecurityProtocol == "SASL_SSL" {
		s, err := saslFor(cfg, l)
		if err != nil {
			return sec, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		sec.sasl = s
	}
	return sec, nil
}

// Login modules expected for each mechanism's sasl.jaas.config.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// saslFor reads sasl.enabled.mechanisms and, per mechanism, the users of
// listener.name.NAME.MECHANISM.sasl.jaas.config. PLAIN users are PlainLoginModule's
// user_NAME="password" options, as in Kafka. SCRAM users live, as in Kafka, in the metadata
// log (AlterUserScramCredentials; withImageScram points the listener at them); sluice also
// accepts ScramLoginModule's user_NAME="password" options, salted at start, for
// compatibility with its older configs. A SCRAM JAAS config may list no users.
func saslFor(cfg *config.Broker, l config.Listener) (*wire.SASLConfig, error) {
	mechKey := listenerKey(cfg, l, "sasl.enabled.mechanisms")
	out := &wire.SASLConfig{
		Scram:           map[string]map[string]wire.ScramCredential{},
		MaxReceiveBytes: cfg.Int32(listenerKey(cfg, l, "sasl.server.max.receive.size").Key),
		MaxReauth:       time.Duration(cfg.Int64("connections.max.reauth.ms")) * time.Millisecond,
		FailedAuthDelay: time.Duration(cfg.Int32("connection.failed.authentication.delay.ms")) * time.Millisecond,
	}
	if v := listenerKey(cfg, l, "connections.max.reauth.ms"); v.Key != "connections.max.reauth.ms" {
		out.MaxReauth = time.Duration(cfg.Int64(v.Key)) * time.Millisecond
	}
	for _, m := range config.ParseList(mechKey.Value) {
		m = strings.ToUpper(strings.TrimSpace(m))
		switch m {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER":
		case "GSSAPI":
			return nil, fmt.Errorf("%s=%s: GSSAPI (Kerberos) is not supported by sluice (GSSAPI is Kafka's default); set it to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and/or OAUTHBEARER",
				mechKey.Key, mechKey.Value)
		default:
			return nil, fmt.Errorf("%s=%s: mechanism %s is not supported by sluice yet; it serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER", mechKey.Key, mechKey.Value, m)
		}
		jaasKey := "listener.name." + strings.ToLower(l.Name) + "." + strings.ToLower(m) + ".sasl.jaas.config"
		if !cfg.IsSet(jaasKey) {
			// The listener-level sasl.jaas.config applies to every mechanism, as Kafka's
			// listener prefix override does.
			if k := listenerKey(cfg, l, "sasl.jaas.config"); k.Key != "sasl.jaas.config" {
				jaasKey = k.Key
			}
		}
		if !cfg.IsSet(jaasKey) && m == "OAUTHBEARER" {
			return nil, fmt.Errorf("mechanism OAUTHBEARER is enabled (%s) but %s is not set: e.g. %s required;",
				mechKey.Key, jaasKey, oauthBearerLoginModule)
		}
		if !cfg.IsSet(jaasKey) {
			return nil, fmt.Errorf("mechanism %s is enabled (%s) but %s is not set: it lists the users, e.g. %s required user_alice=\"alice-secret\";",
				m, mechKey.Key, jaasKey, wantModule(m))
		}
		module, err := wire.ParseJAASConfig(cfg.String(jaasKey))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", jaasKey, err)
		}
		if module.Class != wantModule(m) {
			return nil, fmt.Errorf("%s: mechanism %s needs login module %s, not %s", jaasKey, m, wantModule(m), module.Class)
		}
		if m == "OAUTHBEARER" {
			if out.OAuthBearer, err = oauthBearerFor(cfg, l, jaasKey, module); err != nil {
				return nil, err
			}
			out.Mechanisms = append(out.Mechanisms, m)
			continue
		}
		users := module.Users()
		if len(users) == 0 && m == "PLAIN" {
			return nil, fmt.Errorf("%s: no users (user_NAME=\"password\" options) for mechanism %s", jaasKey, m)
		}
		if m == "PLAIN" {
			out.PlainUsers = users
		} else {
			creds := map[string]wire.ScramCredential{}
			for u, p := range users {
				c, err := wire.NewScramCredential(m, p, wire.ScramMinIterations)
				if err != nil {
					return nil, fmt.Errorf("%s: user %s: %w", jaasKey, u, err)
				}
				creds[u] = c
			}
			out.Scram[m] = creds
		}
		out.Mechanisms = append(out.Mechanisms, m)
	}
	if len(out.Mechanisms) == 0 {
		return nil, fmt.Errorf("%s is empty: a SASL listener needs at least one mechanism", mechKey.Key)
	}
	return out, nil
}

// withImageScram makes a SASL listener look SCRAM users up in the metadata image first
// (credentials created with AlterUserScramCredentials), then among its JAAS users.
func withImageScram(s *wire.SASLConfig, image func() *controller.Image) {
	if s == nil {
		return
	}
	s.ScramLookup = func(mechanism, user string) (wire.ScramCredential, bool) {
		c, ok := image().ScramCredential(user, controller.ScramMechanismByName(mechanism))
		if !ok {
			return wire.ScramCredential{}, false
		}
		return wire.ScramCredential{Salt: c.Salt, Iterations: int(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
	}
}

func wantModule(mechanism string) string {
	switch mechanism {
	case "PLAIN":
		return plainLoginModule
	case "OAUTHBEARER":
		return oauthBearerLoginModule
	}
	return scramLoginModule
}
