package broker

// Authorization of the transaction APIs (authorize.go has the table), called by
// registerTxnAPI and TxnOffsetCommit's handler before the coordinators see the request.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/coordinator"
	"sluice/wire"
)

// authorizeTxnCall returns a complete answer when the request is refused, nil otherwise.
//
//	AddPartitionsToTxn v0–3   WRITE transactional id (else every partition
//	                          TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each topic (else
//	                          its partitions TOPIC_AUTHORIZATION_FAILED, the others
//	                          OPERATION_NOT_ATTEMPTED)
//	AddPartitionsToTxn v4+    CLUSTER_ACTION cluster (brokers verifying, KIP-890)
//	AddOffsetsToTxn           WRITE transactional id, READ group
//	EndTxn                    WRITE transactional id
//	TxnOffsetCommit           WRITE transactional id, READ group, READ each topic (one refused
//	                          topic refuses the whole commit, the others OPERATION_NOT_ATTEMPTED)
//	DescribeTransactions      DESCRIBE transactional id (authorizeTxnListing)
//	ListTransactions          lists only the transactional ids conn may DESCRIBE
func (b *Broker) authorizeTxnCall(conn *wire.ConnInfo, req kmsg.Request) kmsg.Response {
	if !b.authzOn() {
		return nil
	}
	txnOK := func(id string) bool { return b.allowed(conn, authz.OpWrite, authz.ResourceTransactionalID, id) }
	txnDenied := kerr.TransactionalIDAuthorizationFailed.Code
	switch r := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		if r.Version >= 4 {
			if b.allowedCluster(conn, authz.OpClusterAction) {
				return nil
			}
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
		codes := make([]int16, len(r.Topics))
		anyDenied := false
		for i, t := range r.Topics {
			switch {
			case !txnOK(r.TransactionalID):
				codes[i], anyDenied = txnDenied, true
			case !b.allowedTopic(conn, authz.OpWrite, t.Topic):
				codes[i], anyDenied = kerr.TopicAuthorizationFailed.Code, true
			}
		}
		if !anyDenied {
			return nil
		}
		for i, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			code := codes[i]
			if code == 0 {
				code = kerr.OperationNotAttempted.Code
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.AddOffsetsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		switch {
		case !txnOK(r.TransactionalID):
			resp.ErrorCode = txnDenied
		case !b.allowedGroup(conn, authz.OpRead, r.Group):
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			return nil
		}
		return resp
	case *kmsg.EndTxnRequest:
		if txnOK(r.TransactionalID) {
			return nil
		}
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = txnDenied
		return resp
	case *kmsg.TxnOffsetCommitRequest:
		code := int16(0)
		switch {
		case !txnOK(r.TransactionalID):
			code = txnDenied
		case !b.allowedGroup(conn, authz.OpRead, r.Group):
			code = kerr.GroupAuthorizationFailed.Code
		}
		topicCodes := make([]int16, len(r.Topics))
		anyDenied := code != 0
		im := b.ctrl.Image()
		for i, t := range r.Topics {
			topicCodes[i] = code
			// v6 names topics by ID; an ID this broker does not know is the coordinator's
			// UNKNOWN_TOPIC_ID.
			if name := topicName(im, t.Topic, t.TopicID); code == 0 && name != "" && !b.allowedTopic(conn, authz.OpRead, name) {
				topicCodes[i], anyDenied = kerr.TopicAuthorizationFailed.Code, true
			}
		}
		if !anyDenied {
			return nil
		}
		// Unlike Kafka, which commits the authorized topics, a commit with any topic refused
		// commits nothing: the other topics are answered OPERATION_NOT_ATTEMPTED.
		return coordinator.TxnOffsetCommitAnswer(r, func(i int) int16 {
			if topicCodes[i] == 0 {
				return kerr.OperationNotAttempted.Code
			}
			return topicCodes[i]
		})
	}
	return nil
}

// authorizeTxnListing narrows DescribeTransactions to the transactional IDs conn may
// DESCRIBE and returns what completes the coordinator's answer: the refused IDs answered
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, or ListTransactions' states conn may not DESCRIBE
// left out. nil when there is nothing to do.
func (b *Broker) authorizeTxnListing(conn *wire.ConnInfo, req kmsg.Request) func(kmsg.Response) {
	if !b.authzOn() {
		return nil
	}
	describable := func(id string) bool { return b.allowed(conn, authz.OpDescribe, authz.ResourceTransactionalID, id) }
	switch r := req.(type) {
	case *kmsg.DescribeTransactionsRequest:
		var denied []string
		kept := r.TransactionalIDs[:0:0]
		for _, id := range r.TransactionalIDs {
			if describable(id) {
				kept = append(kept, id)
			} else {
				denied = append(denied, id)
			}
		}
		if len(denied) == 0 {
			return nil
		}
		r.TransactionalIDs = kept
		return func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeTransactionsResponse)
			for _, id := range denied {
				st := kmsg.NewDescribeTransactionsResponseTransactionState()
				st.TransactionalID, st.ErrorCode, st.ProducerID, st.ProducerEpoch = id, kerr.TransactionalIDAuthorizationFailed.Code, -1, -1
				out.TransactionStates = append(out.TransactionStates, st)
			}
		}
	case *kmsg.ListTransactionsRequest:
		return func(resp kmsg.Response) {
			out := resp.(*kmsg.ListTransactionsResponse)
			kept := out.TransactionStates[:0]
			for _, st := range out.TransactionStates {
				if describable(st.TransactionalID) {
					kept = append(kept, st)
				}
			}
			out.TransactionStates = kept
		}
	}
	return nil
}

// writeTxnMarkersDenied answers a WriteTxnMarkers from a principal without CLUSTER_ACTION on
// the cluster: every partition of every marker CLUSTER_AUTHORIZATION_FAILED, as Kafka's
// KafkaApis answers (the request is the transaction coordinators' own, between brokers).
func writeTxnMarkersDenied(req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
