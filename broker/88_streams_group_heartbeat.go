package broker

// StreamsGroupHeartbeat, key 88: v0–v1 (KIP-1071's streams group protocol, GA in Kafka 4.2).
//
// The coordinator (coordinator/streams.go) keeps the group; this file hands it the request on
// a goroutine of its own, in the connection's order, as the other group APIs are served. When
// the group's topology needs internal topics (repartition and changelog topics) that do not
// exist, the coordinator answers MISSING_INTERNAL_TOPICS and names them; the broker then creates
// them with the partitions, replication factor and configs the topology asks for (replication
// factor 0: default.replication.factor), as Kafka's KafkaApis does through its
// AutoTopicCreationManager, before it answers. The member's next heartbeat finds them and is
// assigned tasks. v1 differs from v0 in the response only (AcceptableRecoveryLag as an int64,
// TopologyDescriptionRequired, which sluice leaves false: it keeps no topology descriptions).
// With "streams" left out of group.coordinator.rebalance.protocols every heartbeat is answered
// UNSUPPORTED_VERSION, as Kafka's KafkaApis answers when the streams protocol is off.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/coordinator"
	"sluice/wire"
)

// streamsTopicCreateTimeout bounds how long a heartbeat waits for its internal topics to be
// created; past it the heartbeat is answered anyway and the next one retries.
const streamsTopicCreateTimeout = 10 * time.Second

func init() {
	register(88, 0, 1, func(b *Broker, ctx context.Context, w *wire.Request, respond wire.Respond) {
		req, ok := w.Body.(*kmsg.StreamsGroupHeartbeatRequest)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		if !b.streamsProtocolEnabled() {
			resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			respond(resp, nil)
			return
		}
		if deny := b.authorizeStreamsHeartbeat(w.Conn, req); deny != nil { // authorize_groups.go
			respond(deny, nil)
			return
		}
		if b.shares.exists(req.Group) {
			// A share group's ID is not a streams group's (Kafka's castToStreamsGroup).
			resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			resp.ErrorMessage = kmsg.StringPtr("Group " + req.Group + " is not a streams group.")
			respond(resp, nil)
			return
		}
		serveInConnOrder(ctx, w.Conn, func() (kmsg.Response, error) {
			resp, create, err := b.coord.StreamsGroupHeartbeat(ctx, joinClient(w), req)
			if err != nil {
				return nil, err
			}
			if denied := b.streamsCreateDenied(w.Conn, create); len(denied) > 0 {
				denyStreamsCreate(resp, denied)
			} else if len(create) > 0 {
				b.createStreamsInternalTopics(ctx, req.Group, create)
			}
			return resp, nil
		}, respond)
	})
}

// createStreamsInternalTopics creates a streams group's missing internal topics and waits until
// this node has applied them. Failures are logged: the heartbeat already reports the topics
// missing, and the next one asks again.
func (b *Broker) createStreamsInternalTopics(ctx context.Context, group string, topics []coordinator.StreamsInternalTopic) {
	ctx, cancel := context.WithTimeout(ctx, streamsTopicCreateTimeout)
	defer cancel()
	brokers := int16(len(b.ctrl.Image().Brokers))
	create := make([]controller.CreateTopic, 0, len(topics))
	for _, t := range topics {
		rf := t.ReplicationFactor
		if rf <= 0 {
			rf = b.cfg.Static.DefaultReplicationFactor
		}
		if rf > brokers && brokers > 0 {
			rf = brokers // Kafka refuses until enough brokers are up; sluice serves with what it has
		}
		create = append(create, controller.CreateTopic{
			Name:                 t.Name,
			NumPartitions:        t.Partitions,
			ReplicationFactor:    rf,
			Configs:              t.Configs,
			MaxReplicasPerBroker: b.maxHostedPartitions(),
		})
	}
	res, err := b.ctrl.CreateTopics(ctx, create, false)
	if err != nil {
		b.logger.Warn("creating streams group internal topics", "group", group, "err", err)
		return
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			b.logger.Warn("creating streams group internal topic", "group", group, "topic", r.Name, "err", r.Err)
			continue
		}
		if r.Err == nil {
			b.logger.Info("created streams group internal topic", "group", group, "topic", r.Name)
		}
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)
}

// streamsProtocolEnabled reports whether group.coordinator.rebalance.protocols lists streams.
func (b *Broker) streamsProtocolEnabled() bool {
	return slices.Contains(b.cfg.Static.GroupCoordinatorRebalanceProtocols, "streams")
}
