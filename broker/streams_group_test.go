package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// streamsVersions lets the franz-go client send the streams group APIs, which its default
// version table leaves out.
func streamsVersions() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(88, 1)
	v.SetMaxKeyVersion(89, 1)
	return kgo.MaxVersions(v)
}

// streamsJoin sends a first StreamsGroupHeartbeat for group with a one-subtopology topology
// that reads topic and keeps a changelog.
func streamsJoin(t *testing.T, tb *testBroker, group, topic string) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "m1", 30000
	process := "p1"
	req.ProcessID = &process
	topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	st.SubtopologyID = "0"
	st.SourceTopics = []string{topic}
	cl := kmsg.NewTopicInfo()
	cl.Topic = group + "-store-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	st.StateChangelogTopics = []kmsg.TopicInfo{cl}
	topo.Subtopologies = append(topo.Subtopologies, st)
	req.Topology = &topo
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	// franz-go does not route the streams APIs to the coordinator itself; on one node the seed
	// broker is it.
	raw, err := tb.Client.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*kmsg.StreamsGroupHeartbeatResponse)
}

// A streams group's first heartbeat names the missing changelog and the broker creates it with
// the task count's partitions and the topology's configs.
func TestStreamsGroupHeartbeatCreatesInternalTopics(t *testing.T) {
	// No initial rebalance delay: the first heartbeat's only status is MISSING_INTERNAL_TOPICS.
	tb := startTestBroker(t, map[string]string{"group.streams.initial.rebalance.delay.ms": "0"}, streamsVersions())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tb.Admin.CreateTopic(ctx, 4, 1, nil, "src"); err != nil {
		t.Fatal(err)
	}
	// FindCoordinator creates __consumer_offsets; its shards then load.
	if err := tb.Admin.FindGroupCoordinators(ctx, "app").Error(); err != nil {
		t.Fatal(err)
	}
	var resp *kmsg.StreamsGroupHeartbeatResponse
	for {
		resp = streamsJoin(t, tb, "app", "src")
		if resp.ErrorCode != kerr.NotCoordinator.Code && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the coordinator never loaded: %s", kerr.ErrorForCode(resp.ErrorCode))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if resp.ErrorCode != 0 || len(resp.Status) != 1 || resp.Status[0].StatusCode != 3 {
		t.Fatalf("first heartbeat: %s %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Status)
	}
	details, err := tb.Admin.ListTopics(ctx, "app-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if d := details["app-store-changelog"]; d.Err != nil || len(d.Partitions) != 4 {
		t.Fatalf("changelog after the heartbeat: %+v", d)
	}
	rcs, err := tb.Admin.DescribeTopicConfigs(ctx, "app-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rcs.On("app-store-changelog", nil); err != nil || c.Configs[0].Key == "" {
		t.Fatalf("describe configs: %v", err)
	} else {
		policy := ""
		for _, kv := range c.Configs {
			if kv.Key == "cleanup.policy" && kv.Value != nil {
				policy = *kv.Value
			}
		}
		if policy != "compact" {
			t.Fatalf("changelog cleanup.policy=%q", policy)
		}
	}
}

// Without "streams" in group.coordinator.rebalance.protocols the API answers
// UNSUPPORTED_VERSION, as Kafka's does.
func TestStreamsGroupHeartbeatProtocolOff(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"group.coordinator.rebalance.protocols": "classic,consumer"}, streamsVersions())
	if resp := streamsJoin(t, tb, "app", "src"); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat with streams off: %s", kerr.ErrorForCode(resp.ErrorCode))
	}
}
