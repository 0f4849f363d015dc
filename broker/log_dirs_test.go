package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/logstore"
)

// startJBODBroker starts a single-node cluster with two log directories and returns them.
func startJBODBroker(t *testing.T) (*testBroker, [2]string) {
	t.Helper()
	root := t.TempDir()
	dirs := [2]string{filepath.Join(root, "d1"), filepath.Join(root, "d2")}
	tb := startTestBroker(t, map[string]string{"log.dirs": dirs[0] + "," + dirs[1]})
	return tb, dirs
}

// restartBroker closes the broker and starts a new one on the same directories and controller,
// as a process restart would (the metadata is the controller's).
func (tb *testBroker) restartBroker(t *testing.T) {
	t.Helper()
	if err := tb.Broker.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	tb.handler.b.Store(nil)
	b, err := New(Config{Static: tb.Static, LogDir: tb.Static.LogDirs[0], LogDirs: tb.Static.LogDirs, Logger: tb.Broker.logger}, tb.Ctrl)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	tb.Broker = b
	tb.handler.b.Store(b)
}

// partitionsIn lists the partition directories of topic in dir.
func partitionDirsOf(t *testing.T, dir, topic string) []string {
	t.Helper()
	tps, err := scanPartitionDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tp := range tps {
		if tp.topic == topic {
			out = append(out, tp.String())
		}
	}
	return out
}

// consumeValues reads the values of partition from offset 0 up to its high watermark.
func (tb *testBroker) consumeValues(t *testing.T, topic string, partition int32) []string {
	t.Helper()
	end := tb.listLatest(t, topic, partition)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	ctx := testContext(t)
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s/%d", len(out), end, topic, partition)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func seqValues(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "v" + strconv.Itoa(i)
	}
	return out
}

// TestLogDirsPlacement: a topic of 6 partitions on a broker with two log directories is spread
// 3 and 3 (fewest partitions first), every partition serves, and a restart finds each one in
// the directory it was in, with its records.
func TestLogDirsPlacement(t *testing.T) {
	tb, dirs := startJBODBroker(t)
	tb.createTopic(t, "spread", 6, nil)
	for p := range int32(6) {
		tb.produce(t, "spread", p, 5)
	}
	in0, in1 := partitionDirsOf(t, dirs[0], "spread"), partitionDirsOf(t, dirs[1], "spread")
	if len(in0) != 3 || len(in1) != 3 {
		t.Fatalf("partitions in %s: %v, in %s: %v; want 3 and 3", dirs[0], in0, dirs[1], in1)
	}
	tb.restartBroker(t)
	if a, b := partitionDirsOf(t, dirs[0], "spread"), partitionDirsOf(t, dirs[1], "spread"); !equalStrings(a, in0) || !equalStrings(b, in1) {
		t.Fatalf("after restart: %v and %v, want %v and %v", a, b, in0, in1)
	}
	for p := range int32(6) {
		if got := tb.consumeValues(t, "spread", p); !equalStrings(got, seqValues(5)) {
			t.Fatalf("partition %d after restart: %v", p, got)
		}
	}
	// A new topic fills the directories evenly again.
	tb.createTopic(t, "more", 2, nil)
	if a, b := partitionDirsOf(t, dirs[0], "more"), partitionDirsOf(t, dirs[1], "more"); len(a) != 1 || len(b) != 1 {
		t.Fatalf("a 2-partition topic on 3+3: %v and %v, want one each", a, b)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// TestLogDirsDuplicatePartitionRefused: the same partition directory in both log directories
// stops the start with an error naming both paths.
func TestLogDirsDuplicatePartitionRefused(t *testing.T) {
	tb, dirs := startJBODBroker(t)
	tb.createTopic(t, "dup", 1, nil)
	tb.produce(t, "dup", 0, 3)
	src := filepath.Join(dirs[0], "dup-0")
	other := filepath.Join(dirs[1], "dup-0")
	if _, err := os.Stat(src); err != nil {
		src, other = other, src
	}
	if err := tb.Broker.Close(); err != nil {
		t.Fatal(err)
	}
	tb.handler.b.Store(nil)
	if _, err := logstore.CopyDir(context.Background(), logstore.OSFS{}, src, other, false, 0); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{Static: tb.Static, LogDirs: tb.Static.LogDirs, Logger: tb.Broker.logger}, tb.Ctrl)
	if err == nil || !strings.Contains(err.Error(), src) || !strings.Contains(err.Error(), other) {
		t.Fatalf("start with dup-0 in both directories: %v; want an error naming %s and %s", err, src, other)
	}
}

// describeLogDirs answers DescribeLogDirs v4 for every partition.
func (tb *testBroker) describeLogDirs(t *testing.T) *kmsg.DescribeLogDirsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	return tb.direct(t, req).(*kmsg.DescribeLogDirsResponse)
}

// dirOf returns the directory DescribeLogDirs lists topic/partition in (not as a future
// replica), whether a future replica of it is listed, and its size.
// otherDir is the directory of the JBOD broker's two that is not from.
func otherDir(dirs [2]string, from string) string {
	if dirs[0] == from {
		return dirs[1]
	}
	return dirs[0]
}

func dirOf(resp *kmsg.DescribeLogDirsResponse, topic string, partition int32) (dir string, future bool, size int64) {
	for _, d := range resp.Dirs {
		for _, tt := range d.Topics {
			if tt.Topic != topic {
				continue
			}
			for _, p := range tt.Partitions {
				if p.Partition != partition {
					continue
				}
				if p.IsFuture {
					future = true
				} else {
					dir, size = d.Dir, p.Size
				}
			}
		}
	}
	return dir, future, size
}

// TestDescribeLogDirsEveryDirectory: both directories are listed with their partitions, sizes
// and disk space.
func TestDescribeLogDirsEveryDirectory(t *testing.T) {
	tb, dirs := startJBODBroker(t)
	tb.createTopic(t, "desc", 2, nil)
	tb.produce(t, "desc", 0, 10)
	tb.produce(t, "desc", 1, 10)
	resp := tb.describeLogDirs(t)
	if len(resp.Dirs) != 2 || resp.Dirs[0].Dir != dirs[0] || resp.Dirs[1].Dir != dirs[1] {
		t.Fatalf("directories %+v, want %v", resp.Dirs, dirs)
	}
	for _, d := range resp.Dirs {
		if d.ErrorCode != 0 || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Fatalf("dir %s: error %d total %d usable %d", d.Dir, d.ErrorCode, d.TotalBytes, d.UsableBytes)
		}
		if len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 || d.Topics[0].Partitions[0].Size <= 0 {
			t.Fatalf("dir %s lists %+v, want one partition of desc with a size", d.Dir, d.Topics)
		}
	}
}

// alterReplicaLogDir asks to move topic/partition into dir and returns the partition's code.
func (tb *testBroker) alterReplicaLogDir(t *testing.T, dir, topic string, partition int32) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Version = 2
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	d.Topics = append(d.Topics, rt)
	req.Dirs = append(req.Dirs, d)
	resp := tb.direct(t, req).(*kmsg.AlterReplicaLogDirsResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// waitMoved waits until DescribeLogDirs lists topic/partition in dir and no future replica.
func (tb *testBroker) waitMoved(t *testing.T, dir, topic string, partition int32) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for {
		got, future, _ := dirOf(tb.describeLogDirs(t), topic, partition)
		if got == dir && !future {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d in %q (future %v), want it moved to %s", topic, partition, got, future, dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAlterReplicaLogDirsMove: a replica moved to the other directory keeps every record
// (read back before and after a restart), takes produce during and after the move, and the
// restarted broker finds it in its new directory only.
func TestAlterReplicaLogDirsMove(t *testing.T) {
	tb, dirs := startJBODBroker(t)
	tb.createTopic(t, "mv", 1, nil)
	tb.produce(t, "mv", 0, 200)
	from, _, _ := dirOf(tb.describeLogDirs(t), "mv", 0)
	to := otherDir(dirs, from)
	if code := tb.alterReplicaLogDir(t, to, "mv", 0); code != 0 {
		t.Fatalf("AlterReplicaLogDirs: %v", kerr.ErrorForCode(code))
	}
	// Produce while it moves: every record acknowledged must survive the swap.
	ctx := testContext(t)
	for i := 200; i < 300; i++ {
		r := &kgo.Record{Topic: "mv", Partition: 0, Value: []byte("v" + strconv.Itoa(i))}
		if err := tb.Client.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce during the move: %v", err)
		}
	}
	tb.waitMoved(t, to, "mv", 0)
	tb.produce(t, "mv", 0, 0)
	if got := tb.consumeValues(t, "mv", 0); !equalStrings(got, seqValues(300)) {
		t.Fatalf("after the move: %d records, want the 300 produced", len(got))
	}
	if left := partitionDirsOf(t, from, "mv"); len(left) != 0 {
		t.Fatalf("%s still holds %v", from, left)
	}
	tb.restartBroker(t)
	if got := partitionDirsOf(t, to, "mv"); len(got) != 1 {
		t.Fatalf("after restart %s holds %v", to, got)
	}
	if got := tb.consumeValues(t, "mv", 0); !equalStrings(got, seqValues(300)) {
		t.Fatalf("after the restart: %d records, want 300", len(got))
	}
	// Unknown directories and replicas not hosted here are answered as Kafka does.
	if code := tb.alterReplicaLogDir(t, "/no/such/dir", "mv", 0); code != kerr.LogDirNotFound.Code {
		t.Fatalf("unknown dir: %v", kerr.ErrorForCode(code))
	}
	if code := tb.alterReplicaLogDir(t, from, "nosuch", 0); code != kerr.ReplicaNotAvailable.Code {
		t.Fatalf("unknown partition: %v", kerr.ErrorForCode(code))
	}
}

// dirFailFS fails every write, sync, create, rename and truncate under one directory while
// failing is set, as a failed disk does.
type dirFailFS struct {
	logstore.FS
	prefix  string
	failing atomic.Bool
}

var errDiskGone = errors.New("input/output error (test: the directory's disk failed)")

func (f *dirFailFS) fail(path string) error {
	if f.failing.Load() && strings.HasPrefix(filepath.Clean(path), f.prefix+string(filepath.Separator)) {
		return &os.PathError{Op: "write", Path: path, Err: errDiskGone}
	}
	return nil
}

func (f *dirFailFS) OpenFile(name string, flag int, perm os.FileMode) (logstore.File, error) {
	if flag&(os.O_CREATE|os.O_WRONLY|os.O_RDWR) != 0 {
		if err := f.fail(name); err != nil {
			return nil, err
		}
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &dirFailFile{File: file, fs: f, path: name}, nil
}

func (f *dirFailFS) Rename(o, n string) error {
	if err := f.fail(o); err != nil {
		return err
	}
	return f.FS.Rename(o, n)
}

func (f *dirFailFS) SyncDir(dir string) error {
	if err := f.fail(dir + "/x"); err != nil {
		return err
	}
	return f.FS.SyncDir(dir)
}

type dirFailFile struct {
	logstore.File
	fs   *dirFailFS
	path string
}

func (f *dirFailFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fail(f.path); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *dirFailFile) Sync() error {
	if err := f.fs.fail(f.path); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *dirFailFile) Truncate(size int64) error {
	if err := f.fs.fail(f.path); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// TestLogDirFailureOnlyItsPartitions: when one of two log directories fails, its partitions
// answer KAFKA_STORAGE_ERROR and DescribeLogDirs reports it failed, while the partitions of
// the other directory keep taking produce and serving fetches; once the disk is back, the
// failed partitions serve again with their records.
func TestLogDirFailureOnlyItsPartitions(t *testing.T) {
	root := t.TempDir()
	dirs := [2]string{filepath.Join(root, "d1"), filepath.Join(root, "d2")}
	ffs := &dirFailFS{FS: logstore.OSFS{}, prefix: dirs[1]}
	tb := startTestBroker(t, map[string]string{"log.dirs": dirs[0] + "," + dirs[1]})
	// The harness's broker uses the OS file system; start one on ffs instead.
	tb.restartWithFS(t, ffs)
	tb.createTopic(t, "jb", 4, nil)
	var healthy, failed []int32
	for p := range int32(4) {
		tb.produce(t, "jb", p, 5)
	}
	resp := tb.describeLogDirs(t)
	for p := range int32(4) {
		if d, _, _ := dirOf(resp, "jb", p); d == dirs[1] {
			failed = append(failed, p)
		} else {
			healthy = append(healthy, p)
		}
	}
	if len(failed) != 2 || len(healthy) != 2 {
		t.Fatalf("placement: %v in %s, %v elsewhere", failed, dirs[1], healthy)
	}
	ffs.failing.Store(true)
	for _, p := range failed {
		if code := produceTo(t, tb, "jb", p, "lost"); code != kerr.KafkaStorageError.Code {
			t.Fatalf("produce to %d in the failed directory: %v, want KAFKA_STORAGE_ERROR", p, kerr.ErrorForCode(code))
		}
	}
	for _, p := range healthy {
		tb.produce(t, "jb", p, 10) // values v0..v9 again: 15 records in all
		if got := tb.consumeValues(t, "jb", p); len(got) != 15 {
			t.Fatalf("healthy partition %d: %d records, want 15", p, len(got))
		}
	}
	resp = tb.describeLogDirs(t)
	for _, d := range resp.Dirs {
		wantErr := int16(0)
		if d.Dir == dirs[1] {
			wantErr = kerr.KafkaStorageError.Code
		}
		if d.ErrorCode != wantErr {
			t.Fatalf("DescribeLogDirs %s: error %d, want %d", d.Dir, d.ErrorCode, wantErr)
		}
	}
	// A new partition goes to the healthy directory.
	tb.createTopic(t, "after", 1, nil)
	if got := partitionDirsOf(t, dirs[0], "after"); len(got) != 1 {
		t.Fatalf("a partition created while %s failed went elsewhere", dirs[1])
	}
	ffs.failing.Store(false)
	for _, p := range failed {
		deadline := time.Now().Add(testWait)
		for produceTo(t, tb, "jb", p, "back") != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("partition %d did not serve again after the disk came back", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := tb.consumeValues(t, "jb", p); len(got) != 6 || got[5] != "back" {
			t.Fatalf("partition %d after recovery: %v", p, got)
		}
	}
}

// restartWithFS restarts the broker with its partition logs on fsys.
func (tb *testBroker) restartWithFS(t *testing.T, fsys logstore.FS) {
	t.Helper()
	if err := tb.Broker.Close(); err != nil {
		t.Fatal(err)
	}
	tb.handler.b.Store(nil)
	b, err := New(Config{Static: tb.Static, LogDirs: tb.Static.LogDirs, Logger: tb.Broker.logger, FS: fsys}, tb.Ctrl)
	if err != nil {
		t.Fatal(err)
	}
	tb.Broker = b
	tb.handler.b.Store(b)
}

// produceTo produces one record to topic/partition directly and returns its error code.
func produceTo(t *testing.T, tb *testBroker, topic string, partition int32, value string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = testBatch(value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return tb.direct(t, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// FuzzParsePartitionDirName: directory names come from the disk. Parsing never panics, and a
// name it accepts is exactly the partition's directory name.
func FuzzParsePartitionDirName(f *testing.F) {
	for _, s := range []string{"t-0", "a.b-12", "t-0.ab-future", "t-01", "t--1", "-1", "__cluster_metadata-0", "t-2147483648"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tp, ok := parsePartitionDirName(name)
		if ok && (tp.String() != name || tp.partition < 0 || tp.topic == "") {
			t.Fatalf("parsePartitionDirName(%q) = %+v", name, tp)
		}
	})
}

// TestAlterReplicaLogDirsFutureAndCancel: with replica.alter.log.dirs.io.max.bytes.per.second
// set low (a cluster-wide dynamic default), a move copies slowly: DescribeLogDirs lists the
// replica in its directory and a future replica in the destination meanwhile. Asking for the
// directory it is in cancels the move: the future replica and its directory go, the records
// stay where they were.
func TestAlterReplicaLogDirsFutureAndCancel(t *testing.T) {
	tb, dirs := startJBODBroker(t)
	tb.createTopic(t, "slow", 1, nil)
	tb.produce(t, "slow", 0, 500)
	from, _, size := dirOf(tb.describeLogDirs(t), "slow", 0)
	to := otherDir(dirs, from)
	ctx := testContext(t)
	resps, err := tb.Admin.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: ptrString("1000")}})
	if err == nil && len(resps) > 0 {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatalf("setting the move rate: %v", err)
	}
	deadline := time.Now().Add(testWait)
	for tb.Broker.throttledRate(tb.Broker.ctrl.Image(), alterLogDirsRateKey) != 1000 {
		if time.Now().After(deadline) {
			t.Fatal("the move rate never reached the broker's image")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code := tb.alterReplicaLogDir(t, to, "slow", 0); code != 0 {
		t.Fatalf("AlterReplicaLogDirs: %v", kerr.ErrorForCode(code))
	}
	got, future, _ := dirOf(tb.describeLogDirs(t), "slow", 0)
	if got != from || !future {
		t.Fatalf("during a slow move of %d bytes: in %s (future listed: %v), want in %s with a future replica", size, got, future, from)
	}
	if code := tb.alterReplicaLogDir(t, from, "slow", 0); code != 0 {
		t.Fatalf("AlterReplicaLogDirs back to its directory: %v", kerr.ErrorForCode(code))
	}
	deadline = time.Now().Add(testWait)
	for {
		_, future, _ := dirOf(tb.describeLogDirs(t), "slow", 0)
		names, _ := os.ReadDir(to)
		left := false
		for _, e := range names {
			if strings.HasSuffix(e.Name(), logstore.FutureDirSuffix) {
				left = true
			}
		}
		if !future && !left {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled move left its future replica (listed %v, directory left %v)", future, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _, _ := dirOf(tb.describeLogDirs(t), "slow", 0); got != from {
		t.Fatalf("after the cancelled move the replica is in %s, want %s", got, from)
	}
	if got := tb.consumeValues(t, "slow", 0); !equalStrings(got, seqValues(500)) {
		t.Fatalf("after the cancelled move: %d records, want 500", len(got))
	}
}

func ptrString(s string) *string { return &s }

// TestInterruptedMoveFinishedAtStart: a crash between the swap's two renames (the old copy
// renamed aside, the future one not yet in place) leaves neither live directory; the next
// start finishes the move and serves every record from the destination.
func TestInterruptedMoveFinishedAtStart(t *testing.T) {
	tb, dirs := startJBODBroker(t)
	tb.createTopic(t, "crash", 1, nil)
	tb.produce(t, "crash", 0, 50)
	from, _, _ := dirOf(tb.describeLogDirs(t), "crash", 0)
	to := otherDir(dirs, from)
	if err := tb.Broker.Close(); err != nil {
		t.Fatal(err)
	}
	tb.handler.b.Store(nil)
	// What the move had done when the process died: the future copy complete, the source
	// renamed aside.
	future := filepath.Join(to, logstore.FutureDirName("crash-0", "abc123"))
	if _, err := logstore.CopyDir(context.Background(), logstore.OSFS{}, filepath.Join(from, "crash-0"), future, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(from, "crash-0"), filepath.Join(from, "crash-0.abc123"+logstore.MovedDirSuffix)); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Static: tb.Static, LogDirs: tb.Static.LogDirs, Logger: tb.Broker.logger}, tb.Ctrl)
	if err != nil {
		t.Fatalf("start after the interrupted move: %v", err)
	}
	tb.Broker = b
	tb.handler.b.Store(b)
	if got, _, _ := dirOf(tb.describeLogDirs(t), "crash", 0); got != to {
		t.Fatalf("after the start the replica is in %q, want %s", got, to)
	}
	for _, d := range []string{from, to} {
		names, _ := os.ReadDir(d)
		for _, e := range names {
			if _, _, _, ok := logstore.ParseMoveDir(e.Name()); ok {
				t.Fatalf("%s left in %s", e.Name(), d)
			}
		}
	}
	if got := tb.consumeValues(t, "crash", 0); !equalStrings(got, seqValues(50)) {
		t.Fatalf("after the start: %d records, want 50", len(got))
	}
}
