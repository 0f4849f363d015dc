package main

import (
	"strings"
	"testing"

	"sluice/internal/config"
)

// TestPeerClientRefusals: a node whose inter-broker protocol it cannot speak refuses to start,
// naming the key at fault; one it can speak gets TLS and SASL as configured.
func TestPeerClientRefusals(t *testing.T) {
	base := map[string]string{
		"listeners":                                      "SASL_SSL://127.0.0.1:9093",
		"inter.broker.listener.name":                     "SASL_SSL",
		"listener.name.sasl_ssl.ssl.keystore.type":       "PEM",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const jaas = "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"default mechanism is GSSAPI", with(), "sasl.mechanism.inter.broker.protocol"},
		{"mechanism not enabled", with("sasl.mechanism.inter.broker.protocol", "PLAIN"), "sasl.enabled.mechanisms"},
		{"OAUTHBEARER", with("sasl.mechanism.inter.broker.protocol", "OAUTHBEARER"), "sasl.mechanism.inter.broker.protocol"},
		{"no JAAS", with("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"), jaas},
		{"no username", with("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512", jaas, scramLoginModule+` required user_a="b";`), jaas},
	} {
		cfg, err := config.ParseBroker(tc.props)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Without a keystore the TLS side reads the truststore alone (none: system roots).
		_, err = interBrokerClient(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	cfg, err := config.ParseBroker(with("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512",
		jaas, scramLoginModule+` required username="admin" password="s3cret";`))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := interBrokerClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if pc.tls == nil || pc.sasl == nil || pc.sasl.Name() != "SCRAM-SHA-512" {
		t.Errorf("client side of SASL_SSL: tls %v, sasl %v", pc.tls != nil, pc.sasl)
	}
	_, err = interBrokerClient(mustParse(t, with("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512",
		jaas, scramLoginModule+` required password="s3cret";`)))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a JAAS config without username: %v (it must be refused without repeating the password)", err)
	}
	// An unsupported endpoint identification algorithm is named.
	cfg = mustParse(t, map[string]string{"listeners": "SSL://127.0.0.1:9093", "inter.broker.listener.name": "SSL",
		"ssl.endpoint.identification.algorithm": "dns"})
	if _, err := interBrokerClient(cfg); err == nil || !strings.Contains(err.Error(), "ssl.endpoint.identification.algorithm") {
		t.Errorf("ssl.endpoint.identification.algorithm=dns: %v", err)
	}
}

func mustParse(t *testing.T, props map[string]string) *config.Broker {
	t.Helper()
	cfg, err := config.ParseBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
