package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/broker/replica"
	"sluice/controller"
	"sluice/wire"
)

// mutationQuotaBroker is a broker whose image sets controller_mutation_rate=2 for client id
// c1, with Kafka's default window (11 samples of 1 s: a burst of 22 partitions), and knows a
// topic "old" of 4 partitions.
func mutationQuotaBroker() (*clientQuotas, *replica.ManualClock) {
	clock := replica.NewManualClock(time.Unix(1000, 0))
	im := &controller.Image{
		Quotas: map[controller.QuotaEntity]map[string]float64{
			{ClientID: controller.QuotaName{Set: true, Name: "c1"}}: {controller.QuotaControllerMutationRate: 2},
		},
		Topics: map[string]*controller.TopicInfo{"old": {Name: "old", Partitions: make([]controller.PartitionInfo, 4)}},
	}
	q := &clientQuotas{b: &Broker{clock: clock, ctrl: newFakeMetadata(im)}, samples: 2, window: time.Second,
		mutationSamples: 11, mutationWindow: time.Second}
	q.mu.meters = map[quotaSensor]*quotaMeter{}
	q.mu.muted = map[*wire.ConnInfo]time.Time{}
	q.mu.buckets = map[quotaSensor]*tokenBucket{}
	return q, clock
}

func createTopicsReq(clientID string, conn *wire.ConnInfo, version int16, partitions ...int32) (*wire.Request, *kmsg.CreateTopicsRequest) {
	body := kmsg.NewPtrCreateTopicsRequest()
	body.SetVersion(version)
	for i, n := range partitions {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = string(rune('a'+i)), n, 1
		body.Topics = append(body.Topics, t)
	}
	return &wire.Request{Key: 19, Version: version, ClientID: &clientID, Conn: conn, Body: body}, body
}

// answerAll is a handler stand-in: every topic left in the request is created.
func answerAll(body *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := body.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range body.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// TestControllerMutationQuotaStrict: with a burst of 22, a request creating 20 + 5 + 1
// partitions creates the first two topics (the second takes the bucket 3 into debt) and
// answers the third THROTTLING_QUOTA_EXCEEDED, with the debt's time (3 / 2 per second = 1.5 s) as
// the throttle and the connection muted for it. After 1.5 s the bucket is out of debt and a
// topic is created again; another client id has no quota.
func TestControllerMutationQuotaStrict(t *testing.T) {
	q, clock := mutationQuotaBroker()
	conn := &wire.ConnInfo{ID: 1}
	req, body := createTopicsReq("c1", conn, 7, 20, 5, 1)
	var got *kmsg.CreateTopicsResponse
	respond := q.wrapMutations(req, func(resp kmsg.Response, err error) { got = resp.(*kmsg.CreateTopicsResponse) })
	if len(body.Topics) != 2 {
		t.Fatalf("the handler is handed %d topics, want a and b", len(body.Topics))
	}
	respond(answerAll(body), nil)
	codes := map[string]int16{}
	for _, rt := range got.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if codes["a"] != 0 || codes["b"] != 0 || codes["c"] != kerr.ThrottlingQuotaExceeded.Code || len(codes) != 3 {
		t.Fatalf("answers %v, want a and b created, c THROTTLING_QUOTA_EXCEEDED", codes)
	}
	if got.ThrottleMillis != 1500 {
		t.Fatalf("throttle_time_ms %d, want 1500", got.ThrottleMillis)
	}
	if until := q.mu.muted[conn]; !until.Equal(clock.Now().Add(1500 * time.Millisecond)) {
		t.Fatalf("muted until %v, want 1.5 s from now", until)
	}

	clock.Advance(1500 * time.Millisecond)
	req, body = createTopicsReq("c1", conn, 7, 1)
	respond = q.wrapMutations(req, func(resp kmsg.Response, err error) { got = resp.(*kmsg.CreateTopicsResponse) })
	respond(answerAll(body), nil)
	if len(got.Topics) != 1 || got.Topics[0].ErrorCode != 0 {
		t.Fatalf("out of debt: %+v", got.Topics)
	}

	req, body = createTopicsReq("c2", &wire.ConnInfo{ID: 2}, 7, 1000)
	respond = q.wrapMutations(req, func(resp kmsg.Response, err error) { got = resp.(*kmsg.CreateTopicsResponse) })
	respond(answerAll(body), nil)
	if len(got.Topics) != 1 || got.Topics[0].ErrorCode != 0 || got.ThrottleMillis != 0 {
		t.Fatalf("client id without a quota: %+v, throttle %d", got.Topics, got.ThrottleMillis)
	}
}

// TestControllerMutationQuotaPermissive: CreateTopics before v6 is served whole and only
// throttled; validate-only requests are not charged; DeleteTopics charges the topic's
// partitions and refuses (v5+) once in debt.
func TestControllerMutationQuotaPermissive(t *testing.T) {
	q, _ := mutationQuotaBroker()
	conn := &wire.ConnInfo{ID: 1}
	validate, vbody := createTopicsReq("c1", conn, 7, 1000)
	vbody.ValidateOnly = true
	q.wrapMutations(validate, func(kmsg.Response, error) {})
	if len(vbody.Topics) != 1 || len(q.mu.buckets) != 0 {
		t.Fatalf("validate-only charged: %d topics, %d buckets", len(vbody.Topics), len(q.mu.buckets))
	}

	req, body := createTopicsReq("c1", conn, 5, 20, 5, 1)
	var got *kmsg.CreateTopicsResponse
	respond := q.wrapMutations(req, func(resp kmsg.Response, err error) { got = resp.(*kmsg.CreateTopicsResponse) })
	if len(body.Topics) != 3 {
		t.Fatalf("v5 is permissive: %d topics handed on, want 3", len(body.Topics))
	}
	respond(answerAll(body), nil)
	if got.ThrottleMillis != 2000 { // 26 taken from 22: 4 in debt at 2 per second
		t.Fatalf("throttle_time_ms %d, want 2000", got.ThrottleMillis)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("old")}}
	clientID := "c1"
	var deleted *kmsg.DeleteTopicsResponse
	respond = q.wrapMutations(&wire.Request{Key: 20, Version: 6, ClientID: &clientID, Conn: conn, Body: del},
		func(resp kmsg.Response, err error) { deleted = resp.(*kmsg.DeleteTopicsResponse) })
	if len(del.Topics) != 0 {
		t.Fatalf("DeleteTopics in debt handed on %d topics", len(del.Topics))
	}
	respond(del.ResponseKind(), nil)
	if len(deleted.Topics) != 1 || deleted.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("DeleteTopics in debt: %+v", deleted.Topics)
	}
}

// TestControllerMutationQuotaServed: through the broker's request path, a client whose
// default-client quota is 1 partition per second (a burst of 11) creates a 12-partition topic
// and then has its next topic refused THROTTLING_QUOTA_EXCEEDED with a throttle.
func TestControllerMutationQuotaServed(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)
	res, err := tb.Admin.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id"}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: controller.QuotaControllerMutationRate, Value: 1}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, name := range []string{"big", "next"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 12, 1
		req.Topics = append(req.Topics, rt)
	}
	raw, err := tb.Client.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := raw.(*kmsg.CreateTopicsResponse)
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if codes["big"] != 0 || codes["next"] != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("answers %v, want big created and next THROTTLING_QUOTA_EXCEEDED", codes)
	}
	if resp.ThrottleMillis != 1000 { // 12 taken from 11: 1 in debt at 1 per second
		t.Fatalf("throttle_time_ms %d, want 1000", resp.ThrottleMillis)
	}
}
