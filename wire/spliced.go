package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SplicedResponse is an optional interface of a response whose encoding includes byte ranges
// that are sent straight from files rather than copied into the response buffer — a fetch
// response's record batches, sent with sendfile(2).
type SplicedResponse interface {
	kmsg.Response
	// AppendSpliced appends the encoded body to dst without the splices' bytes, and returns
	// where each splice goes: splice i's Length bytes are sent just before byte At of the
	// appended body (At counted from where the body starts in dst). Splices are in order of At.
	AppendSpliced(dst []byte) ([]byte, []Splice)
}

// Splice is a byte range of a response sent by its own writer.
type Splice struct {
	At     int
	Length int64
	// Send writes exactly Length bytes to w (a short write is an error, which closes the
	// connection since the frame could not be completed).
	Send func(w io.Writer) (int64, error)
}

// writeSpliced sends everything buffered in buf plus the frame of resp, whose spliced ranges
// are written by their own Send between the buffered parts. It returns what remains buffered
// (the tail of the frame after its last splice) for the writer to coalesce with what follows.
func (c *conn) writeSpliced(buf []byte, correlationID int32, resp SplicedResponse) ([]byte, error) {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != keyApiVersions {
		buf = append(buf, 0) // no header tags
	}
	bodyStart := len(buf)
	buf, splices := resp.AppendSpliced(buf)
	size := int64(len(buf) - start - 4)
	for _, s := range splices {
		size += s.Length
	}
	if size > math.MaxInt32 {
		return buf[:start], fmt.Errorf("wire: response of %d bytes does not fit a frame", size)
	}
	binary.BigEndian.PutUint32(buf[start:], uint32(size))

	sent := 0 // bytes of buf already written
	for _, s := range splices {
		at := bodyStart + s.At
		if err := c.writeAll(buf[sent:at]); err != nil {
			return nil, err
		}
		sent = at
		c.setWriteDeadline()
		var w io.Writer = c.nc
		if c.tlsConn != nil {
			// The bytes must go through TLS: a copy, not sendfile (segment bytes are sent as
			// they are, which only a plaintext socket may see).
			w = plainWriter{c.nc}
		}
		n, err := s.Send(w)
		if err == nil && n != s.Length {
			err = io.ErrShortWrite
		}
		if err != nil {
			return nil, fmt.Errorf("wire: spliced write: %w", err)
		}
	}
	return append(buf[:0], buf[sent:]...), nil
}
