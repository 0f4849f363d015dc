package compattests

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDeleteRecordsReplicatedWaitsForFollowers: on three real processes, kadm's DeleteRecords
// on an RF3 partition is answered with the requested low watermark only once every follower
// has moved its log start there (Kafka's DelayedDeleteRecords): right after the answer, a
// consumer fetch sent to each follower reports a log start at the offset, and reading below
// it there is OFFSET_OUT_OF_RANGE.
func TestDeleteRecordsReplicatedWaitsForFollowers(t *testing.T) {
	c := StartCluster(t, 3, clusterSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterDeadline)
	defer cancel()
	adm, cl := clusterAdmin(t, c.Bootstrap()...)
	const topic = "deleted-rf3"
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatalf("create RF 3: %v", err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RetryTimeout(clusterDeadline))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	for i := range 100 {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%03d", i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	var leader int32
	var followers []int32
	var topicID [16]byte
	waitFor(t, clusterDeadline, "all three replicas in the ISR", func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		p := td[topic].Partitions[0]
		if len(p.ISR) != 3 {
			return fmt.Errorf("ISR %v", p.ISR)
		}
		leader, followers, topicID = p.Leader, nil, td[topic].ID
		for _, r := range p.Replicas {
			if r != p.Leader {
				followers = append(followers, r)
			}
		}
		return nil
	})

	for _, offset := range []int64{60, -1} { // -1: up to the high watermark, 100
		want := offset
		if offset < 0 {
			want = 100
		}
		var o kadm.Offsets
		o.AddOffset(topic, 0, offset, -1)
		resp, err := adm.DeleteRecords(ctx, o)
		if err != nil {
			t.Fatalf("DeleteRecords(%d): %v", offset, err)
		}
		r, ok := resp.Lookup(topic, 0)
		if !ok || r.Err != nil || r.LowWatermark != want {
			t.Fatalf("DeleteRecords(%d) answered %+v, want low watermark %d", offset, r, want)
		}
		for _, id := range append([]int32{leader}, followers...) {
			start, code := logStartOn(ctx, t, cl, id, topic, topicID, want)
			if code != 0 || start != want {
				t.Errorf("after DeleteRecords(%d) answered, node %d reports log start %d (%v), want %d", offset, id, start, kerr.ErrorForCode(code), want)
			}
			if _, code := logStartOn(ctx, t, cl, id, topic, topicID, want-1); code != kerr.OffsetOutOfRange.Code {
				t.Errorf("node %d still serves offset %d after DeleteRecords(%d): %v", id, want-1, offset, kerr.ErrorForCode(code))
			}
		}
	}
}

// logStartOn sends a consumer fetch (v11+, which any replica serves, KIP-392) for partition 0
// of topic (by name and ID: the client picks the version) at offset to node id alone and
// returns the log start offset and error code it answers.
func logStartOn(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, topic string, topicID [16]byte, offset int64) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		t.Fatalf("fetch from node %d: %v", id, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch from node %d: answer %+v", id, resp)
	}
	p := resp.Topics[0].Partitions[0]
	return p.LogStartOffset, p.ErrorCode
}
