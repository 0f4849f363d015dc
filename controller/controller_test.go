package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	raftpb "go.etcd.io/raft/v3/raftpb"
)

// testConfig is a single-voter config whose clock never ticks: nothing in a single-node
// controller may depend on time passing.
func testConfig(dir string) Config {
	return Config{
		NodeID:    1,
		Dir:       dir,
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}},
		Logger:    testLogger(),
		ticks:     make(chan time.Time),
	}
}

func startTest(t testing.TB, cfg Config) *Controller {
	t.Helper()
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func str(s string) *string { return &s }

func mustCreate(t testing.TB, c *Controller, topics ...CreateTopic) []CreateTopicResult {
	t.Helper()
	res, err := c.CreateTopics(testCtx(t), topics, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create %s: %v: %s", r.Name, r.Err, r.Message)
		}
	}
	return res
}

// replicatedState renders what must survive a restart: everything but the brokers (whose
// epochs grow on every start) and the offset.
func replicatedState(im *Image) string {
	c := *im
	c.Brokers = nil
	c.Offset = 0
	return formatImage(&c)
}

func TestStartRegistersBroker(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	im := c.Image()
	if len(im.ClusterID) != 22 {
		t.Errorf("cluster ID %q is not 22 characters", im.ClusterID)
	}
	b := im.Brokers[1]
	if b == nil || b.Epoch != 1 || len(b.Endpoints) != 1 || b.Endpoints[0].Port != 9092 || b.Fenced {
		t.Errorf("broker 1 = %+v", b)
	}
	if im.ControllerID != 1 {
		t.Errorf("controller ID = %d, want 1", im.ControllerID)
	}
}

func TestCreateTopic(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	res := mustCreate(t, c, CreateTopic{Name: "orders", NumPartitions: 3, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "60000"}},
		CreateTopic{Name: "__consumer_offsets", NumPartitions: 2, ReplicationFactor: 1, Internal: true})
	im := c.Image()
	for _, r := range res {
		topic := im.Topics[r.Name]
		if topic == nil || topic != r.Topic || topic.ID != r.ID || r.ID.IsZero() || im.TopicsByID[r.ID] != topic {
			t.Fatalf("result %+v does not match image topic %+v", r, topic)
		}
	}
	orders := im.Topics["orders"]
	if len(orders.Partitions) != 3 || orders.Configs["retention.ms"] != "60000" || orders.Internal {
		t.Fatalf("orders = %+v", orders)
	}
	for i, p := range orders.Partitions {
		if p.Partition != int32(i) || fmt.Sprint(p.Replicas) != "[1]" || fmt.Sprint(p.ISR) != "[1]" || p.Leader != 1 || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Errorf("partition %d = %+v", i, p)
		}
	}
	if !im.Topics["__consumer_offsets"].Internal {
		t.Error("__consumer_offsets not internal")
	}
}

func TestCreateTopicsValidation(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	mustCreate(t, c, CreateTopic{Name: "exists", NumPartitions: 1, ReplicationFactor: 1},
		CreateTopic{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1})
	ok := func(name string) CreateTopic { return CreateTopic{Name: name, NumPartitions: 1, ReplicationFactor: 1} }
	for _, tc := range []struct {
		name  string
		topic CreateTopic
		want  *kerr.Error
	}{
		{"empty name", ok(""), kerr.InvalidTopicException},
		{"dot", ok("."), kerr.InvalidTopicException},
		{"dotdot", ok(".."), kerr.InvalidTopicException},
		{"249 chars", ok(strings.Repeat("x", 249)), nil},
		{"250 chars", ok(strings.Repeat("x", 250)), kerr.InvalidTopicException},
		{"space", ok("a b"), kerr.InvalidTopicException},
		{"non-ascii", ok("caf\u00e9"), kerr.InvalidTopicException},
		{"slash", ok("a/b"), kerr.InvalidTopicException},
		{"legal chars", ok("Az09._-"), nil},
		{"exists", ok("exists"), kerr.TopicAlreadyExists},
		{"collision", ok("a_b"), kerr.InvalidTopicException},
		{"no collision with itself", ok("a-b"), nil},
		{"zero partitions", CreateTopic{Name: "t", NumPartitions: 0, ReplicationFactor: 1}, kerr.InvalidPartitions},
		{"unresolved partitions", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: 1}, kerr.InvalidPartitions},
		{"too many partitions", CreateTopic{Name: "t", NumPartitions: maxRecordsPerRequest + 1, ReplicationFactor: 1}, kerr.PolicyViolation},
		{"zero rf", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 0}, kerr.InvalidReplicationFactor},
		{"rf above brokers", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 2}, kerr.InvalidReplicationFactor},
		{"assignment with partitions", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}}}, kerr.InvalidRequest},
		{"assignment with rf", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: 1, Assignments: map[int32][]int32{0: {1}}}, kerr.InvalidRequest},
		{"assignment gap", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 2: {1}}}, kerr.InvalidReplicaAssignment},
		{"assignment empty", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {}}}, kerr.InvalidReplicaAssignment},
		{"assignment duplicate broker", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 1}}}, kerr.InvalidReplicaAssignment},
		{"assignment unknown broker", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {7}}}, kerr.InvalidReplicaAssignment},
		{"assignment ok", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 1: {1}}}, nil},
		{"unknown config", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"no.such.config": "1"}}, kerr.InvalidConfig},
		{"bad config value", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "soon"}}, kerr.InvalidConfig},
		{"good config", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"cleanup.policy": "delete"}}, nil},
		{"config not supported yet", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"compression.type": "gzip"}}, kerr.InvalidConfig},
		{"internal topic may be compacted", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Internal: true, Configs: map[string]string{"cleanup.policy": "compact"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offset := c.Image().Offset
			res, err := c.CreateTopics(testCtx(t), []CreateTopic{tc.topic}, true)
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			if tc.want == nil && r.Err != nil || tc.want != nil && r.Err != tc.want {
				t.Fatalf("got %v (%s), want %v", r.Err, r.Message, tc.want)
			}
			if r.Err != nil && r.Message == "" {
				t.Error("error without message")
			}
			if r.Err == nil && (r.Topic == nil || r.ID.IsZero()) {
				t.Errorf("validate-only success without planned topic: %+v", r)
			}
			if c.Image().Offset != offset || c.Image().Topics[tc.topic.Name] != nil && tc.topic.Name != "exists" && tc.topic.Name != "a.b" {
				t.Error("validate-only changed the image")
			}
		})
	}
}

func TestCreateTopicsDuplicateInRequest(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	res, err := c.CreateTopics(testCtx(t), []CreateTopic{
		{Name: "d", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "d", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "fine", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "x.y", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "x_y", NumPartitions: 1, ReplicationFactor: 1},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest, nil, nil, kerr.InvalidTopicException}
	for i, r := range res {
		if r.Err != error(want[i]) && !(want[i] == nil && r.Err == nil) {
			t.Errorf("%d %s: got %v (%s), want %v", i, r.Name, r.Err, r.Message, want[i])
		}
	}
	if im := c.Image(); im.Topics["d"] != nil || im.Topics["fine"] == nil || im.Topics["x.y"] == nil || im.Topics["x_y"] != nil {
		t.Errorf("image topics: %s", formatImage(im))
	}
}

func TestConcurrentCreateSameName(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	ids := make([]TopicID, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "race"
			if i%2 == 1 {
				name = "ra.ce" // collides with "ra_ce" below, not with "race"
			}
			if i%4 == 3 {
				name = "ra_ce"
			}
			res, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: name, NumPartitions: 2, ReplicationFactor: 1}}, false)
			if err != nil {
				errs[i] = err
				return
			}
			errs[i], ids[i] = res[0].Err, res[0].ID
		}()
	}
	wg.Wait()
	winners := map[string]int{}
	for i, err := range errs {
		switch {
		case err == nil:
			winners[map[bool]string{true: "race", false: "dotted"}[i%2 == 0]]++
			if c.Image().TopicsByID[ids[i]] == nil {
				t.Errorf("winner %d's topic ID not in image", i)
			}
		case errors.Is(err, kerr.TopicAlreadyExists), errors.Is(err, kerr.InvalidTopicException):
		default:
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	if winners["race"] != 1 || winners["dotted"] != 1 {
		t.Errorf("winners = %v, want exactly one per name class", winners)
	}
	im := c.Image()
	if (im.Topics["ra.ce"] == nil) == (im.Topics["ra_ce"] == nil) {
		t.Errorf("exactly one of ra.ce and ra_ce must exist:\n%s", formatImage(im))
	}
}

func TestImageImmutable(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	mustCreate(t, c, CreateTopic{Name: "keep", NumPartitions: 2, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1"}},
		CreateTopic{Name: "gone", NumPartitions: 1, ReplicationFactor: 1})
	old := c.Image()
	before := formatImage(old)
	select {
	case <-old.Changed():
		t.Fatal("current image already marked changed")
	default:
	}
	ctx := testCtx(t)
	mustCreate(t, c, CreateTopic{Name: "new", NumPartitions: 1, ReplicationFactor: 1})
	if _, err := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "keep", Count: 4}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AlterConfigs(ctx, []AlterConfigs{{ResourceType: ResourceTopic, ResourceName: "keep", Ops: []ConfigOp{{Key: "retention.ms", Value: str("2")}}},
		{ResourceType: ResourceBroker, ResourceName: "", Ops: []ConfigOp{{Key: "log.retention.ms", Value: str("5")}}}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTopics(ctx, []string{"gone"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AllocateProducerIDs(ctx, 1, 10); err != nil {
		t.Fatal(err)
	}
	if after := formatImage(old); after != before {
		t.Fatalf("old image changed:\n%s\n---\n%s", before, after)
	}
	select {
	case <-old.Changed():
	default:
		t.Fatal("old image's Changed() not closed after a newer publish")
	}
	cur := c.Image()
	if cur.Topics["keep"] == old.Topics["keep"] || len(cur.Topics["keep"].Partitions) != 4 || cur.Topics["keep"].Configs["retention.ms"] != "2" {
		t.Errorf("current image: %s", formatImage(cur))
	}
	// Copy-on-write shares what did not change.
	if cur.Topics["new"] != c.Image().TopicsByID[cur.Topics["new"].ID] {
		t.Error("maps disagree")
	}
	select {
	case <-cur.Changed():
		t.Fatal("current image marked changed")
	default:
	}
}

func TestCreatePartitions(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	mustCreate(t, c, CreateTopic{Name: "t", NumPartitions: 2, ReplicationFactor: 1})
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		req  CreatePartitions
		want *kerr.Error
	}{
		{"unknown topic", CreatePartitions{Topic: "nope", Count: 3}, kerr.UnknownTopicOrPartition},
		{"shrink", CreatePartitions{Topic: "t", Count: 1}, kerr.InvalidPartitions},
		{"same", CreatePartitions{Topic: "t", Count: 2}, kerr.InvalidPartitions},
		{"assignment count", CreatePartitions{Topic: "t", Count: 4, Assignments: [][]int32{{1}}}, kerr.InvalidReplicaAssignment},
		{"assignment rf", CreatePartitions{Topic: "t", Count: 3, Assignments: [][]int32{{1, 2}}}, kerr.InvalidReplicaAssignment},
		{"assignment broker", CreatePartitions{Topic: "t", Count: 3, Assignments: [][]int32{{9}}}, kerr.InvalidReplicaAssignment},
		{"too many", CreatePartitions{Topic: "t", Count: maxRecordsPerRequest + 10}, kerr.PolicyViolation},
		{"grow", CreatePartitions{Topic: "t", Count: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.CreatePartitions(ctx, []CreatePartitions{tc.req}, true)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Err != error(tc.want) && !(tc.want == nil && res[0].Err == nil) {
				t.Fatalf("got %v (%s), want %v", res[0].Err, res[0].Message, tc.want)
			}
			if n := len(c.Image().Topics["t"].Partitions); n != 2 {
				t.Fatalf("validate-only changed partitions to %d", n)
			}
		})
	}
	res, err := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "t", Count: 3}, {Topic: "t", Count: 5}}, false)
	if err != nil || res[0].Err != kerr.InvalidRequest || res[1].Err != kerr.InvalidRequest {
		t.Fatalf("duplicate topic: %v %+v", err, res)
	}
	res, err = c.CreatePartitions(ctx, []CreatePartitions{{Topic: "t", Count: 5, Assignments: [][]int32{{1}, {1}, {1}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatalf("grow: %v %+v", err, res)
	}
	parts := c.Image().Topics["t"].Partitions
	if len(parts) != 5 || parts[4].Partition != 4 || parts[4].Leader != 1 {
		t.Fatalf("partitions = %+v", parts)
	}
}

func TestDeleteTopics(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	res := mustCreate(t, c, CreateTopic{Name: "a", NumPartitions: 1, ReplicationFactor: 1},
		CreateTopic{Name: "b", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "5"}},
		CreateTopic{Name: "c", NumPartitions: 1, ReplicationFactor: 1})
	idB := res[1].ID
	var unknown TopicID
	unknown[0] = 9
	dres, err := c.DeleteTopics(testCtx(t), []string{"a", "missing", "c", "a"}, []TopicID{idB, unknown})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		err  *kerr.Error
	}{{"a", nil}, {"missing", kerr.UnknownTopicOrPartition}, {"c", nil}, {"a", kerr.InvalidRequest}, {"b", nil}, {"", kerr.UnknownTopicID}}
	for i, w := range want {
		if dres[i].Name != w.name || dres[i].Err != error(w.err) && !(w.err == nil && dres[i].Err == nil) {
			t.Errorf("%d: got %+v, want %s %v", i, dres[i], w.name, w.err)
		}
	}
	if im := c.Image(); len(im.Topics) != 0 || len(im.TopicsByID) != 0 {
		t.Fatalf("topics left: %s", formatImage(im))
	}
	// The name is free again, with a new ID and no old configs.
	res = mustCreate(t, c, CreateTopic{Name: "b", NumPartitions: 1, ReplicationFactor: 1})
	if res[0].ID == idB || len(c.Image().Topics["b"].Configs) != 0 {
		t.Fatalf("recreated b: %+v", c.Image().Topics["b"])
	}
}

func TestAlterConfigs(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	mustCreate(t, c, CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "delete"}})
	ctx := testCtx(t)
	res, err := c.AlterConfigs(ctx, []AlterConfigs{
		{ResourceType: ResourceTopic, ResourceName: "t", Ops: []ConfigOp{{Key: "retention.ms", Value: str("2000")}, {Key: "cleanup.policy"}, {Key: "segment.ms", Value: str("60000")}}},
		{ResourceType: ResourceTopic, ResourceName: "missing", Ops: []ConfigOp{{Key: "retention.ms", Value: str("1")}}},
		{ResourceType: ResourceTopic, ResourceName: "t", Ops: []ConfigOp{{Key: "retention.ms", Value: str("x")}}},
		{ResourceType: ResourceBroker, ResourceName: "", Ops: []ConfigOp{{Key: "log.retention.ms", Value: str("100")}}},
		{ResourceType: ResourceBroker, ResourceName: "1", Ops: []ConfigOp{{Key: "log.retention.ms", Value: str("200")}}},
		{ResourceType: ResourceBroker, ResourceName: "one", Ops: []ConfigOp{{Key: "log.retention.ms", Value: str("200")}}},
		{ResourceType: 3, ResourceName: "x"},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []*kerr.Error{nil, kerr.UnknownTopicOrPartition, kerr.InvalidConfig, nil, nil, kerr.InvalidRequest, kerr.InvalidRequest}
	for i, w := range want {
		if res[i].Err != error(w) && !(w == nil && res[i].Err == nil) {
			t.Errorf("%d: got %v (%s), want %v", i, res[i].Err, res[i].Message, w)
		}
	}
	im := c.Image()
	if got := formatConfigs(im.Topics["t"].Configs); got != "{retention.ms=2000,segment.ms=60000}" {
		t.Errorf("topic configs %s", got)
	}
	if got := formatConfigs(im.BrokerConfigs[""]) + formatConfigs(im.BrokerConfigs["1"]); got != "{log.retention.ms=100}{log.retention.ms=200}" {
		t.Errorf("broker configs %s", got)
	}
	// Legacy AlterConfigs replaces the whole set.
	res, err = c.AlterConfigs(ctx, []AlterConfigs{{ResourceType: ResourceTopic, ResourceName: "t", ReplaceAll: true, Ops: []ConfigOp{{Key: "max.message.bytes", Value: str("1000")}}}}, false)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	if got := formatConfigs(c.Image().Topics["t"].Configs); got != "{max.message.bytes=1000}" {
		t.Errorf("after replace-all: %s", got)
	}
	// Validate-only changes nothing.
	offset := c.Image().Offset
	res, err = c.AlterConfigs(ctx, []AlterConfigs{{ResourceType: ResourceTopic, ResourceName: "t", Ops: []ConfigOp{{Key: "retention.ms", Value: str("5")}}}}, true)
	if err != nil || res[0].Err != nil || c.Image().Offset != offset {
		t.Fatal("validate-only", err, res)
	}
}

func TestAllocateProducerIDs(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	first, err := c.AllocateProducerIDs(ctx, 1, 1000)
	if err != nil || first != 0 {
		t.Fatalf("first block: %d %v", first, err)
	}
	second, err := c.AllocateProducerIDs(ctx, 1, 1000)
	if err != nil || second != 1000 || c.Image().NextProducerID != 2000 {
		t.Fatalf("second block: %d %v", second, err)
	}
	if _, err := c.AllocateProducerIDs(ctx, 1, 0); err != kerr.InvalidRequest {
		t.Errorf("count 0: %v", err)
	}
	if _, err := c.AllocateProducerIDs(ctx, 5, 10); err != kerr.BrokerIDNotRegistered {
		t.Errorf("unregistered broker: %v", err)
	}
}

// TestRestart checks that everything the API changed survives Close and Start, with and
// without snapshots (SnapshotEvery 2 compacts the WAL several times on the way).
func TestRestart(t *testing.T) {
	for _, every := range []int{0, 2} {
		t.Run(fmt.Sprintf("snapshot-every-%d", every), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.SnapshotEvery = every
			c, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			mustCreate(t, c, CreateTopic{Name: "a", NumPartitions: 3, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1"}},
				CreateTopic{Name: "b", NumPartitions: 1, ReplicationFactor: 1},
				CreateTopic{Name: "__consumer_offsets", NumPartitions: 5, ReplicationFactor: 1, Internal: true})
			mustCreate(t, c, CreateTopic{Name: "doomed", NumPartitions: 1, ReplicationFactor: 1})
			if _, err := c.DeleteTopics(ctx, []string{"doomed"}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "b", Count: 2}}, false); err != nil {
				t.Fatal(err)
			}
			if _, err := c.AlterConfigs(ctx, []AlterConfigs{{ResourceType: ResourceBroker, ResourceName: "", Ops: []ConfigOp{{Key: "log.retention.ms", Value: str("7")}}}}, false); err != nil {
				t.Fatal(err)
			}
			if _, err := c.AllocateProducerIDs(ctx, 1, 1000); err != nil {
				t.Fatal(err)
			}
			want := replicatedState(c.Image())
			clusterID := c.Image().ClusterID
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if every > 0 {
				snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
				if len(snaps) == 0 || len(snaps) > 2 {
					t.Errorf("snapshot files: %v", snaps)
				}
			}

			for restart := 1; restart <= 2; restart++ {
				c = startTest(t, cfg)
				im := c.Image()
				if got := replicatedState(im); got != want {
					t.Fatalf("restart %d:\n%s\nwant:\n%s", restart, got, want)
				}
				if im.ClusterID != clusterID || im.Brokers[1].Epoch != int64(1+restart) {
					t.Fatalf("restart %d: cluster %s broker %+v", restart, im.ClusterID, im.Brokers[1])
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			c = startTest(t, cfg)
			if first, err := c.AllocateProducerIDs(ctx, 1, 1000); err != nil || first != 1000 {
				t.Fatalf("producer IDs after restart: %d %v", first, err)
			}
		})
	}
}

func walFrames(t *testing.T, path string) (data []byte, offsets []int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for pos := len(walMagic); pos < len(data); {
		offsets = append(offsets, pos)
		_, _, next, err := readFrame(data, pos)
		if err != nil {
			t.Fatalf("frame at %d: %v", pos, err)
		}
		pos = next
	}
	return data, offsets
}

func TestTornWALTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage rewrites the WAL; frames are the offsets of its frames.
		damage func(data []byte, frames []int) []byte
		// lastSurvives says whether topic "c" (the last proposal) must survive.
		lastSurvives bool
		// corrupt: the damage is not a torn tail; Start must refuse with ErrCorruptStorage.
		corrupt bool
	}{
		{"garbage appended", func(data []byte, _ []int) []byte {
			return append(data, 0, 0, 0, 50, 1, 2, 3, 4, 1, 9, 9)
		}, true, false},
		{"partial header", func(data []byte, _ []int) []byte { return append(data, 0, 0) }, true, false},
		{"zero-filled tail", func(data []byte, _ []int) []byte { return append(data, make([]byte, 12)...) }, true, false},
		{"last frame cut", func(data []byte, frames []int) []byte {
			last := frames[len(frames)-1]
			return data[:last+(len(data)-last)/2]
		}, false, false},
		{"last frame crc", func(data []byte, frames []int) []byte {
			data[frames[len(frames)-1]+5] ^= 0xff
			return data
		}, false, false},
		{"middle frame crc", func(data []byte, frames []int) []byte {
			data[frames[len(frames)/2]+walFrameHeader+2] ^= 0xff
			return data
		}, false, true},
		{"zero length then data", func(data []byte, _ []int) []byte {
			return append(data, 0, 0, 0, 0, 0, 0, 0, 0, 1)
		}, false, true},
		{"frame above limit", func(data []byte, _ []int) []byte {
			hdr := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
			return append(append(data, hdr...), make([]byte, 1<<10)...)
		}, true, false}, // length past the end: indistinguishable from a torn write
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			c, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"a", "b", "c"} {
				mustCreate(t, c, CreateTopic{Name: name, NumPartitions: 2, ReplicationFactor: 1})
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, walFileName)
			data, frames := walFrames(t, path)
			damaged := tc.damage(data, frames)
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}

			if tc.corrupt {
				if c, err := Start(cfg); !errors.Is(err, ErrCorruptStorage) {
					if err == nil {
						c.Close()
					}
					t.Fatalf("Start = %v, want ErrCorruptStorage", err)
				}
				return
			}
			c = startTest(t, cfg)
			im := c.Image()
			if im.Topics["a"] == nil || im.Topics["b"] == nil {
				t.Fatalf("lost committed topics:\n%s", formatImage(im))
			}
			if tc.lastSurvives && im.Topics["c"] == nil {
				t.Fatalf("lost c:\n%s", formatImage(im))
			}
			// The controller works on: a new topic, then another restart with a clean WAL.
			mustCreate(t, c, CreateTopic{Name: "d", NumPartitions: 1, ReplicationFactor: 1})
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			walFrames(t, path) // every frame valid again
			c = startTest(t, cfg)
			if c.Image().Topics["d"] == nil || c.Image().Topics["a"] == nil {
				t.Fatalf("after second restart:\n%s", formatImage(c.Image()))
			}
		})
	}
}

func TestCorruptSnapshotFallsBack(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SnapshotEvery = 1
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, CreateTopic{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	mustCreate(t, c, CreateTopic{Name: "b", NumPartitions: 1, ReplicationFactor: 1})
	want := replicatedState(c.Image())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	if len(snaps) != 2 {
		t.Fatalf("want the newest snapshot and one fallback, got %v", snaps)
	}
	// Damage the newest snapshot: the previous one plus the WAL (which keeps the entries
	// after the previous snapshot) must reproduce the same state.
	data, _ := os.ReadFile(snaps[1])
	data[len(data)-1] ^= 0xff
	if err := os.WriteFile(snaps[1], data, 0o644); err != nil {
		t.Fatal(err)
	}
	c2, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := replicatedState(c2.Image()); got != want {
		t.Fatalf("after fallback:\n%s\nwant:\n%s", got, want)
	}
}

func TestClosedController(t *testing.T) {
	c, err := Start(testConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := c.CreateTopics(testCtx(t), []CreateTopic{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateTopics after Close: %v", err)
	}
	if c.Image() == nil {
		t.Fatal("Image nil after Close")
	}
}

func TestDirectoryLocked(t *testing.T) {
	dir := t.TempDir()
	startTest(t, testConfig(dir))
	if c, err := Start(testConfig(dir)); err == nil {
		c.Close()
		t.Fatal("second controller on the same directory started")
	}
}

func TestAllSnapshotsCorruptIsAnError(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SnapshotEvery = 1
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, CreateTopic{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	mustCreate(t, c, CreateTopic{Name: "b", NumPartitions: 1, ReplicationFactor: 1})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	for _, s := range snaps {
		data, _ := os.ReadFile(s)
		data[len(data)-1] ^= 0xff
		if err := os.WriteFile(s, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The WAL no longer starts at index 1, so without a snapshot the log has a gap: refusing
	// to start beats serving an image that silently lost topics.
	if c, err := Start(cfg); !errors.Is(err, ErrCorruptStorage) {
		if err == nil {
			c.Close()
		}
		t.Fatalf("Start = %v, want ErrCorruptStorage", err)
	}
}

type recordingTransport struct {
	mu   sync.Mutex
	sent int
}

func (r *recordingTransport) Send(msgs []*raftpb.Message) {
	r.mu.Lock()
	r.sent += len(msgs)
	r.mu.Unlock()
}

// TestNotController: a voter of a two-voter quorum that has not been elected answers every
// proposal with NOT_CONTROLLER instead of waiting.
func TestNotController(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Voters = []int32{1, 2}
	cfg.Transport = &recordingTransport{}
	c, err := open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t)
	res, err := c.CreateTopics(ctx, []CreateTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if err != nil || res[0].Err != kerr.NotController {
		t.Fatalf("CreateTopics: %v %+v", err, res)
	}
	dres, err := c.DeleteTopics(ctx, []string{"t"}, nil)
	if err != nil || dres[0].Err != kerr.NotController {
		t.Fatalf("DeleteTopics: %v %+v", err, dres)
	}
	pres, err := c.CreatePartitions(ctx, []CreatePartitions{{Topic: "t", Count: 2}}, false)
	if err != nil || pres[0].Err != kerr.NotController {
		t.Fatalf("CreatePartitions: %v %+v", err, pres)
	}
	ares, err := c.AlterConfigs(ctx, []AlterConfigs{{ResourceType: ResourceTopic, ResourceName: "t"}}, false)
	if err != nil || ares[0].Err != kerr.NotController {
		t.Fatalf("AlterConfigs: %v %+v", err, ares)
	}
	if _, err := c.AllocateProducerIDs(ctx, 1, 10); err != kerr.NotController {
		t.Fatalf("AllocateProducerIDs: %v", err)
	}
	if im := c.Image(); im.ControllerID != -1 {
		t.Fatalf("controller ID %d without a leader", im.ControllerID)
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{NodeID: 1},
		{NodeID: -1, Dir: t.TempDir()},
		{NodeID: 1, Dir: t.TempDir(), Voters: []int32{1, 2}}, // no transport
	} {
		if c, err := Start(cfg); err == nil {
			c.Close()
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
}

func TestOversizedProposalRefused(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	huge := strings.Repeat("x", maxEntryBytes)
	err := c.submit(testCtx(t), &request{plan: func(*Image) []Record {
		return []Record{&ConfigRecord{ResourceType: ResourceBroker, Key: "k", Value: &huge}}
	}})
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("got %v, want POLICY_VIOLATION", err)
	}
	// The controller is unaffected.
	mustCreate(t, c, CreateTopic{Name: "after", NumPartitions: 1, ReplicationFactor: 1})
}

// A broker's own lifecycle change (nonAtomic: registration, heartbeat, fencing) larger than one
// entry is committed in several, in order; a user's request that large is still refused, and so
// is a single record that fits in no entry. A broker with 100,000 partitions could not register
// again after an unclean shutdown before (its ISR removals took 9 MB).
func TestNonAtomicProposalSplitsAcrossEntries(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	quarter := strings.Repeat("q", maxEntryBytes/4)
	var recs []Record
	for i := range 6 {
		recs = append(recs, &ConfigRecord{ResourceType: ResourceBroker, ResourceName: "1", Key: fmt.Sprintf("k%d", i), Value: &quarter})
	}
	if err := c.submit(testCtx(t), &request{plan: func(*Image) []Record { return recs }}); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("atomic request of %d bytes: got %v, want POLICY_VIOLATION", encodedEntrySize(recs), err)
	}
	if got := len(c.Image().BrokerConfigs["1"]); got != 0 {
		t.Fatalf("the refused request left %d configs", got)
	}
	var published *Image
	err := c.submit(testCtx(t), &request{nonAtomic: true, plan: func(*Image) []Record { return recs },
		applied: func(im *Image) { published = im }})
	if err != nil {
		t.Fatalf("non-atomic request of %d bytes: %v", encodedEntrySize(recs), err)
	}
	if got := len(published.BrokerConfigs["1"]); got != len(recs) {
		t.Fatalf("image when the request completed holds %d of its %d configs", got, len(recs))
	}
	if n := len(splitEntries(recs, maxEntryBytes)); n < 2 {
		t.Fatalf("split into %d entries", n)
	}
	huge := strings.Repeat("x", maxEntryBytes)
	err = c.submit(testCtx(t), &request{nonAtomic: true, plan: func(*Image) []Record {
		return []Record{&ConfigRecord{ResourceType: ResourceBroker, Key: "small", Value: &quarter},
			&ConfigRecord{ResourceType: ResourceBroker, Key: "huge", Value: &huge}}
	}})
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("a record larger than an entry: got %v, want POLICY_VIOLATION", err)
	}
	mustCreate(t, c, CreateTopic{Name: "after", NumPartitions: 1, ReplicationFactor: 1})
}

func TestStepAfterClose(t *testing.T) {
	c, err := Start(testConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Step(testCtx(t), nil); err == nil {
		t.Error("Step(nil) accepted")
	}
	// A message for another term is handed to raft, which ignores what it cannot use.
	if err := c.Step(testCtx(t), &raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), From: new(uint64(3)), To: new(uint64(2)), Term: new(uint64(0))}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Step(testCtx(t), &raftpb.Message{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Step after Close: %v", err)
	}
}

func TestAlterConfigsDuplicateKey(t *testing.T) {
	c := startTest(t, testConfig(t.TempDir()))
	res, err := c.AlterConfigs(testCtx(t), []AlterConfigs{{ResourceType: ResourceBroker, ResourceName: "1",
		Ops: []ConfigOp{{Key: "log.retention.ms", Value: str("1")}, {Key: "log.retention.ms"}}}}, false)
	if err != nil || res[0].Err != kerr.InvalidRequest {
		t.Fatalf("%v %+v", err, res)
	}
	if len(c.Image().BrokerConfigs) != 0 {
		t.Fatal("configs changed")
	}
}
