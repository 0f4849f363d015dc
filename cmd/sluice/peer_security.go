package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/internal/config"
	"sluice/wire"
)

// peerClient is how this node connects to another node's listener, as Kafka's broker builds
// its own clients: the security protocol of the inter-broker listener (inter.broker.listener.name
// or security.inter.broker.protocol) for replica fetchers, transaction markers and peer
// requests; that of the first of controller.listener.names for the link to the controllers
// and the raft transport between them. The listener's listener.name.<l>.ssl.* keys give the
// TLS side (its truststore to check the peer, its keystore presented for mutual TLS) and, for
// SASL, the mechanism key's mechanism with the username and password of that listener's
// listener.name.<l>.<mechanism>.sasl.jaas.config.
type peerClient struct {
	listener string
	protocol string
	tls      *tls.Config    // nil on PLAINTEXT and SASL_PLAINTEXT
	sasl     sasl.Mechanism // nil on PLAINTEXT and SSL
}

// kgoOpts are the franz-go options that make a client speak the peer protocol.
func (p peerClient) kgoOpts() []kgo.Opt {
	var opts []kgo.Opt
	if p.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(p.tls))
	}
	if p.sasl != nil {
		opts = append(opts, kgo.SASL(p.sasl))
	}
	return opts
}

// interBrokerClient is the client side of the inter-broker listener. A protocol or setting it
// cannot speak stops the start with an error naming the key.
func interBrokerClient(cfg *config.Broker) (peerClient, error) {
	name := cfg.InterBrokerListenerName
	key := "inter.broker.listener.name"
	if !cfg.IsSet(key) {
		key = "security.inter.broker.protocol"
	}
	return peerClientFor(cfg, name, key, "sasl.mechanism.inter.broker.protocol")
}

// controllerClient is the client side of the first controller listener ("" protocol when
// there is none).
func controllerClient(cfg *config.Broker) (peerClient, error) {
	if len(cfg.ControllerListeners) == 0 {
		return peerClient{protocol: "PLAINTEXT"}, nil
	}
	return peerClientFor(cfg, cfg.ControllerListeners[0], "controller.listener.names", "sasl.mechanism.controller.protocol")
}

func peerClientFor(cfg *config.Broker, name, listenerKeyName, mechKey string) (peerClient, error) {
	proto, ok := cfg.ListenerSecurityProtocolMap[strings.ToUpper(name)]
	if !ok {
		return peerClient{}, fmt.Errorf("%s: listener %s has no security protocol in listener.security.protocol.map", listenerKeyName, name)
	}
	l := config.Listener{Name: name, SecurityProtocol: proto}
	out := peerClient{listener: name, protocol: proto}
	if proto == "SSL" || proto == "SASL_SSL" {
		t, err := peerTLSConfig(cfg, l)
		if err != nil {
			return out, fmt.Errorf("%s=%s (%s), the client side: %w", listenerKeyName, name, proto, err)
		}
		out.tls = t
	}
	if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
		m, err := peerSASL(cfg, l, mechKey)
		if err != nil {
			return out, err
		}
		out.sasl = m
	}
	return out, nil
}

// tlsSettingsFor is a listener's ssl.* keys, each with its listener.name.<l>. override.
func tlsSettingsFor(cfg *config.Broker, l config.Listener) wire.TLSSettings {
	get := func(key string) wire.Setting { return listenerKey(cfg, l, key) }
	return wire.TLSSettings{
		KeystoreType:             get("ssl.keystore.type"),
		KeystoreLocation:         get("ssl.keystore.location"),
		KeystorePassword:         get("ssl.keystore.password"),
		KeystoreCertificateChain: get("ssl.keystore.certificate.chain"),
		KeystoreKey:              get("ssl.keystore.key"),
		KeyPassword:              get("ssl.key.password"),
		TruststoreType:           get("ssl.truststore.type"),
		TruststoreLocation:       get("ssl.truststore.location"),
		TruststorePassword:       get("ssl.truststore.password"),
		TruststoreCertificates:   get("ssl.truststore.certificates"),
		ClientAuth:               get("ssl.client.auth"),
		EnabledProtocols:         get("ssl.enabled.protocols"),
		CipherSuites:             get("ssl.cipher.suites"),
	}
}

// peerTLSConfig is the client TLS for a listener of another node, from that listener's
// ssl.* keys (wire.BuildClientTLSConfig): its truststore checks the server, whatever its type
// (JKS, PKCS12 or PEM, as the listener's own server side reads it), and its keystore, when
// this node has one for the listener, is offered when the server asks (mutual TLS); a
// broker-only node reaching the controllers may have the truststore alone.
// ssl.endpoint.identification.algorithm=https (Kafka's default) checks the peer's host name;
// empty checks the chain only, as Kafka does.
func peerTLSConfig(cfg *config.Broker, l config.Listener) (*tls.Config, error) {
	c, err := wire.BuildClientTLSConfig(tlsSettingsFor(cfg, l))
	if err != nil {
		return nil, err
	}
	alg := listenerKey(cfg, l, "ssl.endpoint.identification.algorithm")
	switch strings.ToLower(strings.TrimSpace(alg.Value)) {
	case "https":
	case "":
		// Verify the chain against the truststore, not the name, as Kafka does with an
		// empty algorithm. crypto/tls offers that only by skipping its own verification.
		roots := c.RootCAs
		c.InsecureSkipVerify = true
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	default:
		return nil, fmt.Errorf("%s: %q is not supported; use https (check the host name) or empty (do not)", alg.Key, alg.Value)
	}
	return c, nil
}

// verifyChain checks a peer's certificate chain against roots (nil: the system's), for any
// host name.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// peerSASL is the SASL client of a listener: mechKey's mechanism, which the listener must
// enable, with the username and password of its JAAS config for that mechanism.
func peerSASL(cfg *config.Broker, l config.Listener, mechKey string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(strings.TrimSpace(cfg.String(mechKey)))
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	case "GSSAPI":
		return nil, fmt.Errorf("%s=%s (Kafka's default) is not supported by sluice yet: listener %s uses %s, and sluice has no GSSAPI (Kerberos); set %s to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
			mechKey, mech, l.Name, l.SecurityProtocol, mechKey)
	default:
		return nil, fmt.Errorf("%s=%s is not supported by sluice yet: its own connections between nodes authenticate with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mechKey, mech)
	}
	enabled := listenerKey(cfg, l, "sasl.enabled.mechanisms")
	if !slices.ContainsFunc(config.ParseList(enabled.Value), func(m string) bool { return strings.EqualFold(strings.TrimSpace(m), mech) }) {
		return nil, fmt.Errorf("%s=%s must be among the listener's %s (%s), as in Kafka", mechKey, mech, enabled.Key, enabled.Value)
	}
	jaasKey := "listener.name." + strings.ToLower(l.Name) + "." + strings.ToLower(mech) + ".sasl.jaas.config"
	if !cfg.IsSet(jaasKey) {
		if k := listenerKey(cfg, l, "sasl.jaas.config"); k.Key != "sasl.jaas.config" {
			jaasKey = k.Key
		}
	}
	if !cfg.IsSet(jaasKey) {
		return nil, fmt.Errorf("%s=%s: %s is not set; it gives this node's own credentials, e.g. %s required username=\"admin\" password=\"...\";",
			mechKey, mech, jaasKey, wantModule(mech))
	}
	module, err := wire.ParseJAASConfig(cfg.String(jaasKey))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", jaasKey, err)
	}
	user, pass := module.Options["username"], module.Options["password"]
	if user == "" || pass == "" {
		return nil, fmt.Errorf("%s: %s needs username=\"...\" and password=\"...\" options: they are what this node authenticates to the others with (%s)",
			jaasKey, module.Class, mechKey)
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	}
	return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
}
