package batch

import "encoding/binary"

// RecordInfo is what the log needs of one record: its offset and timestamp deltas.
type RecordInfo struct {
	OffsetDelta    int32
	TimestampDelta int64
}

// ForEachRecord walks the records of an uncompressed batch b (a whole batch, header included),
// checking each record's framing (length, attributes, deltas, key/value/header lengths), and
// calls fn until it returns false. It returns ErrCorrupt for malformed records or a record
// count that disagrees with the header, and never reads outside b. Compressed batches return
// (false, nil): their records are not visible without decompression.
func ForEachRecord(b []byte, fn func(RecordInfo) bool) (walked bool, err error) {
	h, err := ParseHeader(b)
	if err != nil {
		return false, err
	}
	return ForEachRecordOf(&h, b, fn)
}

// ForEachRecordOf is ForEachRecord for a batch whose header h was already parsed from b.
func ForEachRecordOf(h *Header, b []byte, fn func(RecordInfo) bool) (walked bool, err error) {
	if h.Compression() != 0 {
		return false, nil
	}
	if int64(len(b)) < h.Size() {
		return false, ErrTruncated
	}
	return true, WalkRecords(b[HeaderSize:h.Size()], h.RecordCount, fn)
}

// WalkRecords walks count records in rest, a batch's records section (decompressed, for a
// compressed batch), checking each record's framing, and calls fn until it returns false. It
// returns ErrCorrupt for malformed records or when rest holds more or fewer records than count,
// and never reads outside rest.
func WalkRecords(rest []byte, count int32, fn func(RecordInfo) bool) error {
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(rest)
		if n <= 0 || length < 0 || length > int64(len(rest)-n) {
			return ErrCorrupt
		}
		rec := rest[n : n+int(length)]
		rest = rest[n+int(length):]
		info, ok := parseRecord(rec)
		if !ok {
			return ErrCorrupt
		}
		if fn != nil && !fn(info) {
			return nil
		}
	}
	if len(rest) != 0 {
		return ErrCorrupt
	}
	return nil
}

// parseRecord checks one record body: attributes int8, timestampDelta varlong, offsetDelta
// varint, key, value (varint length, -1 = null), header count varint, headers.
func parseRecord(rec []byte) (RecordInfo, bool) {
	var info RecordInfo
	if len(rec) < 1 {
		return info, false
	}
	rec = rec[1:]
	ts, n := binary.Varint(rec)
	if n <= 0 {
		return info, false
	}
	rec = rec[n:]
	od, n := binary.Varint(rec)
	if n <= 0 || od < 0 || od > 1<<31-1 {
		return info, false
	}
	rec = rec[n:]
	info.TimestampDelta, info.OffsetDelta = ts, int32(od)
	var ok bool
	if rec, ok = skipVarBytes(rec); !ok { // key
		return info, false
	}
	if rec, ok = skipVarBytes(rec); !ok { // value
		return info, false
	}
	headers, n := binary.Varint(rec)
	if n <= 0 || headers < 0 || headers > int64(len(rec)) {
		return info, false
	}
	rec = rec[n:]
	for j := int64(0); j < headers; j++ {
		if rec, ok = skipVarBytes(rec); !ok { // header key (never null, but tolerate)
			return info, false
		}
		if rec, ok = skipVarBytes(rec); !ok {
			return info, false
		}
	}
	return info, len(rec) == 0
}

func skipVarBytes(b []byte) ([]byte, bool) {
	l, n := binary.Varint(b)
	if n <= 0 || l < -1 || l > int64(len(b)-n) {
		return nil, false
	}
	if l < 0 {
		return b[n:], true
	}
	return b[n+int(l):], true
}
