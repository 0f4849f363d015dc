package broker

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// TestDescribeTopicPartitionsELR: the eligible leader replicas and last known ELR the
// controller keeps are what DescribeTopicPartitions answers (kafka-topics --describe prints
// them as Elr: and LastKnownElr:), empty lists where there are none, and a leaderless
// partition is LEADER_NOT_AVAILABLE.
func TestDescribeTopicPartitionsELR(t *testing.T) {
	ti := &controller.TopicInfo{Name: "t", Partitions: []controller.PartitionInfo{
		{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ELR: []int32{2}, Leader: 1, LeaderEpoch: 3},
		{Partition: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{}, ELR: []int32{1, 2}, LastKnownELR: []int32{1}, Leader: -1, LeaderEpoch: 4},
		{Partition: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 2},
	}}
	im := &controller.Image{Topics: map[string]*controller.TopicInfo{"t": ti}}
	topics, next := describeTopicPartitionsPage(im, []string{"t"}, nil, 10)
	if next != nil || len(topics) != 1 || len(topics[0].Partitions) != 3 {
		t.Fatalf("page: %+v next %+v", topics, next)
	}
	want := []struct {
		elr, lastKnown []int32
		code           int16
	}{
		{[]int32{2}, []int32{}, 0},
		{[]int32{1, 2}, []int32{1}, kerr.LeaderNotAvailable.Code},
		{[]int32{}, []int32{}, 0},
	}
	for i, p := range topics[0].Partitions {
		w := want[i]
		if p.EligibleLeaderReplicas == nil || p.LastKnownELR == nil || !slices.Equal(p.EligibleLeaderReplicas, w.elr) ||
			!slices.Equal(p.LastKnownELR, w.lastKnown) || p.ErrorCode != w.code {
			t.Errorf("partition %d: ELR %v last known %v code %d, want %v %v %d", i, p.EligibleLeaderReplicas, p.LastKnownELR, p.ErrorCode,
				w.elr, w.lastKnown, w.code)
		}
	}
}

// TestApiVersionsFinalizesELR: from v3 ApiVersions supports and finalizes
// eligible.leader.replicas.version 1, as a new Kafka 4.x cluster does, with the image's offset
// as the finalized features epoch; a FeatureLevelRecord's level replaces a default, and a
// level of 0 leaves the feature out of the finalized set (share.version by default).
func TestApiVersionsFinalizesELR(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	b := &Broker{ctrl: newFakeMetadata(&controller.Image{Offset: 42})}
	resp, err := b.handleApiVersions(context.Background(), nil, req)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	supported := slices.IndexFunc(r.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
		return f.Name == "eligible.leader.replicas.version" && f.MinVersion == 1 && f.MaxVersion == 1
	})
	finalized := slices.IndexFunc(r.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
		return f.Name == "eligible.leader.replicas.version" && f.MinVersionLevel == 1 && f.MaxVersionLevel == 1
	})
	if supported < 0 || finalized < 0 || r.FinalizedFeaturesEpoch != 42 {
		t.Fatalf("supported %+v finalized %+v epoch %d", r.SupportedFeatures, r.FinalizedFeatures, r.FinalizedFeaturesEpoch)
	}
	var names []string
	for _, f := range r.FinalizedFeatures {
		names = append(names, f.Name)
	}
	want := []string{"eligible.leader.replicas.version", "group.version", "kraft.version", "metadata.version", "streams.version", "transaction.version"}
	if !slices.Equal(names, want) {
		t.Fatalf("finalized %v, want %v", names, want)
	}

	b.ctrl = newFakeMetadata(&controller.Image{Offset: 43, FeatureLevels: map[string]int16{"streams.version": 0}})
	resp, _ = b.handleApiVersions(context.Background(), nil, req)
	for _, f := range resp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		if f.Name == "streams.version" {
			t.Fatalf("streams.version finalized at 0 is still listed: %+v", f)
		}
	}
}
