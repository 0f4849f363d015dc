package wire

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// SCRAM (RFC 5802, RFC 7677) as Kafka's ScramSaslServer serves it: SCRAM-SHA-256 and
// SCRAM-SHA-512, no channel binding, the user name decoded from its saslname form (=2C and =3D).
// Written here rather than taken from a library because the server side must treat every
// byte of both client messages as hostile: every field is checked before use and a bad message
// is an authentication failure, never a panic (FuzzSCRAMServer).
//
// Users are looked up through SASLConfig.ScramLookup first (cmd/sluice points it at the
// metadata image, where AlterUserScramCredentials stores credentials, so a user created on one
// node logs in on every node), then among the JAAS config's users. A credential's
// Iterations may be anything the controller accepted (4096..16384).

// ScramMinIterations is Kafka's lower bound on SCRAM iterations (ScramMechanism.minIterations).
const ScramMinIterations = 4096

// scramMaxMessage bounds one client SCRAM message; Kafka's own are well under 1 KiB.
const scramMaxMessage = 16 << 10

// ScramCredential is what the server stores for a user of one SCRAM mechanism: never the
// password, only the salted keys (RFC 5802 section 3).
type ScramCredential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// scramHash returns the hash of a SCRAM mechanism name, or nil.
func scramHash(mechanism string) func() hash.Hash {
	switch mechanism {
	case "SCRAM-SHA-256":
		return sha256.New
	case "SCRAM-SHA-512":
		return sha512.New
	}
	return nil
}

// NewScramCredential derives the stored credential for password with a fresh random salt.
func NewScramCredential(mechanism, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, err
	}
	return scramCredential(mechanism, password, salt, iterations)
}

func scramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h := scramHash(mechanism)
	if h == nil {
		return ScramCredential{}, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	if iterations < ScramMinIterations {
		return ScramCredential{}, fmt.Errorf("%s needs at least %d iterations", mechanism, ScramMinIterations)
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, err
	}
	clientKey := hmacSum(h, salted, []byte("Client Key"))
	return ScramCredential{
		Salt:       salt,
		Iterations: iterations,
		StoredKey:  hashSum(h, clientKey),
		ServerKey:  hmacSum(h, salted, []byte("Server Key")),
	}, nil
}

func hmacSum(h func() hash.Hash, key, data []byte) []byte {
	m := hmac.New(h, key)
	m.Write(data)
	return m.Sum(nil)
}

func hashSum(h func() hash.Hash, data []byte) []byte {
	d := h()
	d.Write(data)
	return d.Sum(nil)
}

// errInvalidCredentials is the failure whose details must not reach the client (is there such
// a user?); the client is told only that the credentials were invalid, as Kafka tells it.
var errInvalidCredentials = errors.New("invalid credentials")

// authFailure is a failure whose message Kafka sends to the client as it is.
type authFailure struct{ msg string }

func (e *authFailure) Error() string { return e.msg }

// scramServer is one SCRAM exchange: client-first, server-first, client-final, server-final.
type scramServer struct {
	mechanism string
	hash      func() hash.Hash
	lookup    func(user string) (ScramCredential, bool)
	nonceGen  func() string

	step            int // 0: expects client-first; 1: expects client-final; 2: done
	user            string
	gs2Header       string
	nonce           string // client nonce + server nonce
	clientFirstBare string
	serverFirst     string
	cred            ScramCredential
}

func newScramServer(mechanism string, lookup func(string) (ScramCredential, bool)) *scramServer {
	return &scramServer{mechanism: mechanism, hash: scramHash(mechanism), lookup: lookup, nonceGen: randomNonce}
}

func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Step takes one client message and returns the server's answer; done is set with the last.
func (s *scramServer) Step(msg []byte) (resp []byte, done bool, user string, err error) {
	if len(msg) > scramMaxMessage {
		return nil, false, "", &authFailure{fmt.Sprintf("Authentication failed: SCRAM message of %d bytes is too long", len(msg))}
	}
	switch s.step {
	case 0:
		s.step = 1
		out, err := s.clientFirst(string(msg))
		return out, false, "", err
	case 1:
		s.step = 2
		out, err := s.clientFinal(string(msg))
		return out, err == nil, s.user, err
	}
	return nil, false, "", &authFailure{"Authentication failed: SCRAM exchange already complete"}
}

func badSCRAM(format string, args ...any) error {
	return &authFailure{"Authentication failed: invalid SCRAM client message: " + fmt.Sprintf(format, args...)}
}

// clientFirst parses gs2-header client-first-message-bare:
// "n,[a=authzid],n=user,r=nonce[,ext=value...]".
func (s *scramServer) clientFirst(msg string) ([]byte, error) {
	fields := strings.Split(msg, ",")
	if len(fields) < 4 {
		return nil, badSCRAM("client-first message has %d fields, want at least 4", len(fields))
	}
	switch fields[0] {
	case "n", "y":
	case "":
		return nil, badSCRAM("missing gs2 channel binding flag")
	default:
		if strings.HasPrefix(fields[0], "p=") {
			return nil, &authFailure{"Authentication failed: SCRAM channel binding is not supported"}
		}
		return nil, badSCRAM("bad gs2 channel binding flag")
	}
	authzid := ""
	if fields[1] != "" {
		v, ok := strings.CutPrefix(fields[1], "a=")
		if !ok {
			return nil, badSCRAM("bad authorization identity field")
		}
		var err error
		if authzid, err = decodeSaslName(v); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(fields[2], "m=") {
		return nil, badSCRAM("mandatory extensions are not supported")
	}
	v, ok := strings.CutPrefix(fields[2], "n=")
	if !ok {
		return nil, badSCRAM("missing user name")
	}
	user, err := decodeSaslName(v)
	if err != nil {
		return nil, err
	}
	clientNonce, ok := strings.CutPrefix(fields[3], "r=")
	if !ok || clientNonce == "" || !printable(clientNonce) {
		return nil, badSCRAM("missing or bad nonce")
	}
	for _, ext := range fields[4:] {
		k, val, ok := strings.Cut(ext, "=")
		if !ok || k == "" {
			return nil, badSCRAM("bad extension")
		}
		if k == "tokenauth" && strings.EqualFold(val, "true") {
			return nil, &authFailure{"Authentication failed: delegation tokens are not supported by sluice yet"}
		}
	}
	if authzid != "" && authzid != user {
		return nil, &authFailure{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	s.user = user
	cred, found := s.lookup(user)
	if !found {
		return nil, errInvalidCredentials
	}
	s.cred = cred
	s.gs2Header = fields[0] + "," + fields[1] + ","
	s.clientFirstBare = strings.Join(fields[2:], ",")
	s.nonce = clientNonce + s.nonceGen()
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	return []byte(s.serverFirst), nil
}

// clientFinal parses "c=base64(gs2-header),r=nonce[,ext...],p=base64(proof)" and checks the
// proof against the stored key.
func (s *scramServer) clientFinal(msg string) ([]byte, error) {
	fields := strings.Split(msg, ",")
	if len(fields) < 3 {
		return nil, badSCRAM("client-final message has %d fields, want at least 3", len(fields))
	}
	cb, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return nil, badSCRAM("missing channel binding")
	}
	if binding, err := base64.StdEncoding.DecodeString(cb); err != nil || string(binding) != s.gs2Header {
		return nil, badSCRAM("channel binding does not match the gs2 header")
	}
	// As Kafka's ScramSaslServer, the nonce must end with the one the server sent: librdkafka
	// sends its own nonce in front of the combined one.
	nonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !strings.HasSuffix(nonce, s.nonce) {
		return nil, badSCRAM("nonce does not match")
	}
	last := fields[len(fields)-1]
	proofB64, ok := strings.CutPrefix(last, "p=")
	if !ok {
		return nil, badSCRAM("missing proof")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != s.hash().Size() {
		return nil, badSCRAM("bad proof")
	}
	withoutProof := msg[:len(msg)-len(last)-1]
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientSignature := hmacSum(s.hash, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSignature[i]
	}
	if !hmac.Equal(hashSum(s.hash, clientKey), s.cred.StoredKey) {
		return nil, errInvalidCredentials
	}
	serverSignature := hmacSum(s.hash, s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil
}

// decodeSaslName undoes RFC 5802's escaping of ',' and '=' in names.
func decodeSaslName(s string) (string, error) {
	if s == "" {
		return "", badSCRAM("empty name")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			switch {
			case strings.HasPrefix(s[i:], "=2C"):
				b.WriteByte(',')
			case strings.HasPrefix(s[i:], "=3D"):
				b.WriteByte('=')
			default:
				return "", badSCRAM("bad escape in name")
			}
			i += 2
		case c == 0:
			return "", badSCRAM("NUL in name")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// printable is RFC 5802's printable: %x21-2B / %x2D-7E.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}
