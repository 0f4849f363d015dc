package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
)

// alterGroupConfigs sends one IncrementalAlterConfigs for group and returns its code and message.
func alterGroupConfigs(t *testing.T, tb *testBroker, group string, validateOnly bool, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version, req.ValidateOnly = 1, validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeGroupConfig, group, cfgs
	req.Resources = append(req.Resources, r)
	resp := tb.direct(t, req).(*kmsg.IncrementalAlterConfigsResponse)
	if len(resp.Resources) != 1 {
		t.Fatalf("IncrementalAlterConfigs answered %d resources", len(resp.Resources))
	}
	msg := ""
	if resp.Resources[0].ErrorMessage != nil {
		msg = *resp.Resources[0].ErrorMessage
	}
	return resp.Resources[0].ErrorCode, msg
}

func setOp(key, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	return c
}

func deleteOp(key string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = key, kmsg.IncrementalAlterConfigOpDelete
	return c
}

// describeGroupConfigs returns group's described entries by name.
func describeGroupConfigs(t *testing.T, tb *testBroker, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, r)
	resp := tb.direct(t, req).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs of group %s: %+v", group, resp.Resources)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

func wantGroupConfig(t *testing.T, got map[string]kmsg.DescribeConfigsResponseResourceConfig, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	c, ok := got[key]
	if !ok {
		t.Fatalf("%s not described: %+v", key, got)
	}
	if c.Value == nil || *c.Value != value || c.Source != source {
		t.Fatalf("%s = %v from %v, want %q from %v", key, c.Value, c.Source, value, source)
	}
}

// TestGroupConfigsDescribeAlter: the GROUP config resource is described with the defaults,
// takes the keys sluice honours (validated against the broker's group.share.* bounds, with
// Kafka's codes), refuses the rest naming them, changes nothing under ValidateOnly, and
// reverts a key on DELETE. It was answered INVALID_REQUEST.
func TestGroupConfigsDescribeAlter(t *testing.T) {
	tb := startTestBroker(t, nil)
	got := describeGroupConfigs(t, tb, "g")
	wantGroupConfig(t, got, "share.auto.offset.reset", "latest", kmsg.ConfigSourceDefaultConfig)
	wantGroupConfig(t, got, "share.record.lock.duration.ms", "30000", kmsg.ConfigSourceDefaultConfig)
	wantGroupConfig(t, got, "share.isolation.level", "read_uncommitted", kmsg.ConfigSourceDefaultConfig)

	if code, msg := alterGroupConfigs(t, tb, "g", true, setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("validate only: %v %s", kerr.ErrorForCode(code), msg)
	}
	wantGroupConfig(t, describeGroupConfigs(t, tb, "g"), "share.auto.offset.reset", "latest", kmsg.ConfigSourceDefaultConfig)

	if code, msg := alterGroupConfigs(t, tb, "g", false, setOp("share.auto.offset.reset", "earliest"), setOp("share.record.lock.duration.ms", "20000")); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	got = describeGroupConfigs(t, tb, "g")
	wantGroupConfig(t, got, "share.auto.offset.reset", "earliest", kmsg.ConfigSourceGroupConfig)
	wantGroupConfig(t, got, "share.record.lock.duration.ms", "20000", kmsg.ConfigSourceGroupConfig)
	if m := tb.Ctrl.Image().GroupConfigs["g"]; m["share.auto.offset.reset"] != "earliest" {
		t.Fatalf("metadata image group configs: %+v", tb.Ctrl.Image().GroupConfigs)
	}
	wantGroupConfig(t, describeGroupConfigs(t, tb, "other"), "share.auto.offset.reset", "latest", kmsg.ConfigSourceDefaultConfig)

	for _, tc := range []struct {
		key, value, msgHas string
	}{
		{"no.such.key", "1", "Unknown group config name: no.such.key"},
		{"consumer.assignment.interval.ms", "1000", "consumer.assignment.interval.ms"},
		{"consumer.session.timeout.ms", "5000", "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"consumer.heartbeat.interval.ms", "0", "Value must be at least 1"},
		{"streams.num.standby.replicas", "3", "streams.num.standby.replicas must be less than or equal to 2"},
		{"streams.session.timeout.ms", "x", "Not a number of type INT"},
		{"share.renew.acknowledge.enable", "true", "share.renew.acknowledge.enable"},
		{"share.isolation.level", "READ_COMMITTED", "String must be one of: read_committed, read_uncommitted"},
		{"share.auto.offset.reset", "by_duration:PT1H", "by_duration"},
		{"share.auto.offset.reset", "sometimes", "Invalid value sometimes"},
		{"share.record.lock.duration.ms", "500", "at least 1000"},
		{"share.record.lock.duration.ms", "10000", "greater than or equal to group.share.min.record.lock.duration.ms"},
		{"share.record.lock.duration.ms", "70000", "less than or equal to group.share.max.record.lock.duration.ms"},
		{"share.record.lock.duration.ms", "x", "Invalid value x"},
		{"share.delivery.count.limit", "1", "Value must be at least 2"},
		{"share.delivery.count.limit", "20", "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"share.partition.max.record.locks", "50", "Value must be at least 100"},
		{"share.partition.max.record.locks", "5000", "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{"share.session.timeout.ms", "1000", "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"share.heartbeat.interval.ms", "20000", "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
	} {
		code, msg := alterGroupConfigs(t, tb, "g", false, setOp(tc.key, tc.value))
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, tc.msgHas) {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG naming %q", tc.key, tc.value, kerr.ErrorForCode(code), msg, tc.msgHas)
		}
	}
	if code, _ := alterGroupConfigs(t, tb, "", false, setOp("share.auto.offset.reset", "earliest")); code != kerr.InvalidRequest.Code {
		t.Errorf("empty group name: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	// A refused resource changed nothing.
	wantGroupConfig(t, describeGroupConfigs(t, tb, "g"), "share.record.lock.duration.ms", "20000", kmsg.ConfigSourceGroupConfig)

	if code, msg := alterGroupConfigs(t, tb, "g", false, deleteOp("share.auto.offset.reset")); code != 0 {
		t.Fatalf("delete: %v %s", kerr.ErrorForCode(code), msg)
	}
	wantGroupConfig(t, describeGroupConfigs(t, tb, "g"), "share.auto.offset.reset", "latest", kmsg.ConfigSourceDefaultConfig)

	// The legacy AlterConfigs replaces the group's whole config.
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	if resp := tb.direct(t, req).(*kmsg.AlterConfigsResponse); resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %+v", resp.Resources[0])
	}
	got = describeGroupConfigs(t, tb, "g")
	wantGroupConfig(t, got, "share.auto.offset.reset", "earliest", kmsg.ConfigSourceGroupConfig)
	wantGroupConfig(t, got, "share.record.lock.duration.ms", "30000", kmsg.ConfigSourceDefaultConfig)
}

// TestShareGroupAutoOffsetResetEarliest: a share group whose share.auto.offset.reset is
// earliest is delivered the records produced before its first fetch; the share partition
// started at the high watermark whatever the group config said.
func TestShareGroupAutoOffsetResetEarliest(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "early-cfg", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["early-cfg"].ID)
	tb.produce(t, "early-cfg", 0, 5)
	if code, msg := alterGroupConfigs(t, tb, "eg", false, setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	a := &shareClient{t: t, tb: tb, group: "eg", member: "a"}
	a.heartbeat(0, "early-cfg")
	got, _ := a.fetch(topicID, 10)
	wantRanges(t, "a", got, [3]int64{0, 4, 1})

	// Another group keeps the default: latest.
	b := &shareClient{t: t, tb: tb, group: "lg", member: "b"}
	b.heartbeat(0, "early-cfg")
	got, _ = b.fetch(topicID, 10)
	wantRanges(t, "b", got)
}

// TestShareGroupRecordLockDurationConfig: a group's share.record.lock.duration.ms (1 s) times
// out a member's locks, though the broker's default (60 s) would hold them past the test's
// wait; the broker's value was used for every group.
func TestShareGroupRecordLockDurationConfig(t *testing.T) {
	tb := startTestBroker(t, map[string]string{
		"group.share.record.lock.duration.ms":     "60000",
		"group.share.min.record.lock.duration.ms": "1000",
	})
	tb.createTopic(t, "glocks", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["glocks"].ID)
	if code, msg := alterGroupConfigs(t, tb, "lg", false, setOp("share.record.lock.duration.ms", "1000")); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	a := &shareClient{t: t, tb: tb, group: "lg", member: "a"}
	b := &shareClient{t: t, tb: tb, group: "lg", member: "b"}
	a.heartbeat(0, "glocks")
	b.heartbeat(0, "glocks")
	a.fetch(topicID, 10) // starts the share partition at the high watermark, 0
	tb.produce(t, "glocks", 0, 3)
	got, _ := a.fetch(topicID, 10)
	wantRanges(t, "a", got, [3]int64{0, 2, 1})
	b.fetch(topicID, 10) // opens b's session; nothing to acquire
	waiting := tb.serveDirect(testContext(t), t, b.fetchReq(topicID, 10, 25_000))
	select {
	case resp := <-waiting:
		got, _ := b.fetchResult(resp.(*kmsg.ShareFetchResponse))
		wantRanges(t, "b after a's 1 s locks timed out", got, [3]int64{0, 2, 2})
	case <-time.After(testWait):
		t.Fatal("the waiting share fetch never answered: the group's lock duration was not used")
	}
}

// TestShareGroupIntConfigs: a share group's share.delivery.count.limit (2, the broker's is 5)
// archives a record released twice, its share.partition.max.record.locks bounds what one fetch
// acquires, and its share.heartbeat.interval.ms is the interval its members are told; another
// group keeps the broker's values.
func TestShareGroupIntConfigs(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"group.share.min.partition.max.record.locks": "100"})
	tb.createTopic(t, "gint", 1, nil)
	topicID := [16]byte(tb.Ctrl.Image().Topics["gint"].ID)
	if code, msg := alterGroupConfigs(t, tb, "limited", false, setOp("share.delivery.count.limit", "2"),
		setOp("share.partition.max.record.locks", "100"), setOp("share.heartbeat.interval.ms", "6000"),
		setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterGroupConfigs(t, tb, "plain", false, setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	// A session timeout not above the heartbeat interval is refused, as Kafka refuses it.
	if code, msg := alterGroupConfigs(t, tb, "limited", false, setOp("share.session.timeout.ms", "45000"),
		setOp("share.heartbeat.interval.ms", "15000")); code != 0 {
		t.Fatalf("session 45 s above heartbeat 15 s: %v %s", kerr.ErrorForCode(code), msg)
	}
	tb.produce(t, "gint", 0, 150)
	for _, group := range []string{"limited", "plain"} {
		a := &shareClient{t: t, tb: tb, group: group, member: "a"}
		hb := a.heartbeat(0, "gint")
		wantInterval := int32(5000)
		if group == "limited" {
			wantInterval = 15000
		}
		if hb.ErrorCode != 0 || hb.HeartbeatIntervalMillis != wantInterval {
			t.Fatalf("%s: heartbeat %v, interval %d ms, want %d", group, kerr.ErrorForCode(hb.ErrorCode), hb.HeartbeatIntervalMillis, wantInterval)
		}
		// One fetch acquires at most the group's record lock limit.
		got, _ := a.fetch(topicID, 500)
		wantLast := int64(149)
		if group == "limited" {
			wantLast = 99
		}
		wantRanges(t, group+": first fetch", got, [3]int64{0, wantLast, 1})
		// Offset 0 released twice: archived after its second delivery with limit 2, offered a
		// third time with the broker's 5.
		if top, code := a.ack(topicID, a.epoch, ackRange{0, 0, 2}, ackRange{1, wantLast, 1}); top != 0 || code != 0 {
			t.Fatalf("%s: release 0, accept the rest: %v/%v", group, kerr.ErrorForCode(top), kerr.ErrorForCode(code))
		}
		got, _ = a.fetch(topicID, 1)
		wantRanges(t, group+": offset 0 again", got, [3]int64{0, 0, 2})
		if top, code := a.ack(topicID, a.epoch, ackRange{0, 0, 2}); top != 0 || code != 0 {
			t.Fatalf("%s: release 0 again: %v/%v", group, kerr.ErrorForCode(top), kerr.ErrorForCode(code))
		}
		got, _ = a.fetch(topicID, 1)
		if group == "limited" {
			if len(got) > 0 && got[0].FirstOffset == 0 {
				t.Fatalf("limited: offset 0 delivered a third time with share.delivery.count.limit=2: %v", ranges(got))
			}
		} else {
			wantRanges(t, "plain: offset 0 a third time", got, [3]int64{0, 0, 3})
		}
	}
}

// TestAuthorizationGroupConfigs: describing a group's configs needs DESCRIBE_CONFIGS on the
// group and altering them ALTER_CONFIGS on it, else GROUP_AUTHORIZATION_FAILED, as in Kafka.
func TestAuthorizationGroupConfigs(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	ctx := testContext(t)
	addACLs := func(acls ...authz.ACL) {
		t.Helper()
		res, err := tb.Ctrl.CreateACLs(ctx, acls)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("creating ACLs: %v %s", r.Err, r.Message)
			}
		}
		tb.Broker.waitForImage(ctx, tb.Ctrl.Image().Offset)
	}
	describeCode := func() int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
		req.Resources = append(req.Resources, r)
		return tb.direct(t, req).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
	}
	if code, _ := alterGroupConfigs(t, tb, "g", false, setOp("share.auto.offset.reset", "earliest")); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter without ALTER_CONFIGS: %v", kerr.ErrorForCode(code))
	}
	if code := describeCode(); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe without DESCRIBE_CONFIGS: %v", kerr.ErrorForCode(code))
	}
	addACLs(anonACL(authz.ResourceGroup, "g", authz.OpAlterConfigs), anonACL(authz.ResourceGroup, "g", authz.OpDescribeConfigs))
	if code, msg := alterGroupConfigs(t, tb, "g", false, setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("alter with ALTER_CONFIGS: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code := describeCode(); code != 0 {
		t.Fatalf("describe with DESCRIBE_CONFIGS: %v", kerr.ErrorForCode(code))
	}
}
