package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"
)

// tlsHandshakeTimeout bounds a new connection's TLS handshake: a client that opens a TCP
// connection and sends nothing (or a trickle) is cut off after this long.
const tlsHandshakeTimeout = 10 * time.Second

// tlsHandshake completes the TLS handshake of a new connection and, on an SSL listener, sets
// the connection's principal from the client certificate (ssl.principal.mapping.rules), as
// Kafka's DefaultKafkaPrincipalBuilder does. A failure is logged once, at info (a port scan or
// a client configured for PLAINTEXT looks like this), and closes the connection.
func (c *conn) tlsHandshake() error {
	ctx, cancel := context.WithTimeout(c.ctx, min(tlsHandshakeTimeout, c.srv.cfg.IdleTimeout))
	defer cancel()
	if err := c.tlsConn.HandshakeContext(ctx); err != nil {
		if !errors.Is(err, io.EOF) && !c.draining.Load() {
			c.log.Info("wire: TLS handshake failed; closing connection", "err", err)
		}
		return fmt.Errorf("tls handshake: %w", err)
	}
	if c.sasl != nil {
		return nil // SASL_SSL: the SASL user is the principal
	}
	principal, err := certificatePrincipal(c.tlsConn.ConnectionState(), c.srv.cfg.PrincipalMapper)
	if err != nil {
		c.log.Info("wire: no principal for the client certificate; closing connection", "err", err)
		return fmt.Errorf("tls principal: %w", err)
	}
	if principal != AnonymousPrincipal {
		c.info.setPrincipal(principal)
	}
	return nil
}

// certificatePrincipal is the principal of a TLS connection: its client certificate's subject
// mapped by mapper (ssl.principal.mapping.rules; nil keeps the subject), as Kafka's
// DefaultKafkaPrincipalBuilder does, or User:ANONYMOUS without a certificate (ssl.client.auth
// none, or requested and not sent).
func certificatePrincipal(state tls.ConnectionState, mapper *PrincipalMapper) (string, error) {
	if len(state.PeerCertificates) == 0 {
		return AnonymousPrincipal, nil
	}
	dn, err := DistinguishedName(state.PeerCertificates[0].RawSubject)
	if err != nil {
		return "", err
	}
	if mapper == nil {
		return "User:" + dn, nil
	}
	name, err := mapper.Name(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}

// plainWriter hides every method of a writer but Write, so that a TLS connection is written
// to through TLS: sendfile, which would bypass the encryption, is never tried on it.
type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
