package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/wire"
)

func TestResolveQuotaPrecedence(t *testing.T) {
	u := func(n string) controller.QuotaName { return controller.QuotaName{Set: true, Name: n} }
	def := controller.QuotaName{Set: true, Default: true}
	key := controller.QuotaProducerByteRate
	im := &controller.Image{Quotas: map[controller.QuotaEntity]map[string]float64{}}
	set := func(e controller.QuotaEntity, v float64) { im.Quotas[e] = map[string]float64{key: v} }
	check := func(want float64, wantSensor quotaSensor) {
		t.Helper()
		got, s, ok := resolveQuota(im, key, "alice", "c1")
		if !ok || got != want || s != wantSensor {
			t.Fatalf("got %v %+v %v, want %v %+v", got, s, ok, want, wantSensor)
		}
	}
	if _, _, ok := resolveQuota(im, key, "alice", "c1"); ok {
		t.Fatal("no quotas must mean unlimited")
	}
	// Added from the lowest precedence up: each new level wins.
	set(controller.QuotaEntity{ClientID: def}, 8)
	check(8, quotaSensor{key: key, clientID: "c1", byClients: true})
	set(controller.QuotaEntity{ClientID: u("c1")}, 7)
	check(7, quotaSensor{key: key, clientID: "c1", byClients: true})
	set(controller.QuotaEntity{User: def}, 6)
	check(6, quotaSensor{key: key, user: "alice", byUser: true})
	set(controller.QuotaEntity{User: def, ClientID: def}, 5)
	check(5, quotaSensor{key: key, user: "alice", clientID: "c1", byUser: true, byClients: true})
	set(controller.QuotaEntity{User: def, ClientID: u("c1")}, 4)
	check(4, quotaSensor{key: key, user: "alice", clientID: "c1", byUser: true, byClients: true})
	set(controller.QuotaEntity{User: u("alice")}, 3)
	check(3, quotaSensor{key: key, user: "alice", byUser: true})
	set(controller.QuotaEntity{User: u("alice"), ClientID: def}, 2)
	check(2, quotaSensor{key: key, user: "alice", clientID: "c1", byUser: true, byClients: true})
	set(controller.QuotaEntity{User: u("alice"), ClientID: u("c1")}, 1)
	check(1, quotaSensor{key: key, user: "alice", clientID: "c1", byUser: true, byClients: true})
	// Another key is not affected.
	if _, _, ok := resolveQuota(im, controller.QuotaConsumerByteRate, "alice", "c1"); ok {
		t.Fatal("consumer_byte_rate resolved from producer quotas")
	}
}

// TestQuotaThrottleTime checks Kafka's throttle formula: (rate - bound) / bound × span, with
// the span at least samples-1 windows, and nothing while under the bound.
func TestQuotaThrottleTime(t *testing.T) {
	clock := replica.NewManualClock(time.Unix(1000, 0))
	q := &clientQuotas{b: &Broker{clock: clock}, samples: 2, window: time.Second}
	q.mu.meters = map[quotaSensor]*quotaMeter{}
	q.mu.muted = map[*wire.ConnInfo]time.Time{}
	s := quotaSensor{key: controller.QuotaProducerByteRate, clientID: "c1", byClients: true}
	if d := q.record(s, 1000, 500); d != 0 {
		t.Fatalf("under the bound: throttled %v", d)
	}
	// 3000 bytes over a span of 1 s (samples-1 windows): rate 3000, bound 1000 → 2 s.
	if d := q.record(s, 1000, 2500); d != 2*time.Second {
		t.Fatalf("throttle %v, want 2s", d)
	}
	// Another sensor has its own rate.
	if d := q.record(quotaSensor{key: controller.QuotaProducerByteRate, clientID: "c2", byClients: true}, 1000, 500); d != 0 {
		t.Fatalf("other client throttled %v", d)
	}
	// Once the samples aged out the rate is back to zero.
	clock.Advance(3 * time.Second)
	if d := q.record(s, 1000, 900); d != 0 {
		t.Fatalf("after the window: throttled %v", d)
	}
}

// TestDescribeClientQuotasEmptyIsNotNull: with no quota matching, Entries must be an empty
// list, not null — Kafka's admin client (kafka-configs --alter, which describes first) threw
// a NullPointerException on the null list.
func TestDescribeClientQuotasEmptyIsNotNull(t *testing.T) {
	b := &Broker{ctrl: newFakeMetadata(&controller.Image{})}
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	resp, err := b.handleDescribeClientQuotas(context.Background(), nil, req)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.DescribeClientQuotasResponse)
	if r.ErrorCode != 0 || r.Entries == nil {
		t.Fatalf("error %d, entries %v: want no error and an empty, non-null list", r.ErrorCode, r.Entries)
	}
	sresp, _ := b.handleDescribeUserScramCredentials(context.Background(), nil, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
	if sresp.(*kmsg.DescribeUserSCRAMCredentialsResponse).Results == nil {
		t.Fatal("DescribeUserScramCredentials results are null")
	}
}

// TestQuotaMuteHoldsNextRequest: a muted connection's next request waits until the throttle
// time has passed on the broker's clock; other connections are not held.
func TestQuotaMuteHoldsNextRequest(t *testing.T) {
	clock := replica.NewManualClock(time.Unix(1000, 0))
	q := &clientQuotas{b: &Broker{clock: clock}, samples: 2, window: time.Second}
	q.mu.meters = map[quotaSensor]*quotaMeter{}
	q.mu.muted = map[*wire.ConnInfo]time.Time{}
	muted, other := &wire.ConnInfo{ID: 1}, &wire.ConnInfo{ID: 2}
	q.mute(muted, clock.Now().Add(500*time.Millisecond))
	q.waitUnmuted(context.Background(), other) // returns at once: not muted
	done := make(chan struct{})
	go func() {
		q.waitUnmuted(context.Background(), muted)
		close(done)
	}()
	// The waiter arms a timer on the manual clock; advance until it fires.
	deadline := time.After(10 * time.Second)
	for {
		clock.Advance(100 * time.Millisecond)
		select {
		case <-done:
			if got := clock.Now().Sub(time.Unix(1000, 0)); got < 500*time.Millisecond {
				t.Fatalf("released after %v, want ≥ 500ms", got)
			}
			if q.nMuted.Load() != 0 {
				t.Fatalf("%d connections still muted", q.nMuted.Load())
			}
			return
		case <-deadline:
			t.Fatal("muted connection never released")
		default:
		}
	}
}
