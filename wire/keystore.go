package wire

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Java keystores (ssl.keystore.type / ssl.truststore.type JKS and PKCS12), read as Kafka's
// DefaultSslEngineFactory reads them through the JVM:
//   - Every private key entry is offered (Go picks per handshake, as Java's key manager does);
//     a JKS key is decrypted with ssl.key.password, or the store password when that is unset.
//   - A truststore's trusted certificate entries are its roots; a JKS truststore's private key
//     entries add their own certificate, as the JVM's trust manager does.
//   - As the JVM with keystore.type.compat (its default), a JKS-typed file may be a PKCS12 file
//     and the other way round: the format is read from the file's first bytes.
// PKCS12 files are read with software.sslmate.com/src/go-pkcs12 (including the AES/PBES2
// files keytool writes since Java 12); JKS with github.com/pavlo-v-chernykh/keystore-go.

// Errors LoadKeyStore wraps, so callers can name the key at fault. Neither names a password.
var (
	ErrStorePassword = errors.New("wrong password: the keystore's integrity check failed")
	ErrKeyPassword   = errors.New("wrong private key password: the key cannot be decrypted")
)

// maxKeyStoreBytes bounds what is read from a keystore file: real ones are a few KiB, and a
// location pointing at a device or a huge file must not be read whole.
const maxKeyStoreBytes = 16 << 20

// jksMagic starts every JKS file; JCEKS files start with jceksMagic.
const (
	jksMagic   = 0xFEEDFEED
	jceksMagic = 0xCECECECE
)

// KeyStore is what LoadKeyStore read from a JKS or PKCS12 file.
type KeyStore struct {
	// Certificates holds one entry per private key entry: the leaf first, then the rest of
	// its chain as the file stores it; PrivateKey and Leaf are set.
	Certificates []tls.Certificate
	// Trusted holds the trusted certificate entries (and, for JKS, the leaf of each private
	// key entry, which the JVM trusts too). Use Pool for a crypto/tls RootCAs or ClientCAs.
	Trusted []*x509.Certificate
}

// Pool returns the trusted certificates as a pool, or nil when there are none.
func (k KeyStore) Pool() *x509.CertPool {
	if len(k.Trusted) == 0 {
		return nil
	}
	pool := x509.NewCertPool()
	for _, c := range k.Trusted {
		pool.AddCert(c)
	}
	return pool
}

// LoadKeyStore reads a JKS or PKCS12 keystore or truststore file (storeType is the value of
// ssl.keystore.type or ssl.truststore.type; PEM is not read here, see KeystoreCertificates).
// password is the store password; keyPassword decrypts private keys and defaults to password
// when empty, as Kafka's ssl.key.password does. A wrong password is reported by wrapping
// ErrStorePassword or ErrKeyPassword; no error contains a password.
func LoadKeyStore(storeType, path, password, keyPassword string) (KeyStore, error) {
	return loadKeyStore(storeType, path, password, keyPassword, true)
}

// LoadTrustStore is LoadKeyStore for a truststore: private keys are not decrypted (a JKS
// file's key entries contribute only their certificate, for which no key password is needed).
func LoadTrustStore(storeType, path, password string) (KeyStore, error) {
	return loadKeyStore(storeType, path, password, "", false)
}

func loadKeyStore(storeType, path, password, keyPassword string, keys bool) (KeyStore, error) {
	switch t := strings.ToUpper(strings.TrimSpace(storeType)); t {
	case "JKS", "PKCS12":
	default:
		return KeyStore{}, fmt.Errorf("keystore type %q: sluice reads JKS, PKCS12 and PEM", storeType)
	}
	data, err := readKeyStoreFile(path)
	if err != nil {
		return KeyStore{}, err
	}
	if keyPassword == "" {
		keyPassword = password
	}
	if len(data) >= 4 {
		switch uint32(data[0])<<24 | uint32(data[1])<<16 | uint32(data[2])<<8 | uint32(data[3]) {
		case jksMagic:
			return loadJKS(data, password, keyPassword, keys)
		case jceksMagic:
			return KeyStore{}, fmt.Errorf("%s is a JCEKS keystore, which sluice does not read; convert it with keytool -importkeystore -deststoretype PKCS12", path)
		}
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("-----BEGIN")) {
		return KeyStore{}, fmt.Errorf("%s is a PEM file, not a %s keystore: set the store's type to PEM", path, storeType)
	}
	return loadPKCS12(data, password, keyPassword)
}

func readKeyStoreFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyStoreBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxKeyStoreBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB: not a keystore", path, maxKeyStoreBytes>>20)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return data, nil
}

func loadJKS(data []byte, password, keyPassword string, keys bool) (KeyStore, error) {
	ks := jks.New(jks.WithOrderedAliases())
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return KeyStore{}, ErrStorePassword
		}
		return KeyStore{}, fmt.Errorf("not a readable JKS keystore: %v", err)
	}
	var out KeyStore
	for _, alias := range ks.Aliases() {
		switch {
		case ks.IsPrivateKeyEntry(alias) && !keys:
			chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
			if err != nil || len(chain) == 0 {
				return KeyStore{}, fmt.Errorf("entry %q: no certificate chain", alias)
			}
			cert, err := x509.ParseCertificate(chain[0].Content)
			if err != nil {
				return KeyStore{}, fmt.Errorf("entry %q: certificate: %v", alias, err)
			}
			out.Trusted = append(out.Trusted, cert)
		case ks.IsPrivateKeyEntry(alias):
			e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
			if err != nil {
				return KeyStore{}, fmt.Errorf("%w (entry %q)", ErrKeyPassword, alias)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				// The JKS key protector has no integrity check of its own beyond a digest
				// the library verifies; an unparsable key means a wrong password too.
				return KeyStore{}, fmt.Errorf("%w (entry %q)", ErrKeyPassword, alias)
			}
			var chain []*x509.Certificate
			for _, c := range e.CertificateChain {
				cert, err := x509.ParseCertificate(c.Content)
				if err != nil {
					return KeyStore{}, fmt.Errorf("entry %q: certificate: %v", alias, err)
				}
				chain = append(chain, cert)
			}
			cert, err := tlsCertificate(key, chain)
			if err != nil {
				return KeyStore{}, fmt.Errorf("entry %q: %v", alias, err)
			}
			out.Certificates = append(out.Certificates, cert)
			out.Trusted = append(out.Trusted, cert.Leaf)
		case ks.IsTrustedCertificateEntry(alias):
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return KeyStore{}, fmt.Errorf("entry %q: %v", alias, err)
			}
			cert, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return KeyStore{}, fmt.Errorf("entry %q: certificate: %v", alias, err)
			}
			out.Trusted = append(out.Trusted, cert)
		}
	}
	return out, nil
}

// loadPKCS12 reads a keystore (one private key with its chain) or a truststore (trusted
// certificate bags only, as keytool -importcert writes them).
func loadPKCS12(data []byte, password, keyPassword string) (KeyStore, error) {
	if trusted, err := pkcs12.DecodeTrustStore(data, password); err == nil {
		return KeyStore{Trusted: trusted}, nil
	} else if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return KeyStore{}, ErrStorePassword
	}
	if keyPassword != password {
		// go-pkcs12 decrypts the key with the store password, which keytool always uses for
		// PKCS12 keys ("Different store and key passwords not supported for PKCS12").
		return KeyStore{}, fmt.Errorf("%w: sluice reads PKCS12 keys protected by the store password, as keytool writes them; unset the key password or make it the store password", ErrKeyPassword)
	}
	key, leaf, cas, err := pkcs12.DecodeChain(data, password)
	switch {
	case errors.Is(err, pkcs12.ErrIncorrectPassword):
		return KeyStore{}, ErrStorePassword
	case errors.Is(err, pkcs12.ErrDecryption):
		return KeyStore{}, ErrKeyPassword
	case err != nil:
		return KeyStore{}, fmt.Errorf("not a readable PKCS12 keystore: %v", err)
	}
	cert, err := tlsCertificate(key, append([]*x509.Certificate{leaf}, cas...))
	if err != nil {
		return KeyStore{}, err
	}
	return KeyStore{Certificates: []tls.Certificate{cert}, Trusted: cas}, nil
}

// tlsCertificate pairs a private key with its chain, the certificate whose public key matches
// the key first.
func tlsCertificate(key any, chain []*x509.Certificate) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("private key of type %T cannot sign", key)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return tls.Certificate{}, fmt.Errorf("private key of type %T is not supported", key)
	}
	leaf := -1
	for i, c := range chain {
		if pub.Equal(c.PublicKey) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return tls.Certificate{}, errors.New("no certificate in the chain matches the private key")
	}
	out := tls.Certificate{PrivateKey: key, Leaf: chain[leaf], Certificate: [][]byte{chain[leaf].Raw}}
	for i, c := range chain {
		if i != leaf {
			out.Certificate = append(out.Certificate, c.Raw)
		}
	}
	return out, nil
}
