package wire

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	keySaslHandshake    int16 = 17
	keySaslAuthenticate int16 = 36
	// keyRawSASLToken marks a pending that holds a raw SASL token (after SaslHandshake v0)
	// rather than a Kafka request.
	keyRawSASLToken int16 = -1
)

// DefaultSASLMaxReceiveBytes is Kafka's sasl.server.max.receive.size default: the largest
// frame a connection may send before it has authenticated.
const DefaultSASLMaxReceiveBytes = 524288

// SASLConfig is a SASL listener's authentication (SASL_PLAINTEXT or SASL_SSL).
type SASLConfig struct {
	// Mechanisms are sasl.enabled.mechanisms, as SaslHandshake lists them: PLAIN,
	// SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.
	Mechanisms []string
	// PlainUsers are the PLAIN users and passwords (user_NAME="password" of the listener's
	// PlainLoginModule).
	PlainUsers map[string]string
	// Scram holds, per SCRAM mechanism, each user's stored credential (from JAAS config).
	Scram map[string]map[string]ScramCredential
	// ScramLookup, when set, is asked first for a SCRAM user's credential (the metadata
	// image's, where AlterUserScramCredentials puts them); Scram is the fallback. It is called
	// once per login, from the connection's goroutine, and must be safe for concurrent use.
	ScramLookup func(mechanism, user string) (ScramCredential, bool)
	// OAuthBearer validates OAUTHBEARER tokens (sasl_oauth.go); required when OAUTHBEARER is
	// among Mechanisms.
	OAuthBearer *OAuthBearerConfig
	// MaxReceiveBytes is sasl.server.max.receive.size: no frame before authentication may be
	// larger (0: DefaultSASLMaxReceiveBytes).
	MaxReceiveBytes int32
	// MaxReauth is connections.max.reauth.ms: a session lasts this long, and a connection that
	// sends anything but a re-authentication after it ends is closed (KIP-368). 0: forever.
	MaxReauth time.Duration
	// FailedAuthDelay is connection.failed.authentication.delay.ms: the failure response (and
	// the close after it) waits this long, slowing down password guessing.
	FailedAuthDelay time.Duration
}

func (c *SASLConfig) validate() error {
	if len(c.Mechanisms) == 0 {
		return errors.New("wire: SASL listener without mechanisms")
	}
	for _, m := range c.Mechanisms {
		switch m {
		case "PLAIN":
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
		case "OAUTHBEARER":
			if c.OAuthBearer == nil {
				return errors.New("wire: OAUTHBEARER enabled without a token validator")
			}
		default:
			return fmt.Errorf("wire: SASL mechanism %s is not implemented", m)
		}
	}
	return nil
}

// mechanismServer is one mechanism's side of an exchange.
type mechanismServer interface {
	// Step takes one client token. done is set when the exchange succeeded with this token,
	// and user then is the authenticated user. An error is a failed authentication:
	// *authFailure carries the message for the client; any other error gets Kafka's generic
	// "invalid credentials" message.
	Step(token []byte) (resp []byte, done bool, user string, err error)
}

type plainServer struct{ users map[string]string }

// Step checks "authzid NUL authcid NUL password" as Kafka's PlainSaslServer does.
func (p plainServer) Step(token []byte) ([]byte, bool, string, error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, false, "", &authFailure{fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))}
	}
	authzid, user, password := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, "", &authFailure{"Authentication failed: username not specified"}
	}
	if len(password) == 0 {
		return nil, false, "", &authFailure{"Authentication failed: password not specified"}
	}
	want, ok := p.users[user]
	// Compare even for an unknown user, so timing does not tell which users exist.
	equal := subtle.ConstantTimeCompare([]byte(want), password) == 1
	if !ok || !equal {
		return nil, false, "", &authFailure{"Authentication failed: Invalid username or password"}
	}
	if authzid != "" && authzid != user {
		return nil, false, "", &authFailure{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	return []byte{}, true, user, nil
}

type saslState int8

const (
	saslHandshake    saslState = iota // expects ApiVersions or SaslHandshake
	saslAuthenticate                  // expects SaslAuthenticate (or a raw token after handshake v0)
	saslComplete                      // authenticated
)

// saslSession is one connection's SASL state. Only the handler goroutine touches it (the
// reader looks at it only while waiting on stepDone, after the handler is done with it).
type saslSession struct {
	cfg        *SASLConfig
	state      saslState
	mechanism  string
	server     mechanismServer
	raw        bool // SaslHandshake v0: tokens are bare size-prefixed frames
	reauth     bool // re-authenticating an authenticated session
	principal  string
	expires    time.Time // end of the session; zero: none
	authBegins time.Time
	now        func() time.Time // the server's clock
	// oauthRefusalLogged: an OAUTHBEARER token of this exchange was refused and logged with
	// its reason, so the failure that follows is not logged again at info.
	oauthRefusalLogged bool
}

func (s *saslSession) newServer(mechanism string) mechanismServer {
	switch mechanism {
	case "PLAIN":
		return plainServer{users: s.cfg.PlainUsers}
	case "OAUTHBEARER":
		return &oauthServer{cfg: s.cfg.OAuthBearer, now: s.now}
	default:
		creds, lookup := s.cfg.Scram[mechanism], s.cfg.ScramLookup
		return newScramServer(mechanism, func(user string) (ScramCredential, bool) {
			if lookup != nil {
				if c, ok := lookup(mechanism, user); ok {
					return c, true
				}
			}
			c, ok := creds[user]
			return c, ok
		})
	}
}

func (s *saslSession) enabled(mechanism string) bool {
	for _, m := range s.cfg.Mechanisms {
		if m == mechanism {
			return true
		}
	}
	return false
}

// handleSASL serves p when it belongs to the SASL exchange, or refuses it when the connection
// has not authenticated. It returns false when p is an ordinary request the broker should
// serve (ApiVersions before authentication, anything after it).
func (c *conn) handleSASL(p *pending) bool {
	s := c.sasl
	key := p.key
	switch s.state {
	case saslComplete:
		switch key {
		case keySaslHandshake:
			// KIP-368: a SaslHandshake on an authenticated connection re-authenticates it.
			s.reauth = true
			s.state = saslHandshake
			return c.saslHandshake(p)
		case keySaslAuthenticate:
			// As Kafka's KafkaApis: answered with ILLEGAL_SASL_STATE, the connection stays.
			msg := "SaslAuthenticate request received after successful authentication"
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.ErrorCode = kerr.IllegalSaslState.Code
			resp.ErrorMessage = &msg
			c.answer(p, resp, nil)
			return true
		}
		if !s.expires.IsZero() && c.srv.now().After(s.expires) {
			// As Kafka's KafkaChannel.serverAuthenticationSessionExpired: the connection is
			// closed rather than served.
			c.log.Info("wire: SASL session expired without re-authentication; closing connection",
				"principal", s.principal, "api_key", key)
			c.close(errors.New("SASL session expired"))
			return true
		}
		return false
	case saslHandshake:
		switch key {
		case keyApiVersions:
			return s.reauth && c.closeUnexpected(p, "during SASL re-authentication")
		case keySaslHandshake:
			return c.saslHandshake(p)
		}
		return c.closeUnexpected(p, "during SASL handshake")
	default: // saslAuthenticate
		if s.raw && key == keyRawSASLToken {
			c.saslStep(p, p.rawToken, 0)
			return true
		}
		if !s.raw && key == keySaslAuthenticate {
			req, ok := p.req.Body.(*kmsg.SASLAuthenticateRequest)
			if !ok {
				c.close(errors.New("SaslAuthenticate body of the wrong type"))
				return true
			}
			c.saslStep(p, req.SASLAuthBytes, req.Version)
			return true
		}
		if s.reauth && key != keySaslHandshake && key != keySaslAuthenticate {
			return false // a request pipelined during re-authentication runs as before it
		}
		return c.closeUnexpected(p, "during SASL authentication")
	}
}

// closeUnexpected closes the connection for a request the SASL state does not allow, as Kafka's
// SaslServerAuthenticator does ("Unexpected Kafka request of type X during SASL handshake").
func (c *conn) closeUnexpected(p *pending, when string) bool {
	name := kmsg.NameForKey(p.key)
	if p.key == keyRawSASLToken {
		name = "raw SASL token"
	}
	c.log.Info("wire: unexpected request; closing connection", "api_key", p.key, "api", name, "when", when)
	c.close(fmt.Errorf("unexpected %s request %s", name, when))
	return true
}

func (c *conn) saslHandshake(p *pending) bool {
	s := c.sasl
	req, ok := p.req.Body.(*kmsg.SASLHandshakeRequest)
	if !ok {
		c.close(errors.New("SaslHandshake body of the wrong type"))
		return true
	}
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = append([]string(nil), s.cfg.Mechanisms...)
	if !s.enabled(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.log.Info("wire: SASL mechanism not enabled; closing connection", "mechanism", req.Mechanism)
		c.failAfter(p, resp, 0)
		return true
	}
	if s.reauth && req.Mechanism != s.mechanism {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		c.log.Info("wire: SASL re-authentication with another mechanism; closing connection",
			"mechanism", req.Mechanism, "was", s.mechanism)
		c.failAfter(p, resp, 0)
		return true
	}
	if s.reauth && req.Version == 0 {
		c.close(errors.New("SASL re-authentication needs SaslHandshake v1"))
		return true
	}
	s.mechanism = req.Mechanism
	s.server = s.newServer(req.Mechanism)
	s.raw = req.Version == 0
	s.state = saslAuthenticate
	s.authBegins = c.srv.now()
	if s.raw {
		c.saslRaw.Store(true)
	}
	c.answer(p, resp, nil)
	return true
}

// saslStep feeds one token to the mechanism and answers: a SaslAuthenticate response (version
// >= 0) or a raw token (raw mode).
func (c *conn) saslStep(p *pending, token []byte, version int16) {
	s := c.sasl
	out, done, user, err := s.server.Step(token)
	var refused *oauthRefused
	if errors.As(err, &refused) {
		// RFC 7628: the error status goes to the client as a challenge; it answers \x01 and
		// the exchange then fails with that status (oauthServer.Step).
		c.log.Info("wire: SASL OAUTHBEARER token refused", "reason", refused.err.reason, "status", refused.err.status)
		s.oauthRefusalLogged = true
		c.answerToken(p, out, 0)
		return
	}
	if err != nil {
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + s.mechanism
		var af *authFailure
		if errors.As(err, &af) {
			msg = af.msg
		}
		if s.reauth {
			msg = "Authentication failed during re-authentication due to invalid credentials with SASL mechanism " + s.mechanism
			if af != nil {
				msg = af.msg
			}
		}
		// One line per failure, without the token (it carries the password). A refused
		// OAUTHBEARER token was logged with its reason when it was refused.
		if s.oauthRefusalLogged {
			c.log.Debug("wire: SASL authentication failed; closing connection", "mechanism", s.mechanism, "reason", msg)
		} else {
			c.log.Info("wire: SASL authentication failed; closing connection",
				"mechanism", s.mechanism, "reason", msg)
		}
		if s.raw {
			// SaslHandshake v0 has no way to carry an error: close, as Kafka does.
			c.close(errors.New("SASL authentication failed"))
			return
		}
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		c.failAfter(p, resp, s.cfg.FailedAuthDelay)
		return
	}
	if !done {
		c.answerToken(p, out, 0)
		return
	}
	principal := "User:" + user
	if s.reauth && principal != s.principal {
		msg := fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", s.principal, principal)
		c.log.Info("wire: SASL re-authentication failed; closing connection", "reason", msg)
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		c.failAfter(p, resp, 0)
		return
	}
	now := c.srv.now()
	s.expires, s.oauthRefusalLogged = time.Time{}, false
	var credentialExpires time.Time
	if ce, ok := s.server.(interface{ credentialExpires() time.Time }); ok {
		credentialExpires = ce.credentialExpires()
	}
	lifetime := sessionLifetime(now, s.cfg.MaxReauth, credentialExpires)
	if lifetime > 0 || s.cfg.MaxReauth > 0 || !credentialExpires.IsZero() {
		s.expires = now.Add(lifetime)
	}
	if !s.reauth {
		c.log.Debug("wire: SASL authenticated", "principal", principal, "mechanism", s.mechanism)
	}
	s.principal = principal
	s.state = saslComplete
	s.reauth = false
	s.server = nil
	c.info.setPrincipal(principal)
	c.saslRaw.Store(false)
	c.authenticated.Store(true)
	c.answerToken(p, out, lifetime.Milliseconds())
}

// sessionLifetime is how long a session authenticated at now lasts, as Kafka's
// SaslServerAuthenticator computes it (KIP-368): connections.max.reauth.ms when the credential
// does not expire, the credential's remaining lifetime (an OAUTHBEARER token's exp) when
// maxReauth is 0, else the smaller of the two; never negative. 0 with neither: no expiry.
func sessionLifetime(now time.Time, maxReauth time.Duration, credentialExpires time.Time) time.Duration {
	var d time.Duration
	switch {
	case credentialExpires.IsZero():
		d = max(maxReauth, 0)
	case maxReauth <= 0:
		d = credentialExpires.Sub(now)
	default:
		d = min(credentialExpires.Sub(now), maxReauth)
	}
	return max(d, 0).Truncate(time.Millisecond)
}

// answerToken answers a SASL token: as a SaslAuthenticate response, or raw in raw mode.
func (c *conn) answerToken(p *pending, token []byte, lifetimeMillis int64) {
	if c.sasl.raw {
		c.answerRaw(p, token)
		return
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SASLAuthBytes = token
	resp.SessionLifetimeMillis = lifetimeMillis
	c.answer(p, resp, nil)
}

// failAfter answers p with resp and closes the connection once it is written, after delay:
// nothing else is read from the connection.
func (c *conn) failAfter(p *pending, resp kmsg.Response, delay time.Duration) {
	c.saslFailed.Store(true)
	p.closeAfter = true
	if delay <= 0 {
		c.answer(p, resp, nil)
		return
	}
	time.AfterFunc(delay, func() { c.answer(p, resp, nil) })
}
