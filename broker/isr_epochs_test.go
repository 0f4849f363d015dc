package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/controller"
)

// epochMetadata is a fakeMetadata whose node has registered at a broker epoch (the
// Epoch() the broker's fetchers send in Fetch v15 ReplicaState).
type epochMetadata struct {
	*fakeMetadata
	epoch int64
}

func (e *epochMetadata) Epoch() int64 { return e.epoch }

// TestISRExpansionCarriesFollowerBrokerEpoch: the leader's AlterPartition that adds a
// caught-up follower names the broker epoch the follower fetched with (KIP-903
// NewIsrWithEpochs), -1 for the leader itself, so the controller can refuse
// (INELIGIBLE_REPLICA) a proposal made from the fetches of an incarnation that has registered
// again since. Before, every epoch was sent as -1 and the controller's check never fired.
func TestISRExpansionCarriesFollowerBrokerEpoch(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	// Node 2 restarts as a broker registered at epoch 7.
	n := c.nodes[2]
	c.stopNode(2)
	b, err := New(n.cfg, &epochMetadata{fakeMetadata: n.meta, epoch: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	n.broker = b
	n.handler.b.Store(b)
	part := controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1}
	im := c.image(1, &part)
	im.Brokers[2].Epoch = 7
	for _, id := range []int32{1, 2} {
		c.nodes[id].meta.im.Store(im)
		if err := c.nodes[id].broker.reconcile(im); err != nil {
			t.Fatal(err)
		}
	}
	c.produce(1, kgo.LeaderAck(), "a", "b")
	deadline := time.After(testWait)
	for {
		select {
		case r := <-c.nodes[1].meta.alters:
			if !slices.Equal(r.NewISR, []int32{1, 2}) {
				continue
			}
			if !slices.Equal(r.NewISREpochs, []int64{-1, 7}) {
				t.Fatalf("expansion to %v sent broker epochs %v, want [-1 7]", r.NewISR, r.NewISREpochs)
			}
			return
		case <-deadline:
			t.Fatal("no AlterPartition adding the follower")
		}
	}
}
