package compattests

// Real damage, real process: sluice's log directory on a small tmpfs that the tests fill to
// ENOSPC and free again. For each defect class: no acknowledged record is lost, the broker
// answers KAFKA_STORAGE_ERROR and reports the partition offline (never a zombie that looks
// healthy), and it serves again by itself once the disk has room, without a restart.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// storageRecoverTimeout bounds how long sluice may take to serve again after space returns
// (its retry backoff is at most 5 s).
const storageRecoverTimeout = 45 * time.Second

// mountTmpfs mounts a tmpfs of the given size (e.g. "8m") on a fresh directory and unmounts it
// in t.Cleanup (registered first, so it runs after the broker's stop). The tests run as root;
// a failed mount fails the test.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s tmpfs %s: %v: %s (these tests need root and mount)", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			// Lazily, if a process still holds it; the test already failed or will.
			exec.Command("umount", "-l", dir).Run()
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// startBrokerIn is StartBroker with the log directory at dir.
func startBrokerIn(t *testing.T, dir string, settings ...string) *Broker {
	t.Helper()
	return StartBrokerWith(t, BrokerOptions{Dir: dir}, settings...)
}

// fillDisk writes a filler file in dir until the file system is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("creating the filler file: %v", err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for size := len(chunk); size > 0; {
		if _, err := f.Write(chunk[:size]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			size /= 2 // fill the last pages too
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Bavail != 0 {
		t.Fatalf("%s still has %d free blocks after filling", dir, st.Bavail)
	}
	return path
}

func franzClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceAckedValues produces n records with franz-go (acks=all, idempotent) and returns their
// values; every one was acknowledged.
func produceAckedValues(t *testing.T, cl *kgo.Client, topic, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var values []string
	for i := range n {
		v := fmt.Sprintf("%s-%05d-%s", prefix, i, strings.Repeat("x", 200))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		values = append(values, v)
	}
	return values
}

// consumeAll reads topic's partition 0 from the start to its end and returns the values.
func consumeAll(t *testing.T, addr, topic string) []string {
	t.Helper()
	cl := franzClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	if end.Err != nil {
		t.Fatalf("end offset: %v", end.Err)
	}
	consumer := franzClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var values []string
	for next := int64(0); next < end.Offset; {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed up to %d of %d: %v", next, end.Offset, err)
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) {
			values = append(values, string(r.Value))
			next = r.Offset + 1
		})
	}
	return values
}

// checkAllPresent fails unless every value in acked was consumed.
func checkAllPresent(t *testing.T, consumed, acked []string) {
	t.Helper()
	have := make(map[string]bool, len(consumed))
	for _, v := range consumed {
		have[v] = true
	}
	for _, v := range acked {
		if !have[v] {
			t.Fatalf("acknowledged record %.20q... lost (%d consumed, %d acknowledged)", v, len(consumed), len(acked))
		}
	}
}

// bigBatch is a batch larger than a page, so that appending it needs new blocks.
func bigBatch(tag string) []byte {
	return recordBatch(tag + "-" + strings.Repeat("y", 96<<10))
}

// partitionState is what a fresh Metadata request says about partition 0 of topic (kadm's
// Metadata may answer from the client's cache).
func partitionState(t *testing.T, cl *kgo.Client, topic string) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata has no partitions for %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

func offline(p kmsg.MetadataResponseTopicPartition) bool {
	return p.Leader == -1 || len(p.OfflineReplicas) > 0
}

// logDirError is the error DescribeLogDirs reports for the broker's (only) log directory.
func logDirError(t *testing.T, cl *kgo.Client) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dirs, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	for _, bd := range dirs {
		for _, d := range bd {
			return d.Err
		}
	}
	t.Fatal("DescribeLogDirs listed no directory")
	return nil
}

// TestStorageFullProduceRecovers: a full disk fails a partition's appends. Produce must get
// KAFKA_STORAGE_ERROR (56), not the NOT_LEADER_OR_FOLLOWER that made clients retry forever,
// Metadata and DescribeLogDirs must show the partition offline, and once the filler is deleted
// produce must succeed again without a restart, with every earlier acknowledged record intact.
func TestStorageFullProduceRecovers(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	b := startBrokerIn(t, filepath.Join(mnt, "data"))
	cl := franzClient(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "disk-full"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	acked := produceAckedValues(t, cl, topic, "before", 200)

	filler := fillDisk(t, mnt)
	// A small append may still fit in the segment's last page; one larger than a page cannot.
	code, _, closed := produceRaw(t, b.Addr, produceRequest(topic, bigBatch("full")))
	if closed || code != int16(kerr.KafkaStorageError.Code) {
		t.Fatalf("produce on a full disk: code %d (closed %v), want KAFKA_STORAGE_ERROR (56)", code, closed)
	}
	// It stays failed while the disk is full, and says so.
	code, _, _ = produceRaw(t, b.Addr, produceRequest(topic, recordBatch("small")))
	if code != int16(kerr.KafkaStorageError.Code) {
		t.Fatalf("second produce on a full disk: code %d, want KAFKA_STORAGE_ERROR (56)", code)
	}
	if p := partitionState(t, cl, topic); !offline(p) {
		t.Fatalf("Metadata shows the failed partition healthy: leader %d, offline replicas %v", p.Leader, p.OfflineReplicas)
	}
	if err := logDirError(t, cl); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("DescribeLogDirs error for the failed log dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if !b.Alive() {
		t.Fatal("sluice exited on a full disk")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, storageRecoverTimeout, "produce succeeds after space returns", func() error {
		conn, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		resp := kmsg.NewPtrProduceResponse()
		if err := roundTrip(conn, produceRequest(topic, recordBatch("after-raw")), resp, 3); err != nil {
			return err
		}
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			return fmt.Errorf("produce error code %d", c)
		}
		return nil
	})
	if p := partitionState(t, cl, topic); offline(p) || p.ErrorCode != 0 {
		t.Fatalf("Metadata after recovery: leader %d, offline replicas %v, error code %d", p.Leader, p.OfflineReplicas, p.ErrorCode)
	}
	if err := logDirError(t, cl); err != nil {
		t.Fatalf("DescribeLogDirs after recovery: %v", err)
	}
	acked = append(acked, produceAckedValues(t, cl, topic, "after", 50)...)
	consumed := consumeAll(t, b.Addr, topic)
	checkAllPresent(t, consumed, acked)
	for _, v := range consumed {
		if strings.HasPrefix(v, "full-") {
			t.Logf("note: the failed batch is in the log (its write completed before the failure); it was answered with an error")
		}
	}
	if bytes.Contains([]byte(b.Log()), []byte("panic")) {
		t.Fatal("sluice logged a panic")
	}
}

// firstErrorLine returns the first log line at level ERROR (or sluice's exit message).
func firstErrorLine(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "sluice: ") {
			return line
		}
	}
	return ""
}

// TestStartOnFullDiskNamesCause: a start on a full disk after a kill -9 (recovery has work to
// do on 50 partitions) used to exit with 50 joined errors. The first error line must name the
// real cause — ENOSPC and the path it hit — without a flood after it; the node serves (the
// partitions it cannot open are offline, KAFKA_STORAGE_ERROR) and once space returns every
// partition serves by itself, without a restart, with every acknowledged record.
func TestStartOnFullDiskNamesCause(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	b := startBrokerIn(t, filepath.Join(mnt, "data"))
	cl := franzClient(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, partitions = "start-full", 50
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var acked []string
	for i := range 200 {
		v := fmt.Sprintf("start-%04d", i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, v)
	}
	cl.Close()
	b.Kill()
	filler := fillDisk(t, mnt)
	logBefore := len(b.Log())
	b.Restart() // fails the test if sluice exits instead of serving

	cl = franzClient(t, b.Addr)
	offlineCount := 0
	for p := range int32(partitions) {
		code, _, _ := produceRaw(t, b.Addr, produceRequestTo(topic, p, bigBatch("while-full")))
		if code != 0 && code != int16(kerr.KafkaStorageError.Code) {
			t.Fatalf("produce to partition %d on a full disk: code %d, want 0 or KAFKA_STORAGE_ERROR", p, code)
		}
		if code != 0 {
			offlineCount++
		}
	}
	if offlineCount == 0 {
		t.Fatal("every partition took a 96 KiB batch on a full disk")
	}
	runLog := b.Log()[logBefore:]
	first := firstErrorLine(runLog)
	if !strings.Contains(first, "no space left on device") || !strings.Contains(first, mnt) {
		t.Fatalf("first error line does not name ENOSPC and the path it hit:\n%s", first)
	}
	if n := strings.Count(runLog, "level=ERROR"); n > 2*partitions {
		t.Fatalf("%d error lines for %d partitions on a full disk", n, partitions)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		waitFor(t, storageRecoverTimeout, fmt.Sprintf("partition %d serves after space returns", p), func() error {
			code, _, _ := produceRaw(t, b.Addr, produceRequestTo(topic, p, recordBatch("after")))
			if code != 0 {
				return fmt.Errorf("produce error code %d", code)
			}
			return nil
		})
	}
	var consumed []string
	for p := range int32(partitions) {
		consumed = append(consumed, consumePartition(t, b.Addr, topic, p)...)
	}
	checkAllPresent(t, consumed, acked)
}

// produceRequestTo is produceRequest to another partition.
func produceRequestTo(topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := produceRequest(topic, batch)
	req.Topics[0].Partitions[0].Partition = partition
	return req
}

// consumePartition reads one partition from the start to its end.
func consumePartition(t *testing.T, addr, topic string, partition int32) []string {
	t.Helper()
	cl := franzClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, partition)
	if end.Err != nil {
		t.Fatalf("end offset of %s-%d: %v", topic, partition, end.Err)
	}
	values := consumeUpTo(ctx, t, addr, topic, partition, end.Offset)
	cl.Close()
	return values
}

// consumeUpTo reads one partition from its start up to (not including) offset end.
func consumeUpTo(ctx context.Context, t *testing.T, addr, topic string, partition int32, end int64) []string {
	t.Helper()
	consumer := franzClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	defer consumer.Close()
	var values []string
	for next := int64(0); next < end; {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s-%d: consumed up to %d of %d: %v", topic, partition, next, end, err)
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) {
			values = append(values, string(r.Value))
			next = r.Offset + 1
		})
	}
	return values
}

// createTopicErr creates topic with kadm and returns the per-topic error (nil on success).
func createTopicErr(t *testing.T, cl *kgo.Client, partitions int32, topic string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// commitErr commits offset for group on topic's partition 0 and returns the error.
func commitErr(t *testing.T, cl *kgo.Client, group, topic string, offset int64) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset, LeaderEpoch: -1})
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, os)
	if err != nil {
		return err
	}
	return resp.Error()
}

// TestStorageFullCreateTopicsAndCommits: on a full disk CreateTopics must not answer success
// (its partition files, or the metadata WAL, cannot be written) and must answer
// KAFKA_STORAGE_ERROR rather than NOT_CONTROLLER after its timeout; an offset commit must be
// answered with an error, not hang. Once the filler is deleted both work again without a
// restart: the metadata WAL recovers, the topic serves, commits are stored.
func TestStorageFullCreateTopicsAndCommits(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	b := startBrokerIn(t, filepath.Join(mnt, "data"))
	cl := franzClient(t, b.Addr)
	if err := createTopicErr(t, cl, 1, "orders"); err != nil {
		t.Fatal(err)
	}
	produceAckedValues(t, cl, "orders", "o", 20)
	if err := commitErr(t, cl, "g", "orders", 10); err != nil {
		t.Fatalf("commit before the disk filled: %v", err)
	}

	filler := fillDisk(t, mnt)
	// One partition: the metadata records may fit the WAL's last page, the partition's files
	// cannot. Two hundred: the WAL write itself fails.
	for _, c := range []struct {
		topic      string
		partitions int32
	}{{"one-partition", 1}, {"many-partitions", 200}} {
		err := createTopicErr(t, cl, c.partitions, c.topic)
		if err == nil {
			t.Fatalf("CreateTopics %s on a full disk answered success", c.topic)
		}
		if !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("CreateTopics %s on a full disk: %v, want KAFKA_STORAGE_ERROR", c.topic, err)
		}
	}
	// The 200-partition CreateTopics must have hit the metadata WAL itself, or the test lost
	// its point (the log line may reach us a little after the answer).
	waitFor(t, 10*time.Second, "a failed metadata WAL write in the log", func() error {
		if !strings.Contains(b.Log(), "metadata WAL write failed") {
			return errors.New("not logged")
		}
		return nil
	})
	for i := range 5 {
		if err := commitErr(t, cl, "g", "orders", 11+int64(i)); err == nil {
			// A small commit may still fit the offsets log's last page; keep going
			// until one needs a new one.
			continue
		} else if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("offset commit on a full disk hung: %v", err)
		}
		break
	}
	if !b.Alive() {
		t.Fatal("sluice exited on a full disk")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, storageRecoverTimeout, "CreateTopics succeeds after space returns", func() error {
		return createTopicErr(t, cl, 3, "after-space")
	})
	for _, topic := range []string{"one-partition", "many-partitions"} {
		waitFor(t, storageRecoverTimeout, topic+" exists and serves", func() error {
			if err := createTopicErr(t, cl, 1, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				return err
			}
			code, _, _ := produceRaw(t, b.Addr, produceRequest(topic, recordBatch("v")))
			if code != 0 {
				return fmt.Errorf("produce error code %d", code)
			}
			return nil
		})
	}
	waitFor(t, storageRecoverTimeout, "offset commit succeeds after space returns", func() error {
		return commitErr(t, cl, "g", "orders", 19)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fetched, err := kadm.NewClient(cl).FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("orders", 0); !ok || o.Err != nil || o.At != 19 {
		t.Fatalf("committed offset after recovery: %+v (found %v), want 19", o, ok)
	}
	checkAllPresent(t, consumeAll(t, b.Addr, "orders"), nil)
}
