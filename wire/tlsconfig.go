package wire

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// TLSSettings are one listener's ssl.* keys, as Kafka names them, after the listener's own
// listener.name.<name>.ssl.* overrides were applied. Key is the name of the key each field came
// from (with its listener prefix), so errors name what the operator wrote.
type TLSSettings struct {
	KeystoreType             Setting // ssl.keystore.type
	KeystoreLocation         Setting // ssl.keystore.location: a JKS, PKCS12 or PEM file (PEM: the key and the chain)
	KeystorePassword         Setting // ssl.keystore.password: JKS and PKCS12 only, as in Kafka
	KeystoreCertificateChain Setting // ssl.keystore.certificate.chain: PEM, inline
	KeystoreKey              Setting // ssl.keystore.key: PEM, inline
	KeyPassword              Setting // ssl.key.password
	TruststoreType           Setting // ssl.truststore.type
	TruststoreLocation       Setting // ssl.truststore.location
	TruststorePassword       Setting // ssl.truststore.password
	TruststoreCertificates   Setting // ssl.truststore.certificates: PEM, inline
	ClientAuth               Setting // ssl.client.auth: none, requested, required
	EnabledProtocols         Setting // ssl.enabled.protocols: TLSv1.2, TLSv1.3
	CipherSuites             Setting // ssl.cipher.suites
}

// Setting is one configuration value with the key it was read from.
type Setting struct {
	Key   string
	Value string
}

// tlsConfigError names the key at fault.
func tlsConfigError(s Setting, format string, args ...any) error {
	return fmt.Errorf("%s: %s", s.Key, fmt.Sprintf(format, args...))
}

// BuildTLSConfig turns a listener's ssl.* keys into a crypto/tls server configuration, as
// Kafka's DefaultSslEngineFactory reads them. Keystores and truststores may be JKS (Kafka's
// default type), PKCS12 or PEM (files, or PEM given inline); an encrypted PEM private key
// (ssl.key.password with PEM) is refused, as Go's standard library cannot decrypt it.
func BuildTLSConfig(s TLSSettings) (*tls.Config, error) {
	cfg := &tls.Config{}
	certs, err := KeystoreCertificates(s)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = certs

	pool, err := TruststorePool(s)
	if err != nil {
		return nil, err
	}
	cfg.ClientCAs = pool // nil: the system's roots, as the JVM's default truststore

	switch strings.ToLower(strings.TrimSpace(s.ClientAuth.Value)) {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, tlsConfigError(s.ClientAuth, "must be none, requested or required, not %q", s.ClientAuth.Value)
	}

	if err := setProtocols(cfg, s.EnabledProtocols); err != nil {
		return nil, err
	}
	if err := setCipherSuites(cfg, s.CipherSuites); err != nil {
		return nil, err
	}
	return cfg, nil
}

// BuildClientTLSConfig turns a listener's ssl.* keys into the crypto/tls configuration of a
// client of that listener, as Kafka's broker builds its own clients of another node: the
// truststore, read as BuildTLSConfig reads it (JKS, PKCS12 or PEM; none: the system's roots),
// checks the server; the keystore, when one is set, is offered for mutual TLS; the enabled
// protocols and cipher suites apply as on the server. The caller sets the server name and
// host name checking.
func BuildClientTLSConfig(s TLSSettings) (*tls.Config, error) {
	cfg := &tls.Config{}
	if s.KeystoreLocation.Value != "" || s.KeystoreCertificateChain.Value != "" || s.KeystoreKey.Value != "" {
		certs, err := KeystoreCertificates(s)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = certs
	}
	pool, err := TruststorePool(s)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	if err := setProtocols(cfg, s.EnabledProtocols); err != nil {
		return nil, err
	}
	if err := setCipherSuites(cfg, s.CipherSuites); err != nil {
		return nil, err
	}
	return cfg, nil
}

func storeType(s Setting) string { return strings.ToUpper(strings.TrimSpace(s.Value)) }

// KeystoreCertificates reads the keystore keys of s (ssl.keystore.*, ssl.key.password) into
// the certificates a TLS server (or, for a client, its client certificate) presents. The
// keystore must be set. Errors name the key at fault and never a password.
func KeystoreCertificates(s TLSSettings) ([]tls.Certificate, error) {
	inline := s.KeystoreCertificateChain.Value != "" || s.KeystoreKey.Value != ""
	if s.KeystoreLocation.Value == "" && !inline {
		return nil, fmt.Errorf("%s (or %s and %s) must be set on a TLS listener: the server needs a certificate",
			s.KeystoreLocation.Key, s.KeystoreCertificateChain.Key, s.KeystoreKey.Key)
	}
	switch t := storeType(s.KeystoreType); {
	case t == "PEM":
		cert, err := loadPEMKeystore(s, inline)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{cert}, nil
	case inline:
		return nil, tlsConfigError(s.KeystoreType, "must be PEM when %s and %s are given, as in Kafka", s.KeystoreCertificateChain.Key, s.KeystoreKey.Key)
	case t != "JKS" && t != "PKCS12":
		return nil, tlsConfigError(s.KeystoreType, "must be JKS, PKCS12 or PEM, not %q", s.KeystoreType.Value)
	}
	if s.KeystorePassword.Value == "" {
		// As Kafka: "SSL key store is specified, but key store password is not specified".
		return nil, fmt.Errorf("%s must be set: %s names a %s keystore", s.KeystorePassword.Key, s.KeystoreLocation.Key, storeType(s.KeystoreType))
	}
	ks, err := LoadKeyStore(s.KeystoreType.Value, s.KeystoreLocation.Value, s.KeystorePassword.Value, s.KeyPassword.Value)
	if err != nil {
		return nil, keyStoreError(err, s.KeystoreLocation, s.KeystorePassword, s.KeyPassword)
	}
	if len(ks.Certificates) == 0 {
		return nil, tlsConfigError(s.KeystoreLocation, "the keystore holds no private key entry")
	}
	return ks.Certificates, nil
}

// keyStoreError names the key an error from LoadKeyStore is about: the store password, the
// key password (the store password when ssl.key.password is unset), or the location.
func keyStoreError(err error, location, password, keyPassword Setting) error {
	switch {
	case errors.Is(err, ErrStorePassword):
		return fmt.Errorf("%s: %v (file %s)", password.Key, err, location.Value)
	case errors.Is(err, ErrKeyPassword):
		if keyPassword.Value == "" {
			keyPassword = Setting{Key: password.Key + " (" + keyPassword.Key + " is unset)"}
		}
		return fmt.Errorf("%s: %v (file %s)", keyPassword.Key, err, location.Value)
	}
	return tlsConfigError(location, "%v", err)
}

func loadPEMKeystore(s TLSSettings, inline bool) (tls.Certificate, error) {
	var certPEM, keyPEM []byte
	var certFrom, keyFrom Setting
	if inline {
		if s.KeystoreLocation.Value != "" {
			return tls.Certificate{}, fmt.Errorf("%s and %s cannot both be set, as in Kafka", s.KeystoreLocation.Key, s.KeystoreKey.Key)
		}
		if s.KeystoreCertificateChain.Value == "" || s.KeystoreKey.Value == "" {
			return tls.Certificate{}, fmt.Errorf("%s and %s must be set together", s.KeystoreCertificateChain.Key, s.KeystoreKey.Key)
		}
		certPEM, keyPEM = []byte(s.KeystoreCertificateChain.Value), []byte(s.KeystoreKey.Value)
		certFrom, keyFrom = s.KeystoreCertificateChain, s.KeystoreKey
	} else {
		data, err := os.ReadFile(s.KeystoreLocation.Value)
		if err != nil {
			return tls.Certificate{}, tlsConfigError(s.KeystoreLocation, "%v", err)
		}
		certPEM, keyPEM = data, data
		certFrom, keyFrom = s.KeystoreLocation, s.KeystoreLocation
	}
	if s.KeystorePassword.Value != "" {
		// As Kafka's DefaultSslEngineFactory: a PEM key is protected by ssl.key.password only.
		return tls.Certificate{}, fmt.Errorf("%s cannot be set with PEM keystores; only %s applies to a PEM key, as in Kafka", s.KeystorePassword.Key, s.KeyPassword.Key)
	}
	var chain [][]byte
	var key []byte
	for rest := certPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			chain = append(chain, block.Bytes)
		}
	}
	for rest := keyPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch block.Type {
		case "ENCRYPTED PRIVATE KEY":
			if s.KeyPassword.Value == "" {
				return tls.Certificate{}, fmt.Errorf("%s: the private key is encrypted but %s is not set", keyFrom.Key, s.KeyPassword.Key)
			}
			return tls.Certificate{}, fmt.Errorf("%s: encrypted PKCS#8 private keys (%s) are not supported yet (Go's standard library cannot decrypt them); give the key unencrypted and protect the file instead",
				keyFrom.Key, s.KeyPassword.Key)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if key != nil {
				return tls.Certificate{}, fmt.Errorf("%s: more than one private key", keyFrom.Key)
			}
			key = pem.EncodeToMemory(block)
		}
	}
	if len(chain) == 0 {
		return tls.Certificate{}, fmt.Errorf("%s: no PEM CERTIFICATE block found", certFrom.Key)
	}
	if key == nil {
		return tls.Certificate{}, fmt.Errorf("%s: no PEM PRIVATE KEY block found", keyFrom.Key)
	}
	if s.KeyPassword.Value != "" {
		return tls.Certificate{}, fmt.Errorf("%s is set but the private key in %s is not encrypted", s.KeyPassword.Key, keyFrom.Key)
	}
	var chainPEM []byte
	for _, der := range chain {
		chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	cert, err := tls.X509KeyPair(chainPEM, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %v", keyFrom.Key, err)
	}
	return cert, nil
}

// TruststorePool reads the truststore keys of s (ssl.truststore.*) into a certificate pool:
// a server's ClientCAs or a client's RootCAs. With no truststore set it returns nil, meaning
// the system's roots, as the JVM's default truststore. Errors name the key at fault.
func TruststorePool(s TLSSettings) (*x509.CertPool, error) {
	inline := s.TruststoreCertificates.Value != ""
	if s.TruststoreLocation.Value == "" && !inline {
		return nil, nil
	}
	switch t := storeType(s.TruststoreType); {
	case t == "PEM":
	case inline:
		return nil, tlsConfigError(s.TruststoreType, "must be PEM when %s is given, as in Kafka", s.TruststoreCertificates.Key)
	case t != "JKS" && t != "PKCS12":
		return nil, tlsConfigError(s.TruststoreType, "must be JKS, PKCS12 or PEM, not %q", s.TruststoreType.Value)
	default:
		if s.TruststorePassword.Value == "" {
			// The JVM can open a truststore without its password (skipping the integrity
			// check); the Go readers cannot.
			return nil, fmt.Errorf("%s must be set: sluice checks the integrity of the %s truststore %s", s.TruststorePassword.Key, t, s.TruststoreLocation.Value)
		}
		ks, err := LoadTrustStore(t, s.TruststoreLocation.Value, s.TruststorePassword.Value)
		if err != nil {
			// A PKCS12 key is decrypted with the store password, so a key error is its error.
			return nil, keyStoreError(err, s.TruststoreLocation, s.TruststorePassword, s.TruststorePassword)
		}
		if len(ks.Trusted) == 0 {
			return nil, tlsConfigError(s.TruststoreLocation, "the truststore holds no trusted certificate")
		}
		return ks.Pool(), nil
	}
	if s.TruststorePassword.Value != "" {
		return nil, fmt.Errorf("%s cannot be set with a PEM truststore, as in Kafka", s.TruststorePassword.Key)
	}
	data, from := []byte(s.TruststoreCertificates.Value), s.TruststoreCertificates
	if inline {
		if s.TruststoreLocation.Value != "" {
			return nil, fmt.Errorf("%s and %s cannot both be set", s.TruststoreLocation.Key, s.TruststoreCertificates.Key)
		}
	} else {
		var err error
		if data, err = os.ReadFile(s.TruststoreLocation.Value); err != nil {
			return nil, tlsConfigError(s.TruststoreLocation, "%v", err)
		}
		from = s.TruststoreLocation
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", from.Key, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block found", from.Key)
	}
	return pool, nil
}

// setProtocols applies ssl.enabled.protocols. Go's crypto/tls offers a contiguous range of
// versions; sluice serves TLSv1.2 and TLSv1.3, Kafka 4's defaults.
func setProtocols(cfg *tls.Config, s Setting) error {
	list := splitList(s.Value)
	if len(list) == 0 {
		list = []string{"TLSv1.2", "TLSv1.3"}
	}
	var lo, hi uint16
	for _, p := range list {
		var v uint16
		switch p {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		case "TLSv1", "TLSv1.1", "SSLv3", "SSLv2Hello":
			return tlsConfigError(s, "%s is not supported (it is insecure, and disabled in Kafka 4 too); use TLSv1.2 and/or TLSv1.3", p)
		default:
			return tlsConfigError(s, "unknown protocol %q; use TLSv1.2 and/or TLSv1.3", p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	cfg.MinVersion, cfg.MaxVersion = lo, hi
	return nil
}

// setCipherSuites applies ssl.cipher.suites (IANA names, which Java and Go share). TLS 1.3
// suites are not configurable in Go: all three are always offered, so naming them is accepted
// and naming only TLS 1.2 suites restricts TLS 1.2 alone.
func setCipherSuites(cfg *tls.Config, s Setting) error {
	list := splitList(s.Value)
	if len(list) == 0 {
		return nil
	}
	byName := map[string]*tls.CipherSuite{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs
	}
	insecure := map[string]bool{}
	for _, cs := range tls.InsecureCipherSuites() {
		insecure[cs.Name] = true
	}
	for _, name := range list {
		cs, ok := byName[name]
		switch {
		case insecure[name]:
			return tlsConfigError(s, "cipher suite %s is insecure and not offered by sluice", name)
		case !ok:
			return tlsConfigError(s, "unknown cipher suite %s", name)
		}
		if len(cs.SupportedVersions) == 1 && cs.SupportedVersions[0] == tls.VersionTLS13 {
			continue
		}
		cfg.CipherSuites = append(cfg.CipherSuites, cs.ID)
	}
	if len(cfg.CipherSuites) == 0 && cfg.MinVersion < tls.VersionTLS13 {
		return tlsConfigError(s, "names only TLS 1.3 suites, so TLSv1.2 would have none; add TLS 1.2 suites or enable only TLSv1.3")
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
