package wire

import (
	"io"
	"net"
	"time"
)

// divertPeekTimeout bounds how long a new connection on a listener with Config.Divert may take
// to send its first 4 bytes.
const divertPeekTimeout = 10 * time.Second

// sniff reads the first 4 bytes of nc and hands the connection either to Config.DivertConn
// (when Config.Divert claims them) or to this server, with those bytes still to be read. It
// runs on its own goroutine so a silent client never holds up the accept loop.
func (s *Server) sniff(nc net.Conn) {
	var prefix [4]byte
	_ = nc.SetReadDeadline(time.Now().Add(divertPeekTimeout))
	if _, err := io.ReadFull(nc, prefix[:]); err != nil {
		_ = nc.Close()
		if s.limits != nil {
			s.limits.release(remoteIP(nc.RemoteAddr()))
		}
		return
	}
	_ = nc.SetReadDeadline(time.Time{})
	pc := &prefixedConn{Conn: nc, prefix: prefix[:]}
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
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
