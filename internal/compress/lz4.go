package compress

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// lz4Decoder is a pooled frame reader together with its source.
type lz4Decoder struct {
	src bytes.Reader
	zr  *lz4.Reader
}

var lz4Decoders = sync.Pool{New: func() any {
	d := new(lz4Decoder)
	d.zr = lz4.NewReader(nil)
	return d
}}

func decompressLZ4(src []byte, maxSize int) ([]byte, error) {
	d := lz4Decoders.Get().(*lz4Decoder)
	defer func() {
		d.src.Reset(nil) // do not keep the caller's input alive in the pool
		lz4Decoders.Put(d)
	}()
	d.src.Reset(src)
	d.zr.Reset(&d.src)
	// Size the buffer from the block headers (one more byte so that EOF is
	// seen without regrowing); if they do not parse, guess: Kafka payloads
	// typically shrink 2-4x under lz4, and a wrong guess costs a regrow.
	hint := 4 * len(src)
	if bound, ok := lz4OutputBound(src, maxSize); ok {
		hint = bound + 1
	}
	out, tooBig, err := readBounded(d.zr, hint, maxSize)
	if err != nil {
		return nil, corrupt(LZ4, err)
	}
	if tooBig {
		return nil, tooLarge(LZ4, maxSize)
	}
	return out, nil
}

// lz4OutputBound walks the frames and block headers of src, without
// decoding, and returns an upper bound of the decoded size (limit+1 once it
// passes limit), or false if the headers do not parse. It is only a size
// hint: the reader validates everything again.
func lz4OutputBound(src []byte, limit int) (int, bool) {
	total := 0
	for len(src) > 0 {
		if len(src) < 8 {
			return 0, false
		}
		magic := binary.LittleEndian.Uint32(src)
		if magic&0xfffffff0 == 0x184d2a50 { // skippable frame
			n := uint64(binary.LittleEndian.Uint32(src[4:]))
			if n > uint64(len(src)-8) {
				return 0, false
			}
			src = src[8+n:]
			continue
		}
		if magic != 0x184d2204 {
			return 0, false
		}
		flg, bd := src[4], src[5]
		blockMax := 1 << (8 + 2*int(bd>>4&7)) // 4: 64 KiB ... 7: 4 MiB
		header := 7
		if flg&0x08 != 0 {
			header += 8 // content size
		}
		if flg&0x01 != 0 {
			header += 4 // dictionary id
		}
		if len(src) < header {
			return 0, false
		}
		src = src[header:]
		for {
			if len(src) < 4 {
				return 0, false
			}
			size := binary.LittleEndian.Uint32(src)
			src = src[4:]
			if size == 0 {
				break // end mark
			}
			n := int(size &^ lz4Uncompressed)
			if n > len(src) {
				return 0, false
			}
			src = src[n:]
			if size&lz4Uncompressed == 0 {
				n = blockMax
			}
			if flg&0x10 != 0 { // block checksum
				if len(src) < 4 {
					return 0, false
				}
				src = src[4:]
			}
			if total += n; total > limit {
				return limit + 1, true
			}
		}
		if flg&0x04 != 0 { // content checksum
			if len(src) < 4 {
				return 0, false
			}
			src = src[4:]
		}
	}
	return total, true
}

// lz4FrameHeader is the frame header Kafka's Lz4BlockOutputStream writes:
// magic 0x184D2204 (little endian); FLG 0x60 = version 01, independent blocks,
// no block checksum, no content size, no content checksum; BD 0x40 = 64 KiB
// maximum block size; then the header checksum, byte 1 of xxHash32(FLG, BD).
var lz4FrameHeader = []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}

const (
	lz4BlockSize = 64 << 10
	// lz4Uncompressed marks a block stored as is (high bit of its length).
	lz4Uncompressed = 0x80000000
	// lz4DefaultLevel is Kafka's compression.lz4.level default, for which
	// Kafka uses lz4-java's fast compressor rather than the HC one.
	lz4DefaultLevel = 9
)

// lz4BlockCompressor is what both pierrec compressors offer.
type lz4BlockCompressor interface {
	CompressBlock(src, dst []byte) (int, error)
}

var (
	lz4FastPool = sync.Pool{New: func() any { return new(lz4.Compressor) }}
	// lz4HCPools holds one pool per pierrec HC depth, Level1..Level9.
	lz4HCPools [9]sync.Pool
)

func compressLZ4(dst, src []byte, level int) ([]byte, error) {
	// Kafka's compression.lz4.level is 1..17, default 9.
	if level == 0 {
		level = lz4DefaultLevel
	}
	if level < 1 || level > 17 {
		return dst, invalidLevel(LZ4, level)
	}
	var (
		comp lz4BlockCompressor
		pool *sync.Pool
	)
	if level == lz4DefaultLevel {
		// As Kafka's Lz4BlockOutputStream: the default level means the fast
		// compressor, any other level the HC one at that level.
		pool = &lz4FastPool
		comp = pool.Get().(*lz4.Compressor)
	} else {
		// pierrec's HC depths go up to Level9 (1<<16); Kafka's levels above
		// that share it.
		depth := min(level, 9)
		pool = &lz4HCPools[depth-1]
		hc, _ := pool.Get().(*lz4.CompressorHC)
		if hc == nil {
			hc = &lz4.CompressorHC{Level: lz4.CompressionLevel(1 << (7 + depth))}
		}
		comp = hc
	}
	defer pool.Put(comp)

	need := len(lz4FrameHeader) + 4
	for rest := len(src); rest > 0; rest -= lz4BlockSize {
		need += 4 + lz4.CompressBlockBound(min(rest, lz4BlockSize))
	}
	if cap(dst)-len(dst) < need {
		grown := make([]byte, len(dst), len(dst)+need)
		copy(grown, dst)
		dst = grown
	}
	start := len(dst)
	dst = append(dst, lz4FrameHeader...)
	for len(src) > 0 {
		chunk := src[:min(len(src), lz4BlockSize)]
		src = src[len(chunk):]
		at := len(dst)
		room := dst[at+4 : at+4+lz4.CompressBlockBound(len(chunk))]
		n, err := comp.CompressBlock(chunk, room)
		if err != nil {
			return dst[:start], corrupt(LZ4, err)
		}
		if n == 0 || n >= len(chunk) {
			// Incompressible: stored as is, as Lz4BlockOutputStream does.
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(chunk))|lz4Uncompressed)
			dst = append(dst, chunk...)
			continue
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
		dst = dst[:at+4+n]
	}
	// End mark: a zero block length. No content checksum, as Kafka.
	return binary.LittleEndian.AppendUint32(dst, 0), nil
}
