package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// acksAllRequest is an acks=all produce of one small batch to topic/0.
func acksAllRequest(topic string, timeout time.Duration) *kmsg.ProduceRequest {
	req := benchProduceRequest(topic, benchRecords(100))
	req.Acks = -1
	req.TimeoutMillis = int32(timeout.Milliseconds())
	return req
}

// withFollower makes the hosted replica of topic/0 lead with a second, simulated replica 2 in
// its ISR, as a metadata image of a replicated partition would (there is no second node: the
// test plays the follower's fetches).
func withFollower(t *testing.T, tb *testBroker, topic string) *Partition {
	t.Helper()
	p := tb.Broker.partition(topic, 0)
	if p == nil {
		t.Fatalf("%s/0 not hosted", topic)
	}
	if err := p.replica.BecomeLeader(p.replica.Snapshot().LeaderEpoch, []int32{1, 2}, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	return p
}

// An acks=all produce to a partition with a follower is answered only once the follower has
// fetched past the batch (the HW passed it), not after the local append.
func TestAcksAllProduceWaitsForTheHighWatermark(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "acks", 1, nil)
	tb.produce(t, "acks", 0, 1) // the partition is hosted and serving
	p := withFollower(t, tb, "acks")
	if _, err := p.replica.UpdateFollowerFetch(2, -1, 1, -1, time.Now()); err != nil {
		t.Fatal(err)
	}

	answered := tb.serveDirect(testContext(t), t, acksAllRequest("acks", testWait))
	// The batch is in the log, but not on the follower: no answer while the HW is behind it.
	end := p.replica.Snapshot().LogEnd
	if end <= 1 {
		t.Fatalf("log end %d after the append", end)
	}
	select {
	case resp := <-answered:
		t.Fatalf("answered before the follower fetched: %+v", resp)
	default:
	}
	if tb.Broker.purgatory.Len() != 1 {
		t.Fatalf("%d operations held, want the produce", tb.Broker.purgatory.Len())
	}
	if _, err := p.replica.UpdateFollowerFetch(2, -1, end, -1, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-answered:
		part := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if part.ErrorCode != 0 || part.BaseOffset != 1 {
			t.Fatalf("answered error %d, base offset %d; want 0, 1", part.ErrorCode, part.BaseOffset)
		}
	case <-time.After(testWait):
		t.Fatal("not answered after the HW passed the batch")
	}
}

// Not replicated within the produce's timeout: REQUEST_TIMED_OUT. With the ISR shrunk below
// min.insync.replicas while a produce waits, the HW stays where it is (Kafka 4.x's strict min
// ISR, KIP-966), so that produce too ends REQUEST_TIMED_OUT rather than being acknowledged by
// the leader alone; a new one is refused NOT_ENOUGH_REPLICAS before the append.
func TestAcksAllProduceTimesOutOrLosesItsISR(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "slow", 1, map[string]*string{"min.insync.replicas": new("2")})
	p := tb.waitHosted(t, "slow")
	withFollower(t, tb, "slow")

	resp := (<-tb.serveDirect(testContext(t), t, acksAllRequest("slow", 50*time.Millisecond))).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("error %d, want REQUEST_TIMED_OUT", code)
	}

	answered := tb.serveDirect(testContext(t), t, acksAllRequest("slow", 200*time.Millisecond))
	// The follower drops out of the ISR (committed by the controller): one replica in sync,
	// fewer than min.insync.replicas, so the HW must not move past the batch.
	if err := p.replica.BecomeLeader(p.replica.Snapshot().LeaderEpoch, []int32{1}, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	r := (<-answered).(*kmsg.ProduceResponse)
	if code := r.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("error %d, want REQUEST_TIMED_OUT", code)
	}
	if s := p.replica.Snapshot(); s.HighWatermark != 0 {
		t.Fatalf("HW %d with the ISR below min.insync.replicas, want 0 (records only the leader has)", s.HighWatermark)
	}
	// And now refused before the append.
	r = (<-tb.serveDirect(testContext(t), t, acksAllRequest("slow", testWait))).(*kmsg.ProduceResponse)
	if code := r.Topics[0].Partitions[0].ErrorCode; code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("error %d, want NOT_ENOUGH_REPLICAS", code)
	}
}

// waitHosted waits until topic/0 is hosted here and leads.
func (tb *testBroker) waitHosted(t *testing.T, topic string) *Partition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	for {
		if p := tb.Broker.partition(topic, 0); p != nil && p.replica.Snapshot().Leader {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s/0 never hosted", topic)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
