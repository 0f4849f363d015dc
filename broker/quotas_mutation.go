package broker

// The controller mutation quota (controller_mutation_rate, KIP-599): partitions created,
// added or deleted per second by a user / client id, as Kafka's ControllerMutationQuotaManager
// enforces it.
//
//   - What is counted: CreateTopics charges each topic's partition count, CreatePartitions the
//     partitions it adds, DeleteTopics each topic's partitions; validate-only requests are not
//     charged. The quota is resolved as the byte-rate quotas are (quotas.go).
//   - The meter is Kafka's token bucket: it holds up to rate × controller.quota.window.num ×
//     controller.quota.window.size.seconds tokens (the burst), refills at the rate, and a
//     mutation takes as many tokens as it mutates partitions, even into debt.
//   - Strict versions (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+, whose clients
//     retry): a topic that comes while the bucket is in debt is not mutated and is answered
//     THROTTLING_QUOTA_EXCEEDED; the topic that takes it into debt is still served. Older
//     versions are served whole and only throttled. Either way the response carries the time
//     until the bucket is out of debt in ThrottleMillis and the connection is muted for it.
//
// Kafka counts this at the active controller, so a client's mutations on every broker share one
// bucket; sluice counts them on the broker that receives the request (each broker has its own),
// so a client spreading its requests over n brokers may mutate up to n times the rate.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

// throttlingQuotaExceededMessage is Kafka's message for THROTTLING_QUOTA_EXCEEDED.
const throttlingQuotaExceededMessage = "The throttling quota has been exceeded."

// tokenBucket is one sensor's controller mutation meter.
type tokenBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
	burst  float64   // the most it holds, as of its last use
	rate   float64   // tokens per second, as of its last use
}

// fullBy reports whether the bucket has refilled to its burst by now.
func (tb *tokenBucket) fullBy(now time.Time) bool {
	return tb.tokens+now.Sub(tb.at).Seconds()*tb.rate >= tb.burst
}

// mutationSpan is the bucket's burst in seconds of the rate.
func (q *clientQuotas) mutationSpan() float64 {
	return float64(q.mutationSamples) * q.mutationWindow.Seconds()
}

// takeMutations brings sensor's bucket up to date and, unless strict refuses it, takes
// permits from it. It returns whether the mutation may go ahead and the bucket's debt as a
// throttle time (0 when not in debt).
func (q *clientQuotas) takeMutations(sensor quotaSensor, bound float64, permits int, strict bool) (bool, time.Duration) {
	now := q.b.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweepLocked(now)
	burst := bound * q.mutationSpan()
	tb := q.mu.buckets[sensor]
	if tb == nil {
		tb = &tokenBucket{tokens: burst, at: now}
		q.mu.buckets[sensor] = tb
	}
	tb.tokens = min(burst, tb.tokens+now.Sub(tb.at).Seconds()*bound)
	tb.at, tb.burst, tb.rate = now, burst, bound
	admitted := !strict || tb.tokens >= 0
	if admitted {
		tb.tokens -= float64(permits)
	}
	if tb.tokens >= 0 || bound <= 0 {
		return admitted, 0
	}
	return admitted, time.Duration(-tb.tokens / bound * float64(time.Second)).Round(time.Millisecond)
}

// wrapMutations applies the controller mutation quota to a CreateTopics, CreatePartitions or
// DeleteTopics request: topics refused by a strict quota are taken out of req's body before the
// handler sees it and answered in the returned respond, which also sets the throttle and
// mutes the connection. Other requests, and every request no quota applies to, keep respond.
func (q *clientQuotas) wrapMutations(req *wire.Request, respond wire.Respond) wire.Respond {
	if !mutationAPIs[req.Key] {
		return respond
	}
	im := q.b.ctrl.Image()
	bound, sensor, ok := resolveRequestQuota(im, controller.QuotaControllerMutationRate, req)
	if !ok {
		return respond
	}
	var throttle time.Duration
	take := func(permits int, strict bool) bool {
		admitted, debt := q.takeMutations(sensor, bound, permits, strict)
		throttle = max(throttle, debt)
		return admitted
	}
	var answerRefused func(kmsg.Response)
	switch r := req.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		if r.ValidateOnly {
			return respond
		}
		var kept []kmsg.CreateTopicsRequestTopic
		var refused []string
		for _, t := range r.Topics {
			permits := int(t.NumPartitions)
			if len(t.ReplicaAssignment) > 0 {
				permits = len(t.ReplicaAssignment)
			} else if permits < 0 {
				permits = int(q.b.cfg.Static.Int32("num.partitions"))
			}
			if take(permits, r.Version >= 6) {
				kept = append(kept, t)
			} else {
				refused = append(refused, t.Topic)
			}
		}
		r.Topics = kept
		answerRefused = func(resp kmsg.Response) {
			out := resp.(*kmsg.CreateTopicsResponse)
			for _, name := range refused {
				t := kmsg.NewCreateTopicsResponseTopic()
				t.Topic, t.ErrorCode, t.ErrorMessage = name, kerr.ThrottlingQuotaExceeded.Code, strPtr(throttlingQuotaExceededMessage)
				out.Topics = append(out.Topics, t)
			}
			out.ThrottleMillis = max(out.ThrottleMillis, int32(throttle.Milliseconds()))
		}
	case *kmsg.CreatePartitionsRequest:
		if r.ValidateOnly {
			return respond
		}
		var kept []kmsg.CreatePartitionsRequestTopic
		var refused []string
		for _, t := range r.Topics {
			permits := 0
			if info := im.Topics[t.Topic]; info != nil && int(t.Count) > len(info.Partitions) {
				permits = int(t.Count) - len(info.Partitions)
			}
			if take(permits, r.Version >= 3) {
				kept = append(kept, t)
			} else {
				refused = append(refused, t.Topic)
			}
		}
		r.Topics = kept
		answerRefused = func(resp kmsg.Response) {
			out := resp.(*kmsg.CreatePartitionsResponse)
			for _, name := range refused {
				t := kmsg.NewCreatePartitionsResponseTopic()
				t.Topic, t.ErrorCode, t.ErrorMessage = name, kerr.ThrottlingQuotaExceeded.Code, strPtr(throttlingQuotaExceededMessage)
				out.Topics = append(out.Topics, t)
			}
			out.ThrottleMillis = max(out.ThrottleMillis, int32(throttle.Milliseconds()))
		}
	case *kmsg.DeleteTopicsRequest:
		strict := r.Version >= 5
		partitionsOf := func(name string, id [16]byte) int {
			info := im.Topics[name]
			if name == "" {
				info = im.TopicsByID[controller.TopicID(id)]
			}
			if info == nil {
				return 0
			}
			return len(info.Partitions)
		}
		var keptNames, refusedNames []string
		for _, name := range r.TopicNames {
			if take(partitionsOf(name, [16]byte{}), strict) {
				keptNames = append(keptNames, name)
			} else {
				refusedNames = append(refusedNames, name)
			}
		}
		var kept, refused []kmsg.DeleteTopicsRequestTopic
		for _, t := range r.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			if take(partitionsOf(name, t.TopicID), strict) {
				kept = append(kept, t)
			} else {
				refused = append(refused, t)
			}
		}
		r.TopicNames, r.Topics = keptNames, kept
		answerRefused = func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteTopicsResponse)
			add := func(name *string, id [16]byte) {
				t := kmsg.NewDeleteTopicsResponseTopic()
				t.Topic, t.TopicID = name, id
				t.ErrorCode, t.ErrorMessage = kerr.ThrottlingQuotaExceeded.Code, strPtr(throttlingQuotaExceededMessage)
				out.Topics = append(out.Topics, t)
			}
			for _, name := range refusedNames {
				add(strPtr(name), [16]byte{})
			}
			for _, t := range refused {
				add(t.Topic, t.TopicID)
			}
			out.ThrottleMillis = max(out.ThrottleMillis, int32(throttle.Milliseconds()))
		}
	}
	conn := req.Conn
	return func(resp kmsg.Response, err error) {
		if err == nil && resp != nil {
			answerRefused(resp)
			if throttle > 0 && conn != nil {
				q.mute(conn, q.b.clock.Now().Add(throttle))
			}
		}
		respond(resp, err)
	}
}

// mutationAPIs are the APIs the controller mutation quota counts.
var mutationAPIs = map[int16]bool{19: true, 20: true, 37: true}
