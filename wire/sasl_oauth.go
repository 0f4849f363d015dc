package wire

// SASL/OAUTHBEARER (RFC 7628, KIP-255) as Kafka's OAuthBearerSaslServer serves it:
//
//   - The client's one message is the GS2 header "n,[a=authzid]," then key=value pairs, each
//     ended by \x01, then a final \x01: "n,,\x01auth=Bearer <token>\x01\x01". The auth pair is
//     required; other pairs are SASL extensions, accepted and ignored (both of Kafka's
//     validator callback handlers accept every extension).
//   - The token is a JWT. With no JWKS configured it is validated as Kafka's default
//     OAuthBearerUnsecuredValidatorCallbackHandler does: an unsecured JWS (alg "none", empty
//     signature) whose principal claim (unsecuredValidatorPrincipalClaimName, "sub") is a
//     string, with exp, an optional iat not in the future, and every scope of
//     unsecuredValidatorRequiredScope, allowing unsecuredValidatorAllowableClockSkewMs.
//     With sasl.oauthbearer.jwks.endpoint.url it is validated as Kafka's
//     OAuthBearerValidatorCallbackHandler (BrokerJwtValidator) does: signed with a key of the
//     JWKS (RS256/384/512, PS256/384/512, ES256/384/512; never "none" or an HMAC), exp and iat
//     present, exp not past and nbf not in the future beyond
//     sasl.oauthbearer.clock.skew.seconds, aud among sasl.oauthbearer.expected.audience (and,
//     as jose4j's default check, no aud at all when that is not set, unless
//     sasl.oauthbearer.allow.unverified.audience) and iss equal to
//     sasl.oauthbearer.expected.issuer when set, and the principal from
//     sasl.oauthbearer.sub.claim.name.
//   - A token that fails is answered, as the RFC has it, with a server challenge carrying the
//     JSON error status ({"status":"invalid_token"}, or "insufficient_scope" with the scope
//     required); the client then sends \x01 and the exchange fails with
//     SASL_AUTHENTICATION_FAILED carrying that JSON, and the connection closes. A message that
//     is not a client initial response fails at once.
//   - The principal is User:<principal claim>; an authzid, when given, must equal it. The
//     token's exp bounds the session (sasl.go: the session lifetime is the smaller of the
//     token's remaining lifetime and connections.max.reauth.ms, as Kafka's
//     SaslServerAuthenticator computes it).

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
)

// OAuthBearerConfig is how an OAUTHBEARER listener validates tokens.
type OAuthBearerConfig struct {
	// PrincipalClaim names the claim the principal is read from ("sub" when empty):
	// unsecuredValidatorPrincipalClaimName, or sasl.oauthbearer.sub.claim.name with a JWKS.
	PrincipalClaim string
	// ScopeClaim names the scope claim ("scope" when empty): unsecuredValidatorScopeClaimName,
	// or sasl.oauthbearer.scope.claim.name with a JWKS.
	ScopeClaim string
	// RequiredScope is unsecuredValidatorRequiredScope: every one must be in the token's scope.
	RequiredScope []string
	// ClockSkew is how far exp, iat and nbf may be off: unsecuredValidatorAllowableClockSkewMs,
	// or sasl.oauthbearer.clock.skew.seconds with a JWKS.
	ClockSkew time.Duration
	// JWKS, when set, holds the keys signed tokens are checked with; nil validates unsecured
	// tokens as Kafka's default (test-only) handler does.
	JWKS *JWKS
	// ExpectedAudience is sasl.oauthbearer.expected.audience: when set, the token's aud must
	// name one of them. Used with JWKS only.
	ExpectedAudience []string
	// ExpectedIssuer is sasl.oauthbearer.expected.issuer: when set, iss must equal it. Used
	// with JWKS only.
	ExpectedIssuer string
	// AllowUnverifiedAudience is sasl.oauthbearer.allow.unverified.audience: with no
	// ExpectedAudience, a token naming any audience is accepted (Kafka 4.4). Used with JWKS only.
	AllowUnverifiedAudience bool
}

func (c *OAuthBearerConfig) principalClaim() string {
	if c.PrincipalClaim == "" {
		return "sub"
	}
	return c.PrincipalClaim
}

func (c *OAuthBearerConfig) scopeClaim() string {
	if c.ScopeClaim == "" {
		return "scope"
	}
	return c.ScopeClaim
}

// oauthInitialResponse is a parsed OAUTHBEARER client initial response.
type oauthInitialResponse struct {
	authzid    string
	token      string
	extensions map[string]string
}

// errOAuthMessage is a client message that is not an OAUTHBEARER initial response.
var errOAuthMessage = errors.New("invalid OAUTHBEARER client first message")

// isOAuthKey reports whether s is a key of a key/value pair (RFC 7628: ALPHA+).
func isOAuthKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// isOAuthValue reports whether s is a value of a key/value pair (RFC 7628: VCHAR, space, tab,
// CR, LF; at least one).
func isOAuthValue(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 0x21 && c <= 0x7e || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			return false
		}
	}
	return true
}

// isBearerToken reports whether s is a bearer token as Kafka accepts it: base64url
// characters and dots (RFC 6750's b64token without '+', '/', '~' and '=' padding is what a
// JWT is made of; Kafka's pattern is [-_.a-zA-Z0-9]+).
func isBearerToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// parseOAuthInitialResponse parses "n,[a=authzid],\x01(key=value\x01)*\x01" as Kafka's
// OAuthBearerClientInitialResponse does: the auth pair must be "Bearer <token>" (the scheme
// in any case, one or more spaces).
func parseOAuthInitialResponse(msg []byte) (oauthInitialResponse, error) {
	var r oauthInitialResponse
	s := string(msg)
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		return r, errOAuthMessage
	}
	header, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return r, errOAuthMessage
	}
	if header != "" {
		authzid, ok := strings.CutPrefix(header, "a=")
		if !ok {
			return r, errOAuthMessage
		}
		r.authzid = authzid
	}
	// rest is \x01 (key=value \x01)* \x01.
	if len(rest) < 2 || rest[0] != 0x01 || !strings.HasSuffix(rest, "\x01\x01") {
		return r, errOAuthMessage
	}
	body := rest[1 : len(rest)-1] // (key=value \x01)*
	auth := ""
	for body != "" {
		pair, tail, ok := strings.Cut(body, "\x01")
		if !ok {
			return r, errOAuthMessage
		}
		body = tail
		key, value, ok := strings.Cut(pair, "=")
		if !ok || !isOAuthKey(key) || !isOAuthValue(value) {
			return r, errOAuthMessage
		}
		if key == "auth" {
			if auth != "" {
				return r, errOAuthMessage
			}
			auth = value
			continue
		}
		if r.extensions == nil {
			r.extensions = map[string]string{}
		}
		if _, dup := r.extensions[key]; dup {
			return r, errOAuthMessage
		}
		r.extensions[key] = value
	}
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return r, errOAuthMessage
	}
	token = strings.TrimLeft(token, " ")
	if !isBearerToken(token) {
		return r, errOAuthMessage
	}
	r.token = token
	return r, nil
}

// jwt is a decoded JSON Web Token in compact serialization. Numbers in claims stay
// json.Number.
type jwt struct {
	header       map[string]any
	claims       map[string]any
	signingInput string // header.payload, what the signature covers
	signature    []byte
}

// decodeJWTPart decodes one base64url (unpadded, or padded as some issuers write it) JSON
// object.
func decodeJWTPart(part string) (map[string]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return nil, errors.New("malformed Base64 URL encoded value")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, errors.New("malformed JSON")
	}
	if d.More() {
		return nil, errors.New("malformed JSON")
	}
	return m, nil
}

// decodeJWT splits and decodes a compact JWT: three dot-separated base64url values, the
// header and claims JSON objects.
func decodeJWT(token string) (*jwt, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("a JWT must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := decodeJWTPart(parts[0])
	if err != nil {
		return nil, fmt.Errorf("JWT header: %w", err)
	}
	claims, err := decodeJWTPart(parts[1])
	if err != nil {
		return nil, fmt.Errorf("JWT claims: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
	if err != nil {
		return nil, errors.New("JWT signature: malformed Base64 URL encoded value")
	}
	return &jwt{header: header, claims: claims, signingInput: parts[0] + "." + parts[1], signature: sig}, nil
}

// stringClaim returns claim name when it is a string; present reports whether it is there.
func (t *jwt) stringClaim(name string) (value string, present bool, err error) {
	v, ok := t.claims[name]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", true, fmt.Errorf("the %s claim is not a string", name)
	}
	return s, true, nil
}

// timeClaim returns a NumericDate claim (seconds since the epoch, possibly fractional),
// rounded to the millisecond as Kafka converts it.
func (t *jwt) timeClaim(name string) (at time.Time, present bool, err error) {
	v, ok := t.claims[name]
	if !ok || v == nil {
		return time.Time{}, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, true, fmt.Errorf("the %s claim is not a number", name)
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e14 {
		return time.Time{}, true, fmt.Errorf("the %s claim is not a valid time", name)
	}
	return time.UnixMilli(int64(math.Round(f * 1000))), true, nil
}

// scope returns the token's scope claim as Kafka reads it: a string is one scope (trimmed),
// a list is its non-blank strings.
func (t *jwt) scope(claim string) []string {
	switch v := t.claims[claim].(type) {
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return []string{s}
		}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
		return out
	}
	return nil
}

// oauthToken is a validated token.
type oauthToken struct {
	principal string
	expires   time.Time
}

// oauthError is a token refused: status and scope go to the client in the JSON error, reason
// to the log.
type oauthError struct {
	status string // invalid_token or insufficient_scope
	scope  string // the scope required, for insufficient_scope
	reason string
}

func (e *oauthError) Error() string { return e.reason }

// json is the RFC 7628 error the client is sent.
func (e *oauthError) json() []byte {
	m := map[string]string{"status": e.status}
	if e.scope != "" {
		m["scope"] = e.scope
	}
	b, _ := json.Marshal(m) // a map of strings always marshals
	return b
}

func invalidToken(format string, args ...any) *oauthError {
	return &oauthError{status: "invalid_token", reason: fmt.Sprintf(format, args...)}
}

// validate checks token as c says (unsecured or signed) at now.
func (c *OAuthBearerConfig) validate(token string, now time.Time) (oauthToken, *oauthError) {
	t, err := decodeJWT(token)
	if err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	if c.JWKS == nil {
		if alg, _ := t.header["alg"].(string); alg != "none" {
			return oauthToken{}, invalidToken("an unsecured JWS must have alg \"none\"")
		}
		if len(t.signature) != 0 {
			return oauthToken{}, invalidToken("an unsecured JWS must have an empty signature")
		}
	} else if err := c.JWKS.verify(t); err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	return c.checkClaims(t, now)
}

// checkClaims applies the claim rules: the principal, exp, iat, nbf, aud, iss and scope.
func (c *OAuthBearerConfig) checkClaims(t *jwt, now time.Time) (oauthToken, *oauthError) {
	principal, present, err := t.stringClaim(c.principalClaim())
	if err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	if !present || strings.TrimSpace(principal) == "" {
		return oauthToken{}, invalidToken("no value for the principal claim %s", c.principalClaim())
	}
	exp, present, err := t.timeClaim("exp")
	if err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	if !present {
		return oauthToken{}, invalidToken("no expiration time (exp) in the token")
	}
	if !now.Before(exp.Add(c.ClockSkew)) {
		return oauthToken{}, invalidToken("the token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	iat, present, err := t.timeClaim("iat")
	if err != nil {
		return oauthToken{}, invalidToken("%v", err)
	}
	if present && c.JWKS == nil {
		// Kafka's unsecured validator checks iat (OAuthBearerValidationUtils); its JWKS
		// validator (jose4j with setRequireIssuedAt) only requires it.
		if iat.After(now.Add(c.ClockSkew)) {
			return oauthToken{}, invalidToken("the token is issued in the future (iat %s)", iat.UTC().Format(time.RFC3339))
		}
		if !exp.After(iat) {
			return oauthToken{}, invalidToken("the token's exp is not after its iat")
		}
	} else if !present && c.JWKS != nil {
		return oauthToken{}, invalidToken("no issued-at time (iat) in the token")
	}
	if c.JWKS != nil {
		if e := c.checkSignedClaims(t, now); e != nil {
			return oauthToken{}, e
		}
	}
	if len(c.RequiredScope) > 0 {
		have := t.scope(c.scopeClaim())
		for _, want := range c.RequiredScope {
			if !slices.Contains(have, want) {
				return oauthToken{}, &oauthError{status: "insufficient_scope", scope: strings.Join(c.RequiredScope, " "),
					reason: fmt.Sprintf("the token's scope %v lacks the required scope %s", have, want)}
			}
		}
	}
	return oauthToken{principal: principal, expires: exp}, nil
}

// checkSignedClaims applies the rules only a JWKS listener has: nbf, aud and iss.
func (c *OAuthBearerConfig) checkSignedClaims(t *jwt, now time.Time) *oauthError {
	nbf, present, err := t.timeClaim("nbf")
	if err != nil {
		return invalidToken("%v", err)
	}
	if present && nbf.After(now.Add(c.ClockSkew)) {
		return invalidToken("the token is not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	var aud []string
	switch v := t.claims["aud"].(type) {
	case string:
		aud = []string{v}
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				aud = append(aud, s)
			}
		}
	}
	if len(c.ExpectedAudience) == 0 && len(aud) > 0 && !c.AllowUnverifiedAudience {
		// As jose4j's default audience check, which Kafka's validator keeps: a token meant
		// for some audience is refused by a broker that expects none.
		return invalidToken("the token names an audience %v, but sasl.oauthbearer.expected.audience is not set", aud)
	}
	if len(c.ExpectedAudience) > 0 {
		found := false
		for _, a := range aud {
			found = found || slices.Contains(c.ExpectedAudience, a)
		}
		if !found {
			return invalidToken("the token's audience %v is not among the expected %v", aud, c.ExpectedAudience)
		}
	}
	if c.ExpectedIssuer != "" {
		iss, _, err := t.stringClaim("iss")
		if err != nil {
			return invalidToken("%v", err)
		}
		if iss != c.ExpectedIssuer {
			return invalidToken("the token's issuer %q is not the expected %q", iss, c.ExpectedIssuer)
		}
	}
	return nil
}

// verifySignature checks sig over input with key for alg. Only asymmetric algorithms are
// accepted: a JWKS holds public keys.
func verifySignature(alg string, key crypto.PublicKey, input string, sig []byte) error {
	var h crypto.Hash
	switch alg {
	case "RS256", "PS256", "ES256":
		h = crypto.SHA256
	case "RS384", "PS384", "ES384":
		h = crypto.SHA384
	case "RS512", "PS512", "ES512":
		h = crypto.SHA512
	default:
		return fmt.Errorf("the JWT algorithm %q is not accepted", alg)
	}
	var digest []byte
	switch h {
	case crypto.SHA256:
		d := sha256.Sum256([]byte(input))
		digest = d[:]
	case crypto.SHA384:
		d := sha512.Sum384([]byte(input))
		digest = d[:]
	default:
		d := sha512.Sum512([]byte(input))
		digest = d[:]
	}
	switch alg[0] {
	case 'R', 'P':
		pub, ok := key.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("the key for %s is not an RSA key", alg)
		}
		var err error
		if alg[0] == 'R' {
			err = rsa.VerifyPKCS1v15(pub, h, digest, sig)
		} else {
			err = rsa.VerifyPSS(pub, h, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		}
		if err != nil {
			return errors.New("the JWT signature does not verify")
		}
		return nil
	default: // 'E'
		pub, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return fmt.Errorf("the key for %s is not an EC key", alg)
		}
		want := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		if pub.Curve != want {
			return fmt.Errorf("the key for %s is on the wrong curve", alg)
		}
		size := (want.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return errors.New("the JWT signature does not verify")
		}
		r := new(big.Int).SetBytes(sig[:size])
		s := new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(pub, digest, r, s) {
			return errors.New("the JWT signature does not verify")
		}
		return nil
	}
}

// oauthServer is one OAUTHBEARER exchange.
type oauthServer struct {
	cfg *OAuthBearerConfig
	now func() time.Time
	// errorSent holds the JSON error sent as the challenge, once a token was refused: the
	// client's \x01 that answers it ends the exchange with that error.
	errorSent []byte
	expires   time.Time // of the accepted token
}

func (s *oauthServer) Step(msg []byte) ([]byte, bool, string, error) {
	if len(msg) == 1 && msg[0] == 0x01 && s.errorSent != nil {
		return nil, false, "", &authFailure{string(s.errorSent)}
	}
	s.errorSent = nil
	r, err := parseOAuthInitialResponse(msg)
	if err != nil {
		return nil, false, "", err
	}
	tok, verr := s.cfg.validate(r.token, s.now())
	if verr != nil {
		s.errorSent = verr.json()
		return s.errorSent, false, "", &oauthRefused{verr}
	}
	if r.authzid != "" && r.authzid != tok.principal {
		return nil, false, "", &authFailure{fmt.Sprintf(
			"Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			r.authzid, tok.principal)}
	}
	s.expires = tok.expires
	return []byte{}, true, tok.principal, nil
}

// credentialExpires is the accepted token's exp (Kafka's CREDENTIAL.LIFETIME.MS).
func (s *oauthServer) credentialExpires() time.Time { return s.expires }

// oauthRefused is a token refused: the exchange goes on (the JSON error is the challenge),
// and the reason is logged once.
type oauthRefused struct{ err *oauthError }

func (e *oauthRefused) Error() string { return e.err.reason }
