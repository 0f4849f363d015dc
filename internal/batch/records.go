package batch

import "encoding/binary"

// RecordInfo is one record's framing: its offset and timestamp deltas, and its key and value
// (sub-slices of the batch; nil for a null key or value, non-nil for an empty one).
type RecordInfo struct {
	OffsetDelta    int32
	TimestampDelta int64
	Key, Value     []byte
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
	if info.Key, rec, ok = readVarBytes(rec); !ok {
		return info, false
	}
	if info.Value, rec, ok = readVarBytes(rec); !ok {
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

// readVarBytes splits a varint-length-prefixed byte string (-1 = null, returned as nil) off b.
func readVarBytes(b []byte) (v, rest []byte, ok bool) {
	l, n := binary.Varint(b)
	if n <= 0 || l < -1 || l > int64(len(b)-n) {
		return nil, nil, false
	}
	if l < 0 {
		return nil, b[n:], true
	}
	return b[n : n+int(l) : n+int(l)], b[n+int(l):], true
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

// CheckRecordsSequential checks count records in rest, a batch's records section (decompressed,
// for a compressed batch), as WalkRecords does, and that their offset deltas are 0, 1, 2, ...,
// as Kafka's LogValidator requires of a client's batch. It stops at the first record whose
// offset delta is not its index and returns that index as walked with a nil error; walked ==
// count means every record is sequential and rest holds exactly count records (a negative count
// walks 0 records). It returns
// ErrCorrupt for malformed framing in any record up to and including the first non-sequential
// one, and never reads outside rest.
//
// It accepts and rejects exactly what WalkRecords with an "offset delta == index" callback does
// (FuzzCheckRecordsSequential holds it to that), but runs on the produce path for every record,
// so it avoids the callback and decodes the mostly 1-byte varints of a record inline.
func CheckRecordsSequential(rest []byte, count int32) (walked int32, err error) {
	p := 0
	for ; walked < count; walked++ {
		length, q := varintAt(rest, p)
		if q < 0 || length < 0 || length > int64(len(rest)-q) {
			return walked, ErrCorrupt
		}
		p = q + int(length)
		offsetDelta, ok := checkRecord(rest[q:p])
		if !ok {
			return walked, ErrCorrupt
		}
		if offsetDelta != int64(walked) {
			return walked, nil
		}
	}
	// walked is count here, or 0 for a negative count (which only an empty rest satisfies).
	if p != len(rest) {
		return walked, ErrCorrupt
	}
	return walked, nil
}

// checkRecord checks one record body's framing as parseRecord does and returns its offset delta.
//
// Each varint is decoded in place: a 1-byte varint (attributes aside, most of a record's fields:
// timestamp delta, small offset deltas, null key, header count) costs a compare and a shift;
// longer ones go to varintAt. Go does not inline a helper that both does this and calls the
// slow path, so the fast path is written out at each field.
func checkRecord(rec []byte) (offsetDelta int64, ok bool) {
	var p int
	if len(rec) < 1 { // attributes int8
		return 0, false
	}
	p = 1
	// timestampDelta varlong: only its framing matters here.
	if uint(p) < uint(len(rec)) && rec[p] < 0x80 {
		p++
	} else if _, p = varintAt(rec, p); p < 0 {
		return 0, false
	}
	// offsetDelta varint.
	if uint(p) < uint(len(rec)) && rec[p] < 0x80 {
		c := rec[p]
		offsetDelta, p = int64(c>>1)^-int64(c&1), p+1
	} else if offsetDelta, p = varintAt(rec, p); p < 0 {
		return 0, false
	}
	if offsetDelta < 0 || offsetDelta > 1<<31-1 {
		return 0, false
	}
	// key, value: varint length (-1 = null) and bytes.
	for range 2 {
		var l int64
		if uint(p) < uint(len(rec)) && rec[p] < 0x80 {
			c := rec[p]
			l, p = int64(c>>1)^-int64(c&1), p+1
		} else if l, p = varintAt(rec, p); p < 0 {
			return 0, false
		}
		if l < -1 || l > int64(len(rec)-p) {
			return 0, false
		}
		if l > 0 {
			p += int(l)
		}
	}
	// header count varint; no headers is the common case.
	if p == len(rec)-1 && rec[p] == 0 {
		return offsetDelta, true
	}
	headers, p := varintAt(rec, p)
	// Each header takes at least two bytes (two length varints), so more headers than half the
	// remaining bytes cannot fit; the bound also keeps the loop short on garbage counts.
	if p < 0 || headers < 0 || headers > int64(len(rec)-p)/2 {
		return 0, false
	}
	for ; headers > 0; headers-- {
		if p = skipVarBytesAt(rec, p); p < 0 { // header key (never null, but tolerate)
			return 0, false
		}
		if p = skipVarBytesAt(rec, p); p < 0 { // header value
			return 0, false
		}
	}
	return offsetDelta, p == len(rec)
}

// skipVarBytesAt skips a varint-length-prefixed byte string (-1 = null) at b[p:] and returns the
// index after it, or -1 if it is malformed or runs past b.
func skipVarBytesAt(b []byte, p int) int {
	l, q := varintAt(b, p)
	if q < 0 || l < -1 || l > int64(len(b)-q) {
		return -1
	}
	if l > 0 {
		q += int(l)
	}
	return q
}

// varintAt decodes the zigzag varint at b[p:] as binary.Varint does (non-minimal encodings
// accepted, more than 64 bits rejected) and returns it with the index after it, or next = -1 if
// b ends first or the varint overflows. A p outside b also yields -1.
func varintAt(b []byte, p int) (v int64, next int) {
	if p < 0 || p > len(b) {
		return 0, -1
	}
	b = b[p:]
	if len(b) >= 2 && b[1] < 0x80 { // 2 bytes: lengths of 64..8191, offset deltas 64..8191
		if b[0] < 0x80 {
			return int64(b[0]>>1) ^ -int64(b[0]&1), p + 1
		}
		u := uint64(b[0]&0x7f) | uint64(b[1])<<7
		return int64(u>>1) ^ -int64(u&1), p + 2
	}
	var u uint64
	for i, c := range b {
		if i == binary.MaxVarintLen64 {
			return 0, -1
		}
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			u |= uint64(c) << (7 * i)
			return int64(u>>1) ^ -int64(u&1), p + i + 1
		}
		u |= uint64(c&0x7f) << (7 * i)
	}
	return 0, -1
}

// RecordsSummary is what the produce path needs of a client batch's records, gathered in the
// one walk that checks their framing (ValidateClientRecords).
type RecordsSummary struct {
	// Walked is the number of records whose offset delta is their index (0, 1, 2, ...):
	// the count when all are sequential, else the index of the first that is not.
	Walked int32
	// MinTimestampDelta and MaxTimestampDelta bound the walked records' timestamp deltas
	// (0 and 0 when none was walked).
	MinTimestampDelta, MaxTimestampDelta int64
	// NullKeys counts the walked records with a null key.
	NullKeys int32
}

// ValidateClientRecords checks count records in rest, a client batch's records section
// (decompressed, for a compressed batch), as Kafka's DefaultRecord.readFrom does when
// LogValidator iterates them: each record's length, attributes, deltas, key, value and header
// lengths frame it exactly, no header key is null, and rest holds no bytes after the last
// record. It stops at the first record whose offset delta is not its index (Walked says
// where) and returns ErrCorrupt for malformed framing up to there. In the same walk it
// gathers the timestamp deltas' bounds and the null keys, so the produce path reads every
// record once. It never reads outside rest.
func ValidateClientRecords(rest []byte, count int32) (RecordsSummary, error) {
	// Locals rather than the result's fields, so the loop keeps them in registers.
	var walked, nullKeys int32
	var minDelta, maxDelta int64
	p, sequential := 0, true
	for ; walked < count; walked++ {
		length, q := varintAt(rest, p)
		if q < 0 || length < 0 || length > int64(len(rest)-q) {
			return RecordsSummary{}, ErrCorrupt
		}
		p = q + int(length)
		offsetDelta, timestampDelta, nullKey, ok := checkClientRecord(rest[q:p])
		if !ok {
			return RecordsSummary{}, ErrCorrupt
		}
		if offsetDelta != int64(walked) {
			sequential = false
			break
		}
		if walked == 0 {
			minDelta, maxDelta = timestampDelta, timestampDelta
		}
		minDelta, maxDelta = min(minDelta, timestampDelta), max(maxDelta, timestampDelta)
		if nullKey {
			nullKeys++
		}
	}
	s := RecordsSummary{Walked: walked, MinTimestampDelta: minDelta, MaxTimestampDelta: maxDelta, NullKeys: nullKeys}
	if sequential && p != len(rest) {
		return s, ErrCorrupt
	}
	return s, nil
}

// checkClientRecord is checkRecord for a client's record: it also returns the timestamp delta
// and whether the key is null, and refuses a null header key (Kafka's "Invalid negative header
// key size"). The 1-byte varint fast paths are written out as in checkRecord.
func checkClientRecord(rec []byte) (offsetDelta, timestampDelta int64, nullKey, ok bool) {
	if len(rec) < 1 { // attributes int8
		return 0, 0, false, false
	}
	p := 1
	if uint(p) < uint(len(rec)) && rec[p] < 0x80 {
		c := rec[p]
		timestampDelta, p = int64(c>>1)^-int64(c&1), p+1
	} else if timestampDelta, p = varintAt(rec, p); p < 0 {
		return 0, 0, false, false
	}
	if uint(p) < uint(len(rec)) && rec[p] < 0x80 {
		c := rec[p]
		offsetDelta, p = int64(c>>1)^-int64(c&1), p+1
	} else if offsetDelta, p = varintAt(rec, p); p < 0 {
		return 0, 0, false, false
	}
	if offsetDelta < 0 || offsetDelta > 1<<31-1 {
		return 0, 0, false, false
	}
	// key: varint length (-1 = null) and bytes; 1 (-1) is the common null key.
	var l int64
	if uint(p) < uint(len(rec)) && rec[p] < 0x80 {
		c := rec[p]
		l, p = int64(c>>1)^-int64(c&1), p+1
	} else if l, p = varintAt(rec, p); p < 0 {
		return 0, 0, false, false
	}
	if l < -1 || l > int64(len(rec)-p) {
		return 0, 0, false, false
	}
	nullKey = l < 0
	if l > 0 {
		p += int(l)
	}
	// value, likewise.
	if uint(p) < uint(len(rec)) && rec[p] < 0x80 {
		c := rec[p]
		l, p = int64(c>>1)^-int64(c&1), p+1
	} else if l, p = varintAt(rec, p); p < 0 {
		return 0, 0, false, false
	}
	if l < -1 || l > int64(len(rec)-p) {
		return 0, 0, false, false
	}
	if l > 0 {
		p += int(l)
	}
	if p == len(rec)-1 && rec[p] == 0 { // no headers, the common case
		return offsetDelta, timestampDelta, nullKey, true
	}
	headers, p := varintAt(rec, p)
	if p < 0 || headers < 0 || headers > int64(len(rec)-p)/2 {
		return 0, 0, false, false
	}
	for ; headers > 0; headers-- {
		keyLen, q := varintAt(rec, p)
		if q < 0 || keyLen < 0 || keyLen > int64(len(rec)-q) { // a null header key is refused
			return 0, 0, false, false
		}
		if p = skipVarBytesAt(rec, q+int(keyLen)); p < 0 { // header value (may be null)
			return 0, 0, false, false
		}
	}
	return offsetDelta, timestampDelta, nullKey, p == len(rec)
}
