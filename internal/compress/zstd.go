package compress

import (
	"errors"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdMaxWindow is the largest window a frame may ask for: libzstd's default
// ZSTD_WINDOWLOG_LIMIT_DEFAULT (2^27), which zstd-jni in Kafka's consumers and
// librdkafka also apply, so no producer can rely on more.
const zstdMaxWindow = 1 << 27

var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // decode in the caller's goroutine, no workers
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		// DecodeAll writes only into the capacity of the dst we pass, so
		// the output bound is ours, per call (WithDecoderMaxMemory is per
		// decoder and also caps the window, refusing valid small frames).
		zstd.WithDecodeAllCapLimit(true),
	)
	if err != nil {
		panic("compress: zstd decoder options: " + err.Error())
	}
	return d
}}

func decompressZstd(src []byte, maxSize int) ([]byte, error) {
	d := zstdDecoders.Get().(*zstd.Decoder)
	defer zstdDecoders.Put(d)
	// The last attempt gets a block of slack beyond maxSize: a block that
	// starts within maxSize then always fits, so running out of room means
	// the output already passed maxSize. (klauspost reports running out of
	// room mid-block as a block error, not ErrDecoderSizeExceeded.)
	final := maxSize + zstdSlack
	// Size the output from an upper bound read off the frame and block
	// headers: exact for frames that declare their content size (EncodeAll,
	// librdkafka, franz-go) and tight for those that do not (zstd-jni
	// streams, as Java writes), since encoders fill blocks. If the headers
	// do not parse, start from a guess and grow 4x per retry; the decode
	// then reports what is wrong.
	room := final
	if bound, exact, ok := zstdOutputBound(src, final); ok {
		if exact && bound > maxSize {
			return nil, tooLarge(Zstd, maxSize)
		}
		room = min(bound, final)
	} else {
		room = min(max(4*len(src), zstdMinGuess), final)
	}
	for {
		out, err := d.DecodeAll(src, make([]byte, 0, room))
		if err == nil {
			if len(out) > maxSize {
				return nil, tooLarge(Zstd, maxSize)
			}
			return out, nil
		}
		if room < final {
			// Possibly only out of room.
			room = min(max(4*room, zstdMinGuess), final)
			continue
		}
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > maxSize {
			return nil, tooLarge(Zstd, maxSize)
		}
		return nil, corrupt(Zstd, err)
	}
}

// zstdMinGuess is the smallest first output buffer when the headers give no
// bound.
const zstdMinGuess = 64 << 10

// zstdMaxBlock is the most a zstd block decodes to (Block_Maximum_Size).
const zstdMaxBlock = 128 << 10

// zstdOutputBound walks the frames and block headers of src, without
// decoding, and returns an upper bound of the decoded size (limit+1 once it
// passes limit), whether it is exact (every frame declares its content size,
// which the decoder enforces), and false if the headers do not parse.
func zstdOutputBound(src []byte, limit int) (bound int, exact, ok bool) {
	total, exact := 0, true
	for len(src) > 0 {
		var h zstd.Header
		if err := h.Decode(src); err != nil || h.HeaderSize <= 0 || h.HeaderSize > len(src) {
			return 0, false, false
		}
		if h.Skippable {
			n := h.HeaderSize + int(h.SkippableSize)
			if n > len(src) {
				return 0, false, false
			}
			src = src[n:]
			continue
		}
		src = src[h.HeaderSize:]
		frame := 0
		for {
			if len(src) < 3 {
				return 0, false, false
			}
			bh := int(src[0]) | int(src[1])<<8 | int(src[2])<<16
			src = src[3:]
			last, kind, size := bh&1 != 0, (bh>>1)&3, bh>>3
			switch kind {
			case 0: // raw: size bytes, copied
				if size > len(src) {
					return 0, false, false
				}
				src = src[size:]
				frame += size
			case 1: // RLE: one byte, repeated size times
				if len(src) < 1 {
					return 0, false, false
				}
				src = src[1:]
				frame += size
			case 2: // compressed: size bytes, at most a maximum block out
				if size > len(src) {
					return 0, false, false
				}
				src = src[size:]
				frame += zstdMaxBlock
			default:
				return 0, false, false
			}
			if frame > limit && !h.HasFCS {
				return limit + 1, false, true
			}
			if last {
				break
			}
		}
		if h.HasFCS {
			frame = int(min(h.FrameContentSize, uint64(limit)+1))
		} else {
			exact = false
		}
		if h.HasCheckSum {
			if len(src) < 4 {
				return 0, false, false
			}
			src = src[4:]
		}
		if total += frame; total > limit {
			return limit + 1, exact, true
		}
	}
	return total, exact, true
}

// zstdSlack is one maximum zstd block plus the decoder's over-allocation.
const zstdSlack = 128<<10 + 64

// zstdEncoders holds one pool per klauspost encoder level (fastest, default,
// better, best), index level-1.
var zstdEncoders [4]sync.Pool

// zstdDefaultLevel is Kafka's compression.zstd.level default.
const zstdDefaultLevel = 3

func compressZstd(dst, src []byte, level int) ([]byte, error) {
	// Kafka's compression.zstd.level ranges over libzstd's levels,
	// ZSTD_minCLevel() (-131072) to ZSTD_maxCLevel() (22); default 3.
	if level == 0 {
		level = zstdDefaultLevel
	}
	if level < -131072 || level > 22 {
		return dst, invalidLevel(Zstd, level)
	}
	// klauspost has four levels; EncoderLevelFromZstd maps libzstd's
	// numbers onto them (negative levels map to the fastest).
	el := zstd.EncoderLevelFromZstd(max(level, 1))
	pool := &zstdEncoders[el-1]
	e, _ := pool.Get().(*zstd.Encoder)
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(el),
			zstd.WithEncoderConcurrency(1),
			// A frame even for empty input, so the output always decodes.
			zstd.WithZeroFrames(true),
		)
		if err != nil {
			return dst, err
		}
	}
	defer pool.Put(e)
	// EncodeAll writes one frame that declares its content size, so
	// decoders can size their output exactly.
	return e.EncodeAll(src, dst), nil
}
