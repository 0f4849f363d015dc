package broker

// FindCoordinator, key 10: v0–v6.
//
// v4+ batches keys (CoordinatorKeys) and answers per key. Until the group and transaction
// coordinators land every key is answered COORDINATOR_NOT_AVAILABLE, which clients retry.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(10, 0, 6, (*Broker).handleFindCoordinator) }

func (b *Broker) handleFindCoordinator(_ context.Context, _ *wire.ConnInfo, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code := kerr.CoordinatorNotAvailable.Code
	if req.Version < 4 {
		resp.ErrorCode, resp.NodeID = code, -1
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.ErrorCode = key, -1, code
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
