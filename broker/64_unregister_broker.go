package broker

// UnregisterBroker, key 64: v0.
//
// Removes a broker's registration through the active controller (`kafka-cluster unregister
// --bootstrap-server ... --id N`; Kafka's brokers forward it to the controller, as this one
// does through its Metadata). The rules are controller/unregister.go's: as in Kafka, a running
// broker is not refused, and a broker-only node's raft learner is removed after it. Errors:
// BROKER_ID_NOT_REGISTERED; REQUEST_TIMED_OUT when no active controller answers in time.
//
// Not done: authorization (ALTER on the cluster).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(64, 0, 0, (*Broker).handleUnregisterBroker) }

// brokerUnregisterer is the part of Metadata that unregisters brokers (controller.Controller
// and cluster.Link have it).
type brokerUnregisterer interface {
	UnregisterBroker(ctx context.Context, id int32) error
}

func (b *Broker) handleUnregisterBroker(ctx context.Context, _ *wire.ConnInfo, req *kmsg.UnregisterBrokerRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	ctx, cancel := adminTimeout(ctx, 0)
	defer cancel()
	err := errors.New("this broker's metadata cannot unregister brokers")
	if u, ok := b.ctrl.(brokerUnregisterer); ok {
		err = u.UnregisterBroker(ctx, req.BrokerID)
	}
	if err == nil {
		return resp, nil
	}
	var kerrp *kerr.Error
	if errors.As(err, &kerrp) {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerrp.Code, &msg
		return resp, nil
	}
	resp.ErrorCode, resp.ErrorMessage = controllerCallError(err)
	return resp, nil
}
