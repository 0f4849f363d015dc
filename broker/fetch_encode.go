package broker

// The fetch response's wire encoding, written here rather than by kmsg so that record batches
// go from segment files to the socket with sendfile (wire.SplicedResponse) instead of being
// copied through user space. It produces exactly kmsg's FetchResponse encoding for v4–v18
// (fetch_encode_test.go compares them), except that UnknownTags, which sluice never sets, are
// not written. v0–v3 responses carry down-converted records inline (legacy_records.go) and are
// encoded by kmsg itself.

import (
	"encoding/binary"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/logstore"
	"sluice/wire"
)

// splicedFetchResponse is a FetchResponse whose partitions' RecordBatches are left nil and sent
// from the file slices in records instead.
type splicedFetchResponse struct {
	*kmsg.FetchResponse
	// records[t][p] holds the slices of Topics[t].Partitions[p], whole batches in offset order.
	records [][][]logstore.FileSlice
}

var _ wire.SplicedResponse = (*splicedFetchResponse)(nil)

// AppendTo encodes the response with the record bytes copied in, for writers that cannot
// splice (tests, tools). REQUIRES: every slice is readable; a failed read would leave the
// encoding short.
func (r *splicedFetchResponse) AppendTo(dst []byte) []byte {
	bodyStart := len(dst)
	dst, splices := r.AppendSpliced(dst)
	if len(splices) == 0 {
		return dst
	}
	body := append([]byte(nil), dst[bodyStart:]...)
	w := &appendWriter{buf: dst[:bodyStart]}
	prev := 0
	for _, s := range splices {
		w.buf = append(w.buf, body[prev:s.At]...)
		_, _ = s.Send(w)
		prev = s.At
	}
	return append(w.buf, body[prev:]...)
}

type appendWriter struct{ buf []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.buf = append(w.buf, p...); return len(p), nil }

// AppendSpliced implements wire.SplicedResponse.
func (r *splicedFetchResponse) AppendSpliced(dst []byte) ([]byte, []wire.Splice) {
	v := r.FetchResponse
	version := v.Version
	if version < 4 {
		// Down-converted records are inline (01_fetch.go); kmsg encodes the old layouts.
		return v.AppendTo(dst), nil
	}
	flexible := version >= 12
	bodyStart := len(dst)
	var splices []wire.Splice

	dst = binary.BigEndian.AppendUint32(dst, uint32(v.ThrottleMillis))
	if version >= 7 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(v.ErrorCode))
		dst = binary.BigEndian.AppendUint32(dst, uint32(v.SessionID))
	}
	dst = appendArrayLen(dst, len(v.Topics), flexible)
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if version <= 12 {
			dst = appendString(dst, t.Topic, flexible)
		} else {
			dst = append(dst, t.TopicID[:]...)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
			dst = binary.BigEndian.AppendUint16(dst, uint16(p.ErrorCode))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.HighWatermark))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.LastStableOffset))
			if version >= 5 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(p.LogStartOffset))
			}
			if p.AbortedTransactions == nil {
				dst = appendNullLen(dst, flexible)
			} else {
				dst = appendArrayLen(dst, len(p.AbortedTransactions), flexible)
				for _, a := range p.AbortedTransactions {
					dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
					dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
					if flexible {
						dst = append(dst, 0) // no tags
					}
				}
			}
			if version >= 11 {
				dst = binary.BigEndian.AppendUint32(dst, uint32(p.PreferredReadReplica))
			}
			var slices []logstore.FileSlice
			if ti < len(r.records) && pi < len(r.records[ti]) {
				slices = r.records[ti][pi]
			}
			dst = appendRecords(dst, p.RecordBatches, slices, flexible, bodyStart, &splices)
			if flexible {
				dst = appendPartitionTags(dst, p)
			}
		}
		if flexible {
			dst = append(dst, 0) // topic: no tags
		}
	}
	if flexible {
		if len(v.Brokers) == 0 {
			dst = append(dst, 0)
		} else {
			var brokers []byte
			brokers = appendArrayLen(brokers, len(v.Brokers), true)
			for _, b := range v.Brokers {
				brokers = binary.BigEndian.AppendUint32(brokers, uint32(b.NodeID))
				brokers = appendString(brokers, b.Host, true)
				brokers = binary.BigEndian.AppendUint32(brokers, uint32(b.Port))
				brokers = appendNullableString(brokers, b.Rack, true)
				brokers = append(brokers, 0)
			}
			dst = binary.AppendUvarint(dst, 1) // one tag
			dst = appendTag(dst, 0, brokers)
		}
	}
	return dst, splices
}

// appendRecords writes a partition's RecordBatches field: inline bytes if it has any, else
// the length of its file slices followed by a splice that sends them.
func appendRecords(dst, inline []byte, slices []logstore.FileSlice, flexible bool, bodyStart int, splices *[]wire.Splice) []byte {
	if inline != nil || len(slices) == 0 {
		dst = appendBytesLen(dst, len(inline), flexible)
		return append(dst, inline...)
	}
	var total int64
	for _, s := range slices {
		total += s.Length
	}
	dst = appendBytesLen(dst, int(total), flexible)
	*splices = append(*splices, wire.Splice{
		At:     len(dst) - bodyStart,
		Length: total,
		Send: func(w io.Writer) (int64, error) {
			var sent int64
			for _, s := range slices {
				n, err := logstore.WriteSlice(w, s)
				sent += n
				if err != nil {
					return sent, err
				}
			}
			return sent, nil
		},
	})
	return dst
}

// appendPartitionTags writes the partition's tagged fields as kmsg does: DivergingEpoch (0),
// CurrentLeader (1) and SnapshotID (2), each only when not at its default.
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	var tags [3][]byte
	n := 0
	if d := p.DivergingEpoch; d.Epoch != -1 || d.EndOffset != -1 {
		b := binary.BigEndian.AppendUint32(nil, uint32(d.Epoch))
		tags[0] = append(binary.BigEndian.AppendUint64(b, uint64(d.EndOffset)), 0)
		n++
	}
	if l := p.CurrentLeader; l.LeaderID != -1 || l.LeaderEpoch != -1 {
		b := binary.BigEndian.AppendUint32(nil, uint32(l.LeaderID))
		tags[1] = append(binary.BigEndian.AppendUint32(b, uint32(l.LeaderEpoch)), 0)
		n++
	}
	if s := p.SnapshotID; s.EndOffset != -1 || s.Epoch != -1 {
		b := binary.BigEndian.AppendUint64(nil, uint64(s.EndOffset))
		tags[2] = append(binary.BigEndian.AppendUint32(b, uint32(s.Epoch)), 0)
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for tag, body := range tags {
		if body != nil {
			dst = appendTag(dst, tag, body)
		}
	}
	return dst
}

func appendTag(dst []byte, tag int, body []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(tag))
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return append(dst, body...)
}

// Kafka's length encodings: int16/int32 lengths before flexible versions, unsigned varints of
// length+1 (0 = null) from them on.

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

func appendBytesLen(dst []byte, n int, flexible bool) []byte { return appendArrayLen(dst, n, flexible) }

func appendNullLen(dst []byte, flexible bool) []byte {
	if flexible {
		return append(dst, 0)
	}
	return binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	}
	return append(dst, s...)
}

func appendNullableString(dst []byte, s *string, flexible bool) []byte {
	if s == nil {
		if flexible {
			return append(dst, 0)
		}
		return binary.BigEndian.AppendUint16(dst, 0xFFFF)
	}
	return appendString(dst, *s, flexible)
}
