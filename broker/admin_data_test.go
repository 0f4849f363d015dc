package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func TestAdminDeleteRecords(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)
	tb.createTopic(t, "dr", 2, nil)
	tb.produce(t, "dr", 0, 10)
	tb.produce(t, "dr", 1, 4)

	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 6})
	offsets.Add(kadm.Offset{Topic: "dr", Partition: 1, At: -1}) // up to the high watermark
	resps, err := tb.Admin.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r := resps["dr"][0]; r.Err != nil || r.LowWatermark != 6 {
		t.Fatalf("partition 0: %+v", r)
	}
	if r := resps["dr"][1]; r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("partition 1: %+v", r)
	}

	starts, err := tb.Admin.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 6 {
		t.Fatalf("start offset after delete: %d", o.Offset)
	}

	// A consumer from the start now begins at offset 6.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"dr": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fetches := cl.PollFetches(ctx)
	if errs := fetches.Errors(); len(errs) > 0 {
		t.Fatalf("fetch: %v", errs)
	}
	if recs := fetches.Records(); len(recs) == 0 || recs[0].Offset != 6 || string(recs[0].Value) != "v6" {
		t.Fatalf("first record after delete: %+v", recs)
	}

	offsets = nil
	offsets.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 11})
	resps, _ = tb.Admin.DeleteRecords(ctx, offsets)
	if r := resps["dr"][0]; !errors.Is(r.Err, kerr.OffsetOutOfRange) || r.LowWatermark != -1 {
		t.Fatalf("beyond the high watermark: %+v", r)
	}

	// kadm routes by leader and so cannot name a partition that does not exist.
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = req.MaxVersion()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "dr"
	for _, p := range []int32{7, 1} {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, -2
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.DeleteRecordsRequestTopic{rt}
	got := tb.direct(t, req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions
	if got[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || got[1].ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("unknown partition / offset -2: %v, %v", kerr.ErrorForCode(got[0].ErrorCode), kerr.ErrorForCode(got[1].ErrorCode))
	}
}

func TestAdminDeleteRecordsCompactedTopic(t *testing.T) {
	tb := startTestBroker(t, nil)
	// Users cannot create compacted topics until compaction lands; sluice's own internal
	// topics are compacted, so the rule is tested on one of those.
	res, err := tb.Ctrl.CreateTopics(testContext(t), []controller.CreateTopic{{Name: "compacted", NumPartitions: 1,
		ReplicationFactor: 1, Internal: true, Configs: map[string]string{"cleanup.policy": "compact"}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("create compacted: %v %+v", err, res)
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "compacted", Partition: 0, At: 0})
	resps, _ := tb.Admin.DeleteRecords(testContext(t), offsets)
	if r := resps["compacted"][0]; !errors.Is(r.Err, kerr.PolicyViolation) {
		t.Fatalf("delete on a compacted topic: %+v", r)
	}
}

func TestAdminOffsetForLeaderEpoch(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)
	tb.createTopic(t, "epochs", 1, nil)
	tb.produce(t, "epochs", 0, 5)
	epoch := tb.Ctrl.Image().Topics["epochs"].Partitions[0].LeaderEpoch

	var req kadm.OffsetForLeaderEpochRequest
	req.Add("epochs", 0, epoch)
	resps, err := tb.Admin.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resps["epochs"][0]; r.Err != nil || r.LeaderEpoch != epoch || r.EndOffset != 5 {
		t.Fatalf("current epoch: %+v", r)
	}

	// Versions and the current-epoch check, served directly.
	ask := func(current, leaderEpoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.Version = r.MaxVersion()
		r.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "epochs"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, leaderEpoch
		rt.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}
		r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{rt}
		return tb.direct(t, r).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	}
	if p := ask(epoch+1, epoch); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("future current epoch: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if epoch > 0 {
		if p := ask(epoch-1, epoch); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
			t.Fatalf("stale current epoch: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if p := ask(-1, -1); p.ErrorCode != 0 || p.LeaderEpoch != -1 || p.EndOffset != -1 {
		t.Fatalf("undefined epoch: %+v", p)
	}
}

func TestAdminDescribeLogDirs(t *testing.T) {
	tb := startTestBroker(t, nil)
	ctx := testContext(t)
	tb.createTopic(t, "sized", 2, nil)
	tb.createTopic(t, "other", 1, nil)
	tb.produce(t, "sized", 1, 20)

	all, err := tb.Admin.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[1]
	if len(dirs) != 1 {
		t.Fatalf("%d log dirs", len(dirs))
	}
	for _, d := range dirs {
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Fatalf("dir %s: err %v total %d usable %d", d.Dir, d.Err, d.TotalBytes, d.UsableBytes)
		}
		p, ok := d.Topics["sized"][1]
		if !ok || p.Size <= 0 {
			t.Fatalf("sized-1: %+v", p)
		}
		if _, ok := d.Topics["other"][0]; !ok {
			t.Fatal("other-0 not listed")
		}
	}

	some, err := tb.Admin.DescribeAllLogDirs(ctx, kadm.TopicsSet{"sized": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range some[1] {
		if len(d.Topics) != 1 || len(d.Topics["sized"]) != 1 {
			t.Fatalf("requested one partition, got %+v", d.Topics)
		}
	}
}

func TestAdminDescribeCluster(t *testing.T) {
	tb := startTestBroker(t, nil)
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(testContext(t), tb.Client)
	if err != nil {
		t.Fatal(err)
	}
	im := tb.Ctrl.Image()
	if resp.ErrorCode != 0 || resp.ClusterID != im.ClusterID || resp.ControllerID != 1 || resp.EndpointType != 1 {
		t.Fatalf("response %+v", resp)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 {
		t.Fatalf("brokers %+v", resp.Brokers)
	}
	if got := resp.Brokers[0]; got.Host+":"+itoa32(got.Port) != tb.Addr {
		t.Fatalf("broker address %s:%d, want %s", got.Host, got.Port, tb.Addr)
	}

	controllers := kmsg.NewPtrDescribeClusterRequest()
	controllers.Version, controllers.EndpointType = 1, 2
	if resp := tb.direct(t, controllers).(*kmsg.DescribeClusterResponse); resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("controller endpoints: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}
