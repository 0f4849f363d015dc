package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAdminCreateDescribeDeleteTopic(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)

	retention := "3600000"
	resp, err := tb.Admin.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, "orders")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v %s", err, resp.Err, resp.ErrMessage)
	}
	if resp.ID == [16]byte{} || resp.NumPartitions != 3 || resp.ReplicationFactor != 1 {
		t.Fatalf("create answered id %v, %d partitions, rf %d", resp.ID, resp.NumPartitions, resp.ReplicationFactor)
	}
	if c := resp.Configs["retention.ms"]; c.Value == nil || *c.Value != retention || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("created retention.ms = %+v", c)
	}
	if c := resp.Configs["cleanup.policy"]; c.Value == nil || *c.Value != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("created cleanup.policy = %+v", c)
	}

	// The topic is usable as soon as CreateTopics answers.
	tb.produce(t, "orders", 2, 3)

	details, err := tb.Admin.ListTopics(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if d := details["orders"]; d.Err != nil || len(d.Partitions) != 3 || d.ID != resp.ID {
		t.Fatalf("metadata: %+v", d)
	}

	// kadm reports a per-topic error both in the response and as the call's error.
	again, _ := tb.Admin.CreateTopic(ctx, 1, 1, nil, "orders")
	if !errors.Is(again.Err, kerr.TopicAlreadyExists) || again.ErrMessage != "Topic 'orders' already exists." {
		t.Fatalf("second create: %v %q", again.Err, again.ErrMessage)
	}

	del, err := tb.Admin.DeleteTopic(ctx, "orders")
	if err != nil || del.Err != nil {
		t.Fatalf("delete: %v %v", err, del.Err)
	}
	if tb.Broker.partition("orders", 0) != nil {
		t.Fatal("partition still hosted after DeleteTopics answered")
	}
	del, _ = tb.Admin.DeleteTopic(ctx, "orders")
	if !errors.Is(del.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("second delete: %v", del.Err)
	}
	// The name is free again at once.
	tb.createTopic(t, "orders", 1, nil)
}

func TestAdminCreateTopicsErrors(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"num.partitions": "4"})
	ctx := testContext(t)

	bad := "not-a-number"
	tests := []struct {
		name       string
		topic      kmsg.CreateTopicsRequestTopic
		wantCode   int16
		partitions int32
	}{
		{name: "defaults", topic: createTopicReq("defaults", -1, -1), partitions: 4},
		{name: "metadata topic", topic: createTopicReq("__cluster_metadata", 1, 1), wantCode: kerr.TopicAuthorizationFailed.Code},
		{name: "illegal name", topic: createTopicReq("bad/name", 1, 1), wantCode: kerr.InvalidTopicException.Code},
		{name: "zero partitions", topic: createTopicReq("zero", 0, 1), wantCode: kerr.InvalidPartitions.Code},
		{name: "zero replication", topic: createTopicReq("zerorf", 1, 0), wantCode: kerr.InvalidReplicationFactor.Code},
		{name: "too many replicas", topic: createTopicReq("rf3", 1, 3), wantCode: kerr.InvalidReplicationFactor.Code},
		{name: "bad config", topic: withConfig(createTopicReq("badcfg", 1, 1), "retention.ms", &bad), wantCode: kerr.InvalidConfig.Code},
		{name: "unknown config", topic: withConfig(createTopicReq("unkcfg", 1, 1), "no.such.key", &bad), wantCode: kerr.InvalidConfig.Code},
		{name: "assignment with count", topic: withAssignment(createTopicReq("assign-count", 2, -1), 0, 1), wantCode: kerr.InvalidRequest.Code},
		{name: "manual assignment", topic: withAssignment(withAssignment(createTopicReq("assigned", -1, -1), 0, 1), 1, 1), partitions: 2},
		{name: "assignment to unknown broker", topic: withAssignment(createTopicReq("assign-bad", -1, -1), 0, 7), wantCode: kerr.InvalidReplicaAssignment.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis = 10000
			req.Topics = []kmsg.CreateTopicsRequestTopic{tt.topic}
			resp, err := req.RequestWith(ctx, tb.Client)
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Topics[0]
			if got.ErrorCode != tt.wantCode {
				t.Fatalf("code %v (%v), want %v", kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage), kerr.ErrorForCode(tt.wantCode))
			}
			if tt.wantCode != 0 {
				if got.ErrorMessage == nil || *got.ErrorMessage == "" {
					t.Fatal("error without a message")
				}
				if got.NumPartitions != -1 || got.ReplicationFactor != -1 || len(got.Configs) != 0 {
					t.Fatalf("failed topic answered %d/%d/%d configs", got.NumPartitions, got.ReplicationFactor, len(got.Configs))
				}
				return
			}
			if got.NumPartitions != tt.partitions || got.ReplicationFactor != 1 || got.TopicID == [16]byte{} {
				t.Fatalf("answered %d partitions rf %d id %v", got.NumPartitions, got.ReplicationFactor, got.TopicID)
			}
		})
	}

	t.Run("duplicate names", func(t *testing.T) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Topics = []kmsg.CreateTopicsRequestTopic{createTopicReq("dup", 1, 1), createTopicReq("dup", 1, 1)}
		resp, err := req.RequestWith(ctx, tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range resp.Topics {
			if got.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("duplicate answered %v", kerr.ErrorForCode(got.ErrorCode))
			}
		}
		if tb.Ctrl.Image().Topics["dup"] != nil {
			t.Fatal("duplicate topic created")
		}
	})

	t.Run("validate only", func(t *testing.T) {
		resps, err := tb.Admin.ValidateCreateTopics(ctx, 2, 1, nil, "checked")
		if err != nil {
			t.Fatal(err)
		}
		if r := resps["checked"]; r.Err != nil || r.NumPartitions != 2 {
			t.Fatalf("validate: %+v", r)
		}
		if tb.Ctrl.Image().Topics["checked"] != nil {
			t.Fatal("validate-only created the topic")
		}
	})
}

func createTopicReq(name string, partitions int32, rf int16) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	return t
}

func withConfig(t kmsg.CreateTopicsRequestTopic, key string, value *string) kmsg.CreateTopicsRequestTopic {
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = key, value
	t.Configs = append(t.Configs, c)
	return t
}

func withAssignment(t kmsg.CreateTopicsRequestTopic, partition int32, replicas ...int32) kmsg.CreateTopicsRequestTopic {
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = partition, replicas
	t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	return t
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestAdminDeleteTopicsByIDAndErrors(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)
	tb.createTopic(t, "by-id", 1, nil)
	tb.createTopic(t, "by-name", 1, nil)
	id := tb.Ctrl.Image().Topics["by-id"].ID

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = id
	both := kmsg.NewDeleteTopicsRequestTopic()
	both.Topic, both.TopicID = kmsg.StringPtr("by-name"), id
	neither := kmsg.NewDeleteTopicsRequestTopic()
	unknownID := kmsg.NewDeleteTopicsRequestTopic()
	unknownID.TopicID = [16]byte{1, 2, 3}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID, both, neither, unknownID}
	resp, err := req.RequestWith(ctx, tb.Client)
	if err != nil {
		t.Fatal(err)
	}
	want := []int16{0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicID.Code}
	for i, got := range resp.Topics {
		if got.ErrorCode != want[i] {
			t.Errorf("topic %d: %v (%s), want %v", i, kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage), kerr.ErrorForCode(want[i]))
		}
	}
	if got := resp.Topics[0]; got.Topic == nil || *got.Topic != "by-id" {
		t.Errorf("deletion by ID answered name %v", deref(got.Topic))
	}
	im := tb.Ctrl.Image()
	if im.Topics["by-id"] != nil || im.Topics["by-name"] == nil {
		t.Fatal("wrong topics deleted")
	}
}

func TestAdminDeleteTopicsDisabled(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"delete.topic.enable": "false"})
	ctx := testContext(t)
	tb.createTopic(t, "kept", 1, nil)
	// kgo always sends the highest version both sides support, so older versions are served
	// to the handler directly.
	for _, version := range []int16{2, 6} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = version
		req.TopicNames = []string{"kept"}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("kept")
		req.Topics = []kmsg.DeleteTopicsRequestTopic{rt}
		kresp, err := tb.Broker.handleDeleteTopics(ctx, nil, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.DeleteTopicsResponse)
		want := kerr.TopicDeletionDisabled.Code
		if version < 3 {
			want = kerr.InvalidRequest.Code
		}
		if got := resp.Topics[0].ErrorCode; got != want {
			t.Fatalf("v%d: %v, want %v", version, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
	if tb.Ctrl.Image().Topics["kept"] == nil {
		t.Fatal("topic deleted although deletion is disabled")
	}
}

func TestAdminCreatePartitions(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)
	tb.createTopic(t, "grow", 1, nil)

	resps, err := tb.Admin.ValidateCreatePartitions(ctx, 2, "grow")
	if err != nil || resps["grow"].Err != nil {
		t.Fatalf("validate: %v %v", err, resps["grow"].Err)
	}
	if n := len(tb.Ctrl.Image().Topics["grow"].Partitions); n != 1 {
		t.Fatalf("validate-only grew the topic to %d", n)
	}

	resps, err = tb.Admin.UpdatePartitions(ctx, 3, "grow")
	if err != nil || resps["grow"].Err != nil {
		t.Fatalf("grow: %v %v", err, resps["grow"].Err)
	}
	// The new partitions are hosted and writable at once.
	tb.produce(t, "grow", 2, 1)

	resps, _ = tb.Admin.UpdatePartitions(ctx, 2, "grow")
	if !errors.Is(resps["grow"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrink: %v", resps["grow"].Err)
	}

	req := kmsg.NewPtrCreatePartitionsRequest()
	for range 2 {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "grow", 5
		req.Topics = append(req.Topics, rt)
	}
	missing := kmsg.NewCreatePartitionsRequestTopic()
	missing.Topic, missing.Count = "missing", 2
	req.Topics = append(req.Topics, missing)
	resp, err := req.RequestWith(ctx, tb.Client)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, rt := range resp.Topics {
		got[rt.Topic] = rt.ErrorCode
	}
	if len(resp.Topics) != 2 || got["grow"] != kerr.InvalidRequest.Code || got["missing"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("answers %v", got)
	}
}

func TestAdminDescribeTopicPartitionsPages(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)
	tb.createTopic(t, "a", 3, nil)
	tb.createTopic(t, "b", 2, nil)

	type seen struct {
		topic     string
		partition int32
	}
	var all []seen
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		resp, err := req.RequestWith(ctx, tb.Client)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("topic %s: %v", deref(rt.Topic), kerr.ErrorForCode(rt.ErrorCode))
			}
			for _, p := range rt.Partitions {
				all = append(all, seen{*rt.Topic, p.Partition})
				n++
				if p.LeaderID != 1 || len(p.ISR) != 1 || p.EligibleLeaderReplicas == nil {
					t.Fatalf("partition %+v", p)
				}
			}
		}
		if n > 2 {
			t.Fatalf("page of %d partitions with limit 2", n)
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []seen{{"a", 0}, {"a", 1}, {"a", 2}, {"b", 0}, {"b", 1}}
	if len(all) != len(want) {
		t.Fatalf("saw %v, want %v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("saw %v, want %v", all, want)
		}
	}

	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "nope"
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{rt}
	resp, err := req.RequestWith(ctx, tb.Client)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic answered %+v", resp.Topics)
	}
}
