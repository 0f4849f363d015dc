package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/wire"
)

// requestQuotaBroker is a broker whose image sets request_percentage=10 for client id c1.
func requestQuotaBroker() (*clientQuotas, *replica.ManualClock) {
	clock := replica.NewManualClock(time.Unix(1000, 0))
	im := &controller.Image{Quotas: map[controller.QuotaEntity]map[string]float64{
		{ClientID: controller.QuotaName{Set: true, Name: "c1"}}: {controller.QuotaRequestPercentage: 10},
	}}
	q := &clientQuotas{b: &Broker{clock: clock, ctrl: newFakeMetadata(im)}, samples: 2, window: time.Second}
	q.mu.meters = map[quotaSensor]*quotaMeter{}
	q.mu.muted = map[*wire.ConnInfo]time.Time{}
	return q, clock
}

func metadataReq(clientID string, conn *wire.ConnInfo) *wire.Request {
	return &wire.Request{Key: 3, Version: 12, ClientID: &clientID, Conn: conn, Body: kmsg.NewPtrMetadataRequest()}
}

// TestRequestPercentageThrottle: 150 ms of handling in a span of one second is 15% of a thread;
// over a 10% quota that is (15-10)/10 × 1 s = 500 ms of throttle, in the response and as a
// mute of the connection. Another client id is not throttled, and the throttle is bounded by
// one quota window.
func TestRequestPercentageThrottle(t *testing.T) {
	q, clock := requestQuotaBroker()
	conn := &wire.ConnInfo{ID: 1}
	var got kmsg.Response
	respond, handled := q.wrapRequestTime(metadataReq("c1", conn), func(resp kmsg.Response, err error) { got = resp })
	clock.Advance(150 * time.Millisecond) // the handler's work
	respond(kmsg.NewPtrMetadataResponse(), nil)
	handled()
	if ms := got.(*kmsg.MetadataResponse).ThrottleMillis; ms != 500 {
		t.Fatalf("throttle_time_ms %d, want 500", ms)
	}
	if until, ok := q.mu.muted[conn]; !ok || !until.Equal(clock.Now().Add(500*time.Millisecond)) {
		t.Fatalf("muted until %v (%v), want %v", until, ok, clock.Now().Add(500*time.Millisecond))
	}
	// Another client id has no quota.
	respond, handled = q.wrapRequestTime(metadataReq("c2", &wire.ConnInfo{ID: 2}), func(resp kmsg.Response, err error) { got = resp })
	clock.Advance(500 * time.Millisecond)
	respond(kmsg.NewPtrMetadataResponse(), nil)
	handled()
	if ms := got.(*kmsg.MetadataResponse).ThrottleMillis; ms != 0 {
		t.Fatalf("unquoted client throttled %d ms", ms)
	}
	// Much more: bounded by one window (1 s).
	respond, handled = q.wrapRequestTime(metadataReq("c1", conn), func(resp kmsg.Response, err error) { got = resp })
	clock.Advance(900 * time.Millisecond)
	respond(kmsg.NewPtrMetadataResponse(), nil)
	handled()
	if ms := got.(*kmsg.MetadataResponse).ThrottleMillis; ms != 1000 {
		t.Fatalf("throttle_time_ms %d, want the 1000 ms bound", ms)
	}
}

// TestRequestPercentageCountsHandlingNotWaiting: a response sent by a delayed operation after
// the handler returned counts only the handler's time, not the wait.
func TestRequestPercentageCountsHandlingNotWaiting(t *testing.T) {
	q, clock := requestQuotaBroker()
	var got kmsg.Response
	respond, handled := q.wrapRequestTime(metadataReq("c1", &wire.ConnInfo{ID: 1}), func(resp kmsg.Response, err error) { got = resp })
	clock.Advance(50 * time.Millisecond) // 5%: within the quota
	handled()
	clock.Advance(5 * time.Second) // parked
	respond(kmsg.NewPtrMetadataResponse(), nil)
	if ms := got.(*kmsg.MetadataResponse).ThrottleMillis; ms != 0 {
		t.Fatalf("the wait was counted: throttled %d ms", ms)
	}
}

// TestRequestPercentageExempt: ApiVersions and follower fetches are never throttled.
func TestRequestPercentageExempt(t *testing.T) {
	q, clock := requestQuotaBroker()
	c1 := "c1"
	follower := kmsg.NewPtrFetchRequest()
	follower.ReplicaID = 2
	for _, req := range []*wire.Request{
		{Key: 18, Version: 3, ClientID: &c1, Body: kmsg.NewPtrApiVersionsRequest()},
		{Key: 1, Version: 12, ClientID: &c1, Body: follower},
	} {
		var got kmsg.Response
		respond, handled := q.wrapRequestTime(req, func(resp kmsg.Response, err error) { got = resp })
		clock.Advance(time.Second)
		resp := req.Body.ResponseKind()
		respond(resp, nil)
		handled()
		if r, ok := got.(kmsg.ThrottleResponse); ok {
			if ms, _ := r.Throttle(); ms != 0 {
				t.Fatalf("api %d throttled %d ms", req.Key, ms)
			}
		}
	}
	if n := q.requestThrottled.Load(); n != 0 {
		t.Fatalf("%d throttles recorded", n)
	}
}
