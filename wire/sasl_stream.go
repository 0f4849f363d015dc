package wire

// SASL on a connection a listener diverts before its Kafka protocol starts (Config.DivertConn:
// raft between controllers on a SASL_PLAINTEXT or SASL_SSL controller listener). Kafka
// authenticates every connection to a SASL listener, its controllers' raft channels included;
// sluice's raft transport is not Kafka requests, so it runs the same exchange itself, in
// Kafka's framing, right after its own hello: the client sends SaslHandshake v1 and then
// SaslAuthenticate requests, each a size-prefixed Kafka request, and reads each answer, as a
// Kafka client does; the server checks them with the listener's SASLConfig, the same
// mechanism servers (and SCRAM credentials) as the listener's Kafka connections.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// saslStreamVersion is the SaslAuthenticate version both sides use on a diverted connection:
// v1 carries the session lifetime and, unlike v2, is not flexible, so its headers are the
// plain ones.
const saslStreamVersion = 1

// StreamSession is what ServeSASLStream authenticated.
type StreamSession struct {
	Principal string    // "User:NAME"
	Mechanism string    // the mechanism the client used
	Expires   time.Time // when the session ends (connections.max.reauth.ms, a token's exp); zero: never
}

// ErrStreamAuthentication is wrapped by ServeSASLStream's and AuthenticateSASLStream's errors
// when the credentials (or the mechanism) were refused, as opposed to a broken connection.
var ErrStreamAuthentication = errors.New("SASL authentication failed")

// ServeSASLStream is the server side of the exchange: it reads SaslHandshake v1 and then
// SaslAuthenticate v1 requests from r (each frame bounded by MaxReceiveBytes), answers on w,
// and returns the session once a mechanism accepted the client. A refused mechanism or
// credential is answered (UNSUPPORTED_SASL_MECHANISM, or SASL_AUTHENTICATION_FAILED with
// Kafka's message after FailedAuthDelay) before the error, which wraps
// ErrStreamAuthentication; the caller closes the connection on any error.
func (c *SASLConfig) ServeSASLStream(r io.Reader, w io.Writer) (StreamSession, error) {
	maxBytes := c.MaxReceiveBytes
	if maxBytes <= 0 {
		maxBytes = DefaultSASLMaxReceiveBytes
	}
	vt := newVersionTable([]VersionRange{{Key: keySaslHandshake, Min: 1, Max: 1},
		{Key: keySaslAuthenticate, Min: saslStreamVersion, Max: saslStreamVersion}})
	read := func(want int16) (*Request, error) {
		frame, err := readFrame(r, maxBytes, nil, nil)
		if err != nil {
			return nil, err
		}
		req, err := decodeRequest(frame, vt)
		if err != nil {
			return nil, err
		}
		if req.Key != want {
			return nil, fmt.Errorf("unexpected %s request during SASL %s", kmsg.NameForKey(req.Key), map[int16]string{
				keySaslHandshake: "handshake", keySaslAuthenticate: "authentication"}[want])
		}
		return req, nil
	}
	req, err := read(keySaslHandshake)
	if err != nil {
		return StreamSession{}, err
	}
	hs := req.Body.(*kmsg.SASLHandshakeRequest)
	hsResp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	hsResp.SupportedMechanisms = append([]string(nil), c.Mechanisms...)
	s := &saslSession{cfg: c, now: time.Now}
	if !s.enabled(hs.Mechanism) {
		hsResp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		_ = writeStreamResponse(w, req.CorrelationID, hsResp)
		return StreamSession{}, fmt.Errorf("%w: mechanism %s is not enabled (%v)", ErrStreamAuthentication, hs.Mechanism, c.Mechanisms)
	}
	if err := writeStreamResponse(w, req.CorrelationID, hsResp); err != nil {
		return StreamSession{}, err
	}
	server := s.newServer(hs.Mechanism)
	for {
		req, err := read(keySaslAuthenticate)
		if err != nil {
			return StreamSession{}, err
		}
		token := req.Body.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes
		out, done, user, err := server.Step(token)
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = saslStreamVersion
		var refused *oauthRefused
		switch {
		case errors.As(err, &refused):
			// RFC 7628: the error status goes back as a challenge; the client's answer
			// then fails the exchange (oauthServer.Step).
			resp.SASLAuthBytes = out
		case err != nil:
			msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + hs.Mechanism
			var af *authFailure
			if errors.As(err, &af) {
				msg = af.msg
			}
			resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
			if c.FailedAuthDelay > 0 {
				time.Sleep(c.FailedAuthDelay) // as the listener's Kafka connections: slows down guessing
			}
			_ = writeStreamResponse(w, req.CorrelationID, resp)
			return StreamSession{}, fmt.Errorf("%w: %s", ErrStreamAuthentication, msg)
		default:
			resp.SASLAuthBytes = out
		}
		if !done {
			if err := writeStreamResponse(w, req.CorrelationID, resp); err != nil {
				return StreamSession{}, err
			}
			continue
		}
		now := time.Now()
		var credentialExpires time.Time
		if ce, ok := server.(interface{ credentialExpires() time.Time }); ok {
			credentialExpires = ce.credentialExpires()
		}
		session := StreamSession{Principal: "User:" + user, Mechanism: hs.Mechanism}
		lifetime := sessionLifetime(now, c.MaxReauth, credentialExpires)
		if lifetime > 0 || c.MaxReauth > 0 || !credentialExpires.IsZero() {
			session.Expires = now.Add(lifetime)
		}
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
		if err := writeStreamResponse(w, req.CorrelationID, resp); err != nil {
			return StreamSession{}, err
		}
		return session, nil
	}
}

// writeStreamResponse writes one non-flexible Kafka response: size, correlation ID, body.
func writeStreamResponse(w io.Writer, correlationID int32, resp kmsg.Response) error {
	b := make([]byte, 8, 64)
	binary.BigEndian.PutUint32(b[4:], uint32(correlationID))
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := w.Write(b)
	return err
}

// AuthenticateSASLStream is the client side: it authenticates with mech over rw (host is the
// peer's host:port, for mechanisms that use it), as franz-go's client does on a Kafka
// connection, and returns once the server accepted it. Each answer is bounded by
// DefaultSASLMaxReceiveBytes. An error from the server wraps ErrStreamAuthentication.
func AuthenticateSASLStream(ctx context.Context, rw io.ReadWriter, mech sasl.Mechanism, host string) error {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("sluice-raft"))
	var correlationID int32
	roundTrip := func(req kmsg.Request, resp kmsg.Response) error {
		correlationID++
		if _, err := rw.Write(formatter.AppendRequest(nil, req, correlationID)); err != nil {
			return err
		}
		frame, err := readSizedFrame(rw, 4, DefaultSASLMaxReceiveBytes, nil, nil)
		if err != nil {
			var fse *FrameSizeError
			if errors.As(err, &fse) {
				return fmt.Errorf("the peer's answer is not a SASL response (a frame of %d bytes): does its listener run SASL? %w", fse.Size, err)
			}
			return err
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != correlationID {
			return fmt.Errorf("SASL response with correlation ID %d, want %d", got, correlationID)
		}
		resp.SetVersion(req.GetVersion())
		return resp.ReadFrom(frame[4:])
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech.Name()
	hsResp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if err := roundTrip(hs, hsResp); err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("%w: SaslHandshake for %s: %v (the peer enables %v)", ErrStreamAuthentication, mech.Name(), err, hsResp.SupportedMechanisms)
	}
	session, clientWrite, err := mech.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	for done := false; !done || len(clientWrite) > 0; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = saslStreamVersion, clientWrite
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if err := roundTrip(req, resp); err != nil {
			return fmt.Errorf("SaslAuthenticate: %w", err)
		}
		if resp.ErrorCode != 0 {
			msg := kerr.ErrorForCode(resp.ErrorCode).Error()
			if resp.ErrorMessage != nil {
				msg += ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("%w: %s", ErrStreamAuthentication, msg)
		}
		clientWrite = nil
		if !done {
			if done, clientWrite, err = session.Challenge(resp.SASLAuthBytes); err != nil {
				return err
			}
		}
	}
	return nil
}
