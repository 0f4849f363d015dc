package broker

// DescribeProducers, key 61: v0. What `kafka-transactions describe-producers` shows: for each
// named partition this broker leads, the producers its log remembers (Kafka's
// ProducerStateManager.activeProducers): ID, epoch, last sequence, last timestamp, the
// coordinator epoch of its last transaction marker and the first offset of its open
// transaction (-1: none). A partition not led here is NOT_LEADER_OR_FOLLOWER, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka's ReplicaManager.activeProducerState answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(61, 0, 0, (*Broker).handleDescribeProducers) }

func (b *Broker) handleDescribeProducers(_ context.Context, conn *wire.ConnInfo, req *kmsg.DescribeProducersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	im := b.ctrl.Image()
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeProducersResponseTopic()
		t.Topic = rt.Topic
		denied := !b.allowedTopic(conn, authz.OpRead, rt.Topic) // as Kafka: READ on the topic
		for _, partition := range rt.Partitions {
			p := kmsg.NewDescribeProducersResponseTopicPartition()
			p.Partition = partition
			if denied {
				p.ErrorCode = kerr.TopicAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, p)
				continue
			}
			rs := b.resolvePartition(im, rt.Topic, controller.TopicID{}, false, partition, true)
			if rs.errCode != 0 {
				p.ErrorCode = rs.errCode
				t.Partitions = append(t.Partitions, p)
				continue
			}
			for _, info := range rs.partition.log.Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID = info.ProducerID
				ap.ProducerEpoch = int32(info.ProducerEpoch)
				ap.LastSequence = info.LastSequence
				ap.LastTimestamp = info.LastTimestamp
				ap.CoordinatorEpoch = info.CoordinatorEpoch
				ap.CurrentTxnStartOffset = info.CurrentTxnStartOffset
				p.ActiveProducers = append(p.ActiveProducers, ap)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}
