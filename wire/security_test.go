package wire

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/internal/testcerts"
)

// securityVersions are testVersions plus SaslHandshake and SaslAuthenticate, as the broker
// advertises them.
func securityVersions() []VersionRange {
	return append(testVersions(),
		VersionRange{Key: keySaslHandshake, Min: 0, Max: 1},
		VersionRange{Key: keySaslAuthenticate, Min: 0, Max: 2})
}

// principalBroker is a fakeBroker that records each request's principal.
type principalBroker struct {
	fakeBroker
	mu         sync.Mutex
	principals []string
	keys       []int16
}

func (b *principalBroker) Handle(ctx context.Context, req *Request, respond Respond) {
	b.mu.Lock()
	b.principals = append(b.principals, req.Conn.Principal())
	b.keys = append(b.keys, req.Key)
	b.mu.Unlock()
	b.fakeBroker.Handle(ctx, req, respond)
}

func (b *principalBroker) seen() ([]string, []int16) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.principals...), append([]int16(nil), b.keys...)
}

type secServer struct {
	srv    *Server
	broker *principalBroker
	ca     testcerts.CA
}

func startSecure(t *testing.T, cfg Config) *secServer {
	t.Helper()
	s := &secServer{}
	cfg.Versions = securityVersions
	s.broker = &principalBroker{fakeBroker: fakeBroker{versions: securityVersions(), addr: func() net.Addr { return s.srv.Addr() }}}
	s.srv = startServer(t, cfg, s.broker)
	return s
}

func serverTLS(t *testing.T, ca testcerts.CA, clientAuth string) *tls.Config {
	t.Helper()
	server := ca.Server()
	cfg, err := BuildTLSConfig(TLSSettings{
		KeystoreType:             Setting{"ssl.keystore.type", "PEM"},
		KeystoreCertificateChain: Setting{"ssl.keystore.certificate.chain", string(server.CertPEM)},
		KeystoreKey:              Setting{"ssl.keystore.key", string(server.KeyPEM)},
		TruststoreType:           Setting{"ssl.truststore.type", "PEM"},
		TruststoreCertificates:   Setting{"ssl.truststore.certificates", string(ca.CertPEM)},
		ClientAuth:               Setting{"ssl.client.auth", clientAuth},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func metadataThrough(t *testing.T, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// TestTLSClientCertificatePrincipal: with ssl.client.auth=required a franz-go client with a
// certificate from the truststore's CA is served, and its requests carry the principal that
// ssl.principal.mapping.rules makes of the certificate's subject; a client without a
// certificate is refused at the handshake.
func TestTLSClientCertificatePrincipal(t *testing.T) {
	ca := testcerts.NewCA()
	mapper, err := ParsePrincipalMappingRules(`RULE:^CN=([^,]+),OU=.*$/$1/L, DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	s := startSecure(t, Config{SecurityProtocol: "SSL", TLS: serverTLS(t, ca, "required"), PrincipalMapper: mapper})
	client := ca.Client(pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"sluice"}})
	good := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLS()}}
	if err := metadataThrough(t, kgo.SeedBrokers(s.srv.Addr().String()), kgo.DialTLSConfig(good)); err != nil {
		t.Fatalf("metadata over mTLS: %v", err)
	}
	principals, _ := s.broker.seen()
	for _, p := range principals {
		if p != "User:alice" {
			t.Fatalf("principals %q, want User:alice (the RULE lower-cases the CN)", principals)
		}
	}

	noCert := &tls.Config{RootCAs: ca.Pool()}
	if err := metadataThrough(t, kgo.SeedBrokers(s.srv.Addr().String()), kgo.DialTLSConfig(noCert),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)); err == nil {
		t.Fatal("a client without a certificate was served with ssl.client.auth=required")
	}
}

// TestTLSAnonymousWithoutClientAuth: ssl.client.auth=none serves TLS clients as ANONYMOUS.
func TestTLSAnonymousWithoutClientAuth(t *testing.T) {
	ca := testcerts.NewCA()
	s := startSecure(t, Config{SecurityProtocol: "SSL", TLS: serverTLS(t, ca, "none")})
	if err := metadataThrough(t, kgo.SeedBrokers(s.srv.Addr().String()), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); err != nil {
		t.Fatal(err)
	}
	if principals, _ := s.broker.seen(); len(principals) == 0 || principals[0] != AnonymousPrincipal {
		t.Fatalf("principals %q, want %s", principals, AnonymousPrincipal)
	}
}

// TestTLSGarbageHandshake: bytes that are not a TLS ClientHello (here a plaintext Kafka
// request) close that connection; a TLS client connecting meanwhile is served.
func TestTLSGarbageHandshake(t *testing.T) {
	ca := testcerts.NewCA()
	s := startSecure(t, Config{SecurityProtocol: "SSL", TLS: serverTLS(t, ca, "none")})
	raw := dial(t, s.srv)
	raw.send(metadataRequest(1))
	raw.expectClosed()
	raw2 := dial(t, s.srv)
	raw2.write(bytes.Repeat([]byte{0x16, 0x03, 0x01, 0xff}, 64))
	raw2.expectClosed()
	if err := metadataThrough(t, kgo.SeedBrokers(s.srv.Addr().String()), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); err != nil {
		t.Fatalf("a good client after garbage: %v", err)
	}
	waitFor(t, "garbage connections closed", func() bool { return s.srv.openConns() <= 1 })
}

func scramConfig(t *testing.T, mechanism string, users map[string]string) *SASLConfig {
	t.Helper()
	creds := map[string]ScramCredential{}
	for u, p := range users {
		c, err := NewScramCredential(mechanism, p, ScramMinIterations)
		if err != nil {
			t.Fatal(err)
		}
		creds[u] = c
	}
	return &SASLConfig{Mechanisms: []string{mechanism}, Scram: map[string]map[string]ScramCredential{mechanism: creds}}
}

// TestSASLSCRAMOverTLS: franz-go authenticates with SCRAM-SHA-512 and SCRAM-SHA-256 over TLS
// (SASL_SSL), and the broker sees the SASL user as the principal; a wrong password gets
// SASL_AUTHENTICATION_FAILED.
func TestSASLSCRAMOverTLS(t *testing.T) {
	ca := testcerts.NewCA()
	for _, mech := range []struct {
		name string
		mech func(scram.Auth) sasl.Mechanism
	}{
		{"SCRAM-SHA-512", scram.Auth.AsSha512Mechanism},
		{"SCRAM-SHA-256", scram.Auth.AsSha256Mechanism},
	} {
		t.Run(mech.name, func(t *testing.T) {
			s := startSecure(t, Config{SecurityProtocol: "SASL_SSL", TLS: serverTLS(t, ca, "none"),
				SASL: scramConfig(t, mech.name, map[string]string{"alice": "alice-secret", "b,o=b": "pw"})})
			tlsOpt := kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})
			addr := s.srv.Addr().String()
			if err := metadataThrough(t, kgo.SeedBrokers(addr), tlsOpt, kgo.SASL(mech.mech(scram.Auth{User: "alice", Pass: "alice-secret"}))); err != nil {
				t.Fatalf("SCRAM: %v", err)
			}
			if err := metadataThrough(t, kgo.SeedBrokers(addr), tlsOpt, kgo.SASL(mech.mech(scram.Auth{User: "b,o=b", Pass: "pw"}))); err != nil {
				t.Fatalf("SCRAM with an escaped user name: %v", err)
			}
			principals, keys := s.broker.seen()
			for i, p := range principals {
				if keys[i] == keyApiVersions && p == AnonymousPrincipal {
					continue // ApiVersions before authentication
				}
				if p != "User:alice" && p != "User:b,o=b" {
					t.Fatalf("request %d (key %d) had principal %q", i, keys[i], p)
				}
			}
			err := metadataThrough(t, kgo.SeedBrokers(addr), tlsOpt, kgo.SASL(mech.mech(scram.Auth{User: "alice", Pass: "wrong"})))
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			err = metadataThrough(t, kgo.SeedBrokers(addr), tlsOpt, kgo.SASL(mech.mech(scram.Auth{User: "nobody", Pass: "x"})))
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || strings.Contains(err.Error(), "nobody") {
				t.Fatalf("unknown user: %v, want SASL_AUTHENTICATION_FAILED not naming the user", err)
			}
		})
	}
}

// TestSASLPlain: PLAIN over SASL_PLAINTEXT with franz-go; a wrong password is refused with
// SASL_AUTHENTICATION_FAILED and Kafka's message.
func TestSASLPlain(t *testing.T) {
	s := startSecure(t, Config{SecurityProtocol: "SASL_PLAINTEXT",
		SASL: &SASLConfig{Mechanisms: []string{"PLAIN"}, PlainUsers: map[string]string{"alice": "alice-secret"}}})
	addr := s.srv.Addr().String()
	if err := metadataThrough(t, kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())); err != nil {
		t.Fatal(err)
	}
	err := metadataThrough(t, kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "Invalid username or password") {
		t.Fatalf("wrong password: %v", err)
	}
}

// saslRaw is a raw client on a SASL_PLAINTEXT listener.
func startPlainSASL(t *testing.T, cfg SASLConfig) *secServer {
	t.Helper()
	if cfg.Mechanisms == nil {
		cfg.Mechanisms = []string{"PLAIN", "SCRAM-SHA-256"}
	}
	if cfg.PlainUsers == nil {
		cfg.PlainUsers = map[string]string{"alice": "alice-secret"}
	}
	if cfg.Scram == nil {
		cfg.Scram = scramConfig(t, "SCRAM-SHA-256", map[string]string{"alice": "alice-secret"}).Scram
	}
	return startSecure(t, Config{SecurityProtocol: "SASL_PLAINTEXT", SASL: &cfg})
}

func handshake(c *rawClient, version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = version
	req.Mechanism = mechanism
	return c.roundTrip(req).(*kmsg.SASLHandshakeResponse)
}

func authenticate(c *rawClient, token []byte) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = 1
	req.SASLAuthBytes = token
	return c.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
}

// TestSASLRequestBeforeAuthentication: a Metadata request before authentication closes the
// connection without reaching the broker; ApiVersions is served.
func TestSASLRequestBeforeAuthentication(t *testing.T) {
	s := startPlainSASL(t, SASLConfig{})
	c := dial(t, s.srv)
	c.roundTrip(kmsg.NewPtrApiVersionsRequest())
	c.send(metadataRequest(1))
	c.expectClosed()
	// After the handshake, too.
	c = dial(t, s.srv)
	if resp := handshake(c, 1, "PLAIN"); resp.ErrorCode != 0 {
		t.Fatalf("handshake: %d", resp.ErrorCode)
	}
	c.send(metadataRequest(1))
	c.expectClosed()
	if _, keys := s.broker.seen(); len(keys) != 1 || keys[0] != keyApiVersions {
		t.Fatalf("broker saw keys %v, want only ApiVersions", keys)
	}
}

// TestSASLUnsupportedMechanism: UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed.
func TestSASLUnsupportedMechanism(t *testing.T) {
	s := startPlainSASL(t, SASLConfig{})
	c := dial(t, s.srv)
	resp := handshake(c, 1, "GSSAPI")
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256" {
		t.Fatalf("handshake: code %d mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
	}
	c.expectClosed()
}

// TestSASLHugeAuthenticatePayload: a frame above sasl.server.max.receive.size before
// authentication is not read: the connection is closed. Another client is served meanwhile.
func TestSASLHugeAuthenticatePayload(t *testing.T) {
	s := startPlainSASL(t, SASLConfig{MaxReceiveBytes: 4096})
	c := dial(t, s.srv)
	handshake(c, 1, "PLAIN")
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = 1
	req.SASLAuthBytes = bytes.Repeat([]byte{'a'}, 8192)
	c.corr++
	frame := encodeRequest(req, c.corr)
	c.write(frame[:100]) // the size alone is enough to refuse it
	c.expectClosed()

	good := dial(t, s.srv)
	handshake(good, 1, "PLAIN")
	if resp := authenticate(good, []byte("\x00alice\x00alice-secret")); resp.ErrorCode != 0 {
		t.Fatalf("good client: %d", resp.ErrorCode)
	}
	good.roundTrip(metadataRequest(1))
}

// TestSASLTruncatedSCRAM: SCRAM client messages cut short get SASL_AUTHENTICATION_FAILED with
// a message, and the connection closes after the response.
func TestSASLTruncatedSCRAM(t *testing.T) {
	s := startPlainSASL(t, SASLConfig{})
	for _, first := range []string{"", "n", "n,,", "n,,n=alice", "n,,n=alice,r=", "p=tls-unique,,n=alice,r=abc", "n,,n=al=ZZice,r=abc"} {
		c := dial(t, s.srv)
		handshake(c, 1, "SCRAM-SHA-256")
		resp := authenticate(c, []byte(first))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage == "" {
			t.Fatalf("client-first %q: code %d message %v", first, resp.ErrorCode, resp.ErrorMessage)
		}
		c.expectClosed()
	}
	// A good first message, then a truncated final one.
	c := dial(t, s.srv)
	handshake(c, 1, "SCRAM-SHA-256")
	if resp := authenticate(c, []byte("n,,n=alice,r=abcdef")); resp.ErrorCode != 0 || !bytes.HasPrefix(resp.SASLAuthBytes, []byte("r=abcdef")) {
		t.Fatalf("server-first: code %d %q", resp.ErrorCode, resp.SASLAuthBytes)
	}
	if resp := authenticate(c, []byte("c=biws,r=abc")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("truncated client-final: code %d", resp.ErrorCode)
	}
	c.expectClosed()
}

// TestSASLHandshakeV0RawTokens: after SaslHandshake v0 the token travels as a bare
// size-prefixed frame and is answered the same way (clients before KIP-152).
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	s := startPlainSASL(t, SASLConfig{})
	c := dial(t, s.srv)
	if resp := handshake(c, 0, "PLAIN"); resp.ErrorCode != 0 {
		t.Fatalf("handshake v0: %d", resp.ErrorCode)
	}
	token := []byte("\x00alice\x00alice-secret")
	c.write(binary.BigEndian.AppendUint32(nil, uint32(len(token))))
	c.write(token)
	if got := c.readFrame(); len(got) != 0 {
		t.Fatalf("raw PLAIN answer %q, want empty", got)
	}
	c.roundTrip(metadataRequest(1))
	if principals, _ := s.broker.seen(); principals[len(principals)-1] != "User:alice" {
		t.Fatalf("principals %q", principals)
	}
	// A token shorter than a request header (user "a", password "b": 4 bytes) is a token.
	s2 := startPlainSASL(t, SASLConfig{PlainUsers: map[string]string{"a": "b"}})
	short := dial(t, s2.srv)
	handshake(short, 0, "PLAIN")
	tok := []byte("\x00a\x00b")
	short.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
	if got := short.readFrame(); len(got) != 0 {
		t.Fatalf("raw PLAIN answer %q, want empty", got)
	}
	short.roundTrip(metadataRequest(1))
	// A wrong password in raw mode: closed (v0 cannot carry an error).
	c = dial(t, s.srv)
	handshake(c, 0, "PLAIN")
	bad := []byte("\x00alice\x00wrong-secret")
	c.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(bad))), bad...))
	c.expectClosed()
}

// fakeClock is an injectable clock.
type fakeClock struct{ nanos atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.nanos.Add(int64(d)) }
func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.nanos.Store(time.Unix(1e9, 0).UnixNano())
	return c
}
func plainToken(user, password string) []byte { return []byte("\x00" + user + "\x00" + password) }

// TestSASLReauthentication (KIP-368): the session lifetime is connections.max.reauth.ms; a
// client that re-authenticates in time goes on, one that sends a request after the session
// ended is closed, and re-authenticating as another user fails.
func TestSASLReauthentication(t *testing.T) {
	clock := newFakeClock()
	cfg := SASLConfig{MaxReauth: time.Minute, PlainUsers: map[string]string{"alice": "a", "bob": "b"}}
	cfg.Mechanisms = []string{"PLAIN"}
	s := startSecure(t, Config{SecurityProtocol: "SASL_PLAINTEXT", SASL: &cfg, Now: clock.now})

	c := dial(t, s.srv)
	handshake(c, 1, "PLAIN")
	if resp := authenticate(c, plainToken("alice", "a")); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 60000 {
		t.Fatalf("authenticate: code %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	c.roundTrip(metadataRequest(1))
	// A SaslAuthenticate outside an exchange: ILLEGAL_SASL_STATE, and the connection stays.
	if resp := authenticate(c, plainToken("alice", "a")); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate after authentication: code %d", resp.ErrorCode)
	}
	c.roundTrip(metadataRequest(1))
	clock.advance(50 * time.Second)
	handshake(c, 1, "PLAIN")
	if resp := authenticate(c, plainToken("alice", "a")); resp.ErrorCode != 0 {
		t.Fatalf("re-authenticate: code %d", resp.ErrorCode)
	}
	clock.advance(50 * time.Second) // 100 s after the first, 50 s after the second
	c.roundTrip(metadataRequest(1))
	clock.advance(11 * time.Second)
	c.send(metadataRequest(1))
	c.expectClosed()

	c = dial(t, s.srv)
	handshake(c, 1, "PLAIN")
	authenticate(c, plainToken("alice", "a"))
	handshake(c, 1, "PLAIN")
	resp := authenticate(c, plainToken("bob", "b"))
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "Cannot change principals") {
		t.Fatalf("re-authenticating as another user: code %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	c.expectClosed()
}

// TestSASLFailureIsLoggedWithoutSecret: a failed authentication is logged once, at info, and
// no log line contains the password.
func TestSASLFailureIsLoggedWithoutSecret(t *testing.T) {
	logs := &recordingLogHandler{}
	cfg := SASLConfig{Mechanisms: []string{"PLAIN"}, PlainUsers: map[string]string{"alice": "alice-secret"}}
	var srv *Server
	h := &fakeBroker{versions: securityVersions(), addr: func() net.Addr { return srv.Addr() }}
	srv = startServer(t, Config{SecurityProtocol: "SASL_PLAINTEXT", SASL: &cfg, Versions: securityVersions, Logger: slog.New(logs)}, h)
	c := dial(t, srv)
	handshake(c, 1, "PLAIN")
	authenticate(c, plainToken("alice", "guessed-password-123"))
	c.expectClosed()
	failures := 0
	logs.mu.Lock()
	records := append([]slog.Record(nil), logs.records...)
	logs.mu.Unlock()
	for _, r := range records {
		line := r.Message
		r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
		if strings.Contains(line, "guessed-password-123") || strings.Contains(line, "alice-secret") {
			t.Fatalf("a log line holds the password: %s", line)
		}
		if strings.Contains(r.Message, "SASL authentication failed") && r.Level == slog.LevelInfo {
			failures++
		}
	}
	if failures != 1 {
		t.Fatalf("%d failure lines, want 1", failures)
	}
}

// TestTLSClientAuthRequested: ssl.client.auth=requested serves clients with and without a
// certificate: User:<mapped subject> with one, User:ANONYMOUS without; a certificate from
// another CA is refused.
func TestTLSClientAuthRequested(t *testing.T) {
	ca := testcerts.NewCA()
	s := startSecure(t, Config{SecurityProtocol: "SSL", TLS: serverTLS(t, ca, "requested")})
	addr := s.srv.Addr().String()
	client := ca.Client(pkix.Name{CommonName: "bob", Organization: []string{"sluice"}})
	if err := metadataThrough(t, kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLS()}})); err != nil {
		t.Fatal(err)
	}
	if err := metadataThrough(t, kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	principals, _ := s.broker.seen()
	for _, p := range principals {
		seen[p] = true
	}
	if len(seen) != 2 || !seen["User:CN=bob,O=sluice"] || !seen[AnonymousPrincipal] {
		t.Fatalf("principals %q, want User:CN=bob,O=sluice and %s", principals, AnonymousPrincipal)
	}
	other := testcerts.NewCA().Client(pkix.Name{CommonName: "mallory"})
	if err := metadataThrough(t, kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{other.TLS()}}),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)); err == nil {
		t.Fatal("a certificate from an untrusted CA was accepted")
	}
}
