package batch

import "encoding/binary"

// SetLogAppendTime marks the batch at the start of b as LogAppendTime with maxTimestamp ts and
// recomputes its CRC, as Kafka's LogValidator does for topics with
// message.timestamp.type=LogAppendTime (records keep their own timestamps; readers use the
// batch's). REQUIRES: b holds the whole batch, already checked.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	size := LogOverhead + int64(int32(binary.BigEndian.Uint32(b[offLength:])))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b[:size]))
}

// SetCreateTimeMax marks the batch at the start of b as CreateTime with maxTimestamp ts and
// recomputes its CRC, as Kafka's LogValidator sets a client batch's max timestamp to its
// records' (RecordBatch.setMaxTimestamp). REQUIRES: b holds the whole batch, already checked.
func SetCreateTimeMax(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) &^ AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	size := LogOverhead + int64(int32(binary.BigEndian.Uint32(b[offLength:])))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b[:size]))
}
