package wire

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keytool runs Java's keytool, which writes the keystores operators give Kafka.
func keytool(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "keytool", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("keytool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// javaStores are keystores and truststores made by keytool: a server and a client key pair,
// each self-signed, in a keystore of the given type, and truststores holding the other side's
// certificate.
type javaStores struct {
	serverKS, clientKS       string // keystores
	serverTS, clientTS       string // truststores: the server's trusts the client, and back
	storePass, keyPass       string
	storeType                string
	serverCert, clientCertDN string
}

func makeJavaStores(t *testing.T, dir, storeType, storePass, keyPass string) javaStores {
	t.Helper()
	s := javaStores{storeType: storeType, storePass: storePass, keyPass: keyPass,
		serverKS: filepath.Join(dir, "server."+strings.ToLower(storeType)),
		clientKS: filepath.Join(dir, "client."+strings.ToLower(storeType)),
		serverTS: filepath.Join(dir, "server-trust."+strings.ToLower(storeType)),
		clientTS: filepath.Join(dir, "client-trust."+strings.ToLower(storeType)),
	}
	gen := func(ks, alias, dn string, ext ...string) {
		args := []string{"-genkeypair", "-noprompt", "-alias", alias, "-keyalg", "EC", "-groupname", "secp256r1",
			"-dname", dn, "-validity", "2", "-storetype", storeType, "-keystore", ks,
			"-storepass", storePass, "-keypass", keyPass}
		keytool(t, append(args, ext...)...)
		crt := ks + ".crt"
		keytool(t, "-exportcert", "-rfc", "-alias", alias, "-keystore", ks, "-storetype", storeType, "-storepass", storePass, "-file", crt)
	}
	gen(s.serverKS, "server", "CN=localhost,O=sluice", "-ext", "SAN=dns:localhost,ip:127.0.0.1")
	gen(s.clientKS, "client", "CN=alice,OU=eng,O=sluice")
	imp := func(ts, crt, alias string) {
		keytool(t, "-importcert", "-noprompt", "-alias", alias, "-file", crt, "-storetype", storeType, "-keystore", ts, "-storepass", storePass)
	}
	imp(s.serverTS, s.clientKS+".crt", "client")
	imp(s.clientTS, s.serverKS+".crt", "server")
	return s
}

func (s javaStores) serverSettings() TLSSettings {
	return TLSSettings{
		KeystoreType:       Setting{"listener.name.ssl.ssl.keystore.type", s.storeType},
		KeystoreLocation:   Setting{"listener.name.ssl.ssl.keystore.location", s.serverKS},
		KeystorePassword:   Setting{"listener.name.ssl.ssl.keystore.password", s.storePass},
		KeyPassword:        Setting{"listener.name.ssl.ssl.key.password", s.keyPass},
		TruststoreType:     Setting{"ssl.truststore.type", s.storeType},
		TruststoreLocation: Setting{"ssl.truststore.location", s.serverTS},
		TruststorePassword: Setting{"ssl.truststore.password", s.storePass},
		ClientAuth:         Setting{"listener.name.ssl.ssl.client.auth", "required"},
	}
}

// clientSettings are the client side's keys, read by the same functions a client of sluice
// (a peer broker) would use.
func (s javaStores) clientSettings() TLSSettings {
	return TLSSettings{
		KeystoreType:       Setting{"ssl.keystore.type", s.storeType},
		KeystoreLocation:   Setting{"ssl.keystore.location", s.clientKS},
		KeystorePassword:   Setting{"ssl.keystore.password", s.storePass},
		KeyPassword:        Setting{"ssl.key.password", s.keyPass},
		TruststoreType:     Setting{"ssl.truststore.type", s.storeType},
		TruststoreLocation: Setting{"ssl.truststore.location", s.clientTS},
		TruststorePassword: Setting{"ssl.truststore.password", s.storePass},
	}
}

// tlsHandshake runs a TLS handshake between server and client configurations and
// returns the client certificate's subject as the server saw it. It runs over loopback TCP,
// whose buffers let a side send its alert after the other has finished (a TLS 1.3 client is
// done before the server has checked its certificate); whichever side fails closes both.
func tlsHandshake(t *testing.T, server, client *tls.Config) (string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := tls.Server(a, server)
	cli := tls.Client(b, client)
	errs := make(chan error, 2)
	run := func(hs func() error) {
		err := hs()
		if err != nil {
			a.Close()
			b.Close()
		}
		errs <- err
	}
	go run(cli.Handshake)
	go run(srv.Handshake)
	var first error
	for range 2 {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return "", first
	}
	peer := srv.ConnectionState().PeerCertificates
	if len(peer) == 0 {
		return "", nil
	}
	return peer[0].Subject.String(), nil
}

// TestKeystores runs the keystore tests on one set of keytool-made files (keytool is slow to
// start): a PKCS12 set and a JKS set whose key has a password of its own.
func TestKeystores(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, storeType, storePass, keyPass string) javaStores {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return makeJavaStores(t, d, storeType, storePass, keyPass)
	}
	p12 := mk("p12", "PKCS12", "p12-store-secret", "p12-store-secret")
	jks := mk("jks", "JKS", "jks-store-secret", "jks-key-secret") // JKS keeps a key password of its own
	t.Run("MutualTLS", func(t *testing.T) { testKeystoresMutualTLS(t, p12, jks) })
	t.Run("TypeCompat", func(t *testing.T) { testKeystoreTypeCompat(t, p12, jks) })
	t.Run("Refusals", func(t *testing.T) { testKeystoreRefusals(t, dir, p12, jks) })
}

// testKeystoresMutualTLS: keystores and truststores keytool writes, JKS and PKCS12, serve an
// mTLS handshake both ways: the server presents its keystore's key, checks the client against
// its truststore, and a client built from the same kinds of files verifies the server.
func testKeystoresMutualTLS(t *testing.T, sets ...javaStores) {
	for _, st := range sets {
		t.Run(st.storeType, func(t *testing.T) {
			tc := st
			server, err := BuildTLSConfig(st.serverSettings())
			if err != nil {
				t.Fatal(err)
			}
			if server.ClientAuth != tls.RequireAndVerifyClientCert || server.ClientCAs == nil {
				t.Fatalf("client auth %v, ClientCAs %v", server.ClientAuth, server.ClientCAs)
			}
			cs := st.clientSettings()
			certs, err := KeystoreCertificates(cs)
			if err != nil {
				t.Fatal(err)
			}
			roots, err := TruststorePool(cs)
			if err != nil {
				t.Fatal(err)
			}
			subject, err := tlsHandshake(t, server, &tls.Config{Certificates: certs, RootCAs: roots, ServerName: "localhost"})
			if err != nil {
				t.Fatalf("mTLS handshake: %v", err)
			}
			if subject != "CN=alice,OU=eng,O=sluice" {
				t.Fatalf("the server saw client %q", subject)
			}
			// Without a client certificate the required client auth refuses the handshake.
			if _, err := tlsHandshake(t, server, &tls.Config{RootCAs: roots, ServerName: "localhost"}); err == nil {
				t.Fatal("a client without a certificate completed the handshake")
			}
			// A client that trusts only its own certificate refuses the server.
			other, err := TruststorePool(TLSSettings{
				TruststoreType:     Setting{"ssl.truststore.type", tc.storeType},
				TruststoreLocation: Setting{"ssl.truststore.location", st.serverTS},
				TruststorePassword: Setting{"ssl.truststore.password", tc.storePass},
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tlsHandshake(t, server, &tls.Config{Certificates: certs, RootCAs: other, ServerName: "localhost"}); err == nil {
				t.Fatal("the client accepted a server its truststore does not hold")
			}
		})
	}
}

// testKeystoreTypeCompat: as the JVM (keystore.type.compat), ssl.keystore.type=JKS reads a
// PKCS12 file and PKCS12 a JKS file; a keystore opened with only its store password decrypts
// its key with that password, as Kafka defaults ssl.key.password.
func testKeystoreTypeCompat(t *testing.T, p12, jks javaStores) {
	s := p12.serverSettings()
	s.KeystoreType.Value, s.TruststoreType.Value = "JKS", "jks"
	s.KeyPassword.Value = ""
	if _, err := BuildTLSConfig(s); err != nil {
		t.Fatalf("JKS-typed PKCS12 files, no ssl.key.password: %v", err)
	}
	s = jks.serverSettings()
	s.KeystoreType.Value, s.TruststoreType.Value = "PKCS12", "pkcs12"
	if _, err := BuildTLSConfig(s); err != nil {
		t.Fatalf("PKCS12-typed JKS files: %v", err)
	}
	// A JKS key under the store password, with ssl.key.password unset.
	same := filepath.Join(t.TempDir(), "same.jks")
	keytool(t, "-genkeypair", "-noprompt", "-alias", "k", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost",
		"-validity", "2", "-storetype", "JKS", "-keystore", same, "-storepass", "same-secret", "-keypass", "same-secret")
	certs, err := KeystoreCertificates(TLSSettings{
		KeystoreType:     Setting{"ssl.keystore.type", "JKS"},
		KeystoreLocation: Setting{"ssl.keystore.location", same},
		KeystorePassword: Setting{"ssl.keystore.password", "same-secret"},
		KeyPassword:      Setting{"ssl.key.password", ""},
	})
	if err != nil || len(certs) != 1 || certs[0].Leaf.Subject.CommonName != "localhost" {
		t.Fatalf("JKS key under the store password: %v %v", certs, err)
	}
}

// testKeystoreRefusals: a wrong password, a missing password, an unreadable file or a file
// of another format refuses the listener with an error naming the key at fault and never a
// password.
func testKeystoreRefusals(t *testing.T, dir string, p, j javaStores) {
	pemFile := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(pemFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"jks-store-secret", "jks-key-secret", "p12-store-secret", "wrong-secret"}
	for _, tc := range []struct {
		name   string
		base   javaStores
		change func(*TLSSettings)
		want   string
	}{
		{"jks wrong store password", j, func(s *TLSSettings) { s.KeystorePassword.Value = "wrong-secret" },
			"listener.name.ssl.ssl.keystore.password: wrong password"},
		{"jks wrong key password", j, func(s *TLSSettings) { s.KeyPassword.Value = "wrong-secret" },
			"listener.name.ssl.ssl.key.password: wrong private key password"},
		{"jks key password unset", j, func(s *TLSSettings) { s.KeyPassword.Value = "" },
			"listener.name.ssl.ssl.keystore.password (listener.name.ssl.ssl.key.password is unset): wrong private key password"},
		{"jks no store password", j, func(s *TLSSettings) { s.KeystorePassword.Value = "" },
			"listener.name.ssl.ssl.keystore.password must be set"},
		{"jks wrong truststore password", j, func(s *TLSSettings) { s.TruststorePassword.Value = "wrong-secret" },
			"ssl.truststore.password: wrong password"},
		{"jks truststore password unset", j, func(s *TLSSettings) { s.TruststorePassword.Value = "" },
			"ssl.truststore.password must be set"},
		{"p12 wrong store password", p, func(s *TLSSettings) { s.KeystorePassword.Value = "wrong-secret" },
			"listener.name.ssl.ssl.keystore.password: wrong password"},
		{"p12 different key password", p, func(s *TLSSettings) { s.KeyPassword.Value = "wrong-secret" },
			"listener.name.ssl.ssl.key.password: wrong private key password"},
		{"p12 wrong truststore password", p, func(s *TLSSettings) { s.TruststorePassword.Value = "wrong-secret" },
			"ssl.truststore.password: wrong password"},
		{"missing keystore", p, func(s *TLSSettings) { s.KeystoreLocation.Value = filepath.Join(dir, "nope.p12") },
			"listener.name.ssl.ssl.keystore.location: open "},
		{"missing truststore", j, func(s *TLSSettings) { s.TruststoreLocation.Value = filepath.Join(dir, "nope.jks") },
			"ssl.truststore.location: open "},
		{"pem file typed JKS", j, func(s *TLSSettings) { s.KeystoreLocation.Value = pemFile },
			"is a PEM file, not a JKS keystore"},
		{"garbage", p, func(s *TLSSettings) {
			s.KeystoreLocation.Value = j.serverKS + ".crt.bin"
			writeGarbage(t, s.KeystoreLocation.Value)
		},
			"listener.name.ssl.ssl.keystore.location: not a readable PKCS12 keystore"},
		{"truststore as keystore", p, func(s *TLSSettings) { s.KeystoreLocation.Value = p.serverTS },
			"listener.name.ssl.ssl.keystore.location: the keystore holds no private key entry"},
		{"unknown type", p, func(s *TLSSettings) { s.KeystoreType.Value = "JCEKS" },
			"listener.name.ssl.ssl.keystore.type: must be JKS, PKCS12 or PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.base.serverSettings()
			tc.change(&s)
			_, err := BuildTLSConfig(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			for _, secret := range secrets {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error names a password: %v", err)
				}
			}
		})
	}
}

func writeGarbage(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte{0x30, 0x82, 0x01, 0x00, 1, 2, 3}, 0o600); err != nil {
		t.Fatal(err)
	}
}
