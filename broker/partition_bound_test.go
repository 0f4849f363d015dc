package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startBoundedBroker is a test broker that may host at most bound partition replicas.
func startBoundedBroker(t *testing.T, bound int, props map[string]string) *testBroker {
	tb := startTestBroker(t, props)
	tb.Broker.cfg.MaxHostedPartitions = bound // before the first request is served
	return tb
}

// assertNotHosted checks that topic exists nowhere: not in the image, not as a hosted
// partition, and Metadata answers it unknown.
func assertNotHosted(t *testing.T, tb *testBroker, topic string) {
	t.Helper()
	if tb.Ctrl.Image().Topics[topic] != nil {
		t.Fatalf("refused topic %q is in the metadata image", topic)
	}
	if tb.Broker.partition(topic, 0) != nil {
		t.Fatalf("refused topic %q is hosted", topic)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(testContext(t), tb.Client)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == topic && (rt.ErrorCode == 0 || len(rt.Partitions) > 0) {
			t.Fatalf("metadata answers refused topic %q with error %d and %d partitions", topic, rt.ErrorCode, len(rt.Partitions))
		}
	}
}

// Regression: CreateTopics reported success for partitions the broker could not host (it ran
// out of descriptors opening them). A create that would pass the hosted-partition bound is
// refused with POLICY_VIOLATION and nothing of it exists; creates within it still succeed.
func TestCreateTopicsRefusedPastHostedPartitionBound(t *testing.T) {
	tb := startBoundedBroker(t, 6, nil)
	ctx := testContext(t)
	if resp, err := tb.Admin.CreateTopic(ctx, 4, 1, nil, "fits"); err != nil || resp.Err != nil {
		t.Fatalf("create within the bound: %v %v", err, resp.Err)
	}
	resp, _ := tb.Admin.CreateTopic(ctx, 3, 1, nil, "too-many")
	if !errors.Is(resp.Err, kerr.PolicyViolation) || resp.ErrMessage == "" {
		t.Fatalf("create past the bound: %v %q, want POLICY_VIOLATION with a message", resp.Err, resp.ErrMessage)
	}
	assertNotHosted(t, tb, "too-many")
	// Validate-only is refused the same way.
	if v, _ := tb.Admin.ValidateCreateTopics(ctx, 3, 1, nil, "too-many"); !errors.Is(v["too-many"].Err, kerr.PolicyViolation) {
		t.Fatalf("validate-only past the bound: %v", v["too-many"].Err)
	}
	// Two topics in one request count together: the first fits, the second does not.
	many, err := tb.Admin.CreateTopics(ctx, 1, 1, nil, "one", "two", "three")
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, name := range []string{"one", "two", "three"} {
		switch r := many[name]; {
		case r.Err == nil:
			created++
		case errors.Is(r.Err, kerr.PolicyViolation):
			assertNotHosted(t, tb, name)
		default:
			t.Fatalf("%s: %v", name, r.Err)
		}
	}
	if created != 2 {
		t.Fatalf("%d of three 1-partition topics created with 2 replicas left under the bound", created)
	}
	tb.produce(t, "fits", 3, 2) // what was created is hosted and writable
}

// Regression: as CreateTopics, for CreatePartitions.
func TestCreatePartitionsRefusedPastHostedPartitionBound(t *testing.T) {
	tb := startBoundedBroker(t, 4, nil)
	ctx := testContext(t)
	tb.createTopic(t, "grow", 2, nil)
	resps, _ := tb.Admin.UpdatePartitions(ctx, 5, "grow")
	if !errors.Is(resps["grow"].Err, kerr.PolicyViolation) {
		t.Fatalf("grow past the bound: %v", resps["grow"].Err)
	}
	if n := len(tb.Ctrl.Image().Topics["grow"].Partitions); n != 2 || tb.Broker.partition("grow", 2) != nil {
		t.Fatalf("refused grow left %d partitions", n)
	}
	if resps, err := tb.Admin.UpdatePartitions(ctx, 4, "grow"); err != nil || resps["grow"].Err != nil {
		t.Fatalf("grow within the bound: %v %v", err, resps["grow"].Err)
	}
	tb.produce(t, "grow", 3, 1)
}

// Regression: two Metadata requests with auto-creation could take the broker past its
// descriptors. Auto-creation past the bound creates nothing and reports the topic unknown.
func TestAutoCreateRefusedPastHostedPartitionBound(t *testing.T) {
	tb := startBoundedBroker(t, 3, map[string]string{"num.partitions": "2", "auto.create.topics.enable": "true"})
	metadata := func(topic string) *kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, mt)
		resp, err := req.RequestWith(testContext(t), tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		return &resp.Topics[0]
	}
	if rt := metadata("auto-1"); rt.ErrorCode != 0 || len(rt.Partitions) != 2 {
		t.Fatalf("auto-create within the bound: error %d, %d partitions", rt.ErrorCode, len(rt.Partitions))
	}
	if rt := metadata("auto-2"); rt.ErrorCode == 0 || len(rt.Partitions) != 0 {
		t.Fatalf("auto-create past the bound: error %d, %d partitions", rt.ErrorCode, len(rt.Partitions))
	}
	assertNotHosted(t, tb, "auto-2")
}
