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

// zstdMinGuess is the smallest output buffer tried for a frame that does not
// declare its content size.
const zstdMinGuess = 64 << 10

func decompressZstd(src []byte, maxSize int) ([]byte, error) {
	d := zstdDecoders.Get().(*zstd.Decoder)
	defer zstdDecoders.Put(d)
	// Size the output from the first frame's declared content size when it
	// has one (EncodeAll, librdkafka, franz-go); otherwise (zstd-jni streams,
	// as Java writes) start from a guess and retry with 4x the room, up to
	// maxSize, when the output does not fit. The retries redo some work
	// but keep every allocation within maxSize plus the decoder's slack.
	guess := max(4*len(src), zstdMinGuess)
	var h zstd.Header
	if err := h.Decode(src); err == nil && h.HasFCS {
		if h.FrameContentSize > uint64(maxSize) {
			return nil, tooLarge(Zstd, maxSize)
		}
		guess = int(h.FrameContentSize)
	}
	// The last attempt gets a block of slack beyond maxSize: when the room
	// runs out mid-block, klauspost reports a block error rather than
	// ErrDecoderSizeExceeded, so only an attempt with room to spare tells
	// "too large" from "corrupt" reliably.
	final := maxSize + zstdSlack
	room := min(guess, final)
	for {
		out, err := d.DecodeAll(src, make([]byte, 0, room))
		if err != nil {
			if room < final {
				// Possibly only out of room; see above.
				room = min(4*room, final)
				continue
			}
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
				return nil, tooLarge(Zstd, maxSize)
			}
			return nil, corrupt(Zstd, err)
		}
		if len(out) > maxSize {
			return nil, tooLarge(Zstd, maxSize)
		}
		return out, nil
	}
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
