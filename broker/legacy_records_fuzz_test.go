package broker

import (
	"testing"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// FuzzConvertMessageSet feeds arbitrary bytes to the Produce v0–v2 message-set converter. It
// must not panic; what it accepts must be one v2 batch whose CRC and records check, and
// converting that batch back down to magic 0 and 1 must not fail or panic either.
func FuzzConvertMessageSet(f *testing.F) {
	plain := messageSet(legacyMsg{magic: 1, ts: 5, key: []byte("k"), value: []byte("v")}, legacyMsg{offset: 1, magic: 1, ts: 6})
	f.Add(plain)
	f.Add(messageSet(legacyMsg{magic: 0, value: []byte("v")}))
	for _, codec := range []int{compress.Gzip, compress.Snappy, compress.LZ4} {
		value, _ := compress.Compress(codec, nil, plain, 0)
		f.Add(legacyMsg{offset: 1, magic: 1, attrs: byte(codec), ts: 6, value: value}.encode(nil))
	}
	f.Add(plain[:len(plain)-1])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := convertMessageSet(data, 1<<20, 1<<20)
		if err != nil {
			if legacyCode(err) == 0 {
				t.Fatalf("refused without a Kafka code: %v", err)
			}
			return
		}
		if !isLegacyMessageSet(data) {
			return // v2 input passes unchanged, for the log to check
		}
		h, err := batch.Check(out)
		if err != nil || h.Size() != int64(len(out)) {
			t.Fatalf("converted batch does not check: %v (size %d of %d)", err, h.Size(), len(out))
		}
		records := out[batch.HeaderSize:]
		if h.Compression() != compress.None {
			if records, err = compress.Decompress(h.Compression(), records, 1<<24); err != nil {
				t.Fatalf("converted batch does not decompress: %v", err)
			}
		}
		if err := batch.WalkRecords(records, h.RecordCount, nil); err != nil {
			t.Fatalf("converted batch's records do not walk: %v", err)
		}
		for _, magic := range []byte{0, 1} {
			if _, code := downConvertBatches(out, magic, 0, 1<<24); code != 0 {
				t.Fatalf("down-conversion to magic %d: code %d", magic, code)
			}
		}
	})
}

// FuzzConvertWrappedMessageSet puts arbitrary bytes inside a well-formed compressed wrapper
// (valid CRC, gzip, snappy or lz4), so the inner-message checks are reached: they must answer a
// Kafka code or give a batch that checks, never panic.
func FuzzConvertWrappedMessageSet(f *testing.F) {
	f.Add(messageSet(legacyMsg{magic: 1, ts: 5, value: []byte("v")}, legacyMsg{offset: 1, magic: 1, ts: 6}), byte(1), byte(compress.Gzip), int64(1))
	f.Add(messageSet(legacyMsg{magic: 0, value: []byte("v")}), byte(0), byte(compress.LZ4), int64(0))
	f.Add(legacyMsg{magic: 1, attrs: byte(compress.Gzip), value: []byte("x")}.encode(nil), byte(1), byte(compress.Snappy), int64(0))
	f.Fuzz(func(t *testing.T, inner []byte, magic, codec byte, wrapperOffset int64) {
		magic %= 2
		c := int(codec%3) + 1 // gzip, snappy, lz4
		value, err := compress.Compress(c, nil, inner, 0)
		if err != nil {
			t.Skip()
		}
		set := legacyMsg{offset: wrapperOffset, magic: magic, attrs: byte(c), ts: 1, value: value}.encode(nil)
		out, err := convertMessageSet(set, 1<<20, 1<<20)
		if err != nil {
			if legacyCode(err) == 0 {
				t.Fatalf("refused without a Kafka code: %v", err)
			}
			return
		}
		if _, err := batch.Check(out); err != nil {
			t.Fatalf("converted batch does not check: %v", err)
		}
	})
}
