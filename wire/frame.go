package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// minFrameSize is the smallest request frame worth reading: api key, api version and
// correlation id (request header v0). Anything shorter cannot even name its request.
const minFrameSize = 8

// largeFrameChunk is the unit in which a frame body larger than pooledFrameMax is read: chunks
// of this size are taken as its bytes arrive, so a client that declares a huge frame and sends
// little costs us about what it sent, and copied into one buffer once the frame is complete.
const largeFrameChunk = 1 << 20

// largeChunks recycles the chunks of large frames, so a stream of them does not leave garbage.
var largeChunks = sync.Pool{New: func() any { return new([largeFrameChunk]byte) }}

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
// nothing aliases them); larger ones are read in chunks as their bytes arrive and assembled at
// the end.
//
// started is called (when non-nil) once the first byte of the frame has been read, so the caller
// can tell a half-read frame from an idle connection. admit is called (when non-nil) with the
// declared size once it is known to be in bounds and before any of the body is read or
// allocated (the caller reserves memory for it there, and may wait); an error from it is
// returned as is.
func readFrame(r io.Reader, maxSize int32, started func(), admit func(size int) error) ([]byte, error) {
	return readSizedFrame(r, minFrameSize, maxSize, started, admit)
}

// readSizedFrame is readFrame with the smallest acceptable size given: a raw SASL token
// (after SaslHandshake v0) is not a request and may be shorter than a request header.
func readSizedFrame(r io.Reader, minSize, maxSize int32, started func(), admit func(size int) error) ([]byte, error) {
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
	if size < minSize || size > maxSize {
		return nil, &FrameSizeError{Size: size, Max: maxSize}
	}
	if admit != nil {
		if err := admit(int(size)); err != nil {
			return nil, err
		}
	}
	if size <= pooledFrameMax {
		buf := getFrame(int(size))
		if _, err := io.ReadFull(r, buf); err != nil {
			putFrame(buf)
			return nil, noEOF(err)
		}
		return buf, nil
	}
	return readLargeFrame(r, int(size))
}

// readLargeFrame reads a body of size bytes into chunks as they arrive, then into one buffer.
func readLargeFrame(r io.Reader, size int) ([]byte, error) {
	chunks := make([]*[largeFrameChunk]byte, 0, (size+largeFrameChunk-1)/largeFrameChunk)
	defer func() {
		for _, c := range chunks {
			largeChunks.Put(c)
		}
	}()
	for remaining := size; remaining > 0; {
		c := largeChunks.Get().(*[largeFrameChunk]byte)
		chunks = append(chunks, c)
		n := min(remaining, largeFrameChunk)
		if _, err := io.ReadFull(r, c[:n]); err != nil {
			return nil, noEOF(err)
		}
		remaining -= n
	}
	buf := make([]byte, 0, size)
	for _, c := range chunks {
		buf = append(buf, c[:min(size-len(buf), largeFrameChunk)]...)
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
