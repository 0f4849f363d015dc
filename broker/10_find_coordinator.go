package broker

// FindCoordinator, key 10: v0–v6.
//
// v4+ batches keys (CoordinatorKeys) and answers per key. A group's coordinator is the leader of
// partition PartitionFor(group) of __consumer_offsets, which is created on the first group
// lookup as Kafka does. Other key types answer INVALID_REQUEST.
//
// Transaction coordinators (key type 1) answer TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a
// message saying sluice does not serve transactions yet (errTransactionsNotServed). It is the
// one code that every client family treats as fatal at this step: with the retriable
// COORDINATOR_NOT_AVAILABLE, Java's initTransactions waited 60 s, sarama over 4 minutes, and
// the Java admin client retried FindCoordinator some 400,000 times a minute.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(10, 0, 6, (*Broker).handleFindCoordinator) }

// errTransactionsNotServed is the message of every refusal of a transactional client.
const errTransactionsNotServed = "sluice does not serve transactions yet: unset transactional.id (idempotent producers are served)"

// Coordinator key types.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (b *Broker) handleFindCoordinator(ctx context.Context, conn *wire.ConnInfo, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		b.findCoordinator(ctx, conn, req.CoordinatorType, key, &c)
		if req.Version < 4 {
			resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
			if c.ErrorCode != 0 {
				resp.ErrorMessage = c.ErrorMessage
				if resp.ErrorMessage == nil {
					msg := kerr.ErrorForCode(c.ErrorCode).Error()
					resp.ErrorMessage = &msg
				}
			}
			break
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

func (b *Broker) findCoordinator(ctx context.Context, conn *wire.ConnInfo, keyType int8, key string, out *kmsg.FindCoordinatorResponseCoordinator) {
	switch keyType {
	case coordinatorGroup:
	case coordinatorTransaction:
		out.ErrorCode, out.ErrorMessage = kerr.TransactionalIDAuthorizationFailed.Code, kmsg.StringPtr(errTransactionsNotServed)
		return
	default:
		out.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		b.logger.Warn("creating the offsets topic", "err", err)
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	im := b.ctrl.Image()
	topic := im.Topics[offsetsTopic]
	partition := b.coord.PartitionFor(key)
	if topic == nil || int(partition) >= len(topic.Partitions) {
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	leader := topic.Partitions[partition].Leader
	br := im.Brokers[leader]
	if br == nil {
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	ep, ok := endpointFor(br, conn.ListenerName)
	if !ok {
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	out.NodeID, out.Host, out.Port = leader, ep.Host, ep.Port
}
