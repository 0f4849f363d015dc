package compattests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupsFranzStatic: classic static membership (group.instance.id, KIP-345). A static
// member that restarts within its session gets back exactly the partitions it had, the other
// member keeps its own without any revocation, and records produced meanwhile are all
// consumed. (The generation may still advance: a restarted static leader that franz-go finds
// with a stale plan rejoins on purpose, see KIP-814's SkipAssignment handling in kgo.)
//
// There is no KIP-848 case here because franz-go v1.22.3 sends its static leave (member epoch
// -2) without the InstanceId that Kafka requires for it ("InstanceId can't be null."), so the
// leave is refused and the instance stays held until its session times out, on Kafka as on
// sluice.
func TestGroupsFranzStatic(t *testing.T) {
	b, cl, adm := startGroupBroker(t)
	for _, r := range []struct {
		name       string
		balancer   kgo.GroupBalancer
		serverSide bool
	}{
		{"Classic", kgo.CooperativeStickyBalancer(), false},
	} {
		t.Run(r.name, func(t *testing.T) {
			topic, group := "groups-static-"+strings.ToLower(r.name), "static-"+strings.ToLower(r.name)
			groupsCreateTopic(t, adm, topic, churnPartitions)
			cfg := churnConfig{b: b, group: group, topic: topic, balancer: r.balancer, serverSide: r.serverSide}
			own, sink := newOwnership(), newConsumedSink()
			prod := startChurnProducer(cl, topic, group)
			stopped := false
			defer func() {
				if !stopped {
					prod.stop(t)
				}
			}()
			// Classic static members keep their session across the restart: 10s is ample.
			session := kgo.SessionTimeout(10 * time.Second)
			s1 := startChurnMember(t, cfg, "s1", own, sink, kgo.InstanceID("instance-1"), session)
			s2 := startChurnMember(t, cfg, "s2", own, sink, kgo.InstanceID("instance-2"), session)
			waitFor(t, churnSettle, "s1 and s2 settle", func() error { return own.settledOn([]string{"s1", "s2"}, churnPartitions) })
			before := own.snapshot()
			mark := len(own.history())

			// Restart s1 under the same instance id: Close sends no LeaveGroup for a classic
			// static member.
			s1.close(t)
			s1b := startChurnMember(t, cfg, "s1b", own, sink, kgo.InstanceID("instance-1"), session)
			waitFor(t, churnSettle, "the restarted static member gets its partitions back", func() error {
				snap := own.snapshot()
				if !slices.Equal(snap["s1b"], before["s1"]) || !slices.Equal(snap["s2"], before["s2"]) {
					return fmt.Errorf("ownership %v, before the restart %v", snap, before)
				}
				return nil
			})
			for _, e := range own.history()[mark:] {
				if strings.HasPrefix(e, "s2@") && (strings.Contains(e, " -[") || strings.Contains(e, " lost[")) {
					t.Errorf("s2 gave up partitions when the static member s1 restarted: %s (history since: %v)", e, own.history()[mark:])
				}
			}

			n := sink.distinct()
			waitFor(t, churnSettle, "consumption continues", func() error {
				if sink.distinct() <= n {
					return fmt.Errorf("still %d distinct records", n)
				}
				return nil
			})
			stopped = true
			produced := prod.stop(t)
			if err := prod.failure(); err != nil {
				t.Fatalf("producer: %v", err)
			}
			waitConsumedAndCommitted(t, sink, produced, adm, group, topic)
			s1b.close(t)
			s2.close(t)
			for _, v := range append(own.violations(), sink.violations()...) {
				t.Error(v)
			}
			t.Logf("%d produced, %d consumed; ownership history: %s", len(produced), len(sink.values()), strings.Join(own.history(), "; "))
		})
	}
}
