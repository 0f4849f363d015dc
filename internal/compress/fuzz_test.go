package compress

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzMaxSize bounds outputs in FuzzDecompress.
const fuzzMaxSize = 1 << 20

// FuzzDecompress feeds arbitrary bytes to every codec's decoder (the codec is
// part of the input; seeds per codec are in testdata/fuzz/FuzzDecompress and
// below). Decoding must never panic, must respect maxSize, must fail only with
// typed errors, and whatever decodes must survive a Compress round trip.
func FuzzDecompress(f *testing.F) {
	in := recordsLike(3000, 42)
	for _, codec := range allCodecs {
		enc, _ := Compress(codec, nil, in, 0)
		f.Add(uint8(codec), enc)
		small, _ := Compress(codec, nil, []byte("hello hello hello hello"), 0)
		f.Add(uint8(codec), small)
	}
	f.Add(uint8(Snappy), handXerial(in, 1000))
	f.Fuzz(func(t *testing.T, codecByte uint8, data []byte) {
		codec := int(codecByte % 8)
		out, err := Decompress(codec, data, fuzzMaxSize)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnknownCodec) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(out) > fuzzMaxSize {
			t.Fatalf("output %d bytes exceeds the limit", len(out))
		}
		enc, err := Compress(codec, nil, out, 0)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := Decompress(codec, enc, fuzzMaxSize)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("round trip of decoded data failed: %v", err)
		}
	})
}
