package compattests

// Several log directories (JBOD, log.dirs) on a real process: placement over both, Apache
// Kafka's kafka-log-dirs and kafka-reassign-partitions (log_dirs) against them, and one
// directory failing (a full tmpfs) while the other keeps serving.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startJBOD starts sluice with log.dirs=dirs (the first one also holds the metadata log).
func startJBOD(t *testing.T, dirs ...string) *Broker {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return StartBrokerWith(t, BrokerOptions{Dir: dirs[0]}, "log.dirs="+strings.Join(dirs, ","))
}

// logDirsOf returns, per log directory DescribeLogDirs lists, its error and the partitions of
// topic it holds (not counting future replicas), sorted.
func logDirsOf(t *testing.T, cl *kgo.Client, topic string) map[string]struct {
	Err        error
	Partitions []int32
} {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	out := map[string]struct {
		Err        error
		Partitions []int32
	}{}
	for _, dirs := range all {
		for path, d := range dirs {
			e := out[path]
			e.Err = d.Err
			for _, ps := range d.Topics {
				for _, p := range ps {
					if p.Topic == topic && !p.IsFuture {
						e.Partitions = append(e.Partitions, p.Partition)
					}
				}
			}
			sort.Slice(e.Partitions, func(i, j int) bool { return e.Partitions[i] < e.Partitions[j] })
			out[path] = e
		}
	}
	return out
}

// produceEach produces n acknowledged records to every partition of topic and returns their
// values per partition.
func produceEach(t *testing.T, cl *kgo.Client, topic string, partitions []int32, prefix string, n int) map[int32][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := map[int32][]string{}
	for _, p := range partitions {
		for i := range n {
			v := fmt.Sprintf("%s-%d-%04d", prefix, p, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			out[p] = append(out[p], v)
		}
	}
	return out
}

// consumeOnePartition is consumePartition for a topic some of whose other partitions may have
// no leader (ListOffsets then fails for them only).
func consumeOnePartition(t *testing.T, addr, topic string, partition int32) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, _ := kadm.NewClient(franzClient(t, addr)).ListEndOffsets(ctx, topic)
	end, ok := ends.Lookup(topic, partition)
	if !ok || end.Err != nil {
		t.Fatalf("end offset of %s-%d: %v", topic, partition, end.Err)
	}
	return consumeUpTo(ctx, t, addr, topic, partition, end.Offset)
}

// TestJBODKafkaTools: a broker with two log directories spreads a 6-partition topic 3 and 3;
// Apache Kafka's kafka-log-dirs --describe shows both directories with every partition and a
// size; kafka-reassign-partitions with log_dirs moves a partition to the other directory
// (--verify reports it complete) while every record stays readable; a restart after kill -9
// finds it in its new directory with every record.
func TestJBODKafkaTools(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "d1"), filepath.Join(root, "d2")}
	b := startJBOD(t, dirs...)
	cl := franzClient(t, b.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "spread"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	all := []int32{0, 1, 2, 3, 4, 5}
	acked := produceEach(t, cl, topic, all, "a", 50)
	placed := logDirsOf(t, cl, topic)
	if len(placed) != 2 || len(placed[dirs[0]].Partitions) != 3 || len(placed[dirs[1]].Partitions) != 3 {
		t.Fatalf("placement %+v, want 3 partitions in each of %v", placed, dirs)
	}

	out, _ := javaTool(t, "", "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", b.Addr, "--describe", "--topic-list", topic)
	var described struct {
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				LogDir     string  `json:"logDir"`
				Error      *string `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
					Size      int64  `json:"size"`
					IsFuture  bool   `json:"isFuture"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(jsonLine(out)), &described); err != nil || len(described.Brokers) != 1 {
		t.Fatalf("kafka-log-dirs --describe: %v\n%s", err, out)
	}
	for _, d := range described.Brokers[0].LogDirs {
		if len(d.Partitions) != 3 {
			t.Fatalf("kafka-log-dirs shows %d partitions in %s, want 3:\n%s", len(d.Partitions), d.LogDir, out)
		}
		for _, p := range d.Partitions {
			if p.Size <= 0 {
				t.Fatalf("kafka-log-dirs shows %s empty in %s:\n%s", p.Partition, d.LogDir, out)
			}
		}
	}

	// Move partition 0 to the directory it is not in, with kafka-reassign-partitions.
	from, to := dirs[0], dirs[1]
	if !containsPartition(placed[from].Partitions, 0) {
		from, to = to, from
	}
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d],"log_dirs":[%q]}]}`, topic, 1, to) // node.id defaults to 1
	planFile := filepath.Join(root, "plan.json")
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	javaTool(t, "", reassignCommand, "--bootstrap-server", b.Addr, "--execute", "--reassignment-json-file", planFile)
	waitFor(t, 60*time.Second, "kafka-reassign-partitions --verify to report the move complete", func() error {
		out, _ := javaTool(t, "", reassignCommand, "--bootstrap-server", b.Addr, "--verify", "--reassignment-json-file", planFile)
		if !strings.Contains(out, "Reassignment of replica spread-0-1 completed successfully") {
			return fmt.Errorf("--verify:\n%s", out)
		}
		return nil
	})
	if got := logDirsOf(t, cl, topic); !containsPartition(got[to].Partitions, 0) || containsPartition(got[from].Partitions, 0) {
		t.Fatalf("after the move DescribeLogDirs shows %+v, want %s-0 in %s only", got, topic, to)
	}
	more := produceEach(t, cl, topic, []int32{0}, "b", 20)
	acked[0] = append(acked[0], more[0]...)
	if got := consumePartition(t, b.Addr, topic, 0); strings.Join(got, ",") != strings.Join(acked[0], ",") {
		t.Fatalf("after the move partition 0 holds %d records, want the %d acknowledged", len(got), len(acked[0]))
	}

	b.Kill() // kill -9: the restart recovers the moved log from disk
	b.Restart()
	if got := logDirsOf(t, cl, topic); !containsPartition(got[to].Partitions, 0) || containsPartition(got[from].Partitions, 0) {
		t.Fatalf("after a restart DescribeLogDirs shows %+v, want %s-0 in %s", got, topic, to)
	}
	if _, err := os.Stat(filepath.Join(from, topic+"-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old directory still holds %s-0: %v", topic, err)
	}
	for _, p := range all {
		if got := consumePartition(t, b.Addr, topic, p); strings.Join(got, ",") != strings.Join(acked[p], ",") {
			t.Fatalf("after the restart partition %d holds %d records, want the %d acknowledged", p, len(got), len(acked[p]))
		}
	}
}

func containsPartition(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// jsonLine is the line of a tool's output that holds its JSON document.
func jsonLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			return line
		}
	}
	return ""
}

// TestJBODOneDirectoryFails: of two log directories, the second is a small tmpfs that fills
// up. The partitions in it answer KAFKA_STORAGE_ERROR and DescribeLogDirs reports that
// directory (only) with KAFKA_STORAGE_ERROR, while the partitions of the other directory keep
// taking produce and serving fetches with every record; once space returns the failed
// partitions serve again by themselves, without a restart, with their records.
func TestJBODOneDirectoryFails(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	dirs := []string{filepath.Join(t.TempDir(), "d1"), filepath.Join(mnt, "d2")}
	b := startJBOD(t, dirs...)
	cl := franzClient(t, b.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "halves"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	acked := produceEach(t, cl, topic, []int32{0, 1, 2, 3}, "before", 20)
	placed := logDirsOf(t, cl, topic)
	healthy, failing := placed[dirs[0]].Partitions, placed[dirs[1]].Partitions
	if len(healthy) != 2 || len(failing) != 2 {
		t.Fatalf("placement %+v, want 2 partitions in each directory", placed)
	}

	filler := fillDisk(t, mnt)
	for _, p := range failing {
		code, _, closed := produceRaw(t, b.Addr, produceRequestTo(topic, p, bigBatch("full")))
		if closed || code != int16(kerr.KafkaStorageError.Code) {
			t.Fatalf("produce to %s-%d on the full directory: code %d (closed %v), want KAFKA_STORAGE_ERROR", topic, p, code, closed)
		}
	}
	// The other directory's partitions serve as before, records and all.
	more := produceEach(t, cl, topic, healthy, "during", 50)
	for _, p := range healthy {
		acked[p] = append(acked[p], more[p]...)
		if got := consumeOnePartition(t, b.Addr, topic, p); strings.Join(got, ",") != strings.Join(acked[p], ",") {
			t.Fatalf("healthy partition %d holds %d records, want the %d acknowledged", p, len(got), len(acked[p]))
		}
	}
	now := logDirsOf(t, cl, topic)
	if err := now[dirs[1]].Err; !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("DescribeLogDirs error for the full directory: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if err := now[dirs[0]].Err; err != nil || len(now[dirs[0]].Partitions) != 2 {
		t.Fatalf("DescribeLogDirs for the healthy directory: %v, partitions %v", err, now[dirs[0]].Partitions)
	}
	if !b.Alive() {
		t.Fatal("sluice exited when one log directory filled up")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, p := range failing {
		waitFor(t, storageRecoverTimeout, fmt.Sprintf("%s-%d to take produce after space returned", topic, p), func() error {
			code, _, _ := produceRaw(t, b.Addr, produceRequestTo(topic, p, recordBatch("after")))
			if code != 0 {
				return kerr.ErrorForCode(code)
			}
			return nil
		})
		got := consumeOnePartition(t, b.Addr, topic, p)
		checkAllPresent(t, got, acked[p])
	}
	if err := logDirsOf(t, cl, topic)[dirs[1]].Err; err != nil {
		t.Fatalf("DescribeLogDirs after recovery: %v", err)
	}
	if strings.Contains(b.Log(), "panic") {
		t.Fatal("sluice logged a panic")
	}
}

// TestJBODClusterMove: on three nodes with two log directories each, the replicas of an RF 3
// partition (the leader's and both followers') are moved to their other directory with
// AlterReplicaLogDirs while an acks=all producer writes. Every move completes, the ISR is
// whole again afterwards, and every acknowledged record is read back.
func TestJBODClusterMove(t *testing.T) {
	root := t.TempDir()
	nodes := map[int]clusterNode{}
	for i := range 3 {
		d1, d2 := filepath.Join(root, fmt.Sprintf("n%d-d1", i+1)), filepath.Join(root, fmt.Sprintf("n%d-d2", i+1))
		nodes[i] = clusterNode{Dir: d1, Settings: []string{"log.dirs=" + d1 + "," + d2}}
	}
	c := startClusterNodes(t, []string{RoleCombined, RoleBroker, RoleBroker}, nodes, clusterSettings...)
	n1 := c.Nodes[0]
	waitFor(t, clusterDeadline, "three brokers in Metadata", func() error {
		ids, err := liveBrokers(n1.Addr)
		if err != nil || len(ids) != 3 {
			return fmt.Errorf("brokers %v (%v)", ids, err)
		}
		return nil
	})
	createAssigned(t, n1.Addr, "mv", []int32{1, 2, 3}, "min.insync.replicas=2")
	waitPartition(t, n1.Addr, "mv", "a full ISR led by 1", elrState{Leader: 1, ISR: []int32{1, 2, 3}})
	cl := franzClient(t, n1.Addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RetryTimeout(clusterDeadline))
	acked := produceAckedValues(t, cl, "mv", "before", 100)

	// A producer writes through the moves.
	stop := make(chan struct{})
	type result struct {
		values []string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		ctx, cancel := context.WithTimeout(context.Background(), 2*clusterDeadline)
		defer cancel()
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- r
				return
			default:
			}
			v := fmt.Sprintf("during-%05d", i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "mv", Value: []byte(v)}).FirstErr(); err != nil {
				r.err = fmt.Errorf("produce %s: %w", v, err)
				done <- r
				return
			}
			r.values = append(r.values, v)
		}
	}()

	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterDeadline)
	defer cancel()
	targets := map[int32]string{}
	for id := int32(1); id <= 3; id++ {
		waitFor(t, clusterDeadline, fmt.Sprintf("node %d to host mv-0", id), func() error {
			dirs, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
			if err != nil {
				return err
			}
			hosted := false
			for path, d := range dirs {
				if _, has := d.Topics["mv"]; has {
					hosted = true
				} else {
					targets[id] = path
				}
			}
			if !hosted || targets[id] == "" {
				return fmt.Errorf("node %d's directories: %+v", id, dirs)
			}
			return nil
		})
		req := kadm.AlterReplicaLogDirsReq{}
		req.Add(targets[id], kadm.TopicsSet{"mv": {0: {}}})
		resp, err := adm.AlterBrokerReplicaLogDirs(ctx, id, req)
		if err != nil {
			t.Fatalf("AlterReplicaLogDirs on %d: %v", id, err)
		}
		resp.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil {
				t.Fatalf("AlterReplicaLogDirs on %d: %s-%d: %v", id, r.Topic, r.Partition, r.Err)
			}
		})
	}
	for id, target := range targets {
		waitFor(t, clusterDeadline, fmt.Sprintf("mv-0 on node %d in %s", id, target), func() error {
			dirs, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
			if err != nil {
				return err
			}
			for path, d := range dirs {
				for _, p := range d.Topics["mv"] {
					if p.IsFuture || path != target {
						return fmt.Errorf("mv-0 in %s (future %v)", path, p.IsFuture)
					}
				}
			}
			if _, in := dirs[target].Topics["mv"][0]; !in {
				return fmt.Errorf("not yet in %s", target)
			}
			return nil
		})
	}
	close(stop)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.values) == 0 {
		t.Fatal("nothing was produced during the moves")
	}
	acked = append(acked, r.values...)
	waitPartition(t, n1.Addr, "mv", "a full ISR again", elrState{Leader: 1, ISR: []int32{1, 2, 3}})
	acked = append(acked, produceAckedValues(t, cl, "mv", "after", 20)...)
	checkAllPresent(t, consumeAll(t, n1.Addr, "mv"), acked)
}

// TestJBODClusterOneDirectoryFails: node 2 of three has two log directories, the second a
// small tmpfs that fills up. Node 2 leads two RF 3 partitions, one in each directory. When
// the full directory fails, node 2 reports it (BrokerHeartbeat OfflineLogDirs) and the
// controller, told which directory holds each replica (AssignReplicasToDirs), moves only that
// partition's leadership to another in-sync replica; the partition in the healthy directory
// stays led by node 2 with its full ISR. Acks=all producers keep writing to both. Once space
// returns node 2 rejoins the moved partition's ISR without a restart; every acknowledged
// record is read back.
func TestJBODClusterOneDirectoryFails(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	root := t.TempDir()
	d1, d2 := filepath.Join(root, "n2-d1"), filepath.Join(mnt, "n2-d2")
	c := startClusterNodes(t, []string{RoleCombined, RoleBroker, RoleBroker},
		map[int]clusterNode{1: {Dir: d1, Settings: []string{"log.dirs=" + d1 + "," + d2}}},
		clusterSettings...)
	n1, b2 := c.Nodes[0], c.Nodes[1]
	waitFor(t, clusterDeadline, "three brokers in Metadata", func() error {
		ids, err := liveBrokers(n1.Addr)
		if err != nil || len(ids) != 3 {
			return fmt.Errorf("brokers %v (%v)", ids, err)
		}
		return nil
	})
	for _, topic := range []string{"ta", "tb"} {
		createAssigned(t, n1.Addr, topic, []int32{2, 3, 1}, "min.insync.replicas=2")
		waitPartition(t, n1.Addr, topic, "a full ISR led by 2", elrState{Leader: 2, ISR: []int32{1, 2, 3}})
	}
	cl := franzClient(t, n1.Addr, kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterDeadline)
	defer cancel()
	failing, healthy := "", ""
	waitFor(t, clusterDeadline, "node 2 to host one partition in each directory", func() error {
		dirs, err := kadm.NewClient(cl).DescribeBrokerLogDirs(ctx, 2, nil)
		if err != nil {
			return err
		}
		failing, healthy = "", ""
		for _, topic := range []string{"ta", "tb"} {
			if _, in := dirs[d2].Topics[topic]; in {
				failing = topic
			} else if _, in := dirs[d1].Topics[topic]; in {
				healthy = topic
			}
		}
		if failing == "" || healthy == "" {
			return fmt.Errorf("node 2's directories: %+v", dirs)
		}
		return nil
	})
	acked := map[string][]string{}
	for _, topic := range []string{"ta", "tb"} {
		acked[topic] = produceAckedValues(t, franzClient(t, n1.Addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic)), topic, "before", 30)
	}

	filler := fillDisk(t, mnt)
	code, _, closed := produceRaw(t, b2.Addr, produceRequest(failing, bigBatch("full")))
	if closed || (code != kerr.KafkaStorageError.Code && code != kerr.NotLeaderForPartition.Code) {
		t.Fatalf("produce to %s on the full directory: code %d (closed %v)", failing, code, closed)
	}
	waitFor(t, clusterDeadline, "leadership of "+failing+" moved off 2", func() error {
		p, err := describeTopicPartition(n1.Addr, failing)
		if err != nil {
			return err
		}
		if p.Leader == 2 || p.Leader == -1 || slices.Contains(p.ISR, 2) {
			return fmt.Errorf("%s-0: %v, want another leader and 2 out of the ISR", failing, p)
		}
		return nil
	})
	if p, err := describeTopicPartition(n1.Addr, healthy); err != nil || p.Leader != 2 || len(p.ISR) != 3 {
		t.Fatalf("%s-0 (node 2's healthy directory) after the other failed: %v (%v), want still led by 2 with a full ISR", healthy, p, err)
	}
	for _, topic := range []string{"ta", "tb"} {
		acked[topic] = append(acked[topic], produceAckedValues(t, franzClient(t, n1.Addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic)), topic, "during", 30)...)
	}
	if p, err := describeTopicPartition(n1.Addr, healthy); err != nil || p.Leader != 2 {
		t.Fatalf("%s-0 after producing: %v (%v), want still led by 2", healthy, p, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, storageRecoverTimeout, "2 back in the ISR of "+failing, func() error {
		p, err := describeTopicPartition(n1.Addr, failing)
		if err != nil {
			return err
		}
		if !slices.Contains(p.ISR, 2) || len(p.ISR) != 3 {
			return fmt.Errorf("%s-0: %v", failing, p)
		}
		return nil
	})
	for _, topic := range []string{"ta", "tb"} {
		checkAllPresent(t, consumeAll(t, n1.Addr, topic), acked[topic])
	}
	if !b2.Alive() {
		t.Fatal("node 2 exited")
	}
}
