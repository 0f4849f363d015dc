package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupConfigsConsumerStreams: consumer.* and streams.* group keys are described with the
// broker's defaults, taken within the broker's bounds (a session timeout not above the
// heartbeat interval refused, as Kafka 4.4 refuses it), and a KIP-848 member of the group is
// told the group's heartbeat interval. They were refused INVALID_CONFIG.
func TestGroupConfigsConsumerStreams(t *testing.T) {
	tb := startTestBroker(t, nil)
	got := describeGroupConfigs(t, tb, "cg")
	wantGroupConfig(t, got, "consumer.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig)
	wantGroupConfig(t, got, "consumer.heartbeat.interval.ms", "5000", kmsg.ConfigSourceDefaultConfig)
	wantGroupConfig(t, got, "streams.num.standby.replicas", "0", kmsg.ConfigSourceDefaultConfig)
	wantGroupConfig(t, got, "streams.initial.rebalance.delay.ms", "3000", kmsg.ConfigSourceDefaultConfig)

	if code, msg := alterGroupConfigs(t, tb, "cg", false, setOp("consumer.heartbeat.interval.ms", "50000")); code != kerr.InvalidConfig.Code ||
		!strings.Contains(msg, "must be in the range 5000 to 15000 inclusive") {
		t.Fatalf("heartbeat out of range: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterGroupConfigs(t, tb, "sg", false, setOp("streams.session.timeout.ms", "45000"), setOp("streams.heartbeat.interval.ms", "5000")); code != 0 {
		t.Fatalf("streams keys: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterGroupConfigs(t, tb, "cg", false, setOp("consumer.heartbeat.interval.ms", "7000")); code != 0 {
		t.Fatalf("heartbeat interval: %v %q", kerr.ErrorForCode(code), msg)
	}
	wantGroupConfig(t, describeGroupConfigs(t, tb, "cg"), "consumer.heartbeat.interval.ms", "7000", kmsg.ConfigSourceGroupConfig)

	ctx := testContext(t)
	if err := tb.Admin.FindGroupCoordinators(ctx, "cg").Error(); err != nil {
		t.Fatal(err)
	}
	for {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "cg", "m1", 30000
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		raw, err := tb.Client.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := raw.(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode == 0 {
			if resp.HeartbeatIntervalMillis != 7000 {
				t.Fatalf("heartbeat interval %d, want the group's 7000", resp.HeartbeatIntervalMillis)
			}
			break
		}
		if resp.ErrorCode != kerr.NotCoordinator.Code && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("joining cg: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		select {
		case <-ctx.Done():
			t.Fatal("cg never loaded")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestGroupConfigsSessionExceedsHeartbeat: with bounds that overlap, a session timeout not
// above the heartbeat interval (the broker's default for the one not set) is refused.
func TestGroupConfigsSessionExceedsHeartbeat(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "10000"})
	if code, msg := alterGroupConfigs(t, tb, "cg", false, setOp("consumer.session.timeout.ms", "5000")); code != kerr.InvalidConfig.Code ||
		msg != "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms" {
		t.Fatalf("session 5000 with the broker's 5000 heartbeat: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterGroupConfigs(t, tb, "cg", false, setOp("consumer.session.timeout.ms", "6000")); code != 0 {
		t.Fatalf("session 6000: %v %q", kerr.ErrorForCode(code), msg)
	}
}
