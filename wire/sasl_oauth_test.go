package wire

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func jsonPart(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b64(b)
}

// unsecuredToken is what Kafka's OAuthBearerUnsecuredLoginCallbackHandler makes.
func unsecuredToken(t testing.TB, claims map[string]any) string {
	return jsonPart(t, map[string]any{"alg": "none"}) + "." + jsonPart(t, claims) + "."
}

func initialResponse(authzid, token string) []byte {
	return []byte("n,a=" + authzid + ",\x01auth=Bearer " + token + "\x01\x01")
}

func TestParseOAuthInitialResponse(t *testing.T) {
	for _, tc := range []struct {
		name, msg      string
		authzid, token string
		extensions     int
		wantErr        bool
	}{
		{name: "plain", msg: "n,,\x01auth=Bearer abc.def.\x01\x01", token: "abc.def."},
		{name: "authzid", msg: "n,a=alice,\x01auth=Bearer abc.def.ghi\x01\x01", authzid: "alice", token: "abc.def.ghi"},
		{name: "scheme case and spaces", msg: "n,,\x01auth=bEaReR   x-y_z\x01\x01", token: "x-y_z"},
		{name: "extensions", msg: "n,,\x01traceId=123\x01auth=Bearer t\x01logicalCluster=lkc 1\x01\x01", token: "t", extensions: 2},
		{name: "no gs2 header", msg: "\x01auth=Bearer t\x01\x01", wantErr: true},
		{name: "channel binding", msg: "y,,\x01auth=Bearer t\x01\x01", wantErr: true},
		{name: "no auth", msg: "n,,\x01traceId=1\x01\x01", wantErr: true},
		{name: "two auth", msg: "n,,\x01auth=Bearer t\x01auth=Bearer u\x01\x01", wantErr: true},
		{name: "other scheme", msg: "n,,\x01auth=Basic dXNlcg\x01\x01", wantErr: true},
		{name: "no final separator", msg: "n,,\x01auth=Bearer t\x01", wantErr: true},
		{name: "bad token chars", msg: "n,,\x01auth=Bearer a/b+c=\x01\x01", wantErr: true},
		{name: "bad key", msg: "n,,\x01auth=Bearer t\x01tr4ce=1\x01\x01", wantErr: true},
		{name: "empty value", msg: "n,,\x01auth=Bearer t\x01k=\x01\x01", wantErr: true},
		{name: "bad authzid header", msg: "n,b=x,\x01auth=Bearer t\x01\x01", wantErr: true},
		{name: "empty", msg: "", wantErr: true},
		{name: "control A only", msg: "\x01", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseOAuthInitialResponse([]byte(tc.msg))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parsed %q as %+v", tc.msg, r)
				}
				return
			}
			if err != nil || r.authzid != tc.authzid || r.token != tc.token || len(r.extensions) != tc.extensions {
				t.Fatalf("got %+v, %v", r, err)
			}
		})
	}
}

// FuzzOAuthInitialResponse: the parser never panics, and what it accepts has a token of
// bearer characters only.
func FuzzOAuthInitialResponse(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer abc.def.\x01\x01"))
	f.Add([]byte("n,a=alice,\x01k=v\x01auth=Bearer t\x01\x01"))
	f.Add([]byte("n,,\x01\x01"))
	f.Add([]byte("\x01"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := parseOAuthInitialResponse(msg)
		if err == nil && !isBearerToken(r.token) {
			t.Fatalf("accepted token %q", r.token)
		}
	})
}

// FuzzJWTDecode: the decoder and the unsecured validator never panic on any token.
func FuzzJWTDecode(f *testing.F) {
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSIsImV4cCI6MX0.")
	f.Add("a.b.c")
	f.Add("..")
	f.Add("e30.e30.")
	cfg := &OAuthBearerConfig{RequiredScope: []string{"x"}}
	f.Fuzz(func(t *testing.T, token string) {
		_, _ = decodeJWT(token)
		_, _ = cfg.validate(token, time.Unix(1e9, 0))
	})
}

func TestUnsecuredValidator(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	exp := float64(now.Add(time.Hour).Unix())
	for _, tc := range []struct {
		name   string
		cfg    OAuthBearerConfig
		token  string
		status string // "" accepted
		who    string
	}{
		{name: "sub", token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp, "iat": float64(now.Unix())}), who: "alice"},
		{name: "fractional exp", token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp + 0.5}), who: "alice"},
		{name: "principal claim name", cfg: OAuthBearerConfig{PrincipalClaim: "principal"},
			token: unsecuredToken(t, map[string]any{"principal": "bob", "sub": "alice", "exp": exp}), who: "bob"},
		{name: "no sub", token: unsecuredToken(t, map[string]any{"exp": exp}), status: "invalid_token"},
		{name: "sub not a string", token: unsecuredToken(t, map[string]any{"sub": 7, "exp": exp}), status: "invalid_token"},
		{name: "no exp", token: unsecuredToken(t, map[string]any{"sub": "alice"}), status: "invalid_token"},
		{name: "exp a string", token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": "soon"}), status: "invalid_token"},
		{name: "expired", token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": float64(now.Unix() - 1)}), status: "invalid_token"},
		{name: "expired within skew", cfg: OAuthBearerConfig{ClockSkew: 5 * time.Second},
			token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": float64(now.Unix() - 1)}), who: "alice"},
		{name: "issued in the future", token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp, "iat": float64(now.Unix() + 60)}), status: "invalid_token"},
		{name: "exp before iat", token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": float64(now.Unix() + 10), "iat": float64(now.Unix() + 20)}),
			cfg: OAuthBearerConfig{ClockSkew: time.Minute}, status: "invalid_token"},
		{name: "alg RS256", token: jsonPart(t, map[string]any{"alg": "RS256"}) + "." + jsonPart(t, map[string]any{"sub": "alice", "exp": exp}) + ".",
			status: "invalid_token"},
		{name: "signature present", token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp}) + "c2ln", status: "invalid_token"},
		{name: "two parts", token: jsonPart(t, map[string]any{"alg": "none"}) + "." + jsonPart(t, map[string]any{"sub": "a"}), status: "invalid_token"},
		{name: "not JSON", token: b64([]byte("{")) + "." + b64([]byte("x")) + ".", status: "invalid_token"},
		{name: "required scope present (list)", cfg: OAuthBearerConfig{RequiredScope: []string{"read", "write"}},
			token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp, "scope": []string{"write", "read", "admin"}}), who: "alice"},
		{name: "required scope missing", cfg: OAuthBearerConfig{RequiredScope: []string{"write"}},
			token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp, "scope": []string{"read"}}), status: "insufficient_scope"},
		{name: "scope string is one scope", cfg: OAuthBearerConfig{RequiredScope: []string{"read"}},
			token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp, "scope": "read write"}), status: "insufficient_scope"},
		{name: "scope claim name", cfg: OAuthBearerConfig{RequiredScope: []string{"read"}, ScopeClaim: "scp"},
			token: unsecuredToken(t, map[string]any{"sub": "alice", "exp": exp, "scp": "read"}), who: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := tc.cfg.validate(tc.token, now)
			if tc.status == "" {
				if err != nil || tok.principal != tc.who {
					t.Fatalf("got %+v, %v; want %s", tok, err, tc.who)
				}
				return
			}
			if err == nil || err.status != tc.status {
				t.Fatalf("got %+v, %v; want status %s", tok, err, tc.status)
			}
			if tc.status == "insufficient_scope" && !strings.Contains(string(err.json()), `"scope":`) {
				t.Fatalf("json %s has no scope", err.json())
			}
		})
	}
}

func TestSessionLifetime(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		maxReauth time.Duration
		expires   time.Time
		want      time.Duration
	}{
		{0, time.Time{}, 0},
		{time.Minute, time.Time{}, time.Minute},
		{0, now.Add(time.Hour), time.Hour},
		{time.Minute, now.Add(time.Hour), time.Minute},
		{time.Hour, now.Add(time.Minute), time.Minute},
		{time.Hour, now.Add(-time.Minute), 0},
	} {
		if got := sessionLifetime(now, tc.maxReauth, tc.expires); got != tc.want {
			t.Errorf("sessionLifetime(%v, %v) = %v, want %v", tc.maxReauth, tc.expires.Sub(now), got, tc.want)
		}
	}
}

// signer makes signed JWTs and the JWKS that verifies them.
type signer struct {
	rsaKey *rsa.PrivateKey
	ecKey  *ecdsa.PrivateKey
}

func newSigner(t testing.TB) *signer {
	t.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &signer{rsaKey: r, ecKey: e}
}

func (s *signer) jwks(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": b64(s.rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(s.rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": "ec-1", "crv": "P-256", "x": b64(s.ecKey.X.FillBytes(make([]byte, 32))), "y": b64(s.ecKey.Y.FillBytes(make([]byte, 32)))},
		{"kty": "oct", "kid": "hmac", "k": b64([]byte("secret"))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *signer) sign(t testing.TB, alg, kid string, claims map[string]any) string {
	t.Helper()
	header := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		header["kid"] = kid
	}
	input := jsonPart(t, header) + "." + jsonPart(t, claims)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch alg {
	case "RS256":
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.rsaKey, crypto.SHA256, digest[:])
	case "PS256":
		sig, err = rsa.SignPSS(rand.Reader, s.rsaKey, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case "ES256":
		var r, ss *big.Int
		r, ss, err = ecdsa.Sign(rand.Reader, s.ecKey, digest[:])
		if err == nil {
			sig = append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...)
		}
	default:
		sig = []byte("not-a-signature")
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

func writeJWKS(t testing.TB, path string, body []byte) {
	t.Helper()
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestJWKSValidator(t *testing.T) {
	s := newSigner(t)
	other := newSigner(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, s.jwks(t))
	clock := newFakeClock()
	jwks, err := NewJWKS(JWKSConfig{URL: "file://" + path, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.now()
	good := map[string]any{"sub": "alice", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "aud": []string{"kafka", "x"}, "iss": "https://idp"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cfg := &OAuthBearerConfig{JWKS: jwks, ExpectedAudience: []string{"kafka"}, ExpectedIssuer: "https://idp", ClockSkew: 30 * time.Second}
	for _, tc := range []struct {
		name  string
		token string
		ok    bool
	}{
		{"RS256", s.sign(t, "RS256", "rsa-1", good), true},
		{"RS256 without kid", s.sign(t, "RS256", "", good), true},
		{"PS256 (the RSA key names RS256)", s.sign(t, "PS256", "rsa-1", good), false},
		{"ES256", s.sign(t, "ES256", "ec-1", good), true},
		{"ES256 with the RSA kid", s.sign(t, "ES256", "rsa-1", good), false},
		{"another key", other.sign(t, "RS256", "rsa-1", good), false},
		{"unknown kid", s.sign(t, "RS256", "nope", good), false},
		{"alg none", unsecuredToken(t, good), false},
		{"HS256", s.sign(t, "HS256", "hmac", good), false},
		{"tampered claims", func() string {
			tok := s.sign(t, "RS256", "rsa-1", good)
			parts := strings.Split(tok, ".")
			parts[1] = jsonPart(t, with("sub", "mallory"))
			return strings.Join(parts, ".")
		}(), false},
		{"wrong audience", s.sign(t, "RS256", "rsa-1", with("aud", "other")), false},
		{"audience string", s.sign(t, "RS256", "rsa-1", with("aud", "kafka")), true},
		{"no audience", s.sign(t, "RS256", "rsa-1", with("aud", nil)), false},
		{"wrong issuer", s.sign(t, "RS256", "rsa-1", with("iss", "https://evil")), false},
		{"no iat", s.sign(t, "RS256", "rsa-1", with("iat", nil)), false},
		{"expired beyond skew", s.sign(t, "RS256", "rsa-1", with("exp", now.Add(-time.Minute).Unix())), false},
		{"expired within skew", s.sign(t, "RS256", "rsa-1", func() map[string]any {
			m := with("exp", now.Add(-10*time.Second).Unix())
			m["iat"] = now.Add(-time.Hour).Unix()
			return m
		}()), true},
		{"nbf in the future", s.sign(t, "RS256", "rsa-1", with("nbf", now.Add(time.Minute).Unix())), false},
		{"no sub", s.sign(t, "RS256", "rsa-1", with("sub", nil)), false},
		{"iat in the future (only required, as jose4j)", s.sign(t, "RS256", "rsa-1", with("iat", now.Add(10*time.Minute).Unix())), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, verr := cfg.validate(tc.token, now)
			if tc.ok != (verr == nil) {
				t.Fatalf("validate: %+v, %v; want ok=%v", tok, verr, tc.ok)
			}
			if tc.ok && (tok.principal != "alice" || !tok.expires.Equal(time.Unix(good["exp"].(int64), 0)) && tc.name != "expired within skew") {
				t.Fatalf("token %+v", tok)
			}
			if !tc.ok && verr.status != "invalid_token" {
				t.Fatalf("status %s", verr.status)
			}
		})
	}
}

// TestJWKSReload: a key added to the set is found by a token naming its kid (the set is
// reloaded early, once per retry backoff), and the set is reloaded after the refresh interval;
// a reload that fails keeps the keys.
// TestJWKSAudienceNotExpected: with no sasl.oauthbearer.expected.audience a token without
// aud is accepted and one with aud is refused, as Kafka's jose4j consumer refuses it, unless
// sasl.oauthbearer.allow.unverified.audience is true.
func TestJWKSAudienceNotExpected(t *testing.T) {
	s := newSigner(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, s.jwks(t))
	jwks, err := NewJWKS(JWKSConfig{URL: "file://" + path})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &OAuthBearerConfig{JWKS: jwks}
	now := time.Now()
	claims := map[string]any{"sub": "alice", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	if _, verr := cfg.validate(s.sign(t, "RS256", "rsa-1", claims), now); verr != nil {
		t.Fatalf("without aud: %v", verr)
	}
	claims["aud"] = "kafka"
	if _, verr := cfg.validate(s.sign(t, "RS256", "rsa-1", claims), now); verr == nil {
		t.Fatal("a token with aud accepted by a broker expecting none")
	}
	// sasl.oauthbearer.allow.unverified.audience=true (Kafka 4.4): any audience is accepted.
	cfg.AllowUnverifiedAudience = true
	if _, verr := cfg.validate(s.sign(t, "RS256", "rsa-1", claims), now); verr != nil {
		t.Fatalf("allow.unverified.audience: %v", verr)
	}
}

func TestJWKSReload(t *testing.T) {
	first, second := newSigner(t), newSigner(t)
	var served atomic.Pointer[[]byte]
	var fetches atomic.Int64
	body := first.jwks(t)
	served.Store(&body)
	fail := atomic.Bool{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Write(*served.Load())
	}))
	defer hs.Close()
	clock := newFakeClock()
	jwks, err := NewJWKS(JWKSConfig{URL: hs.URL, Now: clock.now, Refresh: time.Minute, RetryBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &OAuthBearerConfig{JWKS: jwks}
	claims := func() map[string]any {
		n := clock.now()
		return map[string]any{"sub": "alice", "exp": n.Add(time.Hour).Unix(), "iat": n.Unix()}
	}
	// The second signer's key under a new kid.
	rotated := strings.ReplaceAll(string(second.jwks(t)), `"rsa-1"`, `"rsa-2"`)
	b2 := []byte(rotated)
	served.Store(&b2)
	clock.advance(2 * time.Second)
	if _, verr := cfg.validate(second.sign(t, "RS256", "rsa-2", claims()), clock.now()); verr != nil {
		t.Fatalf("a token signed by a key added to the JWKS: %v", verr)
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (start, unknown kid)", n)
	}
	// Unknown kids within the backoff do not fetch again.
	for range 5 {
		if _, verr := cfg.validate(second.sign(t, "RS256", "made-up", claims()), clock.now()); verr == nil {
			t.Fatal("unknown kid accepted")
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after unknown kids within the backoff, want 2", n)
	}
	// The old key is gone from the set now.
	if _, verr := cfg.validate(first.sign(t, "RS256", "rsa-1", claims()), clock.now()); verr == nil {
		t.Fatal("a token signed by a key removed from the JWKS was accepted")
	}
	// A failed reload after the refresh interval keeps the keys.
	fail.Store(true)
	clock.advance(2 * time.Minute)
	cfg.validate(second.sign(t, "RS256", "rsa-2", claims()), clock.now()) // starts the reload
	waitFor(t, "the background reload", func() bool {
		jwks.mu.Lock()
		defer jwks.mu.Unlock()
		return !jwks.mu.reloading && fetches.Load() == 3
	})
	if _, verr := cfg.validate(second.sign(t, "RS256", "rsa-2", claims()), clock.now()); verr != nil {
		t.Fatalf("after a failed reload: %v", verr)
	}
}

func TestJWKSRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, url, body string }{
		{"missing file", "file://" + filepath.Join(dir, "none.json"), ""},
		{"not JSON", "file://" + filepath.Join(dir, "bad.json"), "nope"},
		{"no usable key", "file://" + filepath.Join(dir, "oct.json"), `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`},
		{"scheme", "ftp://x/jwks", ""},
	} {
		if tc.body != "" {
			writeJWKS(t, strings.TrimPrefix(tc.url, "file://"), []byte(tc.body))
		}
		if _, err := NewJWKS(JWKSConfig{URL: tc.url}); err == nil {
			t.Errorf("%s: loaded", tc.name)
		}
	}
}

// TestOAuthBearerFranzGo: franz-go's sasl/oauth logs in with an unsecured token as the
// principal of its sub claim, the session lifetime is the token's remaining lifetime bounded
// by connections.max.reauth.ms, and a refused token fails with SASL_AUTHENTICATION_FAILED and
// the RFC 7628 JSON status.
func TestOAuthBearerFranzGo(t *testing.T) {
	clock := newFakeClock()
	cfg := SASLConfig{Mechanisms: []string{"OAUTHBEARER"}, OAuthBearer: &OAuthBearerConfig{RequiredScope: []string{"kafka"}},
		MaxReauth: time.Hour}
	s := startSecure(t, Config{SecurityProtocol: "SASL_PLAINTEXT", SASL: &cfg, Now: clock.now})
	addr := s.srv.Addr().String()
	now := clock.now()
	tok := unsecuredToken(t, map[string]any{"sub": "alice", "exp": now.Add(10 * time.Minute).Unix(), "iat": now.Unix(), "scope": []string{"kafka"}})
	if err := metadataThrough(t, kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism())); err != nil {
		t.Fatal(err)
	}
	if principals, _ := s.broker.seen(); len(principals) == 0 || principals[len(principals)-1] != "User:alice" {
		t.Fatalf("principals %v", principals)
	}

	c := dial(t, s.srv)
	handshake(c, 1, "OAUTHBEARER")
	if resp := authenticate(c, initialResponse("alice", tok)); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 600000 {
		t.Fatalf("authenticate: code %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}

	noScope := unsecuredToken(t, map[string]any{"sub": "alice", "exp": now.Add(10 * time.Minute).Unix()})
	err := metadataThrough(t, kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: noScope}.AsMechanism()))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"scope":"kafka","status":"insufficient_scope"}`) {
		t.Fatalf("token without the scope: %v", err)
	}
	expired := unsecuredToken(t, map[string]any{"sub": "alice", "exp": now.Add(-time.Minute).Unix(), "scope": "kafka"})
	err = metadataThrough(t, kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: expired}.AsMechanism()))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
		t.Fatalf("expired token: %v", err)
	}

	// The raw exchange: the JSON is the challenge, \x01 fails and closes.
	c = dial(t, s.srv)
	handshake(c, 1, "OAUTHBEARER")
	resp := authenticate(c, initialResponse("", expired))
	if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("challenge: code %d bytes %q", resp.ErrorCode, resp.SASLAuthBytes)
	}
	resp = authenticate(c, []byte{1})
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != `{"status":"invalid_token"}` {
		t.Fatalf("after \\x01: code %d message %v", resp.ErrorCode, resp.ErrorMessage)
	}
	c.expectClosed()

	// An authzid other than the principal fails at once; so does a message that is not an
	// initial response.
	c = dial(t, s.srv)
	handshake(c, 1, "OAUTHBEARER")
	if resp := authenticate(c, initialResponse("bob", tok)); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("authzid bob: code %d", resp.ErrorCode)
	}
	c.expectClosed()
	c = dial(t, s.srv)
	handshake(c, 1, "OAUTHBEARER")
	if resp := authenticate(c, []byte("garbage")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("garbage: code %d", resp.ErrorCode)
	}
	c.expectClosed()

	// The session ends when the token expires (before connections.max.reauth.ms).
	c = dial(t, s.srv)
	handshake(c, 1, "OAUTHBEARER")
	authenticate(c, initialResponse("", tok))
	c.roundTrip(metadataRequest(1))
	clock.advance(11 * time.Minute)
	c.send(metadataRequest(1))
	c.expectClosed()
}

// FuzzJWKS: the key set parser never panics, and every key it keeps is usable.
func FuzzJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		keys, err := parseJWKS(body)
		if err == nil && len(keys) == 0 {
			t.Fatal("no error and no keys")
		}
		for _, k := range keys {
			if k.key == nil {
				t.Fatal("a nil key")
			}
		}
	})
}

// BenchmarkOAuthValidate is the broker's cost of one OAUTHBEARER login's token check.
func BenchmarkOAuthValidate(b *testing.B) {
	now := time.Now()
	claims := map[string]any{"sub": "alice", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	b.Run("unsecured", func(b *testing.B) {
		cfg := &OAuthBearerConfig{}
		tok := unsecuredToken(b, claims)
		for b.Loop() {
			if _, err := cfg.validate(tok, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	s := newSigner(b)
	path := filepath.Join(b.TempDir(), "jwks.json")
	writeJWKS(b, path, s.jwks(b))
	jwks, err := NewJWKS(JWKSConfig{URL: "file://" + path})
	if err != nil {
		b.Fatal(err)
	}
	cfg := &OAuthBearerConfig{JWKS: jwks}
	for _, alg := range []string{"RS256", "ES256"} {
		kid := map[string]string{"RS256": "rsa-1", "ES256": "ec-1"}[alg]
		tok := s.sign(b, alg, kid, claims)
		b.Run(alg, func(b *testing.B) {
			for b.Loop() {
				if _, err := cfg.validate(tok, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
