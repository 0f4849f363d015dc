package compress

import (
	"bytes"
	"encoding/binary"

	"github.com/klauspost/compress/s2"
)

// xerialMagic starts snappy-java's framed format (SnappyCodec.MAGIC_HEADER).
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	// xerialHeaderLen is the magic plus the two int32 versions.
	xerialHeaderLen = 16
	// xerialBlockSize is how much uncompressed data each block holds, the
	// default of snappy-java's SnappyOutputStream.
	xerialBlockSize = 32 << 10
)

// xerialHeader is what we write: version 1, compatible version 1, the values
// snappy-java writes (its reader refuses a compatible version it is older
// than).
var xerialHeader = append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)

func decompressSnappy(src []byte, maxSize int) ([]byte, error) {
	if len(src) >= xerialHeaderLen && bytes.HasPrefix(src, xerialMagic) {
		return decodeXerial(src[xerialHeaderLen:], maxSize)
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, corrupt(Snappy, err)
	}
	if n > maxSize {
		return nil, tooLarge(Snappy, maxSize)
	}
	out := make([]byte, n)
	if _, err := s2.Decode(out, src); err != nil {
		return nil, corrupt(Snappy, err)
	}
	return out, nil
}

// nextXerialBlock splits the next block off body (the stream after its
// header). It skips a repeated stream header where a length is expected, as
// snappy-java's SnappyInputStream does for concatenated streams.
func nextXerialBlock(body []byte) (block, rest []byte, err error) {
	if len(body) >= xerialHeaderLen && bytes.HasPrefix(body, xerialMagic) {
		body = body[xerialHeaderLen:]
		if len(body) == 0 {
			return nil, nil, nil
		}
	}
	if len(body) < 4 {
		return nil, nil, corruptf(Snappy, "xerial: truncated block length (%d bytes left)", len(body))
	}
	n := binary.BigEndian.Uint32(body)
	body = body[4:]
	if n > uint32(len(body)) {
		return nil, nil, corruptf(Snappy, "xerial: block length %d exceeds the %d bytes left", n, len(body))
	}
	return body[:n], body[n:], nil
}

// decodeXerial decodes the blocks of a xerial stream in two passes: the first
// sums the lengths the blocks declare, so that a stream that would exceed
// maxSize fails before anything is allocated and the output is allocated once.
func decodeXerial(body []byte, maxSize int) ([]byte, error) {
	total := 0
	for rest := body; len(rest) > 0; {
		block, next, err := nextXerialBlock(rest)
		if err != nil {
			return nil, err
		}
		rest = next
		if block == nil && len(next) == 0 {
			break // a trailing empty header
		}
		n, err := s2.DecodedLen(block)
		if err != nil {
			return nil, corrupt(Snappy, err)
		}
		if n > maxSize-total {
			return nil, tooLarge(Snappy, maxSize)
		}
		total += n
	}
	out := make([]byte, total)
	at := 0
	for rest := body; len(rest) > 0; {
		block, next, _ := nextXerialBlock(rest)
		rest = next
		if block == nil && len(next) == 0 {
			break
		}
		n, _ := s2.DecodedLen(block)
		if _, err := s2.Decode(out[at:at+n], block); err != nil {
			return nil, corrupt(Snappy, err)
		}
		at += n
	}
	return out, nil
}

// compressSnappy appends src in xerial framing, as Kafka's Java producer
// writes it through snappy-java's SnappyOutputStream.
func compressSnappy(dst, src []byte) []byte {
	need := xerialHeaderLen
	for rest := len(src); rest > 0; rest -= xerialBlockSize {
		need += 4 + s2.MaxEncodedLen(min(rest, xerialBlockSize))
	}
	if cap(dst)-len(dst) < need {
		grown := make([]byte, len(dst), len(dst)+need)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, xerialHeader...)
	for len(src) > 0 {
		chunk := src[:min(len(src), xerialBlockSize)]
		src = src[len(chunk):]
		at := len(dst)
		// EncodeSnappy writes into the spare capacity reserved above.
		block := s2.EncodeSnappy(dst[at+4:cap(dst)], chunk)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
		dst = dst[:at+4+len(block)]
	}
	return dst
}
