package compattests

// Security: TLS (SSL listeners, mTLS with ssl.principal.mapping.rules), SASL (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512 over SASL_PLAINTEXT and SASL_SSL) with real clients — kcat
// (librdkafka), franz-go, Apache Kafka's console producer and consumer — and bad input on the
// secured listeners. The certificates are made by the test (internal/testcerts).

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/internal/testcerts"
)

const (
	plainModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
	alicePass   = "alice-secret-7f3a"
	bobPass     = "bob-secret-91c2"
)

// secureBroker is a sluice with five listeners: PLAINTEXT (for the harness and inter-broker
// traffic), SSL with ssl.client.auth=required (mTLS), TLS (an SSL listener without client
// authentication, keystore given inline), SASL_SSL (SCRAM-SHA-512 and PLAIN) and
// SASL_PLAINTEXT (PLAIN and SCRAM-SHA-256).
type secureBroker struct {
	*Broker
	dir                          string
	ca                           testcerts.CA
	caFile                       string
	clientCert, clientKey        string // client certificate CN=alice-client,OU=eng,O=sluice
	clientPEM                    string // the client key and certificate in one file (Kafka's PEM keystore file)
	ssl, tlsOpen, saslSSL, saslP string // addresses
}

func startSecureBroker(t *testing.T, extra ...string) *secureBroker {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA()
	serverPEM, _, _ := ca.Server().WriteFiles(dir, "server")
	server2 := ca.Server()
	client := ca.Client(pkix.Name{CommonName: "alice-client", OrganizationalUnit: []string{"eng"}, Organization: []string{"sluice"}})
	clientPEM, clientCert, clientKey := client.WriteFiles(dir, "client")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 5)
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) }
	settings := []string{
		fmt.Sprintf("listeners=PLAINTEXT://%s,SSL://%s,TLS://%s,SASL_SSL://%s,SASL_PLAINTEXT://%s", addr(0), addr(1), addr(2), addr(3), addr(4)),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,TLS:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"ssl.keystore.type=PEM",
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + caFile,
		"listener.name.ssl.ssl.keystore.location=" + serverPEM,
		"listener.name.ssl.ssl.client.auth=required",
		"listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([^,]+),OU=.*$/$1/L,DEFAULT",
		"listener.name.tls.ssl.keystore.certificate.chain=" + string(server2.CertPEM),
		"listener.name.tls.ssl.keystore.key=" + string(server2.KeyPEM),
		"listener.name.sasl_ssl.ssl.keystore.location=" + serverPEM,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=" + scramModule + ` required user_alice="` + alicePass + `" user_bob="` + bobPass + `";`,
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + plainModule + ` required user_alice="` + alicePass + `";`,
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainModule + ` required user_alice="` + alicePass + `" user_bob="` + bobPass + `";`,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=" + scramModule + ` required user_alice="` + alicePass + `";`,
	}
	b := StartBrokerWith(t, BrokerOptions{Port: ports[0]}, append(settings, extra...)...)
	return &secureBroker{Broker: b, dir: dir, ca: ca, caFile: caFile, clientCert: clientCert, clientKey: clientKey,
		clientPEM: clientPEM, ssl: addr(1), tlsOpen: addr(2), saslSSL: addr(3), saslP: addr(4)}
}

// sluiceLog is what sluice itself logged (its slog lines, "time=..."): the harness's own
// "===== sluice run" line, which repeats the command line (passwords included), is left out.
func (s *secureBroker) sluiceLog() string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s.log.String(), "\n") {
		if strings.HasPrefix(line, "time=") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// kcatAt runs kcat against addr with the given -X settings.
func kcatAt(t *testing.T, addr string, stdin string, x []string, args ...string) (string, string, error) {
	t.Helper()
	all := []string{"-b", addr}
	for _, kv := range x {
		all = append(all, "-X", kv)
	}
	return runCmdErr(kcatTimeout, stdin, lookPath(t, "kcat"), append(all, args...)...)
}

// kcatRoundTrip produces lines to a new topic through addr and consumes them back.
func kcatRoundTrip(t *testing.T, addr, topic string, x []string) {
	t.Helper()
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "%s line %02d\n", topic, i)
	}
	if out, stderr, err := kcatAt(t, addr, in.String(), x, "-P", "-t", topic); err != nil {
		t.Fatalf("kcat produce via %s: %v\n%s%s", addr, err, out, stderr)
	}
	out, stderr, err := kcatAt(t, addr, "", x, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
	if err != nil {
		t.Fatalf("kcat consume via %s: %v\n%s", addr, err, stderr)
	}
	if out != in.String() {
		t.Fatalf("kcat consumed via %s:\n%s\nwant:\n%s", addr, clip(out), clip(in.String()))
	}
}

// TestTLSKcat: librdkafka over SSL — with a client certificate on the mTLS listener, without
// one on the TLS listener — produces and consumes; without a certificate the mTLS listener
// refuses it.
func TestTLSKcat(t *testing.T) {
	s := startSecureBroker(t)
	caOnly := []string{"security.protocol=ssl", "ssl.ca.location=" + s.caFile}
	mtls := append(append([]string(nil), caOnly...), "ssl.certificate.location="+s.clientCert, "ssl.key.location="+s.clientKey)
	t.Run("mTLS", func(t *testing.T) { kcatRoundTrip(t, s.ssl, "kcat-mtls", mtls) })
	t.Run("TLS", func(t *testing.T) { kcatRoundTrip(t, s.tlsOpen, "kcat-tls", caOnly) })
	t.Run("mTLSWithoutCertificate", func(t *testing.T) {
		out, stderr, err := kcatAt(t, s.ssl, "", caOnly, "-L", "-m", "3")
		if err == nil {
			t.Fatalf("kcat without a client certificate was served by the mTLS listener:\n%s", clip(out))
		}
		if !strings.Contains(stderr, "SSL") && !strings.Contains(stderr, "ssl") && !strings.Contains(stderr, "transport") {
			t.Fatalf("kcat failed, but not with a TLS error: %s", clip(stderr))
		}
	})
	t.Run("PlaintextClientOnTLSListener", func(t *testing.T) {
		if _, _, err := kcatAt(t, s.tlsOpen, "", nil, "-L", "-m", "3"); err == nil {
			t.Fatal("a PLAINTEXT kcat was served by a TLS listener")
		}
	})
}

// TestSASLKcat: librdkafka with SASL_SSL + SCRAM-SHA-512, SASL_SSL + PLAIN, SASL_PLAINTEXT +
// PLAIN and SASL_PLAINTEXT + SCRAM-SHA-256; a wrong password fails with Kafka's message.
func TestSASLKcat(t *testing.T) {
	s := startSecureBroker(t)
	sasl := func(protocol, mechanism, user, pass string) []string {
		x := []string{"security.protocol=" + protocol, "sasl.mechanisms=" + mechanism, "sasl.username=" + user, "sasl.password=" + pass}
		if protocol == "sasl_ssl" {
			x = append(x, "ssl.ca.location="+s.caFile)
		}
		return x
	}
	t.Run("SASL_SSL_SCRAM-SHA-512", func(t *testing.T) {
		kcatRoundTrip(t, s.saslSSL, "kcat-scram512", sasl("sasl_ssl", "SCRAM-SHA-512", "alice", alicePass))
	})
	t.Run("SASL_SSL_PLAIN", func(t *testing.T) {
		kcatRoundTrip(t, s.saslSSL, "kcat-ssl-plain", sasl("sasl_ssl", "PLAIN", "alice", alicePass))
	})
	t.Run("SASL_PLAINTEXT_PLAIN", func(t *testing.T) {
		kcatRoundTrip(t, s.saslP, "kcat-plain", sasl("sasl_plaintext", "PLAIN", "bob", bobPass))
	})
	t.Run("SASL_PLAINTEXT_SCRAM-SHA-256", func(t *testing.T) {
		kcatRoundTrip(t, s.saslP, "kcat-scram256", sasl("sasl_plaintext", "SCRAM-SHA-256", "alice", alicePass))
	})
	for _, tc := range []struct {
		name, addr, protocol, mechanism, want string
	}{
		{"WrongPasswordSCRAM", s.saslSSL, "sasl_ssl", "SCRAM-SHA-512", "invalid credentials with SASL mechanism SCRAM-SHA-512"},
		{"WrongPasswordPLAIN", s.saslP, "sasl_plaintext", "PLAIN", "Invalid username or password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := kcatAt(t, tc.addr, "", sasl(tc.protocol, tc.mechanism, "alice", "not-the-password"), "-L", "-m", "5")
			if err == nil {
				t.Fatalf("a wrong password was accepted:\n%s", clip(out))
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("kcat's error lacks %q:\n%s", tc.want, clip(stderr))
			}
		})
	}
	if log := s.sluiceLog(); strings.Contains(log, alicePass) || strings.Contains(log, bobPass) || strings.Contains(log, "not-the-password") {
		t.Fatal("the broker log contains a password")
	}
}

// secClient is a franz-go client for the secured broker.
func secClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestTLSFranzGoSCRAM: franz-go over SASL_SSL with SCRAM-SHA-512 and over mTLS produces
// records that come back byte for byte through fetches over TLS (the copying fallback of the
// sendfile path), among them batches larger than a TLS record.
func TestTLSFranzGoSCRAM(t *testing.T) {
	s := startSecureBroker(t)
	tlsCfg := &tls.Config{RootCAs: s.ca.Pool()}
	cert, err := tls.LoadX509KeyPair(s.clientCert, s.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	mtlsCfg := &tls.Config{RootCAs: s.ca.Pool(), Certificates: []tls.Certificate{cert}}
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"SASL_SSL_SCRAM-SHA-512", []kgo.Opt{kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(tlsCfg),
			kgo.SASL(scram.Auth{User: "alice", Pass: alicePass}.AsSha512Mechanism())}},
		{"mTLS", []kgo.Opt{kgo.SeedBrokers(s.ssl), kgo.DialTLSConfig(mtlsCfg)}},
		{"SASL_PLAINTEXT_SCRAM-SHA-256", []kgo.Opt{kgo.SeedBrokers(s.saslP),
			kgo.SASL(scram.Auth{User: "alice", Pass: alicePass}.AsSha256Mechanism())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "franz-" + strings.ToLower(strings.ReplaceAll(tc.name, "_", "-"))
			cl := secClient(t, append(tc.opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const n = 300
			value := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100+i*97) } // up to ~29 KiB
			var records []*kgo.Record
			for i := range n {
				records = append(records, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value(i)})
			}
			if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			consumer := secClient(t, append(tc.opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
			got := 0
			for got < n {
				fetches := consumer.PollFetches(ctx)
				if err := fetches.Err(); err != nil {
					t.Fatalf("fetch after %d records: %v", got, err)
				}
				fetches.EachRecord(func(r *kgo.Record) {
					i, _ := strconv.Atoi(string(r.Key))
					if !bytes.Equal(r.Value, value(i)) {
						t.Fatalf("record %d came back different (%d bytes)", i, len(r.Value))
					}
					got++
				})
			}
		})
	}
	// A wrong password through franz-go: SASL_AUTHENTICATION_FAILED.
	cl := secClient(t, kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestSASLJavaConsole: Apache Kafka's console producer and consumer with a client.properties
// for SASL_SSL + SCRAM-SHA-512 (PEM truststore), for SASL_PLAINTEXT + PLAIN, and for mTLS
// with a PEM keystore.
func TestSASLJavaConsole(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	s := startSecureBroker(t)
	jaas := func(module, user, pass string) string {
		return fmt.Sprintf(`sasl.jaas.config=%s required username="%s" password="%s";`, module, user, pass)
	}
	for _, tc := range []struct {
		name, addr string
		props      []string
	}{
		{"SASL_SSL_SCRAM-SHA-512", s.saslSSL, []string{"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
			jaas(scramModule, "alice", alicePass), "ssl.truststore.type=PEM", "ssl.truststore.location=" + s.caFile}},
		{"SASL_PLAINTEXT_PLAIN", s.saslP, []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
			jaas(plainModule, "bob", bobPass)}},
		{"mTLS", s.ssl, []string{"security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location=" + s.caFile,
			"ssl.keystore.type=PEM", "ssl.keystore.location=" + s.clientPEM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := filepath.Join(s.dir, tc.name+".properties")
			if err := os.WriteFile(props, []byte(strings.Join(tc.props, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			topic := "java-" + strings.ToLower(strings.ReplaceAll(tc.name, "_", "-"))
			adm := kadm.NewClient(secClient(t, kgo.SeedBrokers(s.Addr)))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			const n = 10
			var in strings.Builder
			for i := range n {
				fmt.Fprintf(&in, "%s message %02d\n", tc.name, i)
			}
			javaTool(t, in.String(), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", tc.addr,
				"--topic", topic, "--command-config", props)
			out, stderr := javaTool(t, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", tc.addr,
				"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", strconv.Itoa(n),
				"--timeout-ms", "30000", "--command-config", props)
			if out != in.String() {
				t.Fatalf("ConsoleConsumer printed:\n%s\nwant:\n%s\nstderr:\n%s", clip(out), clip(in.String()), clip(stderr))
			}
		})
	}
}

// TestSASLBadInput: on the secured listeners a TLS handshake of garbage, a request before
// authentication, a wrong password, a truncated SCRAM message and a huge SaslAuthenticate
// payload each close that connection, while a SCRAM client producing through SASL_SSL the
// whole time is not disturbed; no password reaches the log.
func TestSASLBadInput(t *testing.T) {
	s := startSecureBroker(t)
	topic := "bad-input-bystander"
	cl := secClient(t, kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(&tls.Config{RootCAs: s.ca.Pool()}),
		kgo.SASL(scram.Auth{User: "bob", Pass: bobPass}.AsSha512Mechanism()), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	var produced atomic.Int64
	var produceErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr()
			cancel()
			if err != nil {
				produceErr.Store(err)
				return
			}
			produced.Add(1)
		}
	}()
	waitProduced := func(after int64, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for produced.Load() <= after {
			if err, _ := produceErr.Load().(error); err != nil {
				t.Fatalf("the bystander failed after %s: %v", what, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the bystander made no progress after %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitProduced(0, "start")

	// Garbage instead of a ClientHello, on every TLS listener.
	for _, addr := range []string{s.ssl, s.tlsOpen, s.saslSSL} {
		c := dialRaw(t, addr)
		c.Write(bytes.Repeat([]byte("\x16\x03\x01garbage"), 100))
		expectTLSAlertThenClose(t, c, "garbage TLS handshake on "+addr)
	}
	mark := produced.Load()
	waitProduced(mark, "garbage handshakes")

	// A Metadata request before authentication on SASL_PLAINTEXT.
	c := dialRaw(t, s.saslP)
	c.Write(rawFrame(3, 1, 1, []byte{0xff, 0xff, 0xff, 0xff})) // Metadata v1, all topics
	expectClosed(t, c, "Metadata before authentication")

	saslHandshake := func(c net.Conn, mechanism string) {
		t.Helper()
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version = 1
		req.Mechanism = mechanism
		resp := kmsg.NewPtrSASLHandshakeResponse()
		if err := roundTrip(c, req, resp, 1); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("handshake: %v %d", err, resp.ErrorCode)
		}
	}
	saslAuth := func(c net.Conn, token []byte) *kmsg.SASLAuthenticateResponse {
		t.Helper()
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 1
		req.SASLAuthBytes = token
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := roundTrip(c, req, resp, 2); err != nil {
			t.Fatalf("SaslAuthenticate: %v", err)
		}
		return resp
	}
	// A wrong PLAIN password.
	c = dialRaw(t, s.saslP)
	saslHandshake(c, "PLAIN")
	if resp := saslAuth(c, []byte("\x00alice\x00wrong-password-55")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: code %d", resp.ErrorCode)
	}
	expectClosed(t, c, "wrong password")
	// A truncated SCRAM client-first message.
	c = dialRaw(t, s.saslP)
	saslHandshake(c, "SCRAM-SHA-256")
	if resp := saslAuth(c, []byte("n,,n=ali")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil {
		t.Fatalf("truncated SCRAM: code %d", resp.ErrorCode)
	}
	expectClosed(t, c, "truncated SCRAM")
	// A SaslAuthenticate of 64 MiB (declared; beyond sasl.server.max.receive.size).
	c = dialRaw(t, s.saslP)
	saslHandshake(c, "PLAIN")
	var huge [4]byte
	binary.BigEndian.PutUint32(huge[:], 64<<20)
	c.Write(huge[:])
	c.Write(bytes.Repeat([]byte{0}, 4096))
	expectClosed(t, c, "huge SaslAuthenticate")

	mark = produced.Load()
	waitProduced(mark, "bad SASL exchanges")
	close(stop)
	wg.Wait()
	if log := s.sluiceLog(); strings.Contains(log, "wrong-password-55") || strings.Contains(log, bobPass) || strings.Contains(log, alicePass) {
		t.Fatal("the broker log contains a password")
	}
	if n := strings.Count(s.log.String(), "SASL authentication failed"); n != 2 {
		t.Errorf("%d log lines for failed SASL authentication, want 2 (one per failure)", n)
	}
}

// expectTLSAlertThenClose waits for the broker to close conn after at most a TLS alert record
// (content type 21), which is how a TLS server refuses a bad handshake.
func expectTLSAlertThenClose(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	var got []byte
	buf := make([]byte, 512)
	for {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !isClosed(err) {
				t.Errorf("%s: connection not closed by the broker: %v", what, err)
			}
			break
		}
	}
	if len(got) > 0 && (got[0] != 21 || len(got) > 7) {
		t.Errorf("%s: broker answered % x, not a TLS alert", what, got[:min(len(got), 32)])
	}
}

// TestTLSSettingsRefusedAtStart: settings sluice cannot serve stop the start with an error
// naming the key: JKS keystores, ssl.key.password on an unencrypted key, Kafka's default
// mechanism GSSAPI, a SASL mechanism without users, an OAUTHBEARER listener without its login
// module, with a JWKS that cannot be read or with a Java validator class, a listener prefix
// naming no listener.
func TestTLSSettingsRefusedAtStart(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	ca := testcerts.NewCA()
	serverPEM, _, _ := ca.Server().WriteFiles(dir, "server")
	ports := freePorts(t, 2)
	listeners := fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d", ports[0], ports[1])
	saslListeners := fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", ports[0], ports[1])
	for _, tc := range []struct {
		settings []string
		want     string
	}{
		{[]string{listeners, "ssl.keystore.location=/etc/kafka/server.keystore.jks"}, "ssl.keystore.password must be set: ssl.keystore.location names a JKS keystore"},
		{[]string{listeners, "ssl.keystore.type=PKCS12", "ssl.keystore.location=/k.p12", "ssl.keystore.password=x"}, "ssl.keystore.location: open /k.p12"},
		{[]string{listeners, "ssl.keystore.type=PEM", "ssl.keystore.location=" + serverPEM, "ssl.key.password=x"}, "ssl.key.password is set but the private key"},
		{[]string{listeners, "ssl.keystore.type=PEM", "ssl.keystore.location=" + serverPEM, "ssl.enabled.protocols=TLSv1.1"}, "ssl.enabled.protocols: TLSv1.1 is not supported"},
		{[]string{listeners, "ssl.keystore.type=PEM"}, "ssl.keystore.location (or ssl.keystore.certificate.chain and ssl.keystore.key) must be set"},
		{[]string{saslListeners}, "GSSAPI (Kerberos) is not supported"},
		{[]string{saslListeners, "sasl.enabled.mechanisms=PLAIN"}, "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set"},
		{[]string{saslListeners, "sasl.enabled.mechanisms=OAUTHBEARER"}, "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config is not set"},
		{[]string{saslListeners, "sasl.enabled.mechanisms=OAUTHBEARER", "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=" + oauthModule + " required;",
			"sasl.oauthbearer.jwks.endpoint.url=file://" + filepath.Join(dir, "missing-jwks.json")}, "sasl.oauthbearer.jwks.endpoint.url=file://"},
		{[]string{saslListeners, "sasl.enabled.mechanisms=OAUTHBEARER", "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=" + oauthModule + " required;",
			"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=com.example.Validator"}, "sluice cannot load Java classes"},
		{[]string{saslListeners, "sasl.enabled.mechanisms=PLAIN", "listener.name.SASL_PLAINTEXT.plain.sasl.jaas.config=" + plainModule + ` required user_a="b";`},
			`"SASL_PLAINTEXT" names no listener`},
	} {
		args := []string{"--set", "log.dirs=" + t.TempDir()}
		for _, s := range tc.settings {
			args = append(args, "--set", s)
		}
		stdout, stderr, err := runCmdErr(startDeadline, "", bin, args...)
		if err == nil {
			t.Errorf("%v: sluice exited 0\n%s%s", tc.settings, stdout, stderr)
			continue
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr lacks %q:\n%s", tc.settings, tc.want, clip(stderr))
		}
		if strings.Contains(stderr, `"listening"`) || strings.Contains(stderr, "msg=listening") {
			t.Errorf("%v: sluice listened before refusing:\n%s", tc.settings, clip(stderr))
		}
	}
}

var _ = plain.Auth{}

// TestSASLReauthenticationFranzGo (KIP-368): with connections.max.reauth.ms a SCRAM client is
// told its session lifetime and re-authenticates on its connections before it ends; it keeps
// producing across several lifetimes and the broker never closes it for an expired session.
func TestSASLReauthenticationFranzGo(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	s := startSecureBroker(t, fmt.Sprintf("connections.max.reauth.ms=%d", lifetime.Milliseconds()))
	cl := secClient(t, kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(&tls.Config{RootCAs: s.ca.Pool()}),
		kgo.SASL(scram.Auth{User: "alice", Pass: alicePass}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation())
	start := time.Now()
	n := 0
	for time.Since(start) < 4*lifetime {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce %d, %v after start: %v", n, time.Since(start), err)
		}
		n++
	}
	if log := s.sluiceLog(); strings.Contains(log, "session expired") {
		t.Fatalf("the broker closed a connection for an expired session:\n%s", clip(log))
	}
	t.Logf("%d records produced over %v with a %v session lifetime", n, time.Since(start), lifetime)
}

// TestSASLConfluentPython: confluent-kafka-python with SASL_SSL + SCRAM-SHA-512 and with mTLS
// produces and consumes in a consumer group.
func TestSASLConfluentPython(t *testing.T) {
	python := pythonWith(t, "confluent_kafka")
	s := startSecureBroker(t)
	for _, tc := range []struct {
		name, addr string
		settings   map[string]string
	}{
		{"SASL_SSL_SCRAM-SHA-512", s.saslSSL, map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
			"sasl.username": "alice", "sasl.password": alicePass, "ssl.ca.location": s.caFile}},
		{"mTLS", s.ssl, map[string]string{"security.protocol": "SSL", "ssl.ca.location": s.caFile,
			"ssl.certificate.location": s.clientCert, "ssl.key.location": s.clientKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, err := json.Marshal(tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			topic := "py-" + strings.ToLower(strings.ReplaceAll(tc.name, "_", "-"))
			out := runCmd(t, pythonTimeout, "", python, filepath.Join("testdata", "confluent_security.py"), tc.addr, topic, "200", string(js))
			if !strings.HasPrefix(lastLine(out), "OK ") {
				t.Fatalf("confluent_security.py did not report OK:\n%s", out)
			}
		})
	}
}

// TestSASLSecretsNotDescribed: DescribeConfigs of the broker never shows a password, a JAAS
// configuration or a private key; the sensitive keys are answered as Kafka answers them
// (null value, marked sensitive).
func TestSASLSecretsNotDescribed(t *testing.T) {
	s := startSecureBroker(t)
	adm := kadm.NewClient(secClient(t, kgo.SeedBrokers(s.Addr)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	sensitiveSeen := 0
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe: %v", rc.Err)
		}
		for _, c := range rc.Configs {
			v := c.MaybeValue()
			if strings.Contains(v, alicePass) || strings.Contains(v, bobPass) || strings.Contains(v, "PRIVATE KEY") {
				t.Errorf("%s is described with a secret in its value", c.Key)
			}
			if strings.Contains(c.Key, "jaas.config") || strings.HasSuffix(c.Key, "ssl.keystore.key") {
				if !c.Sensitive || c.Value != nil {
					t.Errorf("%s: sensitive %v, value %v; want sensitive with a null value", c.Key, c.Sensitive, c.Value)
				}
				sensitiveSeen++
			}
		}
	}
	t.Logf("%d sensitive keys described", sensitiveSeen)
}
