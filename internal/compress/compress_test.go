package compress

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// levelsOf lists every level Compress accepts for codec that maps to distinct
// behaviour, plus 0 (the default).
func levelsOf(codec int) []int {
	switch codec {
	case Gzip:
		return []int{0, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	case LZ4:
		ls := []int{0}
		for l := 1; l <= 17; l++ {
			ls = append(ls, l)
		}
		return ls
	case Zstd:
		ls := []int{0, -131072, -5, -1}
		for l := 1; l <= 22; l++ {
			ls = append(ls, l)
		}
		return ls
	}
	return []int{0}
}

func TestRoundTripEveryCodecAndLevel(t *testing.T) {
	inputs := testInputs()
	for _, codec := range allCodecs {
		for _, level := range levelsOf(codec) {
			for name, in := range inputs {
				if codec == Zstd && level > 19 && len(in) > 100<<10 {
					continue // levels 20-22 use the same encoder as 19; keep the test short
				}
				prefix := []byte("prefix")
				enc, err := Compress(codec, bytes.Clone(prefix), in, level)
				if err != nil {
					t.Fatalf("%s level %d %s: Compress: %v", Name(codec), level, name, err)
				}
				if !bytes.HasPrefix(enc, prefix) {
					t.Fatalf("%s level %d %s: Compress did not append to dst", Name(codec), level, name)
				}
				dec, err := Decompress(codec, enc[len(prefix):], len(in))
				if err != nil {
					t.Fatalf("%s level %d %s: Decompress: %v", Name(codec), level, name, err)
				}
				if !bytes.Equal(dec, in) {
					t.Fatalf("%s level %d %s: round trip differs (%d bytes in, %d out)", Name(codec), level, name, len(in), len(dec))
				}
				if len(in) > 0 && codec != None {
					if _, err := Decompress(codec, enc[len(prefix):], len(in)-1); !errors.Is(err, ErrTooLarge) {
						t.Fatalf("%s level %d %s: maxSize one short: got %v, want ErrTooLarge", Name(codec), level, name, err)
					}
				}
			}
		}
	}
}

func TestCompressLevelsChangeOutput(t *testing.T) {
	in := recordsLike(200<<10, 9)
	for _, c := range []struct{ codec, fast, slow int }{{Gzip, 1, 9}, {LZ4, 9, 12}, {Zstd, 1, 19}} {
		fast, _ := Compress(c.codec, nil, in, c.fast)
		slow, _ := Compress(c.codec, nil, in, c.slow)
		if len(slow) >= len(fast) {
			t.Errorf("%s: level %d gave %d bytes, level %d gave %d; want the higher level smaller",
				Name(c.codec), c.slow, len(slow), c.fast, len(fast))
		}
	}
}

func TestCompressRejectsInvalidLevels(t *testing.T) {
	for _, c := range []struct{ codec, level int }{
		{Gzip, -2}, {Gzip, 10}, {LZ4, -1}, {LZ4, 18}, {Zstd, 23}, {Zstd, -131073},
	} {
		out, err := Compress(c.codec, []byte("keep"), []byte("data"), c.level)
		if !errors.Is(err, ErrInvalidLevel) {
			t.Errorf("%s level %d: got %v, want ErrInvalidLevel", Name(c.codec), c.level, err)
		}
		if string(out) != "keep" {
			t.Errorf("%s level %d: dst changed to %q", Name(c.codec), c.level, out)
		}
	}
	// None and snappy have no levels.
	for _, codec := range []int{None, Snappy} {
		if _, err := Compress(codec, nil, []byte("data"), 1234); err != nil {
			t.Errorf("%s ignores levels, got %v", Name(codec), err)
		}
	}
}

func TestUnknownCodec(t *testing.T) {
	for _, codec := range []int{-1, 5, 6, 7, 100} {
		if _, err := Decompress(codec, []byte{1, 2, 3}, 100); !errors.Is(err, ErrUnknownCodec) {
			t.Errorf("Decompress codec %d: got %v, want ErrUnknownCodec", codec, err)
		}
		if _, err := Compress(codec, nil, []byte{1, 2, 3}, 0); !errors.Is(err, ErrUnknownCodec) {
			t.Errorf("Compress codec %d: got %v, want ErrUnknownCodec", codec, err)
		}
	}
}

func TestNoneReturnsInputAfterSizeCheck(t *testing.T) {
	in := []byte("abcdef")
	out, err := Decompress(None, in, 6)
	if err != nil || &out[0] != &in[0] {
		t.Fatalf("got %q, %v; want the input itself", out, err)
	}
	if _, err := Decompress(None, in, 5); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if out, err := Decompress(None, nil, 0); err != nil || len(out) != 0 {
		t.Fatalf("empty: got %q, %v", out, err)
	}
}

func TestMaxSizeEdges(t *testing.T) {
	for _, codec := range allCodecs[1:] {
		empty, _ := Compress(codec, nil, nil, 0)
		if out, err := Decompress(codec, empty, 0); err != nil || len(out) != 0 {
			t.Errorf("%s: empty payload with maxSize 0: got %d bytes, %v", Name(codec), len(out), err)
		}
		one, _ := Compress(codec, nil, []byte{7}, 0)
		if _, err := Decompress(codec, one, 0); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: 1 byte with maxSize 0: got %v, want ErrTooLarge", Name(codec), err)
		}
		if _, err := Decompress(codec, one, -5); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: negative maxSize: got %v, want ErrTooLarge", Name(codec), err)
		}
		if out, err := Decompress(codec, one, int(^uint(0)>>1)); err != nil || !bytes.Equal(out, []byte{7}) {
			t.Errorf("%s: huge maxSize: got %v, %v", Name(codec), out, err)
		}
		if _, err := Decompress(codec, nil, 10); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: empty input: got %v, want ErrCorrupt", Name(codec), err)
		}
	}
}

func TestDecoderAdapter(t *testing.T) {
	in := recordsLike(5000, 4)
	enc, _ := Compress(Zstd, nil, in, 0)
	dec := Decoder(len(in))
	if out, err := dec(Zstd, enc); err != nil || !bytes.Equal(out, in) {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
	if _, err := Decoder(len(in)-1)(Zstd, enc); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

func TestName(t *testing.T) {
	want := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	for codec, name := range want {
		if got := Name(codec); got != name {
			t.Errorf("Name(%d) = %q, want %q", codec, got, name)
		}
	}
	if got := Name(9); got != "unknown(9)" {
		t.Errorf("Name(9) = %q", got)
	}
}

// clientPayloads builds, with the libraries the clients themselves use, the
// encodings Kafka clients put in produce requests.
func clientPayloads(t testing.TB, in []byte) map[string]struct {
	codec int
	data  []byte
} {
	t.Helper()
	type payload = struct {
		codec int
		data  []byte
	}
	out := map[string]payload{}

	// gzip: Java's GZIPOutputStream and franz-go (klauspost) write a single
	// member; some writers concatenate members.
	var std bytes.Buffer
	zw := stdgzip.NewWriter(&std)
	zw.Write(in)
	zw.Close()
	out["gzip/stdlib"] = payload{Gzip, std.Bytes()}
	var kp bytes.Buffer
	kw, _ := gzip.NewWriterLevel(&kp, gzip.BestSpeed)
	kw.Write(in)
	kw.Close()
	out["gzip/klauspost"] = payload{Gzip, kp.Bytes()}

	// snappy: librdkafka and franz-go's one-shot path write one raw block;
	// Java writes xerial framing with 32 KiB blocks.
	out["snappy/raw"] = payload{Snappy, s2.EncodeSnappy(nil, in)}
	out["snappy/xerial-klauspost"] = payload{Snappy, xerial.Encode(nil, in)}
	out["snappy/xerial-hand-built"] = payload{Snappy, handXerial(in, 32<<10)}
	// A block size other than 32 KiB, as old snappy-java versions and
	// sarama's writer may use.
	out["snappy/xerial-8k-blocks"] = payload{Snappy, handXerial(in, 8<<10)}

	// lz4: franz-go uses pierrec's defaults (4 MiB blocks, content
	// checksum); librdkafka sets the content size; Java writes 64 KiB
	// blocks with no checksums (what Compress writes).
	out["lz4/pierrec-default"] = payload{LZ4, lz4Frame(t, in)}
	out["lz4/content-size+block-checksum"] = payload{LZ4, lz4Frame(t, in,
		lz4.SizeOption(uint64(len(in))), lz4.BlockChecksumOption(true), lz4.BlockSizeOption(lz4.Block256Kb))}
	out["lz4/64k-no-checksum"] = payload{LZ4, lz4Frame(t, in, lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false))}

	// zstd: franz-go encodes with EncodeAll (content size declared, 64 KiB
	// window); zstd-jni streams (no content size).
	enc, _ := zstd.NewWriter(nil, zstd.WithWindowSize(64<<10), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
	out["zstd/encodeall"] = payload{Zstd, enc.EncodeAll(in, nil)}
	var stream bytes.Buffer
	sw, _ := zstd.NewWriter(&stream, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
	sw.Write(in)
	sw.Close()
	out["zstd/stream"] = payload{Zstd, stream.Bytes()}
	return out
}

// handXerial frames in the way snappy-java's SnappyOutputStream does, built
// here byte by byte rather than with this package's encoder.
func handXerial(in []byte, blockSize int) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for len(in) > 0 {
		n := min(len(in), blockSize)
		block := s2.EncodeSnappy(nil, in[:n])
		out = append(out, byte(len(block)>>24), byte(len(block)>>16), byte(len(block)>>8), byte(len(block)))
		out = append(out, block...)
		in = in[n:]
	}
	return out
}

func lz4Frame(t testing.TB, in []byte, opts ...lz4.Option) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	w.Write(in)
	w.Close()
	return buf.Bytes()
}

func TestDecodesClientFormats(t *testing.T) {
	// 300 KiB of records compress well beyond the first output guess for
	// zstd streams, which once failed with a misleading block error.
	for _, in := range [][]byte{recordsLike(100<<10, 5), recordsLike(300<<10, 13), []byte("x"), randomBytes(40<<10, 6)} {
		for name, p := range clientPayloads(t, in) {
			out, err := Decompress(p.codec, p.data, len(in))
			if err != nil {
				t.Fatalf("%s (%d bytes): %v", name, len(in), err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("%s (%d bytes): decoded %d bytes that differ", name, len(in), len(out))
			}
		}
	}
}

func TestDecodesConcatenatedStreams(t *testing.T) {
	a, b := recordsLike(50<<10, 7), recordsLike(3<<10, 8)
	want := append(bytes.Clone(a), b...)
	cases := map[string]struct {
		codec int
		data  []byte
	}{}
	ga, _ := Compress(Gzip, nil, a, 0)
	gb, _ := Compress(Gzip, nil, b, 0)
	cases["gzip members"] = struct {
		codec int
		data  []byte
	}{Gzip, append(ga, gb...)}
	za, _ := Compress(Zstd, nil, a, 0)
	zb, _ := Compress(Zstd, nil, b, 0)
	cases["zstd frames"] = struct {
		codec int
		data  []byte
	}{Zstd, append(za, zb...)}
	xa, _ := Compress(Snappy, nil, a, 0)
	xb, _ := Compress(Snappy, nil, b, 0)
	cases["xerial streams"] = struct {
		codec int
		data  []byte
	}{Snappy, append(xa, xb...)}
	la, _ := Compress(LZ4, nil, a, 0)
	lb, _ := Compress(LZ4, nil, b, 0)
	cases["lz4 frames"] = struct {
		codec int
		data  []byte
	}{LZ4, append(la, lb...)}
	for name, c := range cases {
		out, err := Decompress(c.codec, c.data, len(want))
		if err != nil || !bytes.Equal(out, want) {
			t.Errorf("%s: got %d bytes, %v; want %d bytes", name, len(out), err, len(want))
		}
	}
}

// TestOutputReadableByClientDecoders decodes what Compress writes with the
// decoders clients use, independently of this package's decoder.
func TestOutputReadableByClientDecoders(t *testing.T) {
	in := recordsLike(150<<10, 10)

	gz, _ := Compress(Gzip, nil, in, 0)
	zr, err := stdgzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, in) {
		t.Fatalf("gzip via compress/gzip: %v", err)
	}

	sn, _ := Compress(Snappy, nil, in, 0)
	if !bytes.HasPrefix(sn, xerialHeader) {
		t.Fatalf("snappy output lacks the xerial header: % x", sn[:16])
	}
	if got, err := xerial.Decode(sn); err != nil || !bytes.Equal(got, in) {
		t.Fatalf("snappy via klauspost xerial: %v", err)
	}

	for _, level := range []int{0, 1, 12} {
		l4, _ := Compress(LZ4, nil, in, level)
		// pierrec checks the header checksum byte, so this also proves the
		// constant header is right.
		if got, err := io.ReadAll(lz4.NewReader(bytes.NewReader(l4))); err != nil || !bytes.Equal(got, in) {
			t.Fatalf("lz4 level %d via pierrec reader: %v", level, err)
		}
		if !bytes.HasPrefix(l4, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40}) {
			t.Fatalf("lz4 header % x, want Kafka's 64 KiB independent-block frame", l4[:7])
		}
	}

	zs, _ := Compress(Zstd, nil, in, 0)
	d, _ := zstd.NewReader(nil)
	defer d.Close()
	if got, err := d.DecodeAll(zs, nil); err != nil || !bytes.Equal(got, in) {
		t.Fatalf("zstd via klauspost decoder: %v", err)
	}
}

// bombs returns, per codec, a small input that decodes to far more than
// bombMaxSize.
func bombs(t testing.TB) map[string]struct {
	codec int
	data  []byte
} {
	t.Helper()
	type bomb = struct {
		codec int
		data  []byte
	}
	out := map[string]bomb{}
	zeros := make([]byte, 1<<20)

	// gzip: one member of 1 MiB of zeros, repeated 512 times: 512 MiB.
	member, _ := Compress(Gzip, nil, zeros, 9)
	out["gzip"] = bomb{Gzip, bytes.Repeat(member, 512)}

	// snappy raw: a block whose header claims 1 GiB.
	out["snappy/raw-claim"] = bomb{Snappy, []byte{0x80, 0x80, 0x80, 0x80, 0x04, 0}}
	// snappy xerial: 512 blocks of 1 MiB zeros each.
	block := s2.EncodeSnappy(nil, zeros)
	x := append([]byte{}, xerialHeader...)
	for range 512 {
		x = append(x, byte(len(block)>>24), byte(len(block)>>16), byte(len(block)>>8), byte(len(block)))
		x = append(x, block...)
	}
	out["snappy/xerial"] = bomb{Snappy, x}

	// lz4: one 64 KiB block of zeros repeated 8192 times: 512 MiB.
	one, _ := Compress(LZ4, nil, zeros[:lz4BlockSize], 0)
	blk := one[len(lz4FrameHeader) : len(one)-4]
	l := append([]byte{}, lz4FrameHeader...)
	for range 8192 {
		l = append(l, blk...)
	}
	out["lz4"] = bomb{LZ4, append(l, 0, 0, 0, 0)}

	// zstd, hand built: RLE blocks of 128 KiB each, 4 bytes apiece.
	// Without a content size (as a zstd-jni stream): 512 MiB.
	out["zstd/no-content-size"] = bomb{Zstd, zstdRLEFrame(4096)}
	// Declaring its 512 MiB content size: refused before decoding.
	withFCS := append([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, 0, 0, 0, 0x20, 0, 0, 0, 0)
	out["zstd/content-size"] = bomb{Zstd, append(withFCS, zstdRLEBlocks(4096)...)}
	return out
}

// zstdRLEBlocks returns n RLE blocks of 128 KiB zeros, the last marked last.
func zstdRLEBlocks(n int) []byte {
	var b []byte
	for i := range n {
		last := 0
		if i == n-1 {
			last = 1
		}
		h := last | 1<<1 | (128<<10)<<3 // Last_Block, Block_Type RLE, Block_Size
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return b
}

// zstdRLEFrame is a frame with a 128 KiB window and no content size, holding
// n RLE blocks.
func zstdRLEFrame(n int) []byte {
	return append([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3}, zstdRLEBlocks(n)...)
}

const bombMaxSize = 1 << 20

func TestBombsFailWithoutLargeAllocations(t *testing.T) {
	for name, b := range bombs(t) {
		// Warm the pools so the measurement is the decode's own.
		Decompress(b.codec, b.data, bombMaxSize)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decompress(b.codec, b.data, bombMaxSize)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s (%d bytes): got %v, want ErrTooLarge", name, len(b.data), err)
			continue
		}
		allocated := after.TotalAlloc - before.TotalAlloc
		// Each decodes to at least 512 MiB. The bound is on the total
		// allocated during the call: a few times the limit, since zstd
		// without a content size retries with growing buffers.
		if allocated > 8*bombMaxSize {
			t.Errorf("%s: allocated %d bytes decoding against a %d byte limit", name, allocated, bombMaxSize)
		}
		t.Logf("%s: %d input bytes, %d bytes allocated before ErrTooLarge", name, len(b.data), allocated)
	}
}

// TestZstdHandBuiltBombIsValid checks the hand-built zstd frames decode when
// the limit allows, so the bomb test fails for the right reason.
func TestZstdHandBuiltBombIsValid(t *testing.T) {
	out, err := Decompress(Zstd, zstdRLEFrame(20), 20*128<<10)
	if err != nil || len(out) != 20*128<<10 {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
}

func TestTruncatedInputsFail(t *testing.T) {
	in := recordsLike(40<<10, 11)
	for _, codec := range allCodecs[1:] {
		enc, _ := Compress(codec, nil, in, 0)
		for n := 0; n < len(enc); n++ {
			out, err := Decompress(codec, enc[:n], len(in))
			if err == nil {
				// A xerial stream cut at a block boundary is a valid,
				// shorter stream, as snappy-java also reads it.
				if codec == Snappy && len(out) < len(in) && bytes.Equal(out, in[:len(out)]) {
					continue
				}
				t.Fatalf("%s truncated to %d of %d bytes decoded to %d bytes without error", Name(codec), n, len(enc), len(out))
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s truncated to %d: got %v, want ErrCorrupt", Name(codec), n, err)
			}
		}
	}
}

func TestCorruptedInputsNeverPanic(t *testing.T) {
	in := recordsLike(20<<10, 12)
	for _, codec := range allCodecs[1:] {
		enc, _ := Compress(codec, nil, in, 0)
		for i := 0; i < len(enc); i += 7 {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				bad := bytes.Clone(enc)
				bad[i] ^= flip
				out, err := Decompress(codec, bad, len(in)+100)
				if err == nil && len(out) > len(in)+100 {
					t.Fatalf("%s: output %d over the limit", Name(codec), len(out))
				}
				if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%s flip at %d: untyped error %v", Name(codec), i, err)
				}
			}
		}
	}
}

func TestCorruptExamples(t *testing.T) {
	for name, c := range map[string]struct {
		codec int
		data  []byte
	}{
		"gzip bad magic":           {Gzip, []byte("not gzip at all, not at all")},
		"snappy bad varint":        {Snappy, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		"xerial negative length":   {Snappy, append(bytes.Clone(xerialHeader), 0xff, 0xff, 0xff, 0xf0, 1)},
		"xerial length past end":   {Snappy, append(bytes.Clone(xerialHeader), 0, 0, 0, 9, 1, 2)},
		"xerial short length":      {Snappy, append(bytes.Clone(xerialHeader), 0, 0)},
		"xerial zero length block": {Snappy, append(bytes.Clone(xerialHeader), 0, 0, 0, 0)},
		"lz4 bad magic":            {LZ4, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		"lz4 bad header checksum":  {LZ4, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x00, 0, 0, 0, 0}},
		"zstd bad magic":           {Zstd, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		"zstd window over 128 MiB": {Zstd, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 18 << 3, 1, 0, 0}},
	} {
		_, err := Decompress(c.codec, c.data, 1<<20)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

// TestZstdStreamOverLimitIsTooLarge covers a frame without a content size
// whose compressed blocks pass the limit: klauspost reports running out of
// room as a block error, which must still come out as ErrTooLarge.
func TestZstdStreamOverLimitIsTooLarge(t *testing.T) {
	in := recordsLike(3<<20, 14)
	p := clientPayloads(t, in)["zstd/stream"].data
	for _, maxSize := range []int{1 << 20, len(in) - 1, 200 << 10} {
		if _, err := Decompress(Zstd, p, maxSize); !errors.Is(err, ErrTooLarge) {
			t.Errorf("maxSize %d: got %v, want ErrTooLarge", maxSize, err)
		}
	}
	if out, err := Decompress(Zstd, p, len(in)); err != nil || !bytes.Equal(out, in) {
		t.Errorf("maxSize = exact size: got %d bytes, %v", len(out), err)
	}
}

func TestZstdOutputBound(t *testing.T) {
	in := recordsLike(500<<10, 15)
	withFCS, _ := Compress(Zstd, nil, in, 0)
	if b, exact, ok := zstdOutputBound(withFCS, 1<<30); !ok || !exact || b != len(in) {
		t.Errorf("EncodeAll frame: bound %d exact %v ok %v, want %d exact", b, exact, ok, len(in))
	}
	stream := clientPayloads(t, in)["zstd/stream"].data
	b, exact, ok := zstdOutputBound(stream, 1<<30)
	if !ok || exact || b < len(in) || b > len(in)+zstdMaxBlock {
		t.Errorf("stream frame: bound %d exact %v ok %v, want within a block above %d", b, exact, ok, len(in))
	}
	if b, _, ok := zstdOutputBound(zstdRLEFrame(4096), 1<<20); !ok || b != 1<<20+1 {
		t.Errorf("RLE bomb: bound %d ok %v, want limit+1", b, ok)
	}
	if _, _, ok := zstdOutputBound(append(bytes.Clone(withFCS), 1, 2, 3), 1<<30); ok {
		t.Errorf("trailing garbage parsed")
	}
}

func TestZstdEmptyFrameThenGarbageTerminates(t *testing.T) {
	empty, _ := Compress(Zstd, nil, nil, 0)
	for _, tail := range [][]byte{{1}, {0x28, 0xb5, 0x2f, 0xfd}, make([]byte, 100)} {
		if _, err := Decompress(Zstd, append(bytes.Clone(empty), tail...), 1<<20); !errors.Is(err, ErrCorrupt) {
			t.Errorf("tail % x: got %v, want ErrCorrupt", tail, err)
		}
	}
}

func TestLZ4OutputBound(t *testing.T) {
	in := recordsLike(500<<10, 16)
	ours, _ := Compress(LZ4, nil, in, 0)
	b, ok := lz4OutputBound(ours, 1<<30)
	if !ok || b < len(in) || b > len(in)+lz4BlockSize {
		t.Errorf("64 KiB blocks: bound %d ok %v, want within a block above %d", b, ok, len(in))
	}
	checksummed := lz4Frame(t, in, lz4.SizeOption(uint64(len(in))), lz4.BlockChecksumOption(true), lz4.BlockSizeOption(lz4.Block256Kb))
	if b, ok := lz4OutputBound(checksummed, 1<<30); !ok || b < len(in) || b > len(in)+256<<10 {
		t.Errorf("256 KiB checksummed blocks: bound %d ok %v", b, ok)
	}
	if b, ok := lz4OutputBound(ours, 1000); !ok || b != 1001 {
		t.Errorf("limit: bound %d ok %v, want 1001", b, ok)
	}
	if _, ok := lz4OutputBound(ours[:len(ours)-2], 1<<30); ok {
		t.Errorf("truncated frame parsed")
	}
}
