package broker

// Client quotas, as Kafka's ClientQuotaManager enforces produce and fetch byte rates:
//
//   - Which quota: the metadata image's client quotas (controller/quotas.go), resolved per key
//     with Kafka's precedence for a request of user U (the principal's name, ANONYMOUS when
//     unauthenticated) and client id C: user U + client C, U + default client, U alone,
//     default user + C, default user + default client, default user alone, client C alone,
//     default client alone. The first entity with the key sets the bound; none means
//     unlimited.
//   - What is measured: one rate per quota sensor, keyed as Kafka tags its metrics: the user
//     and/or client id of the request at the level the quota came from (so every client id
//     under a default-client quota has its own rate, and all client ids of a user-level quota
//     share one). Produce records the request's record bytes, fetch the response's record
//     bytes; follower fetches are never counted (they have replication quotas, throttle.go).
//     The rate is rateMeter's (Kafka's Rate): quota.window.num samples of
//     quota.window.size.seconds, spanning at least num-1 windows.
//   - When over: throttle time = (rate - bound) / bound × the measured span, at most
//     num × size seconds, as Kafka computes it. The response carries it in ThrottleMillis; for
//     produce v6+ and fetch v8+ (KIP-219: the client waits itself) it is sent at once and the
//     connection is muted for that long (its next request is not served before); older
//     versions get the response delayed by the throttle time instead.
//
// All of it is here; the produce and fetch handlers know nothing of quotas (Broker.Handle
// wraps them). request_percentage is quotas_request.go, connection_creation_rate per IP
// quotas_conn.go (with the accept loop in wire), controller_mutation_rate quotas_mutation.go.
// Not done: Kafka's empty fetch response while throttled (the records are sent and the
// connection muted).

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

// quotaSensor identifies one measured rate: the quota kind and the request's user and/or
// client id at the level its quota came from.
type quotaSensor struct {
	key               string // controller.QuotaProducerByteRate, QuotaConsumerByteRate or QuotaRequestPercentage
	user, clientID    string
	byUser, byClients bool
}

// clientQuotas is the broker's produce and fetch quota enforcement. Safe for concurrent use.
type clientQuotas struct {
	b       *Broker
	samples int
	window  time.Duration
	// nMuted is len(mu.muted), so that a request on an unmuted broker takes no lock.
	nMuted atomic.Int64
	// throttled counts the responses throttled and the total throttle time, per API
	// (0 produce, 1 fetch), for the metrics.
	throttled    [2]atomic.Int64
	throttledFor [2]atomic.Int64 // nanoseconds
	// requestThrottled and requestThrottledFor count the responses request_percentage
	// throttled (quotas_request.go) and the total throttle time in nanoseconds.
	requestThrottled, requestThrottledFor atomic.Int64
	mu                                    struct {
		sync.Mutex
		// meters holds each sensor's rate and when it was last recorded. Bounded by the
		// sensors in use: a meter idle for samples × window (its rate is zero again) is
		// dropped by sweepLocked.
		meters map[quotaSensor]*quotaMeter
		// muted is when each throttled connection may be served again. Entries past their
		// time are dropped by sweepLocked (and when the connection is next served).
		muted     map[*wire.ConnInfo]time.Time
		lastSweep time.Time
		// buckets holds each sensor's controller mutation meter (quotas_mutation.go). Bounded
		// like meters: a bucket that has refilled to its burst is dropped (a new one starts full).
		buckets map[quotaSensor]*tokenBucket
	}
	// mutationSamples and mutationWindow are controller.quota.window.num and .size.seconds.
	mutationSamples int
	mutationWindow  time.Duration
}

type quotaMeter struct {
	rate     *rateMeter
	lastUsed time.Time
}

func newClientQuotas(b *Broker) *clientQuotas {
	q := &clientQuotas{
		b:       b,
		samples: max(int(b.cfg.Static.Int32("quota.window.num")), 1),
		window:  time.Duration(b.cfg.Static.Int32("quota.window.size.seconds")) * time.Second,
	}
	if q.window <= 0 {
		q.window = time.Second
	}
	q.mu.meters = map[quotaSensor]*quotaMeter{}
	q.mu.muted = map[*wire.ConnInfo]time.Time{}
	q.mu.buckets = map[quotaSensor]*tokenBucket{}
	q.mutationSamples = max(int(b.cfg.Static.Int32("controller.quota.window.num")), 1)
	q.mutationWindow = max(time.Duration(b.cfg.Static.Int32("controller.quota.window.size.seconds"))*time.Second, time.Second)
	return q
}

// quotaUser is the quota entity name of a principal ("User:alice" is alice).
func quotaUser(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// resolveRequestQuota is resolveQuota for req's principal (User:ANONYMOUS without a
// connection) and client id.
func resolveRequestQuota(im *controller.Image, key string, req *wire.Request) (bound float64, sensor quotaSensor, ok bool) {
	user := wire.AnonymousPrincipal
	if req.Conn != nil {
		user = req.Conn.Principal()
	}
	clientID := ""
	if req.ClientID != nil {
		clientID = *req.ClientID
	}
	return resolveQuota(im, key, quotaUser(user), clientID)
}

// resolveQuota finds the bound of key for user and clientID in im with Kafka's precedence,
// and the sensor it is measured by; ok is false when no quota applies.
func resolveQuota(im *controller.Image, key, user, clientID string) (bound float64, sensor quotaSensor, ok bool) {
	if len(im.Quotas) == 0 {
		return 0, sensor, false
	}
	u := controller.QuotaName{Set: true, Name: user}
	c := controller.QuotaName{Set: true, Name: clientID}
	def := controller.QuotaName{Set: true, Default: true}
	levels := [...]struct {
		e                 controller.QuotaEntity
		byUser, byClients bool
	}{
		{controller.QuotaEntity{User: u, ClientID: c}, true, true},
		{controller.QuotaEntity{User: u, ClientID: def}, true, true},
		{controller.QuotaEntity{User: u}, true, false},
		{controller.QuotaEntity{User: def, ClientID: c}, true, true},
		{controller.QuotaEntity{User: def, ClientID: def}, true, true},
		{controller.QuotaEntity{User: def}, true, false},
		{controller.QuotaEntity{ClientID: c}, false, true},
		{controller.QuotaEntity{ClientID: def}, false, true},
	}
	for _, l := range levels {
		v, found := im.Quotas[l.e][key]
		if !found {
			continue
		}
		s := quotaSensor{key: key, byUser: l.byUser, byClients: l.byClients}
		if l.byUser {
			s.user = user
		}
		if l.byClients {
			s.clientID = clientID
		}
		return v, s, true
	}
	return 0, sensor, false
}

// record adds bytes to the sensor's rate and returns how long the client must be throttled
// (0: within the bound), at most the whole quota span (Kafka's byte-rate bound).
func (q *clientQuotas) record(sensor quotaSensor, bound float64, bytes int64) time.Duration {
	return q.recordCapped(sensor, bound, bytes, time.Duration(q.samples)*q.window)
}

// recordCapped is record with the throttle bounded by maxThrottle.
func (q *clientQuotas) recordCapped(sensor quotaSensor, bound float64, bytes int64, maxThrottle time.Duration) time.Duration {
	now := q.b.clock.Now()
	q.mu.Lock()
	q.sweepLocked(now)
	m := q.mu.meters[sensor]
	if m == nil {
		m = &quotaMeter{rate: newRateMeter(q.b.clock, q.samples, q.window)}
		q.mu.meters[sensor] = m
	}
	m.lastUsed = now
	q.mu.Unlock()
	m.rate.record(bytes)
	rate, span := m.rate.measure()
	if bound <= 0 || rate <= bound {
		return 0
	}
	throttle := time.Duration((rate - bound) / bound * float64(span))
	return min(throttle, maxThrottle).Round(time.Millisecond)
}

// sweepLocked drops idle meters and expired mutes, at most once a window. REQUIRES: q.mu.
func (q *clientQuotas) sweepLocked(now time.Time) {
	if now.Sub(q.mu.lastSweep) < q.window {
		return
	}
	q.mu.lastSweep = now
	idle := time.Duration(q.samples) * q.window
	for s, m := range q.mu.meters {
		if now.Sub(m.lastUsed) >= idle {
			delete(q.mu.meters, s)
		}
	}
	for s, tb := range q.mu.buckets {
		if tb.fullBy(now) {
			delete(q.mu.buckets, s)
		}
	}
	for c, until := range q.mu.muted {
		if !now.Before(until) {
			delete(q.mu.muted, c)
			q.nMuted.Add(-1)
		}
	}
}

// mute keeps conn's next request waiting until until.
func (q *clientQuotas) mute(conn *wire.ConnInfo, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	old, had := q.mu.muted[conn]
	if !had {
		q.nMuted.Add(1)
	}
	if until.After(old) {
		q.mu.muted[conn] = until
	}
}

// waitUnmuted returns once conn is no longer muted (or ctx ended). Broker.Handle calls it
// before serving a request, so a muted connection's requests wait, as Kafka stops reading
// from a muted channel.
func (q *clientQuotas) waitUnmuted(ctx context.Context, conn *wire.ConnInfo) {
	if conn == nil || q.nMuted.Load() == 0 {
		return
	}
	q.mu.Lock()
	until, ok := q.mu.muted[conn]
	if ok {
		delete(q.mu.muted, conn)
		q.nMuted.Add(-1)
	}
	q.mu.Unlock()
	if !ok {
		return
	}
	d := until.Sub(q.b.clock.Now())
	if d <= 0 {
		return
	}
	done := make(chan struct{})
	t := q.b.clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
	case <-ctx.Done():
		t.Stop()
	}
}

// wrap returns the respond a produce or client fetch is served with: it records the request's
// bytes against its quota and throttles the connection when over. Other requests (and every
// request while no quota is set) keep respond as it is.
func (q *clientQuotas) wrap(req *wire.Request, respond wire.Respond) wire.Respond {
	var key string
	switch body := req.Body.(type) {
	case *kmsg.ProduceRequest:
		key = controller.QuotaProducerByteRate
	case *kmsg.FetchRequest:
		if followerOf(body).id >= 0 {
			return respond
		}
		key = controller.QuotaConsumerByteRate
	default:
		return respond
	}
	bound, sensor, ok := resolveRequestQuota(q.b.ctrl.Image(), key, req)
	if !ok {
		return respond
	}
	var produceBytes int64
	if body, isProduce := req.Body.(*kmsg.ProduceRequest); isProduce {
		// Counted now: the handler may release the request's frame before it responds.
		for _, t := range body.Topics {
			for _, p := range t.Partitions {
				produceBytes += int64(len(p.Records))
			}
		}
	}
	version, conn := req.Version, req.Conn
	return func(resp kmsg.Response, err error) {
		if err != nil {
			respond(resp, err)
			return
		}
		bytes := produceBytes
		var throttleField *int32
		kip219 := false
		switch r := resp.(type) {
		case *kmsg.ProduceResponse:
			throttleField, kip219 = &r.ThrottleMillis, version >= 6
		case *splicedFetchResponse:
			throttleField, kip219 = &r.ThrottleMillis, version >= 8
			for _, t := range r.records {
				for _, p := range t {
					for _, s := range p {
						bytes += s.Length
					}
				}
			}
		case nil: // acks=0 produce: no response, the mute is the throttle
			kip219 = true
		}
		throttle := q.record(sensor, bound, bytes)
		if throttle <= 0 {
			respond(resp, nil)
			return
		}
		api := 0
		if _, fetch := resp.(*splicedFetchResponse); fetch {
			api = 1
		}
		q.throttled[api].Add(1)
		q.throttledFor[api].Add(int64(throttle))
		if throttleField != nil {
			*throttleField = max(*throttleField, int32(throttle/time.Millisecond))
		}
		if kip219 {
			if conn != nil {
				q.mute(conn, q.b.clock.Now().Add(throttle))
			}
			respond(resp, nil)
			return
		}
		q.b.clock.AfterFunc(throttle, func() { respond(resp, nil) })
	}
}

// measure returns the rate in bytes per second and the span it is measured over (Kafka's
// Rate.measure and windowSize).
func (m *rateMeter) measure() (float64, time.Duration) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	full := time.Duration(m.samples-1) * m.window
	if len(m.mu.ring) == 0 {
		return 0, full
	}
	var total int64
	for _, s := range m.mu.ring {
		total += s.bytes
	}
	elapsed := max(now.Sub(m.mu.ring[0].start), full)
	return float64(total) / elapsed.Seconds(), elapsed
}
