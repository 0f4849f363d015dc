package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/encoding/protowire"

	"sluice/authz"
)

// alterClientMetrics sends one IncrementalAlterConfigs for a subscription.
func alterClientMetrics(t *testing.T, tb *testBroker, name string, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeClientMetrics, name, cfgs
	req.Resources = append(req.Resources, r)
	resp := tb.direct(t, req).(*kmsg.IncrementalAlterConfigsResponse)
	msg := ""
	if resp.Resources[0].ErrorMessage != nil {
		msg = *resp.Resources[0].ErrorMessage
	}
	return resp.Resources[0].ErrorCode, msg
}

func listConfigResources(t *testing.T, tb *testBroker, version int16, types ...int8) (int16, []string) {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.Version, req.ResourceTypes = version, types
	resp := tb.direct(t, req).(*kmsg.ListConfigResourcesResponse)
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, kmsg.ConfigResourceType(r.Type).String()+":"+r.Name)
	}
	return resp.ErrorCode, out
}

// TestClientMetricsConfigs: the CLIENT_METRICS resource is altered with Kafka's validation and
// codes, described with its values and defaults, APPEND works on its lists, and
// ListConfigResources lists it (v0: subscriptions only; v1: by type). It was answered
// INVALID_REQUEST.
func TestClientMetricsConfigs(t *testing.T) {
	tb := startTestBroker(t, nil)
	for _, tc := range []struct {
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
		msg  string
	}{
		{setOp("interval.ms", "10"), kerr.InvalidRequest.Code, "interval must be between 100 and 3600000"},
		{setOp("match", "client_rack=a"), kerr.InvalidConfig.Code, "Illegal client matching pattern: client_rack=a"},
		{setOp("colour", "red"), kerr.InvalidRequest.Code, "Unknown client metrics configuration: colour"},
		{setOp("metrics", "a,a"), kerr.InvalidConfig.Code, "must not be duplicated"},
	} {
		if code, msg := alterClientMetrics(t, tb, "perf", tc.op); code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s=%s: %d %q, want %d %q", tc.op.Name, *tc.op.Value, code, msg, tc.code, tc.msg)
		}
	}
	if code, msg := alterClientMetrics(t, tb, "perf", setOp("metrics", "org.apache.kafka.producer."),
		setOp("interval.ms", "1000"), setOp("match", "client_id=perf-.*")); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	app := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	app.Name, app.Op, app.Value = "metrics", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("org.apache.kafka.consumer.")
	if code, msg := alterClientMetrics(t, tb, "perf", app); code != 0 {
		t.Fatalf("append: %d %s", code, msg)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "perf"
	req.Resources = append(req.Resources, r)
	resp := tb.direct(t, req).(*kmsg.DescribeConfigsResponse)
	got := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		got[c.Name] = *c.Value + "/" + c.Source.String()
	}
	if got["metrics"] != "org.apache.kafka.producer.,org.apache.kafka.consumer./CLIENT_METRICS_CONFIG" ||
		got["interval.ms"] != "1000/CLIENT_METRICS_CONFIG" || got["match"] != "client_id=perf-.*/CLIENT_METRICS_CONFIG" {
		t.Fatalf("described %v", got)
	}
	if code, names := listConfigResources(t, tb, 0); code != 0 || strings.Join(names, ",") != "CLIENT_METRICS:perf" {
		t.Fatalf("ListConfigResources v0: %d %v", code, names)
	}
	if code, names := listConfigResources(t, tb, 1, int8(kmsg.ConfigResourceTypeBroker), int8(kmsg.ConfigResourceTypeClientMetrics)); code != 0 ||
		strings.Join(names, ",") != "CLIENT_METRICS:perf,BROKER:1" {
		t.Fatalf("ListConfigResources v1: %d %v", code, names)
	}
	if code, _ := listConfigResources(t, tb, 1, 1); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("ListConfigResources v1 of type 1: %d", code)
	}
}

// otlpCounter is a MetricsData payload with one delta monotonic sum point.
func otlpCounter(name string, value int64) []byte {
	var point []byte
	point = protowire.AppendTag(point, 6, protowire.Fixed64Type)
	point = protowire.AppendFixed64(point, uint64(value))
	var sum []byte
	sum = protowire.AppendTag(sum, 1, protowire.BytesType)
	sum = protowire.AppendBytes(sum, point)
	sum = protowire.AppendTag(sum, 2, protowire.VarintType)
	sum = protowire.AppendVarint(sum, 1)
	sum = protowire.AppendTag(sum, 3, protowire.VarintType)
	sum = protowire.AppendVarint(sum, 1)
	var metric []byte
	metric = protowire.AppendTag(metric, 1, protowire.BytesType)
	metric = protowire.AppendString(metric, name)
	metric = protowire.AppendTag(metric, 7, protowire.BytesType)
	metric = protowire.AppendBytes(metric, sum)
	var scope []byte
	scope = protowire.AppendTag(scope, 2, protowire.BytesType)
	scope = protowire.AppendBytes(scope, metric)
	var rm []byte
	rm = protowire.AppendTag(rm, 2, protowire.BytesType)
	rm = protowire.AppendBytes(rm, scope)
	var md []byte
	md = protowire.AppendTag(md, 1, protowire.BytesType)
	return protowire.AppendBytes(md, rm)
}

// TestTelemetryPushed: over the network, a client with no matching subscription gets none; a
// subscription matching its client ID makes GetTelemetrySubscriptions answer it (with a new
// subscription ID), a push is accepted and its counter is exported; an early push is
// THROTTLING_QUOTA_EXCEEDED and a stale subscription ID UNKNOWN_SUBSCRIPTION_ID.
func TestTelemetryPushed(t *testing.T) {
	tb := startTestBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.ClientID("perf-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testContext(t)
	get := func(id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
		t.Helper()
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		req.ClientInstanceID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	push := func(id [16]byte, sub int32, payload []byte) int16 {
		t.Helper()
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID, req.SubscriptionID, req.Metrics = id, sub, payload
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	first := get([16]byte{})
	if first.ErrorCode != 0 || len(first.RequestedMetrics) != 0 || first.PushIntervalMillis != 300000 || first.TelemetryMaxBytes != 1048576 ||
		!first.DeltaTemporality || len(first.AcceptedCompressionTypes) != 4 {
		t.Fatalf("with no subscription: %+v", first)
	}
	id := first.ClientInstanceID
	if code, msg := alterClientMetrics(t, tb, "perf", setOp("metrics", "org.apache.kafka."), setOp("interval.ms", "60000"), setOp("match", "client_id=perf-.*,client_software_name=kgo")); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	sub := get(id)
	if sub.ErrorCode != 0 || sub.PushIntervalMillis != 60000 || strings.Join(sub.RequestedMetrics, ",") != "org.apache.kafka." || sub.SubscriptionID == first.SubscriptionID {
		t.Fatalf("subscribed: %+v", sub)
	}
	if code := push(id, sub.SubscriptionID, otlpCounter("org.apache.kafka.producer.record.send.total", 3)); code != 0 {
		t.Fatalf("push: %s", kerr.ErrorForCode(code))
	}
	if code := push(id, sub.SubscriptionID, otlpCounter("org.apache.kafka.producer.record.send.total", 3)); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("early push: %v", kerr.ErrorForCode(code))
	}
	found := false
	for _, f := range tb.Broker.TelemetryFamilies() {
		if f.Name == "org_apache_kafka_producer_record_send_total" && len(f.Series) == 1 && f.Series[0].Value == 3 && f.Series[0].LabelValues[1] == "perf-1" {
			found = true
		}
	}
	if !found {
		t.Fatalf("families %+v", tb.Broker.TelemetryFamilies())
	}
	if code, _ := alterClientMetrics(t, tb, "perf", setOp("interval.ms", "30000")); code != 0 {
		t.Fatal("second alter")
	}
	if code := push(id, sub.SubscriptionID, otlpCounter("x", 1)); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("stale subscription id: %v", kerr.ErrorForCode(code))
	}
}

// TestAuthorizationClientMetrics: as in Kafka, CLIENT_METRICS resources and
// ListConfigResources need DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster, while the
// telemetry APIs need no ACL.
func TestAuthorizationClientMetrics(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	if code, _ := alterClientMetrics(t, tb, "perf", setOp("metrics", "*")); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter without ALTER_CONFIGS on the cluster: %v", kerr.ErrorForCode(code))
	}
	if code, _ := listConfigResources(t, tb, 1); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("list without DESCRIBE_CONFIGS on the cluster: %v", kerr.ErrorForCode(code))
	}
	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	if resp := tb.direct(t, get).(*kmsg.GetTelemetrySubscriptionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("GetTelemetrySubscriptions without ACLs: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	tb.addACLs(t, anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpAlterConfigs), anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpDescribeConfigs))
	if code, msg := alterClientMetrics(t, tb, "perf", setOp("metrics", "*")); code != 0 {
		t.Fatalf("alter with ALTER_CONFIGS on the cluster: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, names := listConfigResources(t, tb, 0); code != 0 || strings.Join(names, ",") != "CLIENT_METRICS:perf" {
		t.Fatalf("list with DESCRIBE_CONFIGS on the cluster: %v %v", kerr.ErrorForCode(code), names)
	}
}

// TestClientMetricsLegacyAlterConfigs: the legacy AlterConfigs replaces a subscription's keys
// (those not named go back to their defaults) with the same checks as the incremental form.
func TestClientMetricsLegacyAlterConfigs(t *testing.T) {
	tb := startTestBroker(t, nil)
	if code, msg := alterClientMetrics(t, tb, "perf", setOp("metrics", "*"), setOp("interval.ms", "1000")); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	legacy := func(kv ...string) (int16, string) {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = 2
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "perf"
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		resp := tb.direct(t, req).(*kmsg.AlterConfigsResponse)
		msg := ""
		if resp.Resources[0].ErrorMessage != nil {
			msg = *resp.Resources[0].ErrorMessage
		}
		return resp.Resources[0].ErrorCode, msg
	}
	if code, msg := legacy("interval.ms", "5"); code != kerr.InvalidRequest.Code || !strings.Contains(msg, "interval must be between") {
		t.Fatalf("legacy interval 5: %d %q", code, msg)
	}
	if code, msg := legacy("match", "client_id=x"); code != 0 {
		t.Fatalf("legacy alter: %d %q", code, msg)
	}
	if got := tb.Broker.ctrl.Image().ClientMetrics["perf"]; len(got) != 1 || got["match"] != "client_id=x" {
		t.Fatalf("after the legacy alter: %v", got)
	}
}
