package wire

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"strings"
	"testing"

	"sluice/internal/testcerts"
)

// TestPrincipalMappingRules: ssl.principal.mapping.rules as Kafka's SslPrincipalMapper tests
// exercise them.
func TestPrincipalMappingRules(t *testing.T) {
	for _, tc := range []struct {
		rules, dn, want string
	}{
		{"DEFAULT", "CN=alice,OU=eng,O=x,C=US", "CN=alice,OU=eng,O=x,C=US"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=adminUser,OU=Admin,O=Org,C=US", "CN=adminUser,OU=Admin,O=Org,C=US"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "DUKE@JAVASOFT"},
		{"  RULE:^cn=(.*?),ou=(.*?)$/$1/ , DEFAULT ", "cn=a,ou=b", "a"},
		{"RULE:^CN=([^,]*).*$/user-$1-$9/", "CN=z,O=o", "user-z-$9"},
		{`RULE:^CN=(.*)$/a\/b$1/`, "CN=q", "a/bq"},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		got, err := m.Name(tc.dn)
		if err != nil || got != tc.want {
			t.Errorf("rules %q on %q: %q, %v; want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	for _, bad := range []string{"DEFAULTX", "RULE:abc", "junk", "RULE:^CN=(.*$/$1/"} {
		if _, err := ParsePrincipalMappingRules(bad); err == nil {
			t.Errorf("rules %q parsed", bad)
		}
	}
	m, _ := ParsePrincipalMappingRules("RULE:^CN=x$/y/")
	if _, err := m.Name("CN=other"); err == nil {
		t.Error("no rule applied yet a name was returned")
	}
}

// TestDistinguishedNameLikeJava: RFC 2253 order (most specific first), Java's keywords and
// escaping.
func TestDistinguishedNameLikeJava(t *testing.T) {
	name := pkix.Name{CommonName: "a,b", OrganizationalUnit: []string{"eng"}, Organization: []string{"Ex+Co"}, Country: []string{"US"}}
	raw, err := asn1.Marshal(name.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	got, err := DistinguishedName(raw)
	if want := `CN=a\,b,OU=eng,O=Ex\+Co,C=US`; err != nil || got != want {
		t.Fatalf("%q, %v; want %q", got, err, want)
	}
	if _, err := DistinguishedName([]byte{0x30, 0x05}); err == nil {
		t.Fatal("truncated subject parsed")
	}
}

func TestJAASConfig(t *testing.T) {
	m, err := ParseJAASConfig(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a\"lice";`)
	if err != nil {
		t.Fatal(err)
	}
	users := m.Users()
	if m.Class != "org.apache.kafka.common.security.plain.PlainLoginModule" || m.Flag != "required" ||
		len(users) != 2 || users["alice"] != `a"lice` || users["admin"] != "admin-secret" {
		t.Fatalf("%+v", m)
	}
	for _, bad := range []string{"", "x required", `x required a="b"`, `x sometimes;`, `x required a="b;`, `x required; y required;`, `x required a=;`} {
		if _, err := ParseJAASConfig(bad); err == nil {
			t.Errorf("%q parsed", bad)
		} else if strings.Contains(err.Error(), `"b`) {
			t.Errorf("error repeats the value: %v", err)
		}
	}
}

// FuzzSCRAMServer: no client message panics the SCRAM server, and none authenticates without
// the password.
func FuzzSCRAMServer(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("y,a=alice,n=alice,r=x,tokenauth=true"), []byte(""))
	f.Add([]byte(",,,"), []byte(",,"))
	cred, err := NewScramCredential("SCRAM-SHA-256", "pw", ScramMinIterations)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := newScramServer("SCRAM-SHA-256", func(string) (ScramCredential, bool) { return cred, true })
		s.nonceGen = func() string { return "srv" }
		if _, _, _, err := s.Step(first); err != nil {
			return
		}
		if _, done, _, err := s.Step(final); done || err == nil {
			t.Fatalf("authenticated without the password: %q %q", first, final)
		}
	})
}

func FuzzPlainAndJAAS(f *testing.F) {
	f.Add([]byte("\x00alice\x00pw"))
	f.Add([]byte(`m required user_a="b";`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, done, _, _ := (plainServer{users: map[string]string{"alice": "secret"}}).Step(b); done && !strings.HasSuffix(string(b), "\x00secret") {
			t.Fatalf("PLAIN accepted %q", b)
		}
		_, _ = ParseJAASConfig(string(b))
		if m, err := ParsePrincipalMappingRules(string(b)); err == nil {
			_, _ = m.Name("CN=a,O=b")
		}
	})
}

// TestSCRAMNonceSuffixLikeKafka: librdkafka puts its client nonce in front of the combined
// nonce in its client-final message; Kafka accepts a nonce that ends with the server's, and so
// must sluice (found with kcat: "nonce does not match").
func TestSCRAMNonceSuffixLikeKafka(t *testing.T) {
	cred, err := scramCredential("SCRAM-SHA-256", "pw", []byte("salt"), ScramMinIterations)
	if err != nil {
		t.Fatal(err)
	}
	s := newScramServer("SCRAM-SHA-256", func(string) (ScramCredential, bool) { return cred, true })
	s.nonceGen = func() string { return "SRV" }
	if _, _, _, err := s.Step([]byte("n,,n=alice,r=CLI")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.Step([]byte("c=biws,r=CLICLISRV,p=" + strings.Repeat("A", 43) + "=")); err == nil || strings.Contains(err.Error(), "nonce") {
		t.Fatalf("a nonce ending with the server's was refused for its nonce: %v", err)
	}
}

// TestBuildTLSConfigRefusals: each refusal names the key at fault.
func TestBuildTLSConfigRefusals(t *testing.T) {
	ca := testcerts.NewCA()
	server := ca.Server()
	pem := func() TLSSettings {
		return TLSSettings{
			KeystoreType:             Setting{"ssl.keystore.type", "PEM"},
			KeystoreCertificateChain: Setting{"listener.name.x.ssl.keystore.certificate.chain", string(server.CertPEM)},
			KeystoreKey:              Setting{"listener.name.x.ssl.keystore.key", string(server.KeyPEM)},
		}
	}
	if cfg, err := BuildTLSConfig(pem()); err != nil || cfg.MinVersion != tls.VersionTLS12 || cfg.MaxVersion != tls.VersionTLS13 {
		t.Fatalf("PEM inline: %v", err)
	}
	for _, tc := range []struct {
		change func(*TLSSettings)
		want   string
	}{
		{func(s *TLSSettings) { s.KeystoreType.Value = "JKS" }, "ssl.keystore.type: must be PEM"},
		{func(s *TLSSettings) {
			*s = TLSSettings{KeystoreType: Setting{"ssl.keystore.type", "JKS"}, KeystoreLocation: Setting{"ssl.keystore.location", "/k.jks"}}
		}, "must be set: ssl.keystore.location names a JKS keystore"},
		{func(s *TLSSettings) { s.KeystoreKey.Value = "" }, "must be set together"},
		{func(s *TLSSettings) { s.KeyPassword = Setting{"ssl.key.password", "x"} }, "ssl.key.password is set but the private key"},
		{func(s *TLSSettings) {
			s.KeystoreKey.Value = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
			s.KeyPassword = Setting{"ssl.key.password", "x"}
		}, "encrypted PKCS#8 private keys (ssl.key.password) are not supported yet"},
		{func(s *TLSSettings) { s.KeystorePassword = Setting{"ssl.keystore.password", "x"} }, "ssl.keystore.password cannot be set with PEM"},
		{func(s *TLSSettings) { s.ClientAuth = Setting{"ssl.client.auth", "maybe"} }, "ssl.client.auth: must be none"},
		{func(s *TLSSettings) { s.EnabledProtocols = Setting{"ssl.enabled.protocols", "TLSv1.1,TLSv1.2"} }, "ssl.enabled.protocols: TLSv1.1 is not supported"},
		{func(s *TLSSettings) { s.CipherSuites = Setting{"ssl.cipher.suites", "TLS_NOPE"} }, "unknown cipher suite TLS_NOPE"},
		{func(s *TLSSettings) { s.CipherSuites = Setting{"ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"} }, "names only TLS 1.3 suites"},
		{func(s *TLSSettings) {
			s.TruststoreType = Setting{"ssl.truststore.type", "PKCS12"}
			s.TruststoreLocation = Setting{"ssl.truststore.location", "/t.p12"}
			s.TruststorePassword = Setting{"ssl.truststore.password", "x"}
		}, "ssl.truststore.location: open /t.p12"},
		{func(s *TLSSettings) {
			s.TruststoreType = Setting{"ssl.truststore.type", "PEM"}
			s.TruststoreCertificates = Setting{"ssl.truststore.certificates", "junk"}
		}, "ssl.truststore.certificates: no PEM CERTIFICATE block"},
	} {
		s := pem()
		tc.change(&s)
		if _, err := BuildTLSConfig(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to contain %q", err, tc.want)
		}
	}
	s := pem()
	s.EnabledProtocols = Setting{"ssl.enabled.protocols", "TLSv1.3"}
	s.CipherSuites = Setting{"ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"}
	if cfg, err := BuildTLSConfig(s); err != nil || cfg.MinVersion != tls.VersionTLS13 {
		t.Fatalf("TLSv1.3 only: %v", err)
	}
}
