// Package batch parses and checks the header of a Kafka RecordBatch (magic v2), the unit both
// the broker (produce validation) and logstore (append, recovery) work in.
//
// A v2 batch is a 61-byte big-endian header followed by records:
//
//	offset  size  field
//	0       8     baseOffset
//	8       4     batchLength (bytes that follow this field; whole batch = 12 + batchLength)
//	12      4     partitionLeaderEpoch
//	16      1     magic (2)
//	17      4     crc: CRC-32C (Castagnoli) of bytes [21, 12+batchLength)
//	21      2     attributes: bits 0-2 compression, 3 timestamp type, 4 transactional,
//	              5 control, 6 delete horizon present
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     records count
//	61      ...   records
//
// baseOffset and partitionLeaderEpoch lie outside the CRC, so a log can assign them in place.
// Nothing here panics on any input; every length is checked before it is used.
package batch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
)

// Header layout. These are Kafka's wire and disk format and must never change.
const (
	HeaderSize  = 61 // fixed v2 header, records follow
	LogOverhead = 12 // baseOffset + batchLength: the part of the header not counted by batchLength
	MagicV2     = 2

	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// CRCStart is where the CRC-covered bytes begin.
	CRCStart = offAttributes
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	AttrDeleteHorizon   = 0x40
)

// Errors. ErrTruncated: fewer bytes than the header or batchLength claims. ErrCorrupt: the CRC
// or a structural field is wrong. ErrMagic: not magic v2. ErrInvalid: the header is
// well-formed and its CRC matches but its fields contradict each other.
var (
	ErrTruncated = errors.New("batch: truncated record batch")
	ErrCorrupt   = errors.New("batch: corrupt record batch")
	ErrMagic     = errors.New("batch: unsupported magic")
	ErrInvalid   = errors.New("batch: invalid record batch")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the decoded v2 batch header.
type Header struct {
	BaseOffset           int64
	Length               int32 // batchLength field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the whole batch's size in bytes.
func (h *Header) Size() int64 { return LogOverhead + int64(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func (h *Header) Compression() int { return int(h.Attributes & AttrCompressionMask) }

// IsTransactional reports the transactional attribute.
func (h *Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports the control attribute.
func (h *Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// HasProducerID reports whether the batch carries an idempotent/transactional producer id.
func (h *Header) HasProducerID() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record, wrapping after MaxInt32 as
// Kafka's DefaultRecordBatch.incrementSequence does; -1 when the batch has no sequence.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IncrementSequence adds delta to a producer sequence number with Kafka's wrap at MaxInt32.
func IncrementSequence(seq, delta int32) int32 {
	if int64(seq)+int64(delta) > math.MaxInt32 {
		return int32(int64(seq) + int64(delta) - math.MaxInt32 - 1)
	}
	return seq + delta
}

// PeekSize returns the total size of the batch that starts b, from its first 12 bytes, without
// checking anything else. ok is false if b is shorter than 12 bytes or the length is negative.
func PeekSize(b []byte) (size int64, ok bool) {
	if len(b) < LogOverhead {
		return 0, false
	}
	n := int32(binary.BigEndian.Uint32(b[offLength:]))
	if n < 0 {
		return 0, false
	}
	return LogOverhead + int64(n), true
}

// ParseHeader decodes the header at the start of b. It checks the magic and that batchLength
// can hold a header, but not the CRC and not that b holds the whole batch.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < offMagic+1 {
		return h, ErrTruncated
	}
	h.Length = int32(binary.BigEndian.Uint32(b[offLength:]))
	h.Magic = int8(b[offMagic])
	if h.Length < HeaderSize-LogOverhead {
		// Kafka rejects a size below the minimum header as corrupt (CorruptRecordException).
		if h.Magic != MagicV2 && h.Length >= 0 {
			return h, ErrMagic
		}
		return h, ErrCorrupt
	}
	if h.Magic != MagicV2 {
		return h, ErrMagic
	}
	if len(b) < HeaderSize {
		return h, ErrTruncated
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[offRecordCount:]))
	return h, nil
}

// Check parses the batch at the start of b and verifies that b holds all of it, that its CRC
// matches, and that its offset fields are sane (lastOffsetDelta >= 0, the last offset does not
// overflow). It does not compare the record count with lastOffsetDelta: compacted batches
// legitimately differ; see CheckCount.
func Check(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	size := h.Size()
	if int64(len(b)) < size {
		return h, ErrTruncated
	}
	if got := crc32.Checksum(b[CRCStart:size], castagnoli); got != h.CRC {
		return h, ErrCorrupt
	}
	return h, checkOffsets(&h)
}

// CheckWithoutCRC is Check for bytes whose CRC the caller has verified (and not changed
// since): it parses the header and checks that b holds the whole batch and its offset fields
// are sane, without reading the batch's body.
func CheckWithoutCRC(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if int64(len(b)) < h.Size() {
		return h, ErrTruncated
	}
	return h, checkOffsets(&h)
}

// checkOffsets checks a header's offset fields: lastOffsetDelta and the record count are not
// negative, and the last offset does not overflow.
func checkOffsets(h *Header) error {
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 || h.BaseOffset < 0 ||
		h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1 {
		return ErrCorrupt
	}
	return nil
}

// CheckCount verifies what Kafka's LogValidator checks of a batch a client produced: at least
// one record and records count == lastOffsetDelta+1.
func CheckCount(h *Header) error {
	if h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 {
		return ErrInvalid
	}
	return nil
}

// CRC computes the CRC-32C of a whole batch b (which must be at least HeaderSize long).
func CRC(b []byte) uint32 { return crc32.Checksum(b[CRCStart:], castagnoli) }

// SetBaseOffset patches the baseOffset field of the batch at the start of b.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

// SetPartitionLeaderEpoch patches the partitionLeaderEpoch field of the batch at the start of b.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLength patches the batchLength field (the CRC no longer matches; for in-memory use).
func SetLength(b []byte, n int32) { binary.BigEndian.PutUint32(b[offLength:], uint32(n)) }

// SetCompression patches the compression bits of the attributes (the CRC no longer matches;
// for in-memory use).
func SetCompression(b []byte, codec int) {
	a := binary.BigEndian.Uint16(b[offAttributes:])
	binary.BigEndian.PutUint16(b[offAttributes:], a&^AttrCompressionMask|uint16(codec)&AttrCompressionMask)
}

// Builder support for tests and tools.

// Record is one record to encode with Build.
type Record struct {
	TimestampDelta int64
	Key, Value     []byte // nil = null
}

// Build encodes an uncompressed v2 batch. It is used by tests and tools, not on the hot path.
func Build(h Header, records []Record) []byte {
	var body []byte
	for i, r := range records {
		var rec []byte
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, r.TimestampDelta)
		rec = binary.AppendVarint(rec, int64(i))
		rec = appendVarBytes(rec, r.Key)
		rec = appendVarBytes(rec, r.Value)
		rec = binary.AppendVarint(rec, 0) // headers
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	b := make([]byte, HeaderSize, HeaderSize+len(body))
	b = append(b, body...)
	h.Magic = MagicV2
	h.Length = int32(len(b) - LogOverhead)
	h.RecordCount = int32(len(records))
	if len(records) > 0 {
		h.LastOffsetDelta = int32(len(records) - 1)
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[offLength:], uint32(h.Length))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = MagicV2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(h.RecordCount))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}
