// Package testcerts makes throwaway X.509 certificates for tests: a CA, a server certificate
// for 127.0.0.1 and localhost, and client certificates with a chosen subject, all signed by the
// CA, as PEM. Nothing here is for production use.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Pair is a certificate and its private key, PEM encoded (the key as PKCS#8).
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
}

// TLS is the pair as a tls.Certificate.
func (p Pair) TLS() tls.Certificate {
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		panic(err)
	}
	return c
}

// CA is a certificate authority for tests.
type CA struct{ Pair }

// NewCA makes a self-signed CA.
func NewCA() CA {
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test CA", Organization: []string{"sluice"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	return CA{issue(tmpl, nil)}
}

// Pool is a cert pool holding the CA.
func (ca CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost. It is good for client
// authentication too, as a broker's certificate is when it connects to other brokers over mutual
// TLS with its listener's keystore.
func (ca CA) Server() Pair {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	return issue(tmpl, &ca)
}

// Client issues a client certificate with the given subject.
func (ca CA) Client(subject pkix.Name) Pair {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return issue(tmpl, &ca)
}

func issue(tmpl *x509.Certificate, ca *CA) Pair {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.Cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		panic(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err)
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		Cert:    cert,
		key:     key,
	}
}

// WriteFiles writes name.pem (key then certificate, Kafka's PEM keystore file), name.crt and
// name.key into dir and returns the paths.
func (p Pair) WriteFiles(dir, name string) (keystore, cert, key string) {
	keystore = filepath.Join(dir, name+".pem")
	cert = filepath.Join(dir, name+".crt")
	key = filepath.Join(dir, name+".key")
	must(os.WriteFile(keystore, append(append([]byte(nil), p.KeyPEM...), p.CertPEM...), 0o600))
	must(os.WriteFile(cert, p.CertPEM, 0o644))
	must(os.WriteFile(key, p.KeyPEM, 0o600))
	return keystore, cert, key
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
