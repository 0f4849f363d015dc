// Package compress implements Kafka's record-batch compression codecs for
// sluice: decoding compressed batches where the broker must look inside them
// (timestamp lookups, replaying __consumer_offsets, compaction, conversion to
// a topic's compression.type) and encoding them.
//
// # Codecs
//
// A codec is the value of the low three bits of a v2 RecordBatch's attributes,
// which is also the number used throughout this package:
//
//	0 None    records stored as they are
//	1 Gzip    RFC 1952 gzip; concatenated members are accepted when decoding
//	2 Snappy  xerial-framed snappy or a raw snappy block (see below)
//	3 LZ4     LZ4 frame format (not the bare block format)
//	4 Zstd    Zstandard frames; several concatenated frames are accepted
//
// Values 5-7 are unknown to Kafka too and fail with ErrUnknownCodec.
//
// # Snappy framing
//
// Kafka's Java producer writes snappy through snappy-java's SnappyOutputStream,
// the "xerial" framing:
//
//	magic   8 bytes   0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//	version int32 BE  1
//	compat  int32 BE  1
//	then repeated:
//	  length int32 BE  length of the block that follows
//	  block  []byte    one raw snappy block (at most 32 KiB uncompressed when
//	                   written by Java or by this package)
//
// Other clients (librdkafka, franz-go with some settings, sarama) may send a
// single raw snappy block with no framing. Decompress accepts both: input that
// starts with the 8 magic bytes is xerial, anything else is a raw block, the
// same rule snappy-java's SnappyInputStream (which Kafka's consumers use)
// applies. A xerial stream may contain a second header where a block length is
// expected (concatenated streams), which is skipped, as snappy-java does.
// Compress always writes xerial framing with 32 KiB blocks, as the Java
// producer does, so every Kafka client can read it.
//
// # LZ4 framing
//
// Compress writes what Kafka's Lz4BlockOutputStream writes: an LZ4 frame with
// independent 64 KiB blocks, no content size, no block or content checksums.
// Decompress accepts any valid LZ4 frame (other block sizes, checksums,
// content size), but not the legacy format nor Kafka's pre-v2 broken header
// checksum: sluice stores only v2 batches.
//
// # Bounds
//
// Decompress never trusts a size claimed by its input. With maxSize = M:
//
//   - the result is at most M bytes, otherwise the call fails with
//     ErrTooLarge;
//   - gzip and lz4 decode into a buffer that starts from a size hint (gzip:
//     the trailer's ISIZE; lz4: a bound summed from the block headers) and
//     doubles, but never beyond M+1 bytes; lz4 also uses the library's
//     pooled block buffer (at most 4 MiB, reused across calls);
//   - snappy sums the uncompressed lengths every block declares before
//     allocating anything and fails if the sum exceeds M; it then allocates
//     exactly that sum;
//   - zstd first walks the frame and block headers, without decoding, for
//     an upper bound of the output: exact for frames that declare their
//     content size (refused before allocating if above M), and within one
//     block (128 KiB) for frames that do not (zstd-jni streams, as Java
//     writes), since each block decodes to at most 128 KiB. It then decodes
//     into a buffer of min(bound, M + 128 KiB), in one pass. Only input whose
//     headers do not parse starts from a guess and retries with 4x the room.
//     The library may regrow the buffer once while appending raw or RLE
//     blocks, so a bomb against M = 1 MiB allocates about 2.6 MiB in total.
//     Windows above 128 MiB (libzstd's default limit) are refused.
//
// M is clamped to MaxSizeLimit (2 GiB - 1, Kafka's largest array). None
// returns the input itself, without copying, after the same size check.
//
// Decoders never panic on any input (fuzzed by FuzzDecompress) and report
// malformed input as ErrCorrupt wrapped with the codec's detail.
//
// Decoder(maxSize) adapts Decompress to logstore.Options.Decompress; Name
// gives a codec's compression.type spelling.
//
// Encoders and decoders of the underlying libraries are pooled, so steady
// state calls allocate little more than their output. All functions are safe
// for concurrent use.
package compress
