package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAlterClientMetrics: subscriptions are ConfigRecords of ResourceClientMetrics, checked
// as Kafka's ClientMetricsConfigs checks them (with its error codes) even when no broker
// checked them first, removed with their last key, and kept across a snapshot.
func TestAlterClientMetrics(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	res, err := c.AlterConfigs(ctx, []AlterConfigs{
		{ResourceType: ResourceClientMetrics, ResourceName: "perf", Ops: []ConfigOp{
			{Key: "metrics", Value: str("org.apache.kafka.producer.")}, {Key: "interval.ms", Value: str("1000")},
			{Key: "match", Value: str("client_id=perf-.*")}}},
		{ResourceType: ResourceClientMetrics, ResourceName: "a", Ops: []ConfigOp{{Key: "interval.ms", Value: str("50")}}},
		{ResourceType: ResourceClientMetrics, ResourceName: "b", Ops: []ConfigOp{{Key: "match", Value: str("rack=x")}}},
		{ResourceType: ResourceClientMetrics, ResourceName: "c", Ops: []ConfigOp{{Key: "colour", Value: str("x")}}},
		{ResourceType: ResourceClientMetrics, ResourceName: "", Ops: []ConfigOp{{Key: "metrics", Value: str("*")}}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []*kerr.Error{nil, kerr.InvalidRequest, kerr.InvalidConfig, kerr.InvalidRequest, kerr.InvalidRequest}
	for i, w := range want {
		if res[i].Err != error(w) && !(w == nil && res[i].Err == nil) {
			t.Errorf("%d: got %v (%s), want %v", i, res[i].Err, res[i].Message, w)
		}
	}
	im := c.Image()
	if got := formatConfigs(im.ClientMetrics["perf"]); got != "{interval.ms=1000,match=client_id=perf-.*,metrics=org.apache.kafka.producer.}" || len(im.ClientMetrics) != 1 {
		t.Fatalf("client metrics %v", im.ClientMetrics)
	}
	back, err := decodeImage(encodeImage(im))
	if err != nil || formatConfigs(back.ClientMetrics["perf"]) != formatConfigs(im.ClientMetrics["perf"]) {
		t.Fatalf("after a snapshot: %v %v", back.ClientMetrics, err)
	}
	if _, err := c.AlterConfigs(ctx, []AlterConfigs{{ResourceType: ResourceClientMetrics, ResourceName: "perf", ReplaceAll: true}}, false); err != nil {
		t.Fatal(err)
	}
	if cm := c.Image().ClientMetrics; len(cm) != 0 {
		t.Fatalf("client metrics after removing every key: %v", cm)
	}
}
