package main

import (
	"context"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sluice/internal/config"
	"sluice/internal/testcerts"
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

// TestPeerTLSConfig: the client side of a TLS listener checks the peer against the listener's
// truststore, with its host name by default (ssl.endpoint.identification.algorithm=https) and
// the chain alone when the algorithm is empty, and presents the listener's keystore to a peer
// that requires client certificates. A broker-only node, with only a truststore for the
// controller listener, reaches it too.
func TestPeerTLSConfig(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA()
	serverPEM, _, _ := ca.Server().WriteFiles(dir, "server")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// A peer that requires a client certificate of the CA.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.Server().TLS()},
		ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()
	handshake := func(cfg *tls.Config, serverName string) error {
		c := cfg.Clone()
		c.ServerName = serverName
		conn, err := tls.Dial("tcp", ln.Addr().String(), c)
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = conn.Read(make([]byte, 2)) // a refused client certificate shows here in TLS 1.3
		return err
	}
	props := func(kv ...string) map[string]string {
		m := map[string]string{"listeners": "SSL://127.0.0.1:9093", "inter.broker.listener.name": "SSL",
			"ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM",
			"listener.name.ssl.ssl.keystore.location": serverPEM, "listener.name.ssl.ssl.truststore.location": caFile}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	pc, err := interBrokerClient(mustParse(t, props()))
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(pc.tls, "127.0.0.1"); err != nil {
		t.Errorf("mutual TLS with the listener keystore: %v", err)
	}
	if err := handshake(pc.tls, "not-the-host.example"); err == nil {
		t.Error("a certificate for another host accepted with ssl.endpoint.identification.algorithm=https")
	}
	pc, err = interBrokerClient(mustParse(t, props("listener.name.ssl.ssl.endpoint.identification.algorithm", "")))
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(pc.tls, "not-the-host.example"); err != nil {
		t.Errorf("empty ssl.endpoint.identification.algorithm: %v", err)
	}
	other := testcerts.NewCA()
	otherFile := filepath.Join(dir, "other.crt")
	if err := os.WriteFile(otherFile, other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	pc, err = interBrokerClient(mustParse(t, props("listener.name.ssl.ssl.endpoint.identification.algorithm", "",
		"listener.name.ssl.ssl.truststore.location", otherFile)))
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(pc.tls, "127.0.0.1"); err == nil {
		t.Error("a certificate of a CA outside the truststore accepted with an empty algorithm")
	}

	// A broker-only node: the controller listener is not its own, and it has no keystore for it.
	cc, err := controllerClient(mustParse(t, map[string]string{"process.roles": "broker", "node.id": "4",
		"listeners": "PLAINTEXT://127.0.0.1:9092", "controller.listener.names": "CONTROLLER",
		"controller.quorum.voters": "1@127.0.0.1:9093", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
		"listener.name.controller.ssl.truststore.type": "PEM", "listener.name.controller.ssl.truststore.location": caFile}))
	if err != nil {
		t.Fatal(err)
	}
	if cc.protocol != "SSL" || cc.tls == nil || cc.tls.RootCAs == nil || len(cc.tls.Certificates) != 0 {
		t.Fatalf("broker-only controller client: %+v", cc)
	}
	if err := handshake(cc.tls, "127.0.0.1"); err == nil {
		t.Error("a peer requiring a client certificate accepted a client with none")
	}
}

// TestPeerTLSJKSTruststoreWithoutKeystore: a broker-only node with only a truststore for the
// controller listener reads it as the listener's server side would, here a JKS file Java's
// keytool wrote (ssl.truststore.type left at Kafka's default, JKS): it reaches a controller
// whose certificate the truststore's CA signed, and refuses one of another CA. It was refused
// at start before ("sluice reads PEM truststores only").
func TestPeerTLSJKSTruststoreWithoutKeystore(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	truststore := filepath.Join(dir, "truststore.jks")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", caFile,
		"-storetype", "JKS", "-keystore", truststore, "-storepass", "trust-pass").CombinedOutput(); err != nil {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	serve := func(cert tls.Certificate) string {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_ = c.(*tls.Conn).Handshake()
				}()
			}
		}()
		return ln.Addr().String()
	}
	cc, err := controllerClient(mustParse(t, map[string]string{"process.roles": "broker", "node.id": "4",
		"listeners": "PLAINTEXT://127.0.0.1:9092", "controller.listener.names": "CONTROLLER",
		"controller.quorum.voters": "1@127.0.0.1:9093", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
		"listener.name.controller.ssl.truststore.location": truststore,
		"listener.name.controller.ssl.truststore.password": "trust-pass"}))
	if err != nil {
		t.Fatalf("a broker-only node with a JKS truststore for the controller listener: %v", err)
	}
	dial := func(addr string) error {
		c := cc.tls.Clone()
		c.ServerName = "127.0.0.1"
		conn, err := tls.Dial("tcp", addr, c)
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := dial(serve(ca.Server().TLS())); err != nil {
		t.Errorf("a controller whose certificate the JKS truststore's CA signed: %v", err)
	}
	if err := dial(serve(testcerts.NewCA().Server().TLS())); err == nil {
		t.Error("a controller of a CA outside the JKS truststore was accepted")
	}
}

// TestControllerClientSASL: a SASL_PLAINTEXT controller listener gives the link to the
// controllers and the raft transport a SASL client with sasl.mechanism.controller.protocol and
// the listener's JAAS username and password; Kafka's default mechanism (GSSAPI), a mechanism the
// listener does not enable, and a JAAS config without this node's own credentials stop the
// start naming the key.
func TestControllerClientSASL(t *testing.T) {
	const jaas = "listener.name.controller.plain.sasl.jaas.config"
	props := func(kv ...string) map[string]string {
		m := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
			"controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:9093",
			"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"default mechanism is GSSAPI", props(), "sasl.mechanism.controller.protocol"},
		{"mechanism not enabled", props("sasl.mechanism.controller.protocol", "SCRAM-SHA-512"), "sasl.enabled.mechanisms"},
		{"no own credentials", props("sasl.mechanism.controller.protocol", "PLAIN", jaas, plainLoginModule+` required user_ctl="pw";`), jaas},
	} {
		if _, err := controllerClient(mustParse(t, tc.props)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	cc, err := controllerClient(mustParse(t, props("sasl.mechanism.controller.protocol", "PLAIN",
		jaas, plainLoginModule+` required username="ctl" password="pw" user_ctl="pw";`)))
	if err != nil {
		t.Fatal(err)
	}
	if cc.protocol != "SASL_PLAINTEXT" || cc.tls != nil || cc.sasl == nil || cc.sasl.Name() != "PLAIN" {
		t.Fatalf("controller client of a SASL_PLAINTEXT listener: %+v", cc)
	}
}
