package compress

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// Codec numbers, as stored in a v2 RecordBatch's attributes (bits 0-2).
const (
	None   = 0
	Gzip   = 1
	Snappy = 2
	LZ4    = 3
	Zstd   = 4
)

// MaxSizeLimit is the largest maxSize Decompress honours; larger values are
// clamped to it. Kafka sizes are int32, so no batch decompresses beyond it.
const MaxSizeLimit = math.MaxInt32

var (
	// ErrUnknownCodec is returned for a codec number other than 0-4.
	ErrUnknownCodec = errors.New("compress: unknown compression codec")
	// ErrTooLarge is returned when the decompressed data would exceed maxSize.
	ErrTooLarge = errors.New("compress: decompressed data exceeds the size limit")
	// ErrCorrupt is returned, wrapped with the codec's detail, for input that
	// does not decode.
	ErrCorrupt = errors.New("compress: corrupt compressed data")
	// ErrInvalidLevel is returned by Compress for a level the codec's Kafka
	// config would reject.
	ErrInvalidLevel = errors.New("compress: invalid compression level")
)

// Name returns the codec's name as Kafka's compression.type spells it
// ("none", "gzip", "snappy", "lz4", "zstd"), or "unknown(N)".
func Name(codec int) string {
	switch codec {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", codec)
}

// Decompress decodes src, compressed with codec, and returns the result in a
// newly allocated slice (for None: src itself). It fails with ErrTooLarge if
// the output would exceed maxSize bytes (negative means 0, values above
// MaxSizeLimit mean MaxSizeLimit), without allocating much beyond that (see
// the package doc for each codec's bound); with ErrUnknownCodec for a codec
// outside 0-4; and with an error wrapping ErrCorrupt for malformed input.
func Decompress(codec int, src []byte, maxSize int) ([]byte, error) {
	maxSize = max(0, min(maxSize, MaxSizeLimit))
	if codec != None && len(src) == 0 {
		// No codec's encoding of anything, even of nothing, is empty.
		return nil, corruptf(codec, "empty input")
	}
	switch codec {
	case None:
		if len(src) > maxSize {
			return nil, tooLarge(codec, maxSize)
		}
		return src, nil
	case Gzip:
		return decompressGzip(src, maxSize)
	case Snappy:
		return decompressSnappy(src, maxSize)
	case LZ4:
		return decompressLZ4(src, maxSize)
	case Zstd:
		return decompressZstd(src, maxSize)
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, codec)
}

// Compress encodes src with codec, appending the result to dst, in the form
// Kafka's Java producer writes (see the package doc). level 0 means the
// codec's Kafka default; otherwise it must be a value Kafka accepts for the
// codec's level config:
//
//	gzip  compression.gzip.level  -1 (zlib default, 6) or 1..9; default -1
//	lz4   compression.lz4.level   1..17; default 9
//	zstd  compression.zstd.level  -131072..22; default 3
//
// None and Snappy have no levels and ignore level.
func Compress(codec int, dst, src []byte, level int) ([]byte, error) {
	switch codec {
	case None:
		return append(dst, src...), nil
	case Gzip:
		return compressGzip(dst, src, level)
	case Snappy:
		return compressSnappy(dst, src), nil
	case LZ4:
		return compressLZ4(dst, src, level)
	case Zstd:
		return compressZstd(dst, src, level)
	}
	return dst, fmt.Errorf("%w: %d", ErrUnknownCodec, codec)
}

// Decoder returns a function with the signature logstore.Options.Decompress
// expects, decoding with Decompress and the given maxSize.
func Decoder(maxSize int) func(codec int, records []byte) ([]byte, error) {
	return func(codec int, records []byte) ([]byte, error) {
		return Decompress(codec, records, maxSize)
	}
}

func corruptf(codec int, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, Name(codec), fmt.Sprintf(format, args...))
}

func corrupt(codec int, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrCorrupt, Name(codec), err)
}

func tooLarge(codec int, maxSize int) error {
	return fmt.Errorf("%w: %s: more than %d bytes", ErrTooLarge, Name(codec), maxSize)
}

func invalidLevel(codec, level int) error {
	return fmt.Errorf("%w: %s level %d", ErrInvalidLevel, Name(codec), level)
}

// readBounded reads r to its end into a new buffer and returns it. The buffer
// starts at sizeHint (clamped to [minReadBuf, maxSize+1]) and doubles, never
// beyond maxSize+1 bytes: filling that much means the output is too large.
// Errors from r are returned unwrapped for the caller to classify.
func readBounded(r io.Reader, sizeHint, maxSize int) ([]byte, bool, error) {
	limit := maxSize + 1
	buf := make([]byte, 0, min(max(sizeHint, minReadBuf), limit))
	zeroReads := 0
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				return nil, true, nil
			}
			grown := make([]byte, len(buf), min(2*cap(buf), limit))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if len(buf) > maxSize {
				return nil, true, nil
			}
			return buf, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if n == 0 {
			if zeroReads++; zeroReads > 100 {
				return nil, false, io.ErrNoProgress
			}
		} else {
			zeroReads = 0
		}
	}
}

// minReadBuf is the smallest buffer readBounded starts with.
const minReadBuf = 512
