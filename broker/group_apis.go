package broker

// The group APIs are thin: each hands its request to the coordinator on a goroutine of its own
// (JoinGroup and SyncGroup wait for the other members; every write waits for its log commit)
// and answers when the coordinator does; a connection's calls run one after another, in the
// order it sent them, as Kafka serves them. Versions are those the coordinator implements.
//
//	OffsetCommit (8) v0–10 · OffsetFetch (9) v0–10 · JoinGroup (11) v0–9 · Heartbeat (12) v0–4 ·
//	LeaveGroup (13) v0–5 · SyncGroup (14) v0–5 · DescribeGroups (15) v0–6 · ListGroups (16) v0–5 ·
//	DeleteGroups (42) v0–3 · OffsetDelete (47) v0 · ConsumerGroupHeartbeat (68) v0–1 ·
//	ConsumerGroupDescribe (69) v0–1
//
// Group IDs are one namespace for every group type, as in Kafka: a group of one type does not
// take another type's ID. Against a share group's ID, JoinGroup answers
// INCONSISTENT_GROUP_PROTOCOL, ConsumerGroupHeartbeat GROUP_ID_NOT_FOUND ("Group <id> is not a
// consumer group") and StreamsGroupHeartbeat GROUP_ID_NOT_FOUND ("Group <id> is not a streams
// group."), as Kafka's GroupMetadataManager (classicGroupJoin, getOrMaybeCreateConsumerGroup,
// castToStreamsGroup) does; the reverse, ShareGroupHeartbeat against a classic,
// consumer or streams group's ID, is GROUP_ID_NOT_FOUND "Group <id> is not a share group."
// (76_share_group_heartbeat.go). The share groups are this node's: a consumer group joining
// through another node's coordinator does not see them (share groups are served on one node).
//
// DeleteGroups v3 adds a per-group ErrorMessage. Kafka 4.4 fills it only when deleting a
// streams group's internal topics fails or a coordinator shard fails with a message of its own
// (GroupCoordinatorService.deleteGroups); its per-group answers (GROUP_ID_NOT_FOUND,
// NON_EMPTY_GROUP, INVALID_GROUP_ID) and its generic coordinator errors carry none. sluice
// deletes no internal topics with a group and its coordinator errors are the generic ones, so
// v3 answers null messages with v2's codes.

import (
	"context"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
	"sluice/wire"
)

func init() {
	registerGroupAPI(8, 0, 10, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
		return c.OffsetCommit(ctx, req)
	})
	registerGroupAPI(9, 0, 10, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
		return c.OffsetFetch(ctx, req)
	})
	// JoinGroup and ConsumerGroupHeartbeat refuse a share group's ID (shareGroupClash).
	registerGroupAPIBroker(11, 0, 9, func(b *Broker, ctx context.Context, w *wire.Request, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
		if b.shares.exists(req.Group) {
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.MemberID = kerr.InconsistentGroupProtocol.Code, ""
			return resp, nil
		}
		return b.coord.JoinGroup(ctx, joinClient(w), req)
	})
	registerGroupAPI(12, 0, 4, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
		return c.Heartbeat(ctx, req)
	})
	registerGroupAPI(13, 0, 5, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
		return c.LeaveGroup(ctx, req)
	})
	registerGroupAPI(14, 0, 5, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
		return c.SyncGroup(ctx, req)
	})
	registerGroupAPI(15, 0, 6, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
		return c.DescribeGroups(ctx, req)
	})
	// ListGroups and DeleteGroups also cover the share groups (share_groups.go).
	registerGroupAPIBroker(16, 0, 5, func(b *Broker, ctx context.Context, _ *wire.Request, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
		return b.listGroups(ctx, req)
	})
	registerGroupAPIBroker(42, 0, 3, func(b *Broker, ctx context.Context, _ *wire.Request, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
		return b.deleteGroups(ctx, req)
	})
	registerGroupAPI(47, 0, 0, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
		return c.OffsetDelete(ctx, req)
	})
	registerGroupAPIBroker(68, 0, 1, func(b *Broker, ctx context.Context, w *wire.Request, req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
		if b.shares.exists(req.Group) {
			resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			resp.ErrorMessage = kmsg.StringPtr("Group " + req.Group + " is not a consumer group")
			return resp, nil
		}
		return b.coord.ConsumerGroupHeartbeat(ctx, joinClient(w), req)
	})
	registerGroupAPI(69, 0, 1, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
		return c.ConsumerGroupDescribe(ctx, req)
	})
}

// registerGroupAPI registers an API served by the group coordinator on its own goroutine.
func registerGroupAPI[Req kmsg.Request](key, minVersion, maxVersion int16, call func(c *coordinator.Coordinator, ctx context.Context, w *wire.Request, req Req) (kmsg.Response, error)) {
	registerGroupAPIBroker(key, minVersion, maxVersion, func(b *Broker, ctx context.Context, w *wire.Request, req Req) (kmsg.Response, error) {
		return call(b.coord, ctx, w, req)
	})
}

// registerGroupAPIBroker is registerGroupAPI for a call that needs more of the broker than its
// coordinator.
func registerGroupAPIBroker[Req kmsg.Request](key, minVersion, maxVersion int16, call func(b *Broker, ctx context.Context, w *wire.Request, req Req) (kmsg.Response, error)) {
	register(key, minVersion, maxVersion, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
		req, ok := w.Body.(Req)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		deny, post := b.authorizeGroupCall(w.Conn, req) // authorize_groups.go
		if deny != nil {
			respond(deny, nil)
			return
		}
		serveInConnOrder(ctx, w.Conn, func() (kmsg.Response, error) {
			resp, err := call(b, ctx, w, req)
			if post != nil && err == nil && resp != nil {
				post(resp)
			}
			return resp, err
		}, respond)
	})
}

// groupCallOrder orders each connection's group API calls: one starts once the connection's
// previous one has returned its answer. Kafka serves one request of a connection at a time, so an
// OffsetCommit a client pipelines before a ConsumerGroupHeartbeat on the same connection is
// applied first; run on goroutines of their own without this, the heartbeat could reach the
// coordinator first, release partitions the commit still names, and have it refused
// STALE_MEMBER_EPOCH (franz-go's TestGroupETL on three nodes).
var groupCallOrder = struct {
	sync.Mutex
	// last is the done channel of each connection's latest call, closed once it returned;
	// an entry leaves with its connection's last pending call. Guarded by the mutex.
	last map[*wire.ConnInfo]chan struct{}
}{last: make(map[*wire.ConnInfo]chan struct{})}

// serveInConnOrder runs call on a goroutine of its own once the previous call from conn has
// returned (or ctx, the connection's, has ended), then responds. REQUIRES: called from the
// wire Handler, which sees a connection's requests one at a time in the order they were sent.
func serveInConnOrder(ctx context.Context, conn *wire.ConnInfo, call func() (kmsg.Response, error), respond wire.Respond) {
	var prev chan struct{}
	done := make(chan struct{})
	if conn != nil {
		groupCallOrder.Lock()
		prev = groupCallOrder.last[conn]
		groupCallOrder.last[conn] = done
		groupCallOrder.Unlock()
	}
	go func() {
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
			}
		}
		resp, err := call()
		if conn != nil {
			groupCallOrder.Lock()
			if groupCallOrder.last[conn] == done {
				delete(groupCallOrder.last, conn)
			}
			groupCallOrder.Unlock()
		}
		close(done)
		// An error means ctx ended: the connection is closing, so no answer is owed. The wire
		// layer sends a connection's responses in request order.
		respond(resp, err)
	}()
}

// joinClient describes the member's client as DescribeGroups reports it.
func joinClient(w *wire.Request) coordinator.JoinClient {
	jc := coordinator.JoinClient{}
	if w.ClientID != nil {
		jc.ClientID = *w.ClientID
	}
	if w.Conn != nil && w.Conn.RemoteAddr != nil {
		host, _, err := net.SplitHostPort(w.Conn.RemoteAddr.String())
		if err != nil {
			host = w.Conn.RemoteAddr.String()
		}
		jc.ClientHost = "/" + host
	}
	return jc
}
