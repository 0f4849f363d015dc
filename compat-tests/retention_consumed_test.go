package compattests

// retention.consumed.groups (sluice's own retention "until consumed") against a real process:
// set with Kafka's kafka-configs, consumed by kcat and franz-go consumer groups, observed on
// disk, through ListOffsets, Fetch, DescribeLogDirs and the metrics endpoint.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const consumedRecords = 300

// consumedRun is one node or cluster the scenario runs against.
type consumedRun struct {
	nodes []*Broker
	bases []string // each node's metrics endpoint
	rf    int16
	// setGroups sets retention.consumed.groups=g1,g2 on the topic.
	setGroups func(t *testing.T, topic string)
	// assignment, if set, is the topic's replica assignment (its first replica the preferred
	// leader).
	assignment func(t *testing.T) []int32
}

// TestRetentionConsumedSingleNode: with retention.consumed.groups=g1,g2 (set by
// kafka-configs) a segment disappears only once both groups have committed past it.
func TestRetentionConsumedSingleNode(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	b := StartBrokerWith(t, BrokerOptions{Flags: []string{"--http-addr", addr}}, "log.retention.check.interval.ms=200")
	run := consumedRun{nodes: []*Broker{b}, bases: []string{"http://" + addr}, rf: 1}
	run.setGroups = func(t *testing.T, topic string) {
		javaTool(t, "", "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.Addr, "--entity-type", "topics",
			"--entity-name", topic, "--alter", "--add-config", "retention.consumed.groups=[g1,g2]")
		out, _ := javaTool(t, "", "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.Addr, "--entity-type", "topics",
			"--entity-name", topic, "--describe")
		if !strings.Contains(out, "retention.consumed.groups=g1,g2") {
			t.Fatalf("kafka-configs --describe does not show the setting:\n%s", out)
		}
	}
	run.scenario(t)
}

// TestRetentionConsumedCluster: the same on three nodes with a replicated topic whose leader
// is not the groups' coordinator (one __consumer_offsets partition, so one coordinator for
// both): the leader asks that node for the committed offsets, and every replica drops the
// segment.
func TestRetentionConsumedCluster(t *testing.T) {
	c, bases := startClusterWithHTTP(t, 3, "log.retention.check.interval.ms=200", "offsets.topic.num.partitions=1")
	run := consumedRun{nodes: c.Nodes, bases: bases, rf: 3}
	run.assignment = func(t *testing.T) []int32 {
		adm := run.admin(t)
		var coordinator int32 = -1
		waitFor(t, 60*time.Second, "a coordinator for g1 and g2", func() error {
			for _, g := range []string{"g1", "g2"} {
				resp := adm.FindGroupCoordinators(context.Background(), g)[g]
				if resp.Err != nil {
					return resp.Err
				}
				coordinator = resp.NodeID
			}
			return nil
		})
		var replicas []int32
		for id := int32(1); id <= 3; id++ {
			if id != coordinator {
				replicas = append(replicas, id)
			}
		}
		t.Logf("groups' coordinator: node %d; the topic's preferred leader: node %d", coordinator, replicas[0])
		return append(replicas, coordinator)
	}
	run.setGroups = func(t *testing.T, topic string) {
		adm := run.admin(t)
		resp, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "retention.consumed.groups", Value: kadm.StringPtr("g1,g2")}}, topic)
		if err == nil {
			for _, r := range resp {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatalf("alter configs: %v", err)
		}
	}
	run.scenario(t)
}

func (r *consumedRun) addrs() []string {
	var out []string
	for _, n := range r.nodes {
		out = append(out, n.Addr)
	}
	return out
}

func (r *consumedRun) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(r.addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (r *consumedRun) admin(t *testing.T) *kadm.Client { return kadm.NewClient(r.client(t)) }

// gauge sums a series over every node's /metrics (only a partition's leader reports these).
func (r *consumedRun) gauge(t *testing.T, name string, labels map[string]string) (float64, int) {
	var sum float64
	n := 0
	for _, base := range r.bases {
		v, k := series(scrape(t, base), name, labels)
		sum, n = sum+v, n+k
	}
	return sum, n
}

// waitGroupSeen waits until a retention pass has read group's committed offset want.
func (r *consumedRun) waitGroupSeen(t *testing.T, topic, group string, want int64) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("a retention pass to see %s at %d", group, want), func() error {
		v, n := r.gauge(t, "sluice_retention_consumed_group_offset", map[string]string{"group": group, "topic": topic, "partition": "0"})
		if n != 1 || int64(v) != want {
			return fmt.Errorf("%d series, value %v", n, v)
		}
		return nil
	})
}

func (r *consumedRun) scenario(t *testing.T) {
	const topic = "consumed-jobs"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := r.admin(t)
	seg := "4096"
	if r.assignment == nil {
		if resp, err := adm.CreateTopic(ctx, 1, r.rf, map[string]*string{"internal.segment.bytes": &seg}, topic); err != nil || resp.Err != nil {
			t.Fatalf("create topic: %v %v", err, resp.Err)
		}
	} else {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = 0, r.assignment(t)
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		rc := kmsg.NewCreateTopicsRequestTopicConfig()
		rc.Name, rc.Value = "internal.segment.bytes", &seg
		rt.Configs = append(rt.Configs, rc)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, r.client(t))
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("create topic: %v", err)
		}
	}
	r.setGroups(t, topic)
	producer := r.client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range consumedRecords {
		rec := &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "job-%04d-%s", i, strings.Repeat("x", 80))}
		if err := producer.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	dirs := make([]string, len(r.nodes))
	for i, n := range r.nodes {
		dirs[i] = filepath.Join(n.Dir, topic+"-0")
	}
	// Every replica has the same segments once the followers caught up.
	waitFor(t, 60*time.Second, "every replica to hold several segments from offset 0", func() error {
		for _, d := range dirs {
			if bases := segmentBases(t, d); len(bases) < 5 || bases[0] != 0 {
				return fmt.Errorf("%s: segments %v", d, bases)
			}
		}
		return nil
	})

	// g1 reads everything with kcat, which commits when it closes.
	kcatBin := lookPath(t, "kcat")
	out := runCmd(t, 90*time.Second, "", kcatBin, "-b", strings.Join(r.addrs(), ","), "-q",
		"-X", "auto.offset.reset=earliest", "-G", "g1", "-c", strconv.Itoa(consumedRecords), "-f", `%s\n`, topic)
	if n := len(strings.Fields(out)); n != consumedRecords {
		t.Fatalf("kcat (g1) read %d records, want %d", n, consumedRecords)
	}
	waitCommitted(t, adm, "g1", topic, consumedRecords)
	r.waitGroupSeen(t, topic, "g1", consumedRecords)
	// A pass has run since g1 committed everything: g2, which never committed, holds it all.
	if start := startOffset(t, adm, topic); start != 0 {
		t.Fatalf("log start %d while g2 has not committed", start)
	}
	for _, d := range dirs {
		if bases := segmentBases(t, d); bases[0] != 0 {
			t.Fatalf("%s lost segments while g2 has not committed: %v", d, bases)
		}
	}
	if held, _ := r.gauge(t, "sluice_retention_consumed_held_bytes", map[string]string{"group": "g2", "topic": topic}); held <= 0 {
		t.Fatalf("g2 holds %v bytes, want every closed segment", held)
	}
	if held, n := r.gauge(t, "sluice_retention_consumed_held_bytes", map[string]string{"group": "g1", "topic": topic}); n != 1 || held != 0 {
		t.Fatalf("g1 (consumed everything) holds %v bytes (%d series)", held, n)
	}
	// DescribeLogDirs, read with kadm, keeps Kafka's shape: the partition's size counts the held
	// bytes, and the held bytes the metric names g2 for are every closed segment on the leader's
	// disk.
	sizeHeld := r.waitHeldInLogDirs(t, ctx, topic, "g2")

	// g2 reads half with a franz-go group consumer and commits what it read.
	const half = consumedRecords / 2
	g2 := r.client(t, kgo.ConsumerGroup("g2"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var read []*kgo.Record
	for len(read) < half {
		fs := g2.PollRecords(ctx, half-len(read))
		if err := fs.Err0(); err != nil {
			t.Fatalf("g2 poll: %v", err)
		}
		read = append(read, fs.Records()...)
	}
	if err := g2.CommitRecords(ctx, read...); err != nil {
		t.Fatalf("g2 commit: %v", err)
	}
	g2.Close()
	waitCommitted(t, adm, "g2", topic, half)
	r.waitGroupSeen(t, topic, "g2", half)
	var start int64
	waitFor(t, 30*time.Second, "the log start to move past what both groups consumed", func() error {
		if start = startOffset(t, adm, topic); start == 0 || start > half {
			return fmt.Errorf("log start %d", start)
		}
		return nil
	})
	// Every replica deletes the segments below the leader's log start.
	waitFor(t, 60*time.Second, "every replica to drop the consumed segments", func() error {
		for _, d := range dirs {
			if bases := segmentBases(t, d); bases[0] > start || bases[0] == 0 {
				return fmt.Errorf("%s: segments %v, log start %d", d, bases, start)
			}
		}
		return nil
	})
	// Now g2 holds the closed segments past what it consumed, DescribeLogDirs counts only what
	// is left, and g1 still holds nothing.
	if sizeLeft := r.waitHeldInLogDirs(t, ctx, topic, "g2"); sizeLeft >= sizeHeld {
		t.Fatalf("DescribeLogDirs size %d after the consumed segments went, %d before", sizeLeft, sizeHeld)
	}
	if held, n := r.gauge(t, "sluice_retention_consumed_held_bytes", map[string]string{"group": "g1", "topic": topic}); n != 1 || held != 0 {
		t.Fatalf("g1 holds %v bytes (%d series) after the segments went", held, n)
	}
	// A consumer that rewinds below the log start is told OFFSET_OUT_OF_RANGE.
	if code := fetchFromLeader(t, ctx, r, topic, 0); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch at 0 below log start %d answered %v, want OFFSET_OUT_OF_RANGE", start, kerr.ErrorForCode(code))
	}
	if code := fetchFromLeader(t, ctx, r, topic, start); code != 0 {
		t.Fatalf("fetch at the log start %d answered %v", start, kerr.ErrorForCode(code))
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("log start %d after g1 committed %d and g2 %d; the partition's leader: node %d", start, consumedRecords, half, md.Topics[topic].Partitions[0].Leader)
}

// waitHeldInLogDirs waits until, on the partition's leader, the bytes the metric says holder
// holds back are the closed segments' files on its disk, and DescribeLogDirs (kadm) reports the
// partition's size as the bytes of every segment file there (the held ones and the active
// one); it returns that size.
func (r *consumedRun) waitHeldInLogDirs(t *testing.T, ctx context.Context, topic, holder string) int64 {
	t.Helper()
	adm := r.admin(t)
	var size int64
	waitFor(t, 60*time.Second, fmt.Sprintf("DescribeLogDirs and the metrics to agree on what %s holds", holder), func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		leader := md.Topics[topic].Partitions[0].Leader
		node := r.nodes[0]
		if len(r.nodes) > 1 {
			node = r.nodes[leader-1] // cluster nodes are numbered from 1 in order
		}
		dir := filepath.Join(node.Dir, topic+"-0")
		var closed, total int64
		bases := segmentBases(t, dir)
		for i, base := range bases {
			fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
			if err != nil {
				return err
			}
			total += fi.Size()
			if i < len(bases)-1 {
				closed += fi.Size()
			}
		}
		dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return err
		}
		var described int64 = -1
		dirs.Each(func(d kadm.DescribedLogDir) {
			if p, ok := d.Topics[topic][0]; ok && d.Broker == leader && d.Err == nil {
				described = p.Size
			}
		})
		held, n := r.gauge(t, "sluice_retention_consumed_held_bytes", map[string]string{"group": holder, "topic": topic, "partition": "0"})
		if n != 1 || int64(held) != closed || described != total {
			return fmt.Errorf("%s holds %v bytes (%d series), closed segments on disk %d; DescribeLogDirs size %d, segment files %d",
				holder, held, n, closed, described, total)
		}
		size = described
		return nil
	})
	return size
}

func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, want int64) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%s committed at %d", group, want), func() error {
		got, err := groupsCommitted(t, adm, group, topic)
		if err != nil {
			return err
		}
		if got[0] != want {
			return fmt.Errorf("committed %v", got)
		}
		return nil
	})
}

func startOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	offs, err := adm.ListStartOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("ListOffsets earliest: %v", o.Err)
	}
	return o.Offset
}

// fetchFromLeader sends a Fetch of topic/0 at offset to the partition's leader and returns
// the partition's error code.
func fetchFromLeader(t *testing.T, ctx context.Context, r *consumedRun, topic string, offset int64) int16 {
	t.Helper()
	cl := r.client(t)
	md, err := kadm.NewClient(cl).Metadata(ctx, topic) // cl learns the brokers' addresses
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	leader := td.Partitions[0].Leader
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
