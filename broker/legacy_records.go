package broker

// Legacy message sets (magic 0 and 1), the record format of Produce v0–v2 and Fetch v0–v3.
//
// sluice's log stores only RecordBatch v2 (magic 2). As Kafka 3.x did with
// message.format.version 3.0, a produce of magic 0/1 messages is converted to one v2 batch
// before it reaches the log (Kafka's LogValidator), and a fetch by a client that cannot read
// magic 2 gets the batches converted down to the magic its version allows (Kafka's
// RecordsUtil.downConvert and LazyDownConversionRecords).
//
// A legacy message set is a sequence of messages, each:
//
//	offset   int64
//	size     int32   bytes that follow
//	crc      uint32  CRC-32 (IEEE) of the bytes from magic to the end of the message
//	magic    int8    0 or 1
//	attrs    int8    bits 0-2 compression codec, bit 3 (magic 1) LogAppendTime
//	ts       int64   magic 1 only
//	key      int32 length (-1 = null), bytes
//	value    int32 length (-1 = null), bytes
//
// A compressed message (a "wrapper") holds in its value the compressed message set of its
// inner messages, which must not be compressed themselves. Magic 1 inner offsets are relative
// (0..n-1) and the wrapper carries the absolute offset of the last; magic 0 inner offsets are
// absolute.
//
// Nothing here panics on any input; every length is checked before it is used.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/batch"
	"sluice/internal/compress"
	"sluice/logstore"
)

// Legacy message layout (Kafka's LegacyRecord), fixed by the protocol.
const (
	legacyLogOverhead  = 12 // offset + size
	legacyOverheadV0   = 14 // crc + magic + attrs + key length + value length
	legacyOverheadV1   = 22 // legacyOverheadV0 + timestamp
	legacyAttrCodec    = 0x07
	legacyAttrLogAppTs = 0x08
	legacyMagicOffset  = 16 // the magic byte's place in a message set, and in a v2 batch
)

// legacyMessage is one decoded legacy message.
type legacyMessage struct {
	offset     int64
	magic      byte
	attrs      byte
	timestamp  int64 // -1 for magic 0
	key, value []byte
}

func (m *legacyMessage) codec() int { return int(m.attrs & legacyAttrCodec) }

// errLegacy carries the Kafka code a malformed message set is answered with.
type errLegacy struct{ code int16 }

func (e errLegacy) Error() string {
	return "broker: legacy message set: " + kerr.ErrorForCode(e.code).Error()
}

var (
	errLegacyCorrupt  = errLegacy{kerr.CorruptMessage.Code}
	errLegacyInvalid  = errLegacy{kerr.InvalidRecord.Code}
	errLegacyTooLarge = errLegacy{kerr.MessageTooLarge.Code}
	errLegacyCodec    = errLegacy{kerr.UnsupportedCompressionType.Code}
)

// legacyCode is the Kafka code for an error from this file.
func legacyCode(err error) int16 {
	var e errLegacy
	if errors.As(err, &e) {
		return e.code
	}
	return kerr.CorruptMessage.Code
}

// parseLegacyMessage decodes the message at the start of b and returns it with the rest of b.
// It checks the size against the framing, the CRC (CORRUPT_MESSAGE, as LegacyRecord.ensureValid)
// and the key and value lengths. A message that does not fit in b is CORRUPT_MESSAGE too: Kafka
// quietly dropped a partial last message of a produce, sluice refuses the request instead, since
// no producer sends one.
func parseLegacyMessage(b []byte) (legacyMessage, []byte, error) {
	var m legacyMessage
	if len(b) < legacyLogOverhead {
		return m, nil, errLegacyCorrupt
	}
	m.offset = int64(binary.BigEndian.Uint64(b))
	size := int64(int32(binary.BigEndian.Uint32(b[8:])))
	if size < legacyOverheadV0 || size > int64(len(b)-legacyLogOverhead) {
		return m, nil, errLegacyCorrupt
	}
	msg := b[legacyLogOverhead : legacyLogOverhead+size]
	rest := b[legacyLogOverhead+size:]
	if binary.BigEndian.Uint32(msg) != crc32.ChecksumIEEE(msg[4:]) {
		return m, nil, errLegacyCorrupt
	}
	m.magic, m.attrs = msg[4], msg[5]
	body := msg[6:]
	switch m.magic {
	case 0:
		m.timestamp = noTimestamp
	case 1:
		if size < legacyOverheadV1 {
			return m, nil, errLegacyCorrupt
		}
		m.timestamp = int64(binary.BigEndian.Uint64(body))
		body = body[8:]
	default:
		return m, nil, errLegacyCorrupt
	}
	var ok bool
	if m.key, body, ok = readLegacyBytes(body); !ok {
		return m, nil, errLegacyCorrupt
	}
	if m.value, body, ok = readLegacyBytes(body); !ok || len(body) != 0 {
		return m, nil, errLegacyCorrupt
	}
	return m, rest, nil
}

// readLegacyBytes splits an int32-length-prefixed byte string (-1 = null) off b.
func readLegacyBytes(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	l := int64(int32(binary.BigEndian.Uint32(b)))
	b = b[4:]
	if l < -1 || l > int64(len(b)) {
		return nil, nil, false
	}
	if l < 0 {
		return nil, b, true
	}
	return b[:l:l], b[l:], true
}

// isLegacyMessageSet reports whether records start with a magic 0 or 1 message rather than a
// v2 batch (both keep the magic byte at the same place).
func isLegacyMessageSet(records []byte) bool {
	return len(records) > legacyMagicOffset && records[legacyMagicOffset] < batch.MagicV2
}

// legacyRecord is one record bound for a v2 batch built from legacy messages.
type legacyRecord struct {
	timestamp  int64
	key, value []byte
}

// convertMessageSet turns a Produce v0–v2 partition's records into one v2 batch, as Kafka's
// LogValidator did for magic 0/1 input (convertAndAssignOffsetsNonCompressed and
// validateMessagesAndAssignOffsetsCompressed): every message's CRC and framing is checked
// (CORRUPT_MESSAGE), each message, wrapper or not, must be within maxMessageBytes
// (MESSAGE_TOO_LARGE, as UnifiedLog.analyzeAndValidateRecords), all messages must share the
// first's magic, inner messages their wrapper's, and no inner message may be compressed
// (INVALID_RECORD). The records keep their keys, values and (magic 1) timestamps; magic 0
// records have none (-1). Wrappers' records are gathered into one batch compressed with the
// wrappers' codec (compression.type=producer keeps it; the produce path then applies the
// topic's compression.type as for any batch); uncompressed messages give an uncompressed batch.
// Offsets are the log's to assign, so the producer's are dropped. Records already in v2
// batches (a v2 client sending magic 2 with an old request version) pass unchanged.
// decompressLimit bounds what one wrapper may expand to.
func convertMessageSet(records []byte, maxMessageBytes int32, decompressLimit int) ([]byte, error) {
	if !isLegacyMessageSet(records) {
		return records, nil
	}
	var out []legacyRecord
	codec := -1
	firstMagic := records[legacyMagicOffset]
	for rest := records; len(rest) > 0; {
		if len(rest) >= legacyLogOverhead {
			if size := int64(int32(binary.BigEndian.Uint32(rest[8:]))); legacyLogOverhead+size > int64(maxMessageBytes) {
				return nil, errLegacyTooLarge
			}
		}
		m, next, err := parseLegacyMessage(rest)
		if err != nil {
			return nil, err
		}
		rest = next
		if m.magic != firstMagic {
			return nil, errLegacyInvalid // LogValidator.validateBatch: one magic per request
		}
		if m.codec() == compress.None {
			if codec > 0 {
				return nil, errLegacyInvalid // mixed: Kafka's single-codec source check
			}
			codec = compress.None
			out = append(out, legacyRecord{timestamp: m.timestamp, key: m.key, value: m.value})
			continue
		}
		if codec == compress.None || (codec > 0 && codec != m.codec()) {
			return nil, errLegacyInvalid
		}
		codec = m.codec()
		if out, err = appendWrapperRecords(out, &m, decompressLimit); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errLegacyCorrupt
	}
	return buildV2Batch(out, codec)
}

// appendWrapperRecords decompresses wrapper w and appends its inner records, checked as
// Kafka's AbstractLegacyRecordBatch.DeepRecordsIterator and LogValidator check them.
func appendWrapperRecords(out []legacyRecord, w *legacyMessage, decompressLimit int) ([]legacyRecord, error) {
	switch {
	case w.codec() == compress.Zstd:
		return nil, errLegacyCodec // zstd needs magic 2 (Produce v7+)
	case w.codec() > compress.Zstd:
		return nil, errLegacyCorrupt
	case w.value == nil:
		return nil, errLegacyInvalid // "compressed record set with null value"
	}
	value := w.value
	if w.magic == 0 && w.codec() == compress.LZ4 {
		value = fixLZ4Checksum(value, false)
	}
	inner, err := compress.Decompress(w.codec(), value, decompressLimit)
	if errors.Is(err, compress.ErrTooLarge) {
		return nil, errLegacyTooLarge
	} else if err != nil {
		return nil, errLegacyCorrupt
	}
	start := len(out)
	var lastInner int64
	for rest := inner; len(rest) > 0; {
		m, next, err := parseLegacyMessage(rest)
		if err != nil {
			return nil, err
		}
		rest = next
		switch {
		case m.magic != w.magic:
			return nil, errLegacyInvalid // "magic does not match outer magic"
		case m.codec() != compress.None:
			return nil, errLegacyInvalid // nested compression
		}
		ts := m.timestamp
		if w.magic == 1 && w.attrs&legacyAttrLogAppTs != 0 {
			ts = w.timestamp // inner records of a LogAppendTime wrapper carry its time
		}
		lastInner = m.offset
		out = append(out, legacyRecord{timestamp: ts, key: m.key, value: m.value})
	}
	if len(out) == start {
		return nil, errLegacyInvalid // "compressed record set with no inner records"
	}
	if w.magic == 1 && w.offset != 0 && w.offset < lastInner {
		// Relative inner offsets end at the wrapper's: a wrapper below its last inner offset
		// would give records negative offsets.
		return nil, errLegacyInvalid
	}
	return out, nil
}

// buildV2Batch encodes records as one v2 batch at base offset 0 (the log assigns offsets),
// without producer ID, CreateTime, compressed with codec.
func buildV2Batch(records []legacyRecord, codec int) ([]byte, error) {
	h := batch.Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		BaseTimestamp: records[0].timestamp, MaxTimestamp: records[0].timestamp}
	recs := make([]batch.Record, len(records))
	for i, r := range records {
		h.MaxTimestamp = max(h.MaxTimestamp, r.timestamp)
		recs[i] = batch.Record{TimestampDelta: r.timestamp - h.BaseTimestamp, Key: r.key, Value: r.value}
	}
	b := batch.Build(h, recs)
	if codec == compress.None {
		return b, nil
	}
	out := append(make([]byte, 0, len(b)/2+batch.HeaderSize), b[:batch.HeaderSize]...)
	out, err := compress.Compress(codec, out, b[batch.HeaderSize:], 0)
	if err != nil {
		return nil, errLegacyCorrupt
	}
	batch.SetLength(out, int32(len(out)-batch.LogOverhead))
	batch.SetCompression(out, codec)
	binary.BigEndian.PutUint32(out[legacyCRCOffsetV2:], batch.CRC(out))
	return out, nil
}

// legacyCRCOffsetV2 is where a v2 batch keeps its CRC (batch.go's layout).
const legacyCRCOffsetV2 = 17

// fetchMagic is the newest record format a Fetch version can carry: magic 0 for v0–v1,
// magic 1 for v2–v3 (KIP-32), magic 2 from v4.
func fetchMagic(version int16) byte {
	switch {
	case version < 2:
		return 0
	case version < 4:
		return 1
	}
	return batch.MagicV2
}

// downConvertBatches converts data, whole v2 batches as the log stores them, to messages of
// magic toMagic (0 or 1), as Kafka 3.x's RecordsUtil.downConvert did for old consumers:
//
//   - control batches (transaction markers) are dropped, old formats cannot carry them, and
//     so are record headers;
//   - a compressed batch becomes one wrapper of the same codec whose inner messages are all
//     its records (magic 1: relative inner offsets, the wrapper at the last offset; magic 0:
//     absolute ones); an uncompressed batch becomes one message per record at or after
//     fetchOffset;
//   - magic 1 keeps the timestamps and the LogAppendTime flag (its records then carry the
//     batch's append time); magic 0 has no timestamps.
//
// The output is bounded as Kafka's LazyDownConversionRecords bounded it: at most
// max(len(data), the first converted unit) bytes, converting stops before the first unit that
// would pass that, so memory and CPU follow what the fetch read. A zstd batch, which no
// pre-v10 fetcher can decode, answers UNSUPPORTED_COMPRESSION_TYPE, as Kafka did. lz4 under
// magic 0 carries the broken frame checksum old readers expect (fixLZ4Checksum).
func downConvertBatches(data []byte, toMagic byte, fetchOffset int64, decompressLimit int) ([]byte, int16) {
	limit := len(data)
	var out []byte
	for rest := data; len(rest) > 0; {
		h, err := batch.ParseHeader(rest)
		if err != nil || h.Size() > int64(len(rest)) {
			break // the log returns whole batches; stop at anything else
		}
		b := rest[:h.Size()]
		rest = rest[h.Size():]
		if h.IsControl() {
			continue
		}
		codec := h.Compression()
		if codec == compress.Zstd {
			if len(out) == 0 {
				return []byte{}, kerr.UnsupportedCompressionType.Code
			}
			break // send what came before; the next fetch starts here and gets the error
		}
		records := b[batch.HeaderSize:]
		if codec != compress.None {
			if records, err = compress.Decompress(codec, records, decompressLimit); err != nil {
				break // the log holds only batches it validated; never expected
			}
		}
		var full bool
		if out, full, err = appendLegacyUnits(out, &limit, &h, records, toMagic, fetchOffset, codec); err != nil || full {
			break
		}
	}
	if out == nil {
		out = []byte{}
	}
	return out, 0
}

// appendLegacyUnits appends one v2 batch (h, and its records section, decompressed) to out
// as messages of toMagic: one wrapper holding them all for a compressed batch, else one
// message per record at or after fetchOffset. Each unit (a wrapper or a plain message) must
// fit within *limit, except the first of the response, which raises *limit to its size; full
// reports a unit that did not fit, and the conversion stops there.
func appendLegacyUnits(out []byte, limit *int, h *batch.Header, records []byte, toMagic byte, fetchOffset int64, codec int) (_ []byte, full bool, _ error) {
	logAppend := toMagic == 1 && h.Attributes&batch.AttrTimestampType != 0
	attrs := byte(0)
	if logAppend {
		attrs = legacyAttrLogAppTs
	}
	fits := func(unitStart int) bool {
		if unitStart == 0 {
			*limit = max(*limit, len(out))
			return true
		}
		return len(out) <= *limit
	}
	wrap := codec != compress.None
	var msgs []byte
	var lastOffset int64
	err := batch.WalkRecords(records, h.RecordCount, func(r batch.RecordInfo) bool {
		offset := h.BaseOffset + int64(r.OffsetDelta)
		if !wrap && offset < fetchOffset {
			return true
		}
		ts := h.BaseTimestamp + r.TimestampDelta
		if logAppend {
			ts = h.MaxTimestamp
		}
		if !wrap {
			start := len(out)
			out = appendLegacyMessage(out, offset, toMagic, attrs, ts, r.Key, r.Value)
			if !fits(start) {
				out, full = out[:start], true
				return false
			}
			return true
		}
		msgOffset := offset
		if toMagic == 1 {
			msgOffset = int64(r.OffsetDelta) // relative inner offsets
		}
		msgs = appendLegacyMessage(msgs, msgOffset, toMagic, attrs, ts, r.Key, r.Value)
		lastOffset = offset
		return true
	})
	if err != nil || !wrap || len(msgs) == 0 {
		return out, full, err
	}
	value, err := compress.Compress(codec, nil, msgs, 0)
	if err != nil {
		return out, false, err
	}
	if toMagic == 0 && codec == compress.LZ4 {
		value = fixLZ4Checksum(value, true)
	}
	start := len(out)
	out = appendLegacyMessage(out, lastOffset, toMagic, attrs|byte(codec), h.MaxTimestamp, nil, value)
	if !fits(start) {
		return out[:start], true, nil
	}
	return out, false, nil
}

// appendLegacyMessage appends one message of magic (0 or 1) to dst; ts is dropped for magic 0.
func appendLegacyMessage(dst []byte, offset int64, magic, attrs byte, ts int64, key, value []byte) []byte {
	size := legacyOverheadV0 + len(key) + len(value)
	if magic == 1 {
		size += 8
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(offset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	crcAt := len(dst)
	dst = append(dst, 0, 0, 0, 0, magic, attrs)
	if magic == 1 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	}
	dst = appendLegacyBytes(dst, key)
	dst = appendLegacyBytes(dst, value)
	binary.BigEndian.PutUint32(dst[crcAt:], crc32.ChecksumIEEE(dst[crcAt+4:]))
	return dst
}

func appendLegacyBytes(dst, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// downConvertRead copies a fetch's file slices into memory and converts them to toMagic for an
// old consumer (downConvertBatches). The slices are what the read allowed (the fetch's byte
// limits, or one whole first batch), so the copy is bounded by them. A read failure answers the
// partition KAFKA_STORAGE_ERROR with no records.
func downConvertRead(slices []logstore.FileSlice, toMagic byte, fetchOffset int64) ([]byte, int16) {
	var total int64
	for _, s := range slices {
		total += s.Length
	}
	buf := bytes.NewBuffer(make([]byte, 0, total))
	for _, s := range slices {
		if _, err := logstore.WriteSlice(buf, s); err != nil {
			return []byte{}, kerr.KafkaStorageError.Code
		}
	}
	return downConvertBatches(buf.Bytes(), toMagic, fetchOffset, maxDecompressedBatch)
}

// Magic 0's lz4 frames (KAFKA-3160): Kafka before 0.10 computed the frame descriptor's header
// checksum over the frame's magic number too, and kept doing so for magic 0 messages so old
// readers could check it. A magic 0 wrapper's frame is therefore given the proper checksum
// before decoding, and a down-converted magic 0 lz4 wrapper the broken one, as Kafka 3.x's
// KafkaLZ4BlockOutputStream wrote it.

// lz4Descriptor returns where the frame descriptor of an lz4 frame ends (at its header
// checksum byte), or false when frame does not start with one.
func lz4Descriptor(frame []byte) (hcAt int, ok bool) {
	if len(frame) < 7 || binary.LittleEndian.Uint32(frame) != 0x184D2204 {
		return 0, false
	}
	flg := frame[4]
	hcAt = 6
	if flg&0x08 != 0 { // content size
		hcAt += 8
	}
	if flg&0x01 != 0 { // dictionary ID
		hcAt += 4
	}
	return hcAt, len(frame) > hcAt
}

// fixLZ4Checksum returns frame with its header checksum set: over the descriptor alone
// (proper), or from the frame's start (broken, Kafka's magic 0). frame is copied, not changed.
func fixLZ4Checksum(frame []byte, broken bool) []byte {
	hcAt, ok := lz4Descriptor(frame)
	if !ok {
		return frame
	}
	from := 4
	if broken {
		from = 0
	}
	out := append([]byte(nil), frame...)
	out[hcAt] = byte(xxh32(frame[from:hcAt]) >> 8)
	return out
}

// xxh32 is xxHash32 with seed 0 for inputs shorter than 16 bytes (an lz4 frame descriptor).
func xxh32(b []byte) uint32 {
	const p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
	rotl := func(x uint32, r uint) uint32 { return x<<r | x>>(32-r) }
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = rotl(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = rotl(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}
