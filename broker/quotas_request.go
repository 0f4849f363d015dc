package broker

// Request quotas (request_percentage), as Kafka's ClientRequestQuotaManager enforces them:
//
//   - Which quota: request_percentage of the metadata image, resolved per request with the
//     same precedence and sensors as the byte rates (quotas.go's resolveQuota).
//   - What is measured: the time the broker spends handling the client's requests, as a
//     percentage of one thread: the time from the handler's start to its response (or to its
//     return, for a response that a delayed operation sends later: the wait in purgatory is
//     not handling time, as Kafka counts only request-handler thread time), recorded in
//     nanoseconds over quota.window.num samples of quota.window.size.seconds. A quota of 100
//     is one thread's whole time; 200 is two threads'.
//   - When over: throttle time = (rate - bound) / bound × the measured span, at most one
//     quota window (Kafka bounds request throttles by quota.window.size.seconds). Every
//     response with a throttle_time_ms field carries it (the larger of it and a byte-rate
//     throttle), and the connection is muted for that long (its next request waits), as for
//     the byte rates; the response itself is never delayed.
//   - Exempt, as in Kafka: ApiVersions, SaslHandshake and SaslAuthenticate (a client can
//     always connect and learn it is throttled), follower fetches and the APIs brokers and
//     controllers send each other.

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

// requestQuotaExempt are the API keys request_percentage never throttles: the connection
// handshake APIs and the inter-broker and raft APIs (Kafka's cluster actions).
var requestQuotaExempt = map[int16]bool{
	17: true, // SaslHandshake
	18: true, // ApiVersions
	36: true, // SaslAuthenticate
	27: true, // WriteTxnMarkers (from transaction coordinators)
	52: true, // Vote
	53: true, // BeginQuorumEpoch
	54: true, // EndQuorumEpoch
	56: true, // AlterPartition
	58: true, // Envelope
	59: true, // FetchSnapshot
	62: true, // BrokerRegistration
	63: true, // BrokerHeartbeat
	67: true, // AllocateProducerIds
}

// nanosPerPercent converts a request_percentage bound to nanoseconds of handling per second:
// 1% of one thread is 10 ms per second.
const nanosPerPercent = float64(time.Second) / 100

func noRequestQuota() {}

// wrapRequestTime returns the respond a request is served with when a request_percentage
// quota applies to it, and the function Broker.Handle calls when the handler returns.
// Without a quota both are as given (no cost beyond one lookup).
func (q *clientQuotas) wrapRequestTime(req *wire.Request, respond wire.Respond) (wire.Respond, func()) {
	if requestQuotaExempt[req.Key] {
		return respond, noRequestQuota
	}
	if f, ok := req.Body.(*kmsg.FetchRequest); ok && followerOf(f).id >= 0 {
		return respond, noRequestQuota
	}
	im := q.b.ctrl.Image()
	if len(im.Quotas) == 0 {
		return respond, noRequestQuota
	}
	bound, sensor, ok := resolveRequestQuota(im, controller.QuotaRequestPercentage, req)
	if !ok {
		return respond, noRequestQuota
	}
	start := q.b.clock.Now()
	// handled is the handler's own time once it returned (0 while it runs).
	var handled atomic.Int64
	returned := func() { handled.Store(max(int64(q.b.clock.Now().Sub(start)), 1)) }
	conn := req.Conn
	return func(resp kmsg.Response, err error) {
		if err != nil {
			respond(resp, err)
			return
		}
		spent := handled.Load()
		if spent == 0 {
			spent = int64(q.b.clock.Now().Sub(start))
		}
		throttle := q.recordCapped(sensor, bound*nanosPerPercent, max(spent, 0), q.window)
		if throttle > 0 {
			q.requestThrottled.Add(1)
			q.requestThrottledFor.Add(int64(throttle))
			if r, ok := resp.(kmsg.ThrottleResponse); ok {
				cur, _ := r.Throttle()
				if sr, ok := resp.(kmsg.SetThrottleResponse); ok {
					sr.SetThrottle(max(cur, int32(throttle/time.Millisecond)))
				}
			}
			if conn != nil {
				q.mute(conn, q.b.clock.Now().Add(throttle))
			}
		}
		respond(resp, nil)
	}, returned
}

// RequestQuotaThrottles returns how many responses a request_percentage quota throttled and
// for how long in all.
func (b *Broker) RequestQuotaThrottles() (int64, time.Duration) {
	return b.quotas.requestThrottled.Load(), time.Duration(b.quotas.requestThrottledFor.Load())
}
