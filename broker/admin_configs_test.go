package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfig describes one topic key.
func topicConfig(t *testing.T, tb *testBroker, topic, key string) kadm.Config {
	t.Helper()
	rcs, err := tb.Admin.DescribeTopicConfigs(testContext(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("describe %s: no key %s", topic, key)
	return kadm.Config{}
}

func TestAdminTopicConfigsRoundTrip(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"log.retention.hours": "48"})
	ctx := testContext(t)
	tb.createTopic(t, "cfg", 1, nil)

	// Defaults: the static broker synonym, converted to the topic key's unit.
	c := topicConfig(t, tb, "cfg", "retention.ms")
	if c.MaybeValue() != "172800000" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("retention.ms = %q from %v", c.MaybeValue(), c.Source)
	}
	if len(c.Synonyms) == 0 || c.Synonyms[0].Key != "log.retention.hours" {
		t.Fatalf("retention.ms synonyms %+v", c.Synonyms)
	}
	if c := topicConfig(t, tb, "cfg", "segment.bytes"); c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.bytes = %q from %v", c.MaybeValue(), c.Source)
	}

	// Incremental: SET, APPEND to a list, then SUBTRACT and DELETE.
	ops := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("1000")},
		{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: kmsg.StringPtr("0:1")},
	}
	if resps, err := tb.Admin.AlterTopicConfigs(ctx, ops, "cfg"); err != nil || resps[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, resps)
	}
	ops = []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "leader.replication.throttled.replicas", Value: kmsg.StringPtr("1:1")}}
	if resps, err := tb.Admin.AlterTopicConfigs(ctx, ops, "cfg"); err != nil || resps[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, resps)
	}
	if c := topicConfig(t, tb, "cfg", "retention.ms"); c.MaybeValue() != "1000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after set = %q from %v", c.MaybeValue(), c.Source)
	}
	if c := topicConfig(t, tb, "cfg", "leader.replication.throttled.replicas"); c.MaybeValue() != "0:1,1:1" {
		t.Fatalf("throttled replicas after append = %q", c.MaybeValue())
	}
	ops = []kadm.AlterConfig{
		{Op: kadm.SubtractConfig, Name: "leader.replication.throttled.replicas", Value: kmsg.StringPtr("0:1")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}
	if resps, err := tb.Admin.AlterTopicConfigs(ctx, ops, "cfg"); err != nil || resps[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, resps)
	}
	if c := topicConfig(t, tb, "cfg", "leader.replication.throttled.replicas"); c.MaybeValue() != "1:1" {
		t.Fatalf("throttled replicas after subtract = %q", c.MaybeValue())
	}
	if c := topicConfig(t, tb, "cfg", "retention.ms"); c.MaybeValue() != "172800000" {
		t.Fatalf("retention.ms after delete = %q", c.MaybeValue())
	}

	// Validate-only changes nothing.
	ops = []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kmsg.StringPtr("2000")}}
	if resps, err := tb.Admin.ValidateAlterTopicConfigs(ctx, ops, "cfg"); err != nil || resps[0].Err != nil {
		t.Fatalf("validate: %v %+v", err, resps)
	}
	if c := topicConfig(t, tb, "cfg", "max.message.bytes"); c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("validate-only changed max.message.bytes to %q", c.MaybeValue())
	}

	// Legacy AlterConfigs replaces the whole set: cleanup.policy's override goes away.
	ops = []kadm.AlterConfig{{Name: "max.message.bytes", Value: kmsg.StringPtr("2000")}}
	if resps, err := tb.Admin.AlterTopicConfigsState(ctx, ops, "cfg"); err != nil || resps[0].Err != nil {
		t.Fatalf("legacy alter: %v %+v", err, resps)
	}
	if c := topicConfig(t, tb, "cfg", "max.message.bytes"); c.MaybeValue() != "2000" {
		t.Fatalf("max.message.bytes = %q", c.MaybeValue())
	}
	if c := topicConfig(t, tb, "cfg", "cleanup.policy"); c.MaybeValue() != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("cleanup.policy after replace-all = %q from %v", c.MaybeValue(), c.Source)
	}
}

func TestAdminAlterConfigsErrors(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "cfg", 1, nil)

	incremental := func(resources ...kmsg.IncrementalAlterConfigsRequestResource) []kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = req.MaxVersion()
		req.Resources = resources
		return tb.direct(t, req).(*kmsg.IncrementalAlterConfigsResponse).Resources
	}
	resource := func(typ kmsg.ConfigResourceType, name string, entries ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = typ, name, entries
		return r
	}
	entry := func(op kmsg.IncrementalAlterConfigOp, key string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		e := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		e.Op, e.Name, e.Value = op, key, value
		return e
	}
	set := kmsg.IncrementalAlterConfigOpSet
	tests := []struct {
		name     string
		resource kmsg.IncrementalAlterConfigsRequestResource
		want     int16
		message  string
	}{
		{"unknown topic", resource(kmsg.ConfigResourceTypeTopic, "nope", entry(set, "retention.ms", kmsg.StringPtr("1"))), kerr.UnknownTopicOrPartition.Code, ""},
		{"invalid value", resource(kmsg.ConfigResourceTypeTopic, "cfg", entry(set, "retention.ms", kmsg.StringPtr("x"))), kerr.InvalidConfig.Code, ""},
		{"unknown key", resource(kmsg.ConfigResourceTypeTopic, "cfg", entry(set, "no.such", kmsg.StringPtr("x"))), kerr.InvalidConfig.Code, ""},
		{"duplicate key", resource(kmsg.ConfigResourceTypeTopic, "cfg", entry(set, "retention.ms", kmsg.StringPtr("1")), entry(set, "retention.ms", kmsg.StringPtr("2"))), kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
		{"null value", resource(kmsg.ConfigResourceTypeTopic, "cfg", entry(set, "retention.ms", nil)), kerr.InvalidRequest.Code, "Null value not supported for : retention.ms"},
		{"append to non-list", resource(kmsg.ConfigResourceTypeTopic, "cfg", entry(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", kmsg.StringPtr("1"))), kerr.InvalidConfig.Code, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"read-only broker key", resource(kmsg.ConfigResourceTypeBroker, "1", entry(set, "log.dirs", kmsg.StringPtr("/x"))), kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(log.dirs)"},
		{"other broker", resource(kmsg.ConfigResourceTypeBroker, "2", entry(set, "log.retention.ms", kmsg.StringPtr("1"))), kerr.InvalidRequest.Code, "Unexpected broker id, expected 1, but received 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := incremental(tt.resource)[0]
			if got.ErrorCode != tt.want {
				t.Fatalf("%v (%s), want %v", kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage), kerr.ErrorForCode(tt.want))
			}
			if tt.message != "" && deref(got.ErrorMessage) != tt.message {
				t.Fatalf("message %q, want %q", deref(got.ErrorMessage), tt.message)
			}
		})
	}

	t.Run("duplicate resource", func(t *testing.T) {
		r := resource(kmsg.ConfigResourceTypeTopic, "cfg", entry(set, "retention.ms", kmsg.StringPtr("1")))
		for _, got := range incremental(r, r) {
			if got.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("%v", kerr.ErrorForCode(got.ErrorCode))
			}
		}
	})
}

func TestAdminBrokerConfigs(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"num.partitions": "3"})
	ctx := testContext(t)

	describe := func(names ...string) []kmsg.DescribeConfigsResponseResource {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = req.MaxVersion()
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		for _, n := range names {
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, n
			req.Resources = append(req.Resources, r)
		}
		return tb.direct(t, req).(*kmsg.DescribeConfigsResponse).Resources
	}
	find := func(r kmsg.DescribeConfigsResponseResource, key string) *kmsg.DescribeConfigsResponseResourceConfig {
		for i := range r.Configs {
			if r.Configs[i].Name == key {
				return &r.Configs[i]
			}
		}
		return nil
	}

	rs := describe("1", "2", "x", "")
	if rs[0].ErrorCode != 0 {
		t.Fatalf("broker 1: %v", kerr.ErrorForCode(rs[0].ErrorCode))
	}
	np := find(rs[0], "num.partitions")
	if np == nil || deref(np.Value) != "3" || np.Source != kmsg.ConfigSourceStaticBrokerConfig || !np.ReadOnly || np.Documentation == nil || np.ConfigType != kmsg.ConfigTypeInt {
		t.Fatalf("num.partitions = %+v", np)
	}
	if c := find(rs[0], "node.id"); c == nil || !c.ReadOnly {
		t.Fatalf("node.id = %+v", c)
	}
	if c := find(rs[0], "log.retention.ms"); c == nil || c.ReadOnly {
		t.Fatalf("log.retention.ms = %+v", c)
	}
	for _, c := range rs[0].Configs {
		if c.IsSensitive && c.Value != nil {
			t.Fatalf("sensitive %s has a value", c.Name)
		}
	}
	if rs[1].ErrorCode != kerr.InvalidRequest.Code || rs[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("other/illegal broker ids answered %v, %v", kerr.ErrorForCode(rs[1].ErrorCode), kerr.ErrorForCode(rs[2].ErrorCode))
	}
	if rs[3].ErrorCode != 0 || len(rs[3].Configs) != 0 {
		t.Fatalf("cluster default resource: %v %d configs", kerr.ErrorForCode(rs[3].ErrorCode), len(rs[3].Configs))
	}

	// A dynamic per-broker value and a cluster-wide default.
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kmsg.StringPtr("5000")}}
	if resps, err := tb.Admin.AlterBrokerConfigs(ctx, set, 1); err != nil || resps[0].Err != nil {
		t.Fatalf("alter broker 1: %v %+v", err, resps)
	}
	set = []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.cleaner.threads", Value: kmsg.StringPtr("2")}}
	if resps, err := tb.Admin.AlterBrokerConfigs(ctx, set); err != nil || resps[0].Err != nil {
		t.Fatalf("alter cluster default: %v %+v", err, resps)
	}
	rs = describe("1", "")
	if c := find(rs[0], "log.retention.ms"); c == nil || deref(c.Value) != "5000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("log.retention.ms after alter = %+v", c)
	}
	if c := find(rs[0], "log.cleaner.threads"); c == nil || deref(c.Value) != "2" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("log.cleaner.threads after alter = %+v", c)
	}
	if len(rs[1].Configs) != 1 || rs[1].Configs[0].Name != "log.cleaner.threads" || rs[1].Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster default resource lists %+v", rs[1].Configs)
	}

	// Topics inherit the dynamic broker value.
	tb.createTopic(t, "inherits", 1, nil)
	if c := topicConfig(t, tb, "inherits", "retention.ms"); c.MaybeValue() != "5000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("topic retention.ms = %q from %v", c.MaybeValue(), c.Source)
	}
}

func TestAdminDescribeConfigsTopicErrors(t *testing.T) {
	tb := startTestBroker(t, nil)
	rcs, err := tb.Admin.DescribeTopicConfigs(testContext(t), "missing", "bad/name")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]error{}
	for _, rc := range rcs {
		got[rc.Name] = rc.Err
	}
	if !errors.Is(got["missing"], kerr.UnknownTopicOrPartition) || !errors.Is(got["bad/name"], kerr.InvalidTopicException) {
		t.Fatalf("errors %v", got)
	}
}

func TestAdminConfigsOldVersions(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "old", 1, map[string]*string{"retention.ms": kmsg.StringPtr("1000")})

	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 0
	req.IncludeSynonyms = true // not in v0: must be ignored
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "old"
	r.ConfigNames = []string{"retention.ms", "segment.ms", "no.such.key"}
	req.Resources = []kmsg.DescribeConfigsRequestResource{r}
	resp := tb.direct(t, req).(*kmsg.DescribeConfigsResponse)
	configs := resp.Resources[0].Configs
	if len(configs) != 2 {
		t.Fatalf("named keys answered %+v", configs)
	}
	for _, c := range configs {
		if len(c.ConfigSynonyms) != 0 || c.Documentation != nil {
			t.Fatalf("v0 %s carries synonyms or docs", c.Name)
		}
		if wantDefault := c.Name == "segment.ms"; c.IsDefault != wantDefault {
			t.Fatalf("%s IsDefault=%v", c.Name, c.IsDefault)
		}
	}

	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 4
	create.Topics = []kmsg.CreateTopicsRequestTopic{createTopicReq("v4", -1, -1)}
	got := tb.direct(t, create).(*kmsg.CreateTopicsResponse).Topics[0]
	if got.ErrorCode != 0 || len(got.Configs) != 0 {
		t.Fatalf("v4 create: %v, %d configs", kerr.ErrorForCode(got.ErrorCode), len(got.Configs))
	}
}
