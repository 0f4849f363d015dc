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

// TestApiVersionsV5ChecksClusterAndNode: v5 (KIP-1242) refuses a cluster ID without a node ID
// (or the reverse) with INVALID_REQUEST and a cluster or node that is not this one with
// REBOOTSTRAP_REQUIRED, each as the code alone, as Kafka 4.4's KafkaApis answers; the right
// pair, or neither, gets the API keys. Below v4 a supported range starting at 0 is left out.
func TestApiVersionsV5ChecksClusterAndNode(t *testing.T) {
	b := &Broker{nodeID: 2, ctrl: newFakeMetadata(&controller.Image{ClusterID: "c1", Offset: 7})}
	ask := func(version int16, cluster *string, node int32) *kmsg.ApiVersionsResponse {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClusterID, req.NodeID = version, cluster, node
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp, err := b.handleApiVersions(context.Background(), nil, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ApiVersionsResponse)
	}
	c1, c2 := "c1", "c2"
	for _, tc := range []struct {
		cluster *string
		node    int32
		code    int16
	}{
		{nil, -1, 0},
		{&c1, 2, 0},
		{&c1, -1, kerr.InvalidRequest.Code},
		{nil, 2, kerr.InvalidRequest.Code},
		{&c2, 2, kerr.RebootstrapRequired.Code},
		{&c1, 3, kerr.RebootstrapRequired.Code},
	} {
		r := ask(5, tc.cluster, tc.node)
		if r.ErrorCode != tc.code || (tc.code == 0) != (len(r.ApiKeys) > 0) {
			t.Errorf("cluster %v node %d: code %d with %d API keys, want code %d", tc.cluster, tc.node, r.ErrorCode, len(r.ApiKeys), tc.code)
		}
	}
	has := func(r *kmsg.ApiVersionsResponse, name string) bool {
		return slices.ContainsFunc(r.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool { return f.Name == name })
	}
	if r := ask(3, nil, -1); has(r, "share.version") || !has(r, "transaction.version") {
		t.Errorf("v3 supported features %+v: want share.version (min 0) left out", r.SupportedFeatures)
	}
	if r := ask(4, nil, -1); !has(r, "share.version") {
		t.Errorf("v4 supported features %+v: want share.version", r.SupportedFeatures)
	}
}
