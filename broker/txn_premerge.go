package broker

// Placeholders for the partition side of transactions (branch txn-log), removed when it is
// merged: WriteTxnMarkers answers every partition NOT_LEADER_OR_FOLLOWER (the coordinator
// retries), and TxnVerifier is the interface the produce path will ask.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnVerifier is asked before a transactional batch starts a transaction on a partition.
type TxnVerifier interface {
	VerifyTxnPartition(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) error
}

// WriteTxnMarkers is the placeholder described above.
func (b *Broker) WriteTxnMarkers(_ context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
