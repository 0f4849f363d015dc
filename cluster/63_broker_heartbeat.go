package cluster

// BrokerHeartbeat, key 63: v0–v2.
//
// v0: broker ID and epoch, metadata offset, WantFence, WantShutDown. v1 offline log
// directories (a tagged field): the controller moves the broker's leadership and ISR
// memberships to other replicas while it reports any (controller/membership.go), only those of
// the replicas in the named directories when they are some of its several (controller/log_dirs.go). v2 cordoned
// log directories are accepted and not used. Errors:
// BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH, NOT_CONTROLLER. The rules are
// controller/membership.go's.
//
// A connection that carried a successful heartbeat is watched: when it closes, the controller
// is told (Controller.BrokerConnectionClosed), a reason to probe whether the broker's process
// is gone (controller/evidence.go).

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(63, 0, 2, (*Server).handleBrokerHeartbeat) }

func (s *Server) handleBrokerHeartbeat(connCtx context.Context, req *kmsg.BrokerHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	ctx, cancel := withTimeout(connCtx, 0)
	defer cancel()
	res, err := s.cfg.Controller.Heartbeat(ctx, controller.BrokerHeartbeat{BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch,
		MetadataOffset: req.CurrentMetadataOffset, WantFence: req.WantFence, WantShutDown: req.WantShutdown,
		OfflineLogDirs: req.OfflineLogDirs})
	if err != nil {
		resp.ErrorCode, _ = callError(err)
		resp.IsFenced = true
		return resp, nil
	}
	resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = res.IsCaughtUp, res.IsFenced, res.ShouldShutDown
	s.heartbeatConns.watch(connCtx, s.cfg.Controller, req.BrokerID, req.BrokerEpoch)
	return resp, nil
}

// heartbeatConns are the connections that carried heartbeats, by the connection's context
// (the wire layer cancels it when the connection closes); at most one entry per connection.
type heartbeatConns struct {
	mu      sync.Mutex
	watched map[context.Context]*heartbeatConn
}

// heartbeatConn is the broker that last heartbeated on a connection.
type heartbeatConn struct {
	id    int32
	epoch int64
}

// watch remembers that broker id at epoch heartbeats on the connection of connCtx, and tells
// ctrl when that connection closes.
func (h *heartbeatConns) watch(connCtx context.Context, ctrl *controller.Controller, id int32, epoch int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.watched[connCtx]; w != nil {
		w.id, w.epoch = id, epoch
		return
	}
	if h.watched == nil {
		h.watched = map[context.Context]*heartbeatConn{}
	}
	w := &heartbeatConn{id: id, epoch: epoch}
	h.watched[connCtx] = w
	context.AfterFunc(connCtx, func() {
		h.mu.Lock()
		delete(h.watched, connCtx)
		id, epoch := w.id, w.epoch
		h.mu.Unlock()
		ctrl.BrokerConnectionClosed(id, epoch)
	})
}
