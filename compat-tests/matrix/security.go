package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/internal/testcerts"
)

// The security section: each client produces secRecords records (key ck<i>, value c<i>) to its
// cell's topic and consumes them back, all over one secured listener, and the harness then
// reads the topic over the PLAINTEXT listener and checks the records are there exactly once.
// The listeners (on every node, advertised directly, not through the recording proxy: TLS
// bytes cannot be parsed by it):
//
//   - SSL with ssl.client.auth=required (mTLS; the client certificate CN=alice-client,OU=eng);
//   - SASL_SSL with SCRAM-SHA-512, alice's credential created with AlterUserScramCredentials
//     over the PLAINTEXT listener before any cell runs (kadm, as kafka-configs --alter
//     --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users does);
//   - SASL_PLAINTEXT with PLAIN (alice in the JAAS config) and OAUTHBEARER validated by Kafka's
//     default unsecured validator (tokens with alg "none").
//
// No authorizer is configured: the section tests authentication, not ACLs.

const (
	secRecords = 5
	secUser    = "alice"
	// The passwords are throwaway test values (they appear in the broker's command line,
	// which the committed broker log repeats).
	secScramPass = "matrix-scram-secret"
	secPlainPass = "matrix-plain-secret"

	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	oauthLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// Security mechanisms of the security scenarios (Scenario.Security).
const (
	secMTLS  = "mtls"
	secSCRAM = "scram-sha-512"
	secPLAIN = "plain"
	secOAuth = "oauthbearer"
)

// securityScenarios are the security section's columns.
var securityScenarios = []Scenario{
	{ID: "sec-mtls", Title: "SSL + mTLS", Security: secMTLS},
	{ID: "sec-scram-sha-512", Title: "SASL_SSL + SCRAM-SHA-512", Security: secSCRAM},
	{ID: "sec-plain", Title: "SASL_PLAINTEXT + PLAIN", Security: secPLAIN},
	{ID: "sec-oauthbearer", Title: "SASL_PLAINTEXT + OAUTHBEARER (unsecured JWT)", Security: secOAuth},
}

// Security is what the security cells need: node 1's secured listeners and the files and
// credentials clients log in with.
type Security struct {
	dir                     string
	CA                      testcerts.CA
	CAFile                  string
	ClientCert, ClientKey   string // the client's certificate and key, PEM files
	ClientPEM               string // key then certificate in one file (Kafka's PEM keystore file)
	Client                  tls.Certificate
	serverPEM               string
	SSL, SASLSSL, SASLPlain string // node 1's listeners
}

// newSecurity makes the certificates in a fresh directory.
func newSecurity() (*Security, error) {
	dir, err := os.MkdirTemp("", "sluice-matrix-certs-")
	if err != nil {
		return nil, err
	}
	ca := testcerts.NewCA()
	serverPEM, _, _ := ca.Server().WriteFiles(dir, "server")
	client := ca.Client(pkix.Name{CommonName: "alice-client", OrganizationalUnit: []string{"eng"}, Organization: []string{"sluice"}})
	clientPEM, clientCert, clientKey := client.WriteFiles(dir, "client")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return &Security{dir: dir, CA: ca, CAFile: caFile, ClientCert: clientCert, ClientKey: clientKey,
		ClientPEM: clientPEM, Client: client.TLS(), serverPEM: serverPEM}, nil
}

// close removes the certificates.
func (s *Security) close() {
	if s != nil {
		os.RemoveAll(s.dir)
	}
}

// settings are one node's listener settings: PLAINTEXT at addr (advertised as adv), the three
// secured listeners at sec[0..2], and the controller listener when ctrl is not "".
func (s *Security) settings(addr, adv, ctrl string, sec []string) []string {
	listeners := fmt.Sprintf("PLAINTEXT://%s,SSL://%s,SASL_SSL://%s,SASL_PLAINTEXT://%s", addr, sec[0], sec[1], sec[2])
	protoMap := "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
	if ctrl != "" {
		listeners += ",CONTROLLER://" + ctrl
		protoMap += ",CONTROLLER:PLAINTEXT"
	}
	return []string{
		"listeners=" + listeners,
		"listener.security.protocol.map=" + protoMap,
		fmt.Sprintf("advertised.listeners=PLAINTEXT://%s,SSL://%s,SASL_SSL://%s,SASL_PLAINTEXT://%s", adv, sec[0], sec[1], sec[2]),
		"inter.broker.listener.name=PLAINTEXT",
		"ssl.keystore.type=PEM",
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + s.CAFile,
		"listener.name.ssl.ssl.keystore.location=" + s.serverPEM,
		"listener.name.ssl.ssl.client.auth=required",
		"listener.name.sasl_ssl.ssl.keystore.location=" + s.serverPEM,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=" + scramLoginModule + " required;",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainLoginModule + ` required user_` + secUser + `="` + secPlainPass + `";`,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=" + oauthLoginModule + " required;",
	}
}

// createCredentials stores alice's SCRAM-SHA-512 credential through the PLAINTEXT listener at
// addr and waits until every node's SASL_SSL listener (saslSSL) accepts a login with it.
func (s *Security) createCredentials(addr string, saslSSL []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
		User: secUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: secScramPass,
	}})
	if err == nil {
		if r, ok := res[secUser]; !ok {
			err = fmt.Errorf("no result for %s", secUser)
		} else if r.Err != nil {
			err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	if err != nil {
		return fmt.Errorf("security: AlterUserScramCredentials for %s: %w", secUser, err)
	}
	for _, a := range saslSSL {
		for {
			err := s.scramLogin(ctx, a)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("security: SCRAM-SHA-512 login at %s: %w", a, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// scramLogin logs in at one SASL_SSL listener and asks for the API versions.
func (s *Security) scramLogin(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: s.CA.Pool()}),
		kgo.SASL(scram.Auth{User: secUser, Pass: secScramPass}.AsSha512Mechanism()))
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	return err
}

// secListener is the bootstrap address and Kafka security.protocol of the cell's mechanism.
func (e *Env) secListener() (addr, protocol string) {
	switch e.Scenario.Security {
	case secMTLS:
		return e.Sec.SSL, "SSL"
	case secSCRAM:
		return e.Sec.SASLSSL, "SASL_SSL"
	default:
		return e.Sec.SASLPlain, "SASL_PLAINTEXT"
	}
}

// unsecuredJWT is a token Kafka's default (unsecured) validator accepts: alg "none", subject
// sub, an hour of lifetime, no signature.
func unsecuredJWT(sub string) string {
	part := func(v map[string]any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now()
	return part(map[string]any{"alg": "none"}) + "." + part(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}) + "."
}

// secInput is what a producing client writes: "ck<i>:c<i>" lines.
func secInput() string {
	var b strings.Builder
	for i := range secRecords {
		fmt.Fprintf(&b, "ck%d:c%d\n", i, i)
	}
	return b.String()
}

// verifySecurity checks over the PLAINTEXT listener that the topic holds exactly the
// records the client produced over the secured one.
func (e *Env) verifySecurity(ctx context.Context) error {
	recs, err := e.readAtLeast(ctx, e.Topic, secRecords)
	if err != nil {
		return err
	}
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Key)+":"+string(r.Value))
	}
	if want := strings.Split(strings.TrimSpace(secInput()), "\n"); strings.Join(got, ",") != strings.Join(want, ",") {
		return fmt.Errorf("harness read %v over PLAINTEXT, want %v", got, want)
	}
	e.Log.Printf("[harness] %d records read back over PLAINTEXT as produced", len(got))
	return e.verifyRefused(ctx)
}

// verifyRefused checks that the cell's listener refuses franz-go with a bad credential for the
// mechanism (no client certificate, a wrong password, a token that is not a JWT), so that a
// passing cell is one where the credential mattered.
func (e *Env) verifyRefused(ctx context.Context) error {
	addr, _ := e.secListener()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(3 * time.Second)}
	what := ""
	switch e.Scenario.Security {
	case secMTLS:
		opts, what = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: e.Sec.CA.Pool()})), "TLS without a client certificate"
	case secSCRAM:
		opts, what = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: e.Sec.CA.Pool()}),
			kgo.SASL(scram.Auth{User: secUser, Pass: "wrong-" + secScramPass}.AsSha512Mechanism())), "SCRAM-SHA-512 with a wrong password"
	case secPLAIN:
		opts, what = append(opts, kgo.SASL(plain.Auth{User: secUser, Pass: "wrong-" + secPlainPass}.AsMechanism())), "PLAIN with a wrong password"
	case secOAuth:
		opts, what = append(opts, kgo.SASL(oauth.Auth{Token: "not-a-jwt"}.AsMechanism())), "OAUTHBEARER with a token that is not a JWT"
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cl.Request(rctx, kmsg.NewPtrMetadataRequest()); err == nil {
		return fmt.Errorf("harness: %s was served by %s", what, addr)
	} else {
		e.Log.Printf("[harness] %s refused by %s: %v", what, addr, err)
	}
	return nil
}

// expectSecOutput checks a consumer's "key:value" lines against what was produced.
func expectSecOutput(out string) error { return expectOutput(out, secInput()) }

// secRunner is the security-section cell of a client, nil for a client the section does not
// drive.
func secRunner(id string) CellFunc {
	switch id {
	case "franz-go":
		return secFranz
	case "kcat":
		return secKcat
	case "confluent-python":
		return secPython("confluent")
	case "kafka-python":
		return secPython("kafka-python")
	case "confluent-pypi":
		return secVenvPython("confluent")
	case "kafka-python-2":
		return secVenvPython("kafka-python")
	case "kafkajs":
		return secKafkajs
	case "sarama":
		return secSarama
	case "kafka-go":
		return secKafkaGo
	case "java-producer":
		return secJava("producer")
	case "java-consumer-classic":
		return secJava("consumer-classic")
	case "java-consumer-848":
		return secJava("consumer-848")
	case "java-admin":
		return secJava("admin")
	case "console-producer":
		return secConsoleProducer
	case "console-consumer":
		return secConsoleConsumer
	}
	return nil
}

// secScenarioArgs are the arguments of the secure.py and secure.js scripts: mechanism,
// bootstrap, topic, then the files and credentials.
func (e *Env) secScenarioArgs() []string {
	addr, _ := e.secListener()
	return []string{e.Scenario.Security, addr, e.Topic, e.Sec.CAFile, e.Sec.ClientCert, e.Sec.ClientKey,
		secUser, secScramPass, secPlainPass, unsecuredJWT(secUser)}
}

// --- kcat ---

func secKcat(ctx context.Context, e *Env) error {
	addr, proto := e.secListener()
	x := []string{"security.protocol=" + strings.ToLower(proto)}
	switch e.Scenario.Security {
	case secMTLS:
		x = append(x, "ssl.ca.location="+e.Sec.CAFile, "ssl.certificate.location="+e.Sec.ClientCert, "ssl.key.location="+e.Sec.ClientKey)
	case secSCRAM:
		x = append(x, "ssl.ca.location="+e.Sec.CAFile, "sasl.mechanisms=SCRAM-SHA-512", "sasl.username="+secUser, "sasl.password="+secScramPass)
	case secPLAIN:
		x = append(x, "sasl.mechanisms=PLAIN", "sasl.username="+secUser, "sasl.password="+secPlainPass)
	case secOAuth:
		// librdkafka's built-in unsecured JWT (alg none), as Kafka's own test tokens.
		x = append(x, "sasl.mechanisms=OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt=true", "sasl.oauthbearer.config=principal="+secUser)
	}
	run := func(stdin string, args ...string) (string, error) {
		all := []string{"-b", addr}
		for _, kv := range x {
			all = append(all, "-X", kv)
		}
		return runProgram(ctx, e.Log, e.Dir, nil, stdin, "kcat", append(all, args...)...)
	}
	if _, err := run(secInput(), "-P", "-t", e.Topic, "-p", "0", "-K:"); err != nil {
		return err
	}
	out, err := run("", "-C", "-t", e.Topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n")
	if err != nil {
		return err
	}
	if err := expectSecOutput(out); err != nil {
		return err
	}
	return e.verifySecurity(ctx)
}

// --- Python and Node scripts ---

func secPython(lib string) CellFunc {
	return func(ctx context.Context, e *Env) error {
		out, err := runProgram(ctx, e.Log, e.Dir, nil, "", debianPython,
			append([]string{filepath.Join(e.Tools.scripts, "secure.py"), lib}, e.secScenarioArgs()...)...)
		if err != nil {
			return err
		}
		if err := expectSecOutput(out); err != nil {
			return err
		}
		return e.verifySecurity(ctx)
	}
}

// secVenvPython is secPython with the matrix's venv (the PyPI releases).
func secVenvPython(lib string) CellFunc {
	return func(ctx context.Context, e *Env) error {
		python, err := e.Tools.PythonVenv(ctx)
		if err != nil {
			return err
		}
		out, err := runProgram(ctx, e.Log, e.Dir, nil, "", python,
			append([]string{filepath.Join(e.Tools.scripts, "secure.py"), lib}, e.secScenarioArgs()...)...)
		if err != nil {
			return err
		}
		if err := expectSecOutput(out); err != nil {
			return err
		}
		return e.verifySecurity(ctx)
	}
}

func secKafkajs(ctx context.Context, e *Env) error {
	mods, err := e.Tools.NodeModules(ctx)
	if err != nil {
		return err
	}
	out, err := runProgram(ctx, e.Log, e.Dir, []string{"NODE_PATH=" + mods}, "", "node",
		append([]string{filepath.Join(e.Tools.scripts, "secure.js")}, e.secScenarioArgs()...)...)
	if err != nil {
		return err
	}
	if err := expectSecOutput(out); err != nil {
		return err
	}
	return e.verifySecurity(ctx)
}

// --- Kafka's console tools, with a client.properties ---

// secProperties writes the client.properties of the cell's mechanism and returns its path.
func (e *Env) secProperties() (string, error) {
	_, proto := e.secListener()
	lines := []string{"security.protocol=" + proto}
	switch e.Scenario.Security {
	case secMTLS:
		lines = append(lines, "ssl.truststore.type=PEM", "ssl.truststore.location="+e.Sec.CAFile,
			"ssl.keystore.type=PEM", "ssl.keystore.location="+e.Sec.ClientPEM)
	case secSCRAM:
		lines = append(lines, "ssl.truststore.type=PEM", "ssl.truststore.location="+e.Sec.CAFile, "sasl.mechanism=SCRAM-SHA-512",
			fmt.Sprintf(`sasl.jaas.config=%s required username="%s" password="%s";`, scramLoginModule, secUser, secScramPass))
	case secPLAIN:
		lines = append(lines, "sasl.mechanism=PLAIN",
			fmt.Sprintf(`sasl.jaas.config=%s required username="%s" password="%s";`, plainLoginModule, secUser, secPlainPass))
	case secOAuth:
		lines = append(lines, "sasl.mechanism=OAUTHBEARER",
			fmt.Sprintf(`sasl.jaas.config=%s required unsecuredLoginStringClaim_sub="%s";`, oauthLoginModule, secUser))
	}
	path := filepath.Join(e.Dir, "client.properties")
	body := strings.Join(lines, "\n") + "\n"
	e.Log.Printf("[harness] client.properties:\n%s", body)
	return path, os.WriteFile(path, []byte(body), 0o600)
}

// secJava runs clients/SecureCompat.java in one role with the cell's client.properties.
func secJava(role string) CellFunc {
	return func(ctx context.Context, e *Env) error {
		addr, _ := e.secListener()
		props, err := e.secProperties()
		if err != nil {
			return err
		}
		if role != "producer" && role != "admin" {
			if err := e.produceSecRecords(ctx); err != nil {
				return err
			}
		}
		out, err := e.Tools.Java(ctx, e, "", "SecureCompat", role, addr, e.Topic, e.Group, props)
		if err != nil {
			return err
		}
		if role == "admin" {
			return e.verifySecAdmin(ctx)
		}
		if err := expectSecOutput(out); err != nil {
			return err
		}
		if role != "producer" {
			if err := e.VerifyCommitted(ctx, secRecords); err != nil {
				return err
			}
		}
		return e.verifySecurity(ctx)
	}
}

// produceSecRecords writes the records a consumer-only client reads, over PLAINTEXT.
func (e *Env) produceSecRecords(ctx context.Context) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range secRecords {
		recs = append(recs, &kgo.Record{Topic: e.Topic, Key: []byte(fmt.Sprintf("ck%d", i)), Value: []byte(fmt.Sprintf("c%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("harness produce over PLAINTEXT: %w", err)
	}
	e.Log.Printf("[harness] %d records produced over PLAINTEXT", secRecords)
	return nil
}

// verifySecAdmin checks over PLAINTEXT that the topic the admin client created over the
// secured listener exists with two partitions, then that the listener refuses a bad login.
func (e *Env) verifySecAdmin(ctx context.Context) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	name := e.Topic + "-admin"
	td, err := kadm.NewClient(cl).ListTopics(ctx, name)
	if err != nil {
		return err
	}
	if d, ok := td[name]; !ok || d.Err != nil || len(d.Partitions) != 2 {
		return fmt.Errorf("harness: topic %s over PLAINTEXT: %+v", name, td[name])
	}
	e.Log.Printf("[harness] topic %s exists with 2 partitions", name)
	return e.verifyRefused(ctx)
}

// secConsoleProducer produces with kafka-console-producer over the secured listener; the
// consumer row reads such records back with kafka-console-consumer.
func secConsoleProducer(ctx context.Context, e *Env) error {
	addr, _ := e.secListener()
	props, err := e.secProperties()
	if err != nil {
		return err
	}
	if _, err := e.Tools.Java(ctx, e, secInput(), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", addr, "--topic", e.Topic,
		"--command-config", props, "--reader-property", "parse.key=true", "--reader-property", "key.separator=:"); err != nil {
		return err
	}
	return e.verifySecurity(ctx)
}

// secConsoleConsumer reads over the secured listener records the harness produced over
// PLAINTEXT (the console consumer does not produce).
func secConsoleConsumer(ctx context.Context, e *Env) error {
	addr, _ := e.secListener()
	props, err := e.secProperties()
	if err != nil {
		return err
	}
	if err := e.produceSecRecords(ctx); err != nil {
		return err
	}
	out, err := e.Tools.Java(ctx, e, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", addr, "--topic", e.Topic,
		"--command-config", props, "--from-beginning", "--max-messages", strconv.Itoa(secRecords), "--timeout-ms", "20000",
		"--formatter-property", "print.key=true", "--formatter-property", "key.separator=:")
	if err != nil {
		return err
	}
	if err := expectSecOutput(out); err != nil {
		return err
	}
	return e.verifyRefused(ctx)
}

// secAddrs are n nodes' secured listener addresses, three per node, from ports.
func secAddrs(ports []int) [][]string {
	var out [][]string
	for i := 0; i+2 < len(ports); i += 3 {
		var a []string
		for _, p := range ports[i : i+3] {
			a = append(a, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		}
		out = append(out, a)
	}
	return out
}
