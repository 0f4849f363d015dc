package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func TestApplyListOp(t *testing.T) {
	tests := []struct {
		base, values string
		appendValues bool
		want         string
	}{
		{"delete", "compact", true, "delete,compact"},
		{"delete", "delete", true, "delete"},
		{"", "a,b", true, "a,b"},
		{"a,,b", "c", true, "a,b,c"},
		{"delete,compact", "delete", false, "compact"},
		{"delete", "delete", false, ""},
		{"a,b", "x", false, "a,b"},
		{"a,b,a", "a", false, "b,a"}, // Kafka's List.remove drops the first occurrence
	}
	for _, tt := range tests {
		if got := applyListOp(tt.base, tt.values, tt.appendValues); got != tt.want {
			t.Errorf("applyListOp(%q, %q, append=%v) = %q, want %q", tt.base, tt.values, tt.appendValues, got, tt.want)
		}
	}
}

func TestIncrementalOps(t *testing.T) {
	entry := func(op kmsg.IncrementalAlterConfigOp, key string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Op: op, Name: key, Value: value}
	}
	v := kmsg.StringPtr
	tests := []struct {
		name    string
		typ     int8
		current map[string]string
		entries []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want    string // key=value or key=<delete>, joined by ";"
		code    int16
	}{
		{name: "set and delete", typ: resourceTopic, entries: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			entry(kmsg.IncrementalAlterConfigOpSet, "retention.ms", v("5")), entry(kmsg.IncrementalAlterConfigOpDelete, "segment.ms", nil)},
			want: "retention.ms=5;segment.ms=<delete>"},
		{name: "append to default", typ: resourceTopic, entries: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			entry(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", v("compact"))},
			want: "cleanup.policy=delete,compact"},
		{name: "subtract from override", typ: resourceTopic, current: map[string]string{"cleanup.policy": "compact,delete"},
			entries: []kmsg.IncrementalAlterConfigsRequestResourceConfig{entry(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", v("compact"))},
			want:    "cleanup.policy=delete"},
		{name: "append to non-list", typ: resourceTopic, entries: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			entry(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", v("1"))}, code: kerr.InvalidConfig.Code},
		{name: "append to unknown key", typ: resourceTopic, entries: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			entry(kmsg.IncrementalAlterConfigOpAppend, "no.such", v("1"))}, code: kerr.InvalidConfig.Code},
		{name: "unknown op", typ: resourceTopic, entries: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			entry(9, "retention.ms", v("1"))}, code: kerr.InvalidRequest.Code},
		{name: "broker list key", typ: resourceBroker, entries: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			entry(kmsg.IncrementalAlterConfigOpAppend, "log.cleanup.policy", v("compact"))},
			want: "log.cleanup.policy=delete,compact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, code, msg := incrementalOps(tt.typ, tt.current, tt.entries)
			if code != tt.code {
				t.Fatalf("code %v (%s), want %v", kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tt.code))
			}
			if code != 0 {
				if msg == "" {
					t.Fatal("error without a message")
				}
				return
			}
			var parts []string
			for _, op := range ops {
				value := "<delete>"
				if op.Value != nil {
					value = *op.Value
				}
				parts = append(parts, op.Key+"="+value)
			}
			if got := strings.Join(parts, ";"); got != tt.want {
				t.Fatalf("ops %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBrokerConfigProblem(t *testing.T) {
	v := kmsg.StringPtr
	tests := []struct {
		name string
		ops  []controller.ConfigOp
		code int16
		msg  string
	}{
		{"dynamic key", []controller.ConfigOp{{Key: "log.retention.ms", Value: v("1000")}}, 0, ""},
		{"delete read-only", []controller.ConfigOp{{Key: "node.id"}}, 0, ""},
		{"delete unknown", []controller.ConfigOp{{Key: "no.such"}}, 0, ""},
		{"read-only", []controller.ConfigOp{{Key: "node.id", Value: v("2")}, {Key: "log.dirs", Value: v("/x")}}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(node.id, log.dirs)"},
		{"bad value", []controller.ConfigOp{{Key: "log.retention.ms", Value: v("soon")}}, kerr.InvalidRequest.Code, "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"},
		{"unknown", []controller.ConfigOp{{Key: "no.such", Value: v("1")}}, kerr.InvalidConfig.Code, "Unknown broker config name: no.such"},
	}
	for _, tt := range tests {
		code, msg := brokerConfigProblem(tt.ops)
		if code != tt.code || msg != tt.msg {
			t.Errorf("%s: %d %q, want %d %q", tt.name, code, msg, tt.code, tt.msg)
		}
	}
}

func TestTopicNameProblem(t *testing.T) {
	long := strings.Repeat("a", 250)
	for name, legal := range map[string]bool{
		"orders": true, "a.b_c-D9": true, strings.Repeat("a", 249): true,
		"": false, ".": false, "..": false, long: false, "a/b": false, "a b": false, "ü": false,
	} {
		if got := topicNameProblem(name) == ""; got != legal {
			t.Errorf("topicNameProblem(%q) legal=%v, want %v", name, got, legal)
		}
	}
}

func TestItemError(t *testing.T) {
	if code, msg := itemError(nil, "ignored"); code != 0 || msg != nil {
		t.Fatalf("nil error gave %d %v", code, msg)
	}
	if code, msg := itemError(kerr.TopicAlreadyExists, "Topic 'x' already exists."); code != kerr.TopicAlreadyExists.Code || *msg != "Topic 'x' already exists." {
		t.Fatalf("got %d %q", code, *msg)
	}
	if code, msg := itemError(kerr.InvalidPartitions, ""); code != kerr.InvalidPartitions.Code || *msg != kerr.InvalidPartitions.Description {
		t.Fatalf("message-less error gave %d %q", code, *msg)
	}
	if code, _ := itemError(fmt.Errorf("wrapped: %w", kerr.InvalidConfig), "m"); code != kerr.InvalidConfig.Code {
		t.Fatalf("wrapped error gave %d", code)
	}
	if code, _ := itemError(errors.New("disk on fire"), ""); code != kerr.UnknownServerError.Code {
		t.Fatalf("plain error gave %d", code)
	}
	if code, _ := controllerCallError(context.DeadlineExceeded); code != kerr.RequestTimedOut.Code {
		t.Fatalf("deadline gave %d", code)
	}
	if code, _ := controllerCallError(controller.ErrClosed); code != kerr.NotController.Code {
		t.Fatalf("closed controller gave %d", code)
	}
}

func TestDescribeTopicPartitionsPage(t *testing.T) {
	topic := func(name string, partitions int) *controller.TopicInfo {
		ti := &controller.TopicInfo{Name: name}
		for p := range partitions {
			ti.Partitions = append(ti.Partitions, controller.PartitionInfo{Partition: int32(p), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
		}
		return ti
	}
	im := &controller.Image{Topics: map[string]*controller.TopicInfo{"a": topic("a", 2), "b": topic("b", 3), "c": topic("c", 1)}}
	render := func(ts []kmsg.DescribeTopicPartitionsResponseTopic, next *kmsg.DescribeTopicPartitionsResponseNextCursor) string {
		var parts []string
		for _, t := range ts {
			s := *t.Topic + ":"
			if t.ErrorCode != 0 {
				s += kerr.ErrorForCode(t.ErrorCode).Error()
			}
			for _, p := range t.Partitions {
				s += fmt.Sprint(p.Partition)
			}
			parts = append(parts, s)
		}
		out := strings.Join(parts, " ")
		if next != nil {
			out += fmt.Sprintf(" next=%s/%d", next.Topic, next.Partition)
		}
		return out
	}
	cursor := func(topic string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	tests := []struct {
		names  []string
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		limit  int32
		want   string
	}{
		{[]string{"a", "b", "c"}, nil, 10, "a:01 b:012 c:0"},
		{[]string{"a", "b", "c"}, nil, 2, "a:01 next=b/0"},
		{[]string{"a", "b", "c"}, nil, 3, "a:01 b:0 next=b/1"},
		{[]string{"a", "b", "c"}, cursor("b", 1), 2, "b:12 next=c/0"},
		{[]string{"a", "b", "c"}, cursor("b", 1), 3, "b:12 c:0"},
		{[]string{"a", "c"}, nil, 2, "a:01 next=c/0"},
		{[]string{"a", "zz"}, nil, 5, "a:01 zz:" + kerr.UnknownTopicOrPartition.Error()},
		{[]string{"c"}, nil, 1, "c:0"},
	}
	for _, tt := range tests {
		got := render(describeTopicPartitionsPage(im, tt.names, tt.cursor, tt.limit))
		if got != tt.want {
			t.Errorf("names %v cursor %+v limit %d:\n got %s\nwant %s", tt.names, tt.cursor, tt.limit, got, tt.want)
		}
	}
}

func TestDuplicateResources(t *testing.T) {
	rs := []alterResource{
		{resourceType: resourceTopic, name: "a"},
		{resourceType: resourceBroker, name: "a"},
		{resourceType: resourceTopic, name: "a"},
	}
	duplicateResources(rs)
	if rs[0].code != kerr.InvalidRequest.Code || rs[1].code != 0 || rs[2].code != kerr.InvalidRequest.Code {
		t.Fatalf("codes %d %d %d", rs[0].code, rs[1].code, rs[2].code)
	}
	if !duplicateKeys([]string{"x", "y", "x"}) || duplicateKeys([]string{"x", "y"}) {
		t.Fatal("duplicateKeys")
	}
}
