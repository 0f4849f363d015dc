package broker

// DescribeTopicPartitions, key 75: v0 (KIP-966).
//
// Topics by name (an empty list: every topic), in name order, with their partitions' leader,
// leader epoch, replicas, ISR, eligible leader replicas and last known ELR (KIP-966, as the
// controller tracks them: controller/elections.go), which `kafka-topics --describe` prints as
// "Elr:" and "LastKnownElr:". Responses are paged: at most ResponsePartitionLimit
// partitions (capped by max.request.partition.size.limit, Kafka's default 2000), starting at
// the request's Cursor; when partitions remain, NextCursor names the first one not sent, as
// Kafka's KRaftMetadataCache pages. A topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION;
// an illegal name INVALID_TOPIC_EXCEPTION.
//
// Not done: authorized operations (reported as not requested), authorization.

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(75, 0, 0, (*Broker).handleDescribeTopicPartitions) }

// defaultPartitionSizeLimit is Kafka's max.request.partition.size.limit default.
const defaultPartitionSizeLimit = 2000

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, conn *wire.ConnInfo, req *kmsg.DescribeTopicPartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	im := b.ctrl.Image()

	limit := int32(defaultPartitionSizeLimit)
	if n, err := strconv.ParseInt(strings.TrimSpace(b.brokerConfigValue(im, "max.request.partition.size.limit")), 10, 32); err == nil && n > 0 {
		limit = int32(n)
	}
	if req.ResponsePartitionLimit > 0 && req.ResponsePartitionLimit < limit {
		limit = req.ResponsePartitionLimit
	}

	var names []string
	if len(req.Topics) == 0 {
		for name := range im.Topics {
			names = append(names, name)
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	// DESCRIBE on each topic: left out of an all-topics answer, refused when named (on the
	// first page only, so a paging client hears it once).
	var denied []string
	if b.authzOn() {
		kept := names[:0]
		for _, n := range names {
			if b.allowedTopic(conn, authz.OpDescribe, n) {
				kept = append(kept, n)
			} else if len(req.Topics) > 0 {
				denied = append(denied, n)
			}
		}
		names = kept
	}

	resp.Topics, resp.NextCursor = describeTopicPartitionsPage(im, names, req.Cursor, limit)
	if req.Cursor == nil {
		for _, n := range denied {
			t := kmsg.NewDescribeTopicPartitionsResponseTopic()
			t.Topic, t.ErrorCode = kmsg.StringPtr(n), kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, t)
		}
	}
	return resp, nil
}

// describeTopicPartitionsPage answers the topics in names (sorted) from cursor on, with at
// most limit partitions, and the cursor of the next page (nil when this page ends the list).
func describeTopicPartitionsPage(im *controller.Image, names []string, cursor *kmsg.DescribeTopicPartitionsRequestCursor, limit int32) ([]kmsg.DescribeTopicPartitionsResponseTopic, *kmsg.DescribeTopicPartitionsResponseNextCursor) {
	var out []kmsg.DescribeTopicPartitionsResponseTopic
	remaining := limit
	for i, name := range names {
		firstPartition := int32(0)
		if cursor != nil {
			if name < cursor.Topic {
				continue
			}
			if name == cursor.Topic {
				firstPartition = max(cursor.Partition, 0)
			}
		}
		t := kmsg.NewDescribeTopicPartitionsResponseTopic()
		topicName := name
		t.Topic = &topicName
		topic := im.Topics[name]
		if topic == nil {
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if topicNameProblem(name) != "" {
				t.ErrorCode = kerr.InvalidTopicException.Code
			}
			out = append(out, t)
			continue
		}
		if remaining <= 0 {
			return out, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: firstPartition}
		}
		t.TopicID = topic.ID
		t.IsInternal = topic.Internal
		for p := firstPartition; p < int32(len(topic.Partitions)); p++ {
			if remaining <= 0 {
				out = append(out, t)
				return out, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p}
			}
			pi := topic.Partitions[p]
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition = pi.Partition
			rp.LeaderID = pi.Leader
			rp.LeaderEpoch = pi.LeaderEpoch
			rp.Replicas = nonNil(pi.Replicas)
			rp.ISR = nonNil(pi.ISR)
			rp.EligibleLeaderReplicas = nonNil(pi.ELR)
			rp.LastKnownELR = nonNil(pi.LastKnownELR)
			rp.OfflineReplicas = []int32{}
			if pi.Leader < 0 {
				rp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			t.Partitions = append(t.Partitions, rp)
			remaining--
		}
		out = append(out, t)
		if remaining <= 0 && i+1 < len(names) {
			// The page is full; the next topic starts the next page.
			return out, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[i+1], Partition: 0}
		}
	}
	return out, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
