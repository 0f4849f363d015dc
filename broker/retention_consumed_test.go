package broker

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/logstore"
)

// TestPlanConsumedRetention: the decision of retention.consumed.groups for one partition.
func TestPlanConsumedRetention(t *testing.T) {
	// Three closed segments of 100 bytes, [0,10) [10,20) [20,30), and the active one from 30.
	segs := []logstore.SegmentInfo{
		{BaseOffset: 0, EndOffset: 10, Size: 100},
		{BaseOffset: 10, EndOffset: 20, Size: 100},
		{BaseOffset: 20, EndOffset: 30, Size: 100},
		{BaseOffset: 30, EndOffset: 35, Size: 50, Active: true},
	}
	at := func(o int64) groupCommit { return groupCommit{offset: o} }
	none := groupCommit{offset: -1}
	unknown := groupCommit{offset: -1, unknown: true}
	for _, tt := range []struct {
		name          string
		hw            int64
		commits       map[string]groupCommit
		requireCommit bool
		deleteBefore  int64
		held          map[string]int64
	}{
		{"the slower group decides", 35, map[string]groupCommit{"g1": at(25), "g2": at(15)}, true, 10,
			map[string]int64{"g1": 100, "g2": 200}},
		{"a commit at a segment's end consumes it", 35, map[string]groupCommit{"g1": at(20), "g2": at(20)}, true, 20,
			map[string]int64{"g1": 100, "g2": 100}},
		{"a group that never committed holds everything", 35, map[string]groupCommit{"g1": at(35), "g2": none}, true, -1,
			map[string]int64{"g1": 0, "g2": 300}},
		{"require.commit=false: it is left out", 35, map[string]groupCommit{"g1": at(25), "g2": none}, false, 20,
			map[string]int64{"g1": 100, "g2": 0}},
		{"require.commit=false and no commit at all: nothing holds", 35, map[string]groupCommit{"g1": none, "g2": none}, false, 30,
			map[string]int64{"g1": 0, "g2": 0}},
		{"never past the high watermark", 25, map[string]groupCommit{"g1": at(35), "g2": at(35)}, true, 20,
			map[string]int64{"g1": 0, "g2": 0}},
		{"a coordinator that cannot be asked holds everything", 35, map[string]groupCommit{"g1": at(35), "g2": unknown}, false, -1,
			map[string]int64{"g1": 0, "g2": 300}},
		{"the active segment never goes", 35, map[string]groupCommit{"g1": at(35), "g2": at(35)}, true, 30,
			map[string]int64{"g1": 0, "g2": 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := planConsumedRetention(segs, tt.hw, []string{"g1", "g2"}, tt.commits, tt.requireCommit)
			if plan.deleteBefore != tt.deleteBefore {
				t.Errorf("deleteBefore = %d, want %d", plan.deleteBefore, tt.deleteBefore)
			}
			for _, h := range plan.holds {
				if h.HeldBytes != tt.held[h.Group] {
					t.Errorf("group %s holds %d bytes, want %d", h.Group, h.HeldBytes, tt.held[h.Group])
				}
			}
		})
	}
}

// consumedTopic creates topic with 1 KiB segments and retention.consumed.groups=g1,g2 (plus
// extra configs) and writes n records, each timestamped ts.
func consumedTopic(t *testing.T, tb *testBroker, topic string, n int, ts time.Time, extra map[string]string) *Partition {
	t.Helper()
	configs := map[string]*string{}
	for k, v := range map[string]string{"internal.segment.bytes": "1024", "retention.consumed.groups": "g1,g2"} {
		configs[k] = &v
	}
	for k, v := range extra {
		configs[k] = &v
	}
	tb.createTopic(t, topic, 1, configs)
	ctx := testContext(t)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("value-" + strconv.Itoa(i)), Timestamp: ts}
		if err := tb.Client.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	p := tb.waitHosted(t, topic)
	if segs := p.log.NumSegments(); segs < 4 {
		t.Fatalf("only %d segments", segs)
	}
	return p
}

func commitOffset(t *testing.T, tb *testBroker, group, topic string, offset int64) {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset, LeaderEpoch: -1})
	resp, err := tb.Admin.CommitOffsets(testContext(t), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s at %d: %v", group, offset, err)
	}
}

// fetchAt fetches topic/0 from offset and returns the partition's error code.
func fetchAt(t *testing.T, tb *testBroker, topic string, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rt.TopicID = [16]byte(tb.Broker.partition(topic, 0).topicID) // kgo sends the version it likes: v13+ names topics by ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), tb.Client)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func holdsOf(b *Broker, topic string) map[string]ConsumedRetentionHold {
	out := map[string]ConsumedRetentionHold{}
	for _, h := range b.ConsumedRetentionHolds() {
		if h.Topic == topic {
			out[h.Group] = h
		}
	}
	return out
}

// TestConsumedRetentionWaitsForEveryGroup: through the broker's retention pass, a segment of
// a topic with retention.consumed.groups=g1,g2 goes only once both groups have committed past
// its end; what each group holds back is reported; a fetch below the new log start is
// OFFSET_OUT_OF_RANGE.
func TestConsumedRetentionWaitsForEveryGroup(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"log.retention.check.interval.ms": "3600000"}) // passes are driven here
	p := consumedTopic(t, tb, "consumed", 100, time.Now(), nil)
	end := p.replica.Snapshot().HighWatermark

	tb.Broker.retentionPass() // no group has committed: both hold everything
	if start := p.replica.Snapshot().LogStart; start != 0 {
		t.Fatalf("log start %d before any commit", start)
	}
	commitOffset(t, tb, "g1", "consumed", end)
	tb.Broker.retentionPass()
	if start := p.replica.Snapshot().LogStart; start != 0 {
		t.Fatalf("log start %d with only g1 committed", start)
	}
	holds := holdsOf(tb.Broker, "consumed")
	if h := holds["g2"]; h.Committed != -1 || h.HeldBytes == 0 {
		t.Fatalf("g2 (no commit) reported as %+v, want it holding every closed segment", h)
	}
	if h := holds["g1"]; h.Committed != end || h.HeldBytes != 0 {
		t.Fatalf("g1 (committed at the end) reported as %+v", h)
	}

	var boundary int64 = -1
	for _, s := range p.log.Segments() {
		if !s.Active && s.EndOffset <= 50 {
			boundary = s.EndOffset
		}
	}
	commitOffset(t, tb, "g2", "consumed", 50)
	tb.Broker.retentionPass()
	start := p.replica.Snapshot().LogStart
	if boundary <= 0 || start != boundary {
		t.Fatalf("log start %d after g2 committed 50, want the last segment end at or below 50 (%d)", start, boundary)
	}
	if h := holdsOf(tb.Broker, "consumed")["g2"]; h.Committed != 50 || h.HeldBytes == 0 {
		t.Fatalf("g2 reported as %+v after committing 50", h)
	}
	if code := fetchAt(t, tb, "consumed", 0); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch at 0 below log start %d answered %v, want OFFSET_OUT_OF_RANGE", start, kerr.ErrorForCode(code))
	}
	if code := fetchAt(t, tb, "consumed", start); code != 0 {
		t.Fatalf("fetch at the log start answered %v", kerr.ErrorForCode(code))
	}
	offs, err := tb.Admin.ListStartOffsets(testContext(t), "consumed")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("consumed", 0); o.Offset != start {
		t.Fatalf("ListOffsets earliest %d, want %d", o.Offset, start)
	}
}

// TestConsumedRetentionRequireCommitFalse: with retention.consumed.require.commit=false a
// named group that never committed does not hold the data.
func TestConsumedRetentionRequireCommitFalse(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"log.retention.check.interval.ms": "3600000"})
	p := consumedTopic(t, tb, "lenient", 100, time.Now(), map[string]string{"retention.consumed.require.commit": "false"})
	commitOffset(t, tb, "g1", "lenient", 60)
	tb.Broker.retentionPass()
	start := p.replica.Snapshot().LogStart
	if start == 0 || start > 60 {
		t.Fatalf("log start %d: g1 committed 60 and g2 never did (not required)", start)
	}
}

// TestConsumedRetentionTimeStillBounds: retention.ms still deletes data no group consumed,
// decided on the records' timestamps against the broker's clock.
func TestConsumedRetentionTimeStillBounds(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"log.retention.check.interval.ms": "3600000"})
	p := consumedTopic(t, tb, "bounded", 100, time.Now().Add(-2*time.Hour), map[string]string{"retention.ms": "3600000"})
	tb.Broker.retentionPass()
	if start, hw := p.replica.Snapshot().LogStart, p.replica.Snapshot().HighWatermark; start == 0 || start > hw {
		t.Fatalf("log start %d (HW %d): records two hours old with retention.ms one hour must go whatever the groups did", start, hw)
	}
}

// TestConsumedRetentionConfig: the keys are described with their docs and validated.
func TestConsumedRetentionConfig(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "described", 1, nil)
	ctx := testContext(t)
	if _, err := tb.Admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.consumed.groups", Value: kadm.StringPtr("billing,audit")}}, "described"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	req.IncludeDocumentation = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "described"
	req.Resources = append(req.Resources, rr)
	resp := tb.direct(t, req).(*kmsg.DescribeConfigsResponse)
	found := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		found[c.Name] = c
	}
	g, ok := found["retention.consumed.groups"]
	if !ok || g.Value == nil || *g.Value != "billing,audit" || g.Documentation == nil || *g.Documentation == "" {
		t.Fatalf("retention.consumed.groups described as %+v", g)
	}
	if r, ok := found["retention.consumed.require.commit"]; !ok || r.Value == nil || *r.Value != "true" {
		t.Fatalf("retention.consumed.require.commit described as %+v", r)
	}
	rs, err := tb.Admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.consumed.groups", Value: kadm.StringPtr("a,,b")}}, "described")
	if err == nil {
		for _, r := range rs {
			err = r.Err
		}
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("an empty group name was answered %v, want INVALID_CONFIG", err)
	}
}
