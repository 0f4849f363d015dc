package compattests

// Keystores as Kafka operators configure them: an SSL listener whose keystore and truststore
// are JKS files made by Java's keytool (ssl.keystore.type and ssl.truststore.type left at
// Kafka's default, JKS), with ssl.client.auth=required. Apache Kafka's console producer and
// consumer connect with a JKS client keystore and truststore; kcat connects over the same
// listener with PEM files on its side.

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/internal/testcerts"
)

// keytoolRun runs Java's keytool.
func keytoolRun(t *testing.T, args ...string) {
	t.Helper()
	if out, stderr, err := runCmdErr(javaTimeout, "", lookPath(t, "keytool"), args...); err != nil {
		t.Fatalf("keytool %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
}

// TestKeystoreJKSMutualTLS: sluice serves an mTLS listener from JKS files (the server key under
// a key password of its own, ssl.key.password); the Java console tools with JKS client files
// and kcat with PEM files produce and consume through it; a kcat without a client certificate
// is refused.
func TestKeystoreJKSMutualTLS(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	dir := t.TempDir()
	const storePass, keyPass = "server-store-pw", "server-key-pw"
	const clientPass = "client-store-pw"
	path := func(name string) string { return filepath.Join(dir, name) }
	gen := func(ks, pass, kpass, dn string, ext ...string) {
		keytoolRun(t, append([]string{"-genkeypair", "-noprompt", "-alias", "me", "-keyalg", "RSA", "-keysize", "2048",
			"-dname", dn, "-validity", "2", "-storetype", "JKS", "-keystore", ks, "-storepass", pass, "-keypass", kpass}, ext...)...)
		keytoolRun(t, "-exportcert", "-rfc", "-alias", "me", "-keystore", ks, "-storepass", pass, "-file", ks+".crt")
	}
	importCert := func(ts, pass, alias, crt string) {
		keytoolRun(t, "-importcert", "-noprompt", "-alias", alias, "-file", crt, "-storetype", "JKS", "-keystore", ts, "-storepass", pass)
	}
	gen(path("server.jks"), storePass, keyPass, "CN=localhost,O=sluice", "-ext", "SAN=dns:localhost,ip:127.0.0.1")
	gen(path("client.jks"), clientPass, clientPass, "CN=java-client,O=sluice")
	// kcat's side: a PEM client certificate from a CA the server's truststore holds.
	ca := testcerts.NewCA()
	caFile := path("kcat-ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	_, kcatCert, kcatKey := ca.Client(pkix.Name{CommonName: "kcat-client"}).WriteFiles(dir, "kcat")
	importCert(path("server-trust.jks"), storePass, "java-client", path("client.jks.crt"))
	importCert(path("server-trust.jks"), storePass, "kcat-ca", caFile)
	importCert(path("client-trust.jks"), clientPass, "server", path("server.jks.crt"))

	ports := freePorts(t, 2)
	sslAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	b := StartBrokerWith(t, BrokerOptions{Port: ports[0]},
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SSL://%s", ports[0], sslAddr),
		// ssl.keystore.type and ssl.truststore.type are left unset: Kafka's default is JKS.
		"listener.name.ssl.ssl.keystore.location="+path("server.jks"),
		"listener.name.ssl.ssl.keystore.password="+storePass,
		"listener.name.ssl.ssl.key.password="+keyPass,
		"listener.name.ssl.ssl.truststore.location="+path("server-trust.jks"),
		"listener.name.ssl.ssl.truststore.password="+storePass,
		"listener.name.ssl.ssl.client.auth=required",
	)
	for _, secret := range []string{storePass, keyPass} {
		for _, line := range strings.SplitAfter(b.log.String(), "\n") {
			if strings.HasPrefix(line, "time=") && strings.Contains(line, secret) {
				t.Fatalf("sluice logged a password: %s", line)
			}
		}
	}

	t.Run("JavaConsole", func(t *testing.T) {
		props := path("client.properties")
		if err := os.WriteFile(props, []byte(strings.Join([]string{
			"security.protocol=SSL",
			"ssl.keystore.type=JKS", "ssl.keystore.location=" + path("client.jks"), "ssl.keystore.password=" + clientPass,
			"ssl.key.password=" + clientPass,
			"ssl.truststore.type=JKS", "ssl.truststore.location=" + path("client-trust.jks"), "ssl.truststore.password=" + clientPass,
		}, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		const topic = "java-jks"
		adm := kadm.NewClient(secClient(t, kgo.SeedBrokers(b.Addr)))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		const n = 10
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "jks message %02d\n", i)
		}
		javaTool(t, in.String(), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", sslAddr,
			"--topic", topic, "--command-config", props)
		out, stderr := javaTool(t, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", sslAddr,
			"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", strconv.Itoa(n),
			"--timeout-ms", "30000", "--command-config", props)
		if out != in.String() {
			t.Fatalf("ConsoleConsumer printed:\n%s\nwant:\n%s\nstderr:\n%s", clip(out), clip(in.String()), clip(stderr))
		}
	})

	caOnly := []string{"security.protocol=ssl", "ssl.ca.location=" + path("server.jks.crt")}
	t.Run("KcatPEM", func(t *testing.T) {
		kcatRoundTrip(t, sslAddr, "kcat-jks", append(append([]string(nil), caOnly...),
			"ssl.certificate.location="+kcatCert, "ssl.key.location="+kcatKey))
	})
	t.Run("KcatWithoutCertificate", func(t *testing.T) {
		out, stderr, err := kcatAt(t, sslAddr, "", caOnly, "-L", "-m", "3")
		if err == nil {
			t.Fatalf("kcat without a client certificate was served by the mTLS listener:\n%s", clip(out))
		}
		if !strings.Contains(strings.ToLower(stderr), "ssl") {
			t.Fatalf("kcat failed, but not with a TLS error: %s", clip(stderr))
		}
	})
}

// TestKeystoreRefusedAtStart: a JKS keystore opened with a wrong password, or a missing file,
// stops sluice before it listens, with a message naming the key and not the password.
func TestKeystoreRefusedAtStart(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	ks := filepath.Join(dir, "server.jks")
	keytoolRun(t, "-genkeypair", "-noprompt", "-alias", "me", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost",
		"-validity", "2", "-storetype", "JKS", "-keystore", ks, "-storepass", "right-store-pw", "-keypass", "right-key-pw")
	ports := freePorts(t, 2)
	listeners := fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d", ports[0], ports[1])
	for _, tc := range []struct {
		settings []string
		want     string
	}{
		{[]string{"ssl.keystore.location=" + ks, "ssl.keystore.password=wrong-store-pw", "ssl.key.password=right-key-pw"},
			"listener SSL: ssl.keystore.password: wrong password"},
		{[]string{"ssl.keystore.location=" + ks, "listener.name.ssl.ssl.keystore.password=right-store-pw", "ssl.key.password=wrong-key-pw"},
			"listener SSL: ssl.key.password: wrong private key password"},
		{[]string{"ssl.keystore.location=" + ks + ".missing", "ssl.keystore.password=right-store-pw"},
			"listener SSL: ssl.keystore.location: open " + ks + ".missing"},
		{[]string{"ssl.keystore.location=" + ks, "ssl.keystore.password=right-store-pw", "ssl.key.password=right-key-pw",
			"ssl.truststore.location=" + ks, "ssl.truststore.password=wrong-store-pw"},
			"listener SSL: ssl.truststore.password: wrong password"},
	} {
		args := []string{"--set", "log.dirs=" + t.TempDir(), "--set", listeners}
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
		for _, secret := range []string{"right-store-pw", "right-key-pw", "wrong-store-pw", "wrong-key-pw"} {
			if strings.Contains(stderr, secret) {
				t.Errorf("%v: sluice printed a password:\n%s", tc.settings, clip(stderr))
			}
		}
		if strings.Contains(stderr, `"listening"`) || strings.Contains(stderr, "msg=listening") {
			t.Errorf("%v: sluice listened before refusing:\n%s", tc.settings, clip(stderr))
		}
	}
}
