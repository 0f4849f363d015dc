package compattests

// SASL/OAUTHBEARER with real clients: franz-go's sasl/oauth and Apache Kafka's console
// producer and consumer (OAuthBearerLoginModule with Kafka's unsecured login callback,
// unsecuredLoginStringClaim_sub) log in on a listener validating Kafka's unsecured tokens, and
// franz-go with RS256-signed JWTs on a listener validating them against a JWKS file
// (sasl.oauthbearer.jwks.endpoint.url=file://...) with an expected audience and issuer. The
// principal is User:<sub>: the ACLs of the StandardAuthorizer apply to it. A refused token
// fails with SASL_AUTHENTICATION_FAILED and RFC 7628's JSON status.

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

const oauthModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// oauthBroker is a sluice with the harness's PLAINTEXT listener (ANONYMOUS, a super user) and
// two SASL_PLAINTEXT OAUTHBEARER listeners: UNSECURED (Kafka's default validator) and SIGNED
// (a JWKS file, audience "kafka", issuer "https://idp.test").
type oauthBroker struct {
	*Broker
	unsecured, signed string // addresses
	key               *rsa.PrivateKey
	dir               string
}

func startOAuthBroker(t *testing.T, extra ...string) *oauthBroker {
	t.Helper()
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": b64url(key.N.Bytes()), "e": b64url(big.NewInt(int64(key.E)).Bytes()),
	}}})
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) }
	settings := []string{
		fmt.Sprintf("listeners=PLAINTEXT://%s,UNSECURED://%s,SIGNED://%s", addr(0), addr(1), addr(2)),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,UNSECURED:SASL_PLAINTEXT,SIGNED:SASL_PLAINTEXT",
		"listener.name.unsecured.sasl.enabled.mechanisms=OAUTHBEARER",
		"listener.name.unsecured.oauthbearer.sasl.jaas.config=" + oauthModule + " required;",
		"listener.name.signed.sasl.enabled.mechanisms=OAUTHBEARER",
		"listener.name.signed.oauthbearer.sasl.jaas.config=" + oauthModule + " required;",
		"listener.name.signed.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"listener.name.signed.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=file://" + jwksFile,
		"sasl.oauthbearer.expected.audience=kafka",
		"sasl.oauthbearer.expected.issuer=https://idp.test",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS",
	}
	b := StartBrokerWith(t, BrokerOptions{Port: ports[0]}, append(settings, extra...)...)
	return &oauthBroker{Broker: b, unsecured: addr(1), signed: addr(2), key: key, dir: dir}
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func jwtPart(v any) string {
	b, _ := json.Marshal(v)
	return b64url(b)
}

// unsecuredJWT is a token as Kafka's unsecured login callback makes it.
func unsecuredJWT(sub string, lifetime time.Duration) string {
	now := time.Now()
	return jwtPart(map[string]any{"alg": "none"}) + "." +
		jwtPart(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(lifetime).Unix()}) + "."
}

// signedJWT is an RS256 token signed with key.
func signedJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	input := jwtPart(map[string]any{"alg": "RS256", "kid": "k1", "typ": "JWT"}) + "." + jwtPart(claims)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64url(sig)
}

func (s *oauthBroker) claims(sub string) map[string]any {
	now := time.Now()
	return map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "aud": "kafka", "iss": "https://idp.test"}
}

// oauthClient is a franz-go client logging in with token at addr.
func oauthClient(t *testing.T, addr, token string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: token}.AsMechanism()),
		kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceOne produces one record to topic through cl and returns its error.
func produceOne(cl *kgo.Client, topic, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

// oauthLogin reports a franz-go login's outcome (one metadata request).
func oauthLogin(t *testing.T, addr, token string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := oauthClient(t, addr, token).Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

func (s *oauthBroker) allow(t *testing.T, principal, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(secClient(t, kgo.SeedBrokers(s.Addr)))
	for _, acl := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(principal).Topics(topic).Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow(principal).Groups("*").Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
	} {
		res, err := adm.CreateACLs(ctx, acl)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
}

func (s *oauthBroker) createTopic(t *testing.T, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(secClient(t, kgo.SeedBrokers(s.Addr))).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
}

// TestOAuthBearerUnsecuredFranzGo: an unsecured token with sub=alice is User:alice — refused
// WRITE until an ACL allows it, then producing works; an expired token and a signed token are
// refused with invalid_token.
func TestOAuthBearerUnsecuredFranzGo(t *testing.T) {
	s := startOAuthBroker(t)
	const topic = "oauth-unsecured"
	s.createTopic(t, topic)
	alice := oauthClient(t, s.unsecured, unsecuredJWT("alice", time.Hour))
	if err := produceOne(alice, topic, "before the ACL"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce as alice without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	s.allow(t, "User:alice", topic)
	waitFor(t, 20*time.Second, "alice may produce", func() error {
		return produceOne(oauthClient(t, s.unsecured, unsecuredJWT("alice", time.Hour)), topic, "after the ACL")
	})
	// Another sub is another principal.
	if err := produceOne(oauthClient(t, s.unsecured, unsecuredJWT("mallory", time.Hour)), topic, "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce as mallory: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	for name, token := range map[string]string{
		"expired": unsecuredJWT("alice", -time.Minute),
		"signed":  signedJWT(t, s.key, s.claims("alice")),
	} {
		err := oauthLogin(t, s.unsecured, token)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
			t.Errorf("%s token: %v, want SASL_AUTHENTICATION_FAILED with {\"status\":\"invalid_token\"}", name, err)
		}
	}
	if !strings.Contains(s.Log(), "OAUTHBEARER token refused") {
		t.Error("a refused token is not logged")
	}
}

// TestOAuthBearerSignedFranzGo: on the JWKS listener an RS256 token of the JWKS's key with the
// expected audience and issuer is User:<sub>; one with another key, audience or issuer, or
// unsigned, is refused.
func TestOAuthBearerSignedFranzGo(t *testing.T) {
	s := startOAuthBroker(t)
	const topic = "oauth-signed"
	s.createTopic(t, topic)
	s.allow(t, "User:carol", topic)
	waitFor(t, 20*time.Second, "carol may produce", func() error {
		return produceOne(oauthClient(t, s.signed, signedJWT(t, s.key, s.claims("carol"))), topic, "signed")
	})
	if err := produceOne(oauthClient(t, s.signed, signedJWT(t, s.key, s.claims("dave"))), topic, "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce as dave: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	with := func(k, v string) map[string]any {
		c := s.claims("carol")
		c[k] = v
		return c
	}
	for name, token := range map[string]string{
		"another key":      signedJWT(t, otherKey, s.claims("carol")),
		"another audience": signedJWT(t, s.key, with("aud", "other")),
		"another issuer":   signedJWT(t, s.key, with("iss", "https://evil.test")),
		"unsigned":         unsecuredJWT("carol", time.Hour),
	} {
		err := oauthLogin(t, s.signed, token)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with {\"status\":\"invalid_token\"}", name, err)
		}
	}
}

// TestOAuthBearerJavaConsole: Kafka's console producer and consumer with
// sasl.mechanism=OAUTHBEARER and OAuthBearerLoginModule's unsecured login
// (unsecuredLoginStringClaim_sub="alice") write and read as User:alice.
func TestOAuthBearerJavaConsole(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	s := startOAuthBroker(t)
	const topic = "oauth-java"
	s.createTopic(t, topic)
	s.allow(t, "User:alice", topic)
	props := filepath.Join(s.dir, "oauth.properties")
	body := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n" +
		`sasl.jaas.config=` + oauthModule + ` required unsecuredLoginStringClaim_sub="alice";` + "\n"
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 10
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "oauth message %02d\n", i)
	}
	javaTool(t, in.String(), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", s.unsecured,
		"--topic", topic, "--command-config", props)
	out, stderr := javaTool(t, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", s.unsecured,
		"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", strconv.Itoa(n),
		"--timeout-ms", "30000", "--command-config", props)
	if out != in.String() {
		t.Fatalf("ConsoleConsumer printed:\n%s\nwant:\n%s\nstderr:\n%s", clip(out), clip(in.String()), clip(stderr))
	}
}

// TestOAuthBearerReauthentication (KIP-368): a token's exp bounds the session, so the broker
// tells franz-go a session lifetime of what is left of its token; the client logs in again
// with a fresh token before the session ends, and keeps producing across several token
// lifetimes without the broker closing it for an expired session.
func TestOAuthBearerReauthentication(t *testing.T) {
	s := startOAuthBroker(t)
	const topic = "oauth-reauth"
	s.createTopic(t, topic)
	s.allow(t, "User:alice", topic)
	var tokens atomic.Int64
	mechanism := oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tokens.Add(1)
		return oauth.Auth{Token: unsecuredJWT("alice", 4*time.Second)}, nil
	})
	cl := secClient(t, kgo.SeedBrokers(s.unsecured), kgo.SASL(mechanism), kgo.DefaultProduceTopic(topic))
	waitFor(t, 20*time.Second, "alice may produce", func() error { return produceOne(cl, topic, "first") })
	start, before := time.Now(), tokens.Load()
	n := 0
	// Until the client logged in four more times: re-authentications of connections whose
	// token ran out (a new connection would log in too, but none is closed).
	for tokens.Load() < before+4 {
		if time.Since(start) > time.Minute {
			t.Fatalf("%d logins in a minute of producing with 4 s tokens", tokens.Load()-before)
		}
		if err := produceOne(cl, topic, strconv.Itoa(n)); err != nil {
			t.Fatalf("produce %d, %v after start: %v", n, time.Since(start), err)
		}
		n++
	}
	if strings.Contains(s.Log(), "session expired") {
		t.Fatalf("the broker closed a connection for an expired session:\n%s", clip(s.Log()))
	}
	t.Logf("%d records over %v, %d logins with fresh tokens", n, time.Since(start), tokens.Load()-before)
}

// javaToolWithProperties is javaTool with Java system properties (-Dkey=value) before the
// class.
func javaToolWithProperties(t *testing.T, sysProps []string, stdin string, class string, args ...string) (string, string) {
	t.Helper()
	java := lookPath(t, "java")
	jvm := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx256m"}
	for _, p := range sysProps {
		jvm = append(jvm, "-D"+p)
	}
	jvm = append(jvm, "-cp", filepath.Join(kafkaJars(t), "*"), class)
	stdout, stderr, err := runCmdErr(javaTimeout, stdin, java, append(jvm, args...)...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", class, strings.Join(args, " "), err, clip(stdout), clip(stderr))
	}
	return stdout, stderr
}

// TestOAuthBearerSignedJavaConsole: Kafka's console producer and consumer with Kafka's
// OAuthBearerLoginCallbackHandler reading an RS256 JWT from a file
// (sasl.oauthbearer.token.endpoint.url=file://..., allowed by the
// org.apache.kafka.sasl.oauthbearer.allowed.urls system property Kafka 4 requires) log in on
// the JWKS listener as User:carol.
func TestOAuthBearerSignedJavaConsole(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	s := startOAuthBroker(t)
	const topic = "oauth-signed-java"
	s.createTopic(t, topic)
	s.allow(t, "User:carol", topic)
	tokenFile := filepath.Join(s.dir, "token.jwt")
	if err := os.WriteFile(tokenFile, []byte(signedJWT(t, s.key, s.claims("carol"))), 0o600); err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(s.dir, "signed.properties")
	body := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n" +
		"sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n" +
		"sasl.oauthbearer.token.endpoint.url=file://" + tokenFile + "\n" +
		"sasl.jaas.config=" + oauthModule + " required;\n"
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed := []string{"org.apache.kafka.sasl.oauthbearer.allowed.urls=file://" + tokenFile}
	const n = 5
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "signed message %02d\n", i)
	}
	javaToolWithProperties(t, allowed, in.String(), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", s.signed,
		"--topic", topic, "--command-config", props)
	out, stderr := javaToolWithProperties(t, allowed, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", s.signed,
		"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", strconv.Itoa(n),
		"--timeout-ms", "30000", "--command-config", props)
	if out != in.String() {
		t.Fatalf("ConsoleConsumer printed:\n%s\nwant:\n%s\nstderr:\n%s", clip(out), clip(in.String()), clip(stderr))
	}
}
