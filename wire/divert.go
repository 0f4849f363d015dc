package wire

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"
)

// divertPeekTimeout bounds how long a new connection on a listener with Config.Divert may take
// to send its first 4 bytes.
const divertPeekTimeout = 10 * time.Second

// sniff reads the first 4 bytes of nc and hands the connection either to Config.DivertConn
// (when Config.Divert claims them) or to this server, with those bytes still to be read. It
// runs on its own goroutine so a silent client never holds up the accept loop. On a TLS
// listener the handshake comes first and the 4 bytes are the first ones inside TLS, so a
// diverted connection (raft between controllers) is as protected as a Kafka one.
func (s *Server) sniff(nc net.Conn) {
	var prefix [4]byte
	_ = nc.SetDeadline(time.Now().Add(divertPeekTimeout))
	src, tc := nc, (*tls.Conn)(nil)
	if s.cfg.TLS != nil {
		tc = tls.Server(nc, s.cfg.TLS)
		src = tc
	}
	if _, err := io.ReadFull(src, prefix[:]); err != nil {
		if tc != nil && !errors.Is(err, io.EOF) {
			s.log.Info("wire: TLS handshake failed; closing connection", "remote", nc.RemoteAddr().String(), "err", err)
		}
		_ = nc.Close()
		if s.limits != nil {
			s.limits.release(remoteIP(nc.RemoteAddr()))
		}
		return
	}
	_ = nc.SetDeadline(time.Time{})
	pc := &prefixedConn{Conn: src, prefix: prefix[:], tls: tc}
	if s.cfg.Divert(prefix) {
		if s.limits != nil {
			s.limits.release(remoteIP(nc.RemoteAddr()))
		}
		s.cfg.DivertConn(pc)
		return
	}
	s.serve(pc)
}

// prefixedConn replays bytes already read from a connection before reading more of it.
type prefixedConn struct {
	net.Conn
	prefix []byte
	// tls is Conn as a TLS server connection whose handshake is done, on a TLS listener.
	tls *tls.Conn
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// DivertedPrincipal is the principal of a connection handed to Config.DivertConn, as this
// listener would give a Kafka connection without SASL: on a TLS listener the client
// certificate's subject mapped by mapper (ssl.principal.mapping.rules), else User:ANONYMOUS.
// A certificate whose subject no rule maps is an error, as the listener refuses it.
func DivertedPrincipal(c net.Conn, mapper *PrincipalMapper) (string, error) {
	pc, ok := c.(*prefixedConn)
	if !ok || pc.tls == nil {
		return AnonymousPrincipal, nil
	}
	return certificatePrincipal(pc.tls.ConnectionState(), mapper)
}
