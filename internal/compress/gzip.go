package compress

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// gzipDecoder is a pooled gzip reader together with the bytes.Reader it reads
// from, so a decode allocates neither.
type gzipDecoder struct {
	src bytes.Reader
	zr  gzip.Reader
}

var gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}

func decompressGzip(src []byte, maxSize int) ([]byte, error) {
	d := gzipDecoders.Get().(*gzipDecoder)
	defer func() {
		d.src.Reset(nil) // do not keep the caller's input alive in the pool
		gzipDecoders.Put(d)
	}()
	d.src.Reset(src)
	// The reader accepts concatenated members, as Java's GZIPInputStream
	// (Kafka's consumer) does.
	if err := d.zr.Reset(&d.src); err != nil {
		return nil, corrupt(Gzip, err)
	}
	// The trailer's ISIZE is the last member's length mod 2^32: a good first
	// guess for a single member, and harmless when wrong (readBounded clamps it).
	hint := 0
	if len(src) >= 4 {
		hint = int(binary.LittleEndian.Uint32(src[len(src)-4:]))
	}
	out, tooBig, err := readBounded(&d.zr, hint+1, maxSize)
	if err != nil {
		return nil, corrupt(Gzip, err)
	}
	if tooBig {
		return nil, tooLarge(Gzip, maxSize)
	}
	return out, nil
}

// gzipEncoder is a pooled gzip writer that appends to out.
type gzipEncoder struct {
	out appendWriter
	zw  *gzip.Writer
}

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// gzipEncoders holds one pool per level; index level+1, so -1 (the zlib
// default) is index 0.
var gzipEncoders [11]sync.Pool

func compressGzip(dst, src []byte, level int) ([]byte, error) {
	// Kafka's compression.gzip.level accepts -1 (Deflater.DEFAULT_COMPRESSION)
	// and 1..9, default -1.
	if level == 0 {
		level = gzip.DefaultCompression
	}
	if level < -1 || level > 9 {
		return dst, invalidLevel(Gzip, level)
	}
	pool := &gzipEncoders[level+1]
	e, _ := pool.Get().(*gzipEncoder)
	if e == nil {
		e = new(gzipEncoder)
		zw, err := gzip.NewWriterLevel(&e.out, level)
		if err != nil {
			return dst, invalidLevel(Gzip, level)
		}
		e.zw = zw
	} else {
		e.zw.Reset(&e.out)
	}
	e.out.b = dst
	_, err := e.zw.Write(src)
	if err == nil {
		err = e.zw.Close()
	}
	out := e.out.b
	e.out.b = nil // do not keep the caller's buffer alive in the pool
	pool.Put(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}
