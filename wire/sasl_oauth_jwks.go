package wire

// The JSON Web Key Set an OAUTHBEARER listener checks signed tokens with
// (sasl.oauthbearer.jwks.endpoint.url), as Kafka's RefreshingHttpsJwks keeps it: loaded when
// the listener starts (a start fails without it), reloaded every
// sasl.oauthbearer.jwks.endpoint.refresh.ms, and reloaded early when a token names a key ID
// the set does not have (at most once per sasl.oauthbearer.jwks.endpoint.retry.backoff.ms, so
// tokens with made-up key IDs cannot make the broker hammer the endpoint). A reload that fails
// keeps the keys it had. The URL may be file:// (a local file, as Kafka 4 allows) or
// http(s)://.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// jwksMaxBytes bounds a JWKS document sluice reads.
const jwksMaxBytes = 1 << 20

// jwksFetchTimeout bounds one HTTP fetch of the JWKS.
const jwksFetchTimeout = 10 * time.Second

// JWKSConfig says where a JWKS is and how often it is reloaded.
type JWKSConfig struct {
	URL string
	// Refresh is sasl.oauthbearer.jwks.endpoint.refresh.ms (0: one hour, Kafka's default).
	Refresh time.Duration
	// RetryBackoff is sasl.oauthbearer.jwks.endpoint.retry.backoff.ms: the least time between
	// two reloads asked for by unknown key IDs (0: 100 ms).
	RetryBackoff time.Duration
	// Now is the clock (nil: time.Now). Client is the HTTP client (nil: one with
	// jwksFetchTimeout).
	Now    func() time.Time
	Client *http.Client
	// Logger gets the one line a failed reload writes (nil: slog.Default()).
	Logger *slog.Logger
}

// jwk is one usable key of the set.
type jwk struct {
	kid string
	alg string // may be empty
	key crypto.PublicKey
}

// JWKS is a loaded, refreshing key set. Safe for concurrent use.
type JWKS struct {
	cfg JWKSConfig
	mu  struct {
		sync.Mutex
		keys      []jwk
		loadedAt  time.Time // last successful load
		triedAt   time.Time // last attempt (successful or not)
		reloading bool      // a background reload is running
	}
}

// NewJWKS loads the key set at cfg.URL; an error (unreadable, malformed, no usable key)
// stops the listener from starting, as Kafka's broker fails to start.
func NewJWKS(cfg JWKSConfig) (*JWKS, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Hour
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: jwksFetchTimeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("the JWKS URL is not a URL: %w", err)
	}
	switch u.Scheme {
	case "file", "http", "https":
	default:
		return nil, fmt.Errorf("the JWKS URL must be file://, http:// or https://, not %q", u.Scheme)
	}
	j := &JWKS{cfg: cfg}
	keys, err := j.fetch()
	if err != nil {
		return nil, err
	}
	now := cfg.Now()
	j.mu.keys, j.mu.loadedAt, j.mu.triedAt = keys, now, now
	return j, nil
}

// fetch reads and parses the set.
func (j *JWKS) fetch() ([]jwk, error) {
	u, _ := url.Parse(j.cfg.URL) // checked by NewJWKS
	var body []byte
	if u.Scheme == "file" {
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, fmt.Errorf("reading the JWKS: %w", err)
		}
		defer f.Close()
		if body, err = io.ReadAll(io.LimitReader(f, jwksMaxBytes+1)); err != nil {
			return nil, fmt.Errorf("reading the JWKS: %w", err)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.cfg.URL, nil)
		if err != nil {
			return nil, fmt.Errorf("fetching the JWKS: %w", err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := j.cfg.Client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetching the JWKS: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetching the JWKS: HTTP status %d", resp.StatusCode)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1)); err != nil {
			return nil, fmt.Errorf("fetching the JWKS: %w", err)
		}
	}
	if len(body) > jwksMaxBytes {
		return nil, fmt.Errorf("the JWKS is larger than %d bytes", jwksMaxBytes)
	}
	return parseJWKS(body)
}

// parseJWKS parses a JWK Set (RFC 7517), keeping the RSA and EC (P-256, P-384, P-521) public
// keys meant for signatures; others are skipped. A set with no usable key is an error.
func parseJWKS(body []byte) ([]jwk, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the JWKS is not a JSON key set: %w", err)
	}
	b64 := func(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
	var keys []jwk
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err1 := b64(k.N)
			e, err2 := b64(k.E)
			if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
				continue
			}
			exp := int(new(big.Int).SetBytes(e).Int64())
			pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
			if pub.N.BitLen() < 2048 || exp < 3 || exp%2 == 0 {
				continue // too weak to trust, as crypto/rsa would refuse it
			}
			keys = append(keys, jwk{kid: k.Kid, alg: k.Alg, key: pub})
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				continue
			}
			x, err1 := b64(k.X)
			y, err2 := b64(k.Y)
			size := (curve.Params().BitSize + 7) / 8
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				continue
			}
			point := append(append([]byte{4}, x...), y...)
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
			if err != nil {
				continue // not a point on the curve
			}
			keys = append(keys, jwk{kid: k.Kid, alg: k.Alg, key: pub})
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS has no usable signing key (RSA, or EC on P-256, P-384 or P-521)")
	}
	return keys, nil
}

// reload fetches the set again; a failure keeps the keys.
func (j *JWKS) reload() {
	keys, err := j.fetch()
	now := j.cfg.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.reloading = false
	if err != nil {
		j.cfg.Logger.Warn("wire: reloading the OAUTHBEARER JWKS failed; keeping the keys loaded before", "url", j.cfg.URL, "err", err)
		return
	}
	j.mu.keys, j.mu.loadedAt = keys, now
}

// candidates returns the keys a token with kid and alg may be signed by. A kid the set does not
// have reloads the set first (rate-limited); a set older than Refresh is reloaded in the
// background.
func (j *JWKS) candidates(kid, alg string) []jwk {
	now := j.cfg.Now()
	j.mu.Lock()
	match := matchKeys(j.mu.keys, kid, alg)
	if len(match) == 0 && kid != "" && now.Sub(j.mu.triedAt) >= j.cfg.RetryBackoff && !j.mu.reloading {
		j.mu.triedAt = now
		j.mu.reloading = true
		j.mu.Unlock()
		j.reload() // in the connection's goroutine: this login waits for it
		j.mu.Lock()
		match = matchKeys(j.mu.keys, kid, alg)
	}
	if now.Sub(j.mu.loadedAt) >= j.cfg.Refresh && now.Sub(j.mu.triedAt) >= j.cfg.RetryBackoff && !j.mu.reloading {
		j.mu.triedAt = now
		j.mu.reloading = true
		go j.reload()
	}
	j.mu.Unlock()
	return match
}

// matchKeys selects by kid (when the token names one) and by the key's alg (when the key
// names one).
func matchKeys(keys []jwk, kid, alg string) []jwk {
	var out []jwk
	for _, k := range keys {
		if kid != "" && k.kid != kid {
			continue
		}
		if k.alg != "" && k.alg != alg {
			continue
		}
		out = append(out, k)
	}
	return out
}

// verify checks t's signature with a key of the set.
func (j *JWKS) verify(t *jwt) error {
	alg, _ := t.header["alg"].(string)
	if alg == "" || alg == "none" {
		return errors.New("the token is not signed (alg none)")
	}
	kid, _ := t.header["kid"].(string)
	keys := j.candidates(kid, alg)
	if len(keys) == 0 {
		if kid != "" {
			return fmt.Errorf("no key with ID %q for %s in the JWKS", kid, alg)
		}
		return fmt.Errorf("no key for %s in the JWKS", alg)
	}
	var err error
	for _, k := range keys {
		if err = verifySignature(alg, k.key, t.signingInput, t.signature); err == nil {
			return nil
		}
	}
	return err
}
