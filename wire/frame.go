package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// minFrameSize is the smallest request frame worth reading: api key, api version and
// correlation id (request header v0). Anything shorter cannot even name its request.
const minFrameSize = 8

// frameGrowStart is the first allocation for a frame body larger than pooledFrameMax. The
// buffer then doubles as bytes arrive, so a client that declares a huge frame and sends little
// costs us about what it sent (times two), not what it declared.
const frameGrowStart = 1 << 20

// FrameSizeError is returned for a frame whose declared size is out of bounds. The frame body is
// never read or allocated.
type FrameSizeError struct {
	Size int32
	Max  int32
}

func (e *FrameSizeError) Error() string {
	if e.Size < minFrameSize {
		return fmt.Sprintf("wire: frame size %d below minimum %d", e.Size, minFrameSize)
	}
	return fmt.Sprintf("wire: frame size %d exceeds max request bytes %d", e.Size, e.Max)
}

// readFrame reads one size-prefixed frame from r and returns its contents (without the size).
// The returned slice is owned by the caller: decoded requests alias it (produce records are not
// copied). Frames up to pooledFrameMax come from the frame pools (putFrame may return them once
// nothing aliases them); larger ones grow as their bytes arrive.
//
// started is called (when non-nil) once the first byte of the frame has been read, so the caller
// can tell a half-read frame from an idle connection.
func readFrame(r io.Reader, maxSize int32, started func()) ([]byte, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:1]); err != nil {
		return nil, err // io.EOF here is a clean close between frames
	}
	if started != nil {
		started()
	}
	if _, err := io.ReadFull(r, sizeBuf[1:]); err != nil {
		return nil, noEOF(err)
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < minFrameSize || size > maxSize {
		return nil, &FrameSizeError{Size: size, Max: maxSize}
	}
	if size <= pooledFrameMax {
		buf := getFrame(int(size))
		if _, err := io.ReadFull(r, buf); err != nil {
			putFrame(buf)
			return nil, noEOF(err)
		}
		return buf, nil
	}
	buf := make([]byte, 0, frameGrowStart)
	for len(buf) < int(size) {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(int(size), 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			return nil, noEOF(err)
		}
	}
	return buf, nil
}

// noEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF: the client hung up mid-frame.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
