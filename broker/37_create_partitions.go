package broker

// CreatePartitions, key 37: v0–v3.
//
// Grows topics to Count partitions, placed by the controller or by the request's assignment
// (one replica list per new partition). As Kafka's ControllerApis does, a topic named twice is
// answered once with INVALID_REQUEST "Duplicate topic name."; the controller answers unknown
// topics (UNKNOWN_TOPIC_OR_PARTITION), counts that do not grow (INVALID_PARTITIONS) and bad
// assignments (INVALID_REPLICA_ASSIGNMENT). ValidateOnly checks and changes nothing. The answer
// waits until this broker hosts the new partitions. v2+ is v1 with flexible encoding.
//
// Not done: authorization, controller mutation quotas.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(37, 0, 3, (*Broker).handleCreatePartitions) }

func (b *Broker) handleCreatePartitions(ctx context.Context, conn *wire.ConnInfo, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := adminTimeout(ctx, req.TimeoutMillis)
	defer cancel()

	counts := map[string]int{}
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	var reqs []controller.CreatePartitions
	for _, rt := range req.Topics {
		if counts[rt.Topic] > 1 {
			continue
		}
		if !b.allowedTopic(conn, authz.OpAlter, rt.Topic) {
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = rt.Topic, kerr.TopicAuthorizationFailed.Code, strPtr("Authorization failed.")
			resp.Topics = append(resp.Topics, t)
			continue
		}
		cp := controller.CreatePartitions{Topic: rt.Topic, Count: rt.Count, MaxReplicasPerBroker: b.maxHostedPartitions()}
		if rt.Assignment != nil {
			cp.Assignments = make([][]int32, len(rt.Assignment))
			for i, a := range rt.Assignment {
				cp.Assignments[i] = a.Replicas
			}
		}
		reqs = append(reqs, cp)
	}

	if len(reqs) > 0 {
		results, err := b.ctrl.CreatePartitions(ctx, reqs, req.ValidateOnly)
		if err != nil {
			code, msg := controllerCallError(err)
			for _, cp := range reqs {
				t := kmsg.NewCreatePartitionsResponseTopic()
				t.Topic, t.ErrorCode, t.ErrorMessage = cp.Topic, code, msg
				resp.Topics = append(resp.Topics, t)
			}
		} else {
			if !req.ValidateOnly {
				b.waitForImage(ctx, b.ctrl.Image().Offset)
			}
			for i, cp := range reqs {
				t := kmsg.NewCreatePartitionsResponseTopic()
				t.Topic = cp.Topic
				if i < len(results) {
					t.ErrorCode, t.ErrorMessage = itemError(results[i].Err, results[i].Message)
				} else {
					t.ErrorCode = kerr.UnknownServerError.Code
				}
				resp.Topics = append(resp.Topics, t)
			}
		}
	}
	answered := map[string]bool{}
	for _, rt := range req.Topics {
		if counts[rt.Topic] > 1 && !answered[rt.Topic] {
			answered[rt.Topic] = true
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = rt.Topic, kerr.InvalidRequest.Code, strPtr("Duplicate topic name.")
			resp.Topics = append(resp.Topics, t)
		}
	}
	return resp, nil
}
