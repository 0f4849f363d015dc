package compattests

import (
	"context"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// txnDeadline bounds each test's run; it only guards against a hang.
const txnDeadline = 2 * time.Minute

func createTxnTopic(t *testing.T, ctx context.Context, addr, topic string, partitions int32) {
	t.Helper()
	createTxnTopicRF(t, ctx, []string{addr}, topic, partitions, 1)
}

func createTxnTopicRF(t *testing.T, ctx context.Context, addrs []string, topic string, partitions int32, rf int16) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, resp.Err)
	}
}

// readCommitted consumes topic from the start with isolation.level=read_committed until the
// high watermark and returns the values read.
func readCommitted(t *testing.T, ctx context.Context, addr, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consumer of %s: %d of %d records before the deadline: %v", topic, len(got), want, got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// A transactional producer commits one transaction and aborts another over two partitions; a
// read_committed consumer sees the committed records once and the aborted ones never, and a
// committed record written after the abort proves the consumer read past the aborted ones.
func TestTransactionsCommitAbortFranz(t *testing.T) {
	b := StartBroker(t)
	testCommitAbort(t, []string{b.Addr}, 1)
}

// The same on three nodes with replication factor 3: markers and verification cross brokers.
func TestTransactionsCommitAbortFranzCluster(t *testing.T) {
	c := StartCluster(t, 3)
	testCommitAbort(t, c.Bootstrap(), 3)
}

func testCommitAbort(t *testing.T, seeds []string, rf int16) {
	ctx, cancel := context.WithTimeout(context.Background(), txnDeadline)
	defer cancel()
	createTxnTopicRF(t, ctx, seeds, "txn", 2, rf)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("tx-franz"), kgo.DefaultProduceTopic("txn"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	run := func(prefix string, commit bool) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for i := 0; i < 4; i++ {
			r := &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i)), Partition: int32(i % 2)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", prefix, err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %s (commit=%v): %v", prefix, commit, err)
		}
	}
	run("committed", true)
	run("aborted", false)
	run("after", true)
	got := readCommitted(t, ctx, seeds[0], "txn", 8)
	sort.Strings(got)
	want := []string{"after-0", "after-1", "after-2", "after-3", "committed-0", "committed-1", "committed-2", "committed-3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed saw %v, want %v", got, want)
	}

	// kadm's view: the transactional ID is CompleteCommit with no partitions.
	adm := kadm.NewClient(cl)
	described, err := adm.DescribeTransactions(ctx, "tx-franz")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := described["tx-franz"]
	if !ok || d.Err != nil || d.State != "CompleteCommit" {
		t.Fatalf("describe: %+v", described)
	}
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil || len(listed) != 1 {
		t.Fatalf("list: %+v %v", listed, err)
	}
}

// A consume-transform-produce loop with GroupTransactSession: every input record's
// transformation is committed with the group's offset in one transaction, so a read_committed
// consumer of the output sees each exactly once, and the group's committed offset is the end
// of the input.
func TestTransactionsGroupTransactSessionFranz(t *testing.T) {
	b := StartBroker(t, "group.initial.rebalance.delay.ms=0")
	testGroupTransactSession(t, []string{b.Addr}, 1)
}

// The same on three nodes with replication factor 3.
func TestTransactionsGroupTransactSessionFranzCluster(t *testing.T) {
	c := StartCluster(t, 3, "group.initial.rebalance.delay.ms=0")
	testGroupTransactSession(t, c.Bootstrap(), 3)
}

func testGroupTransactSession(t *testing.T, seeds []string, rf int16) {
	ctx, cancel := context.WithTimeout(context.Background(), txnDeadline)
	defer cancel()
	createTxnTopicRF(t, ctx, seeds, "in", 2, rf)
	createTxnTopicRF(t, ctx, seeds, "out", 2, rf)
	const n = 200
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce input: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID("tx-etl"),
		kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("in"), kgo.DefaultProduceTopic("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	seen := 0
	for seen < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("transform loop: %d of %d inputs before the deadline", seen, n)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		batch := 0
		fs.EachRecord(func(r *kgo.Record) {
			batch++
			sess.Produce(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce output: %v", err)
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if committed {
			seen += batch
		}
	}
	got := readCommitted(t, ctx, seeds[0], "out", n)
	counts := map[string]int{}
	for _, v := range got {
		counts[v]++
	}
	for i := 0; i < n; i++ {
		if c := counts["out-"+strconv.Itoa(i)]; c != 1 {
			t.Fatalf("output of %d seen %d times (outputs: %d)", i, c, len(got))
		}
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	offsets, err := kadm.NewClient(adm).FetchOffsets(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Fatalf("group etl committed offsets summing to %d, want %d: %+v", total, n, offsets)
	}
}

// Bad input answered with Kafka's error codes, through a real broker: requests for a
// transactional ID that was never initialised, a stale epoch, an unknown topic, and a
// transactional produce from a producer the coordinator does not know (nothing stored).
func TestTransactionsBadInput(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), txnDeadline)
	defer cancel()
	createTxnTopic(t, ctx, b.Addr, "bad", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The coordinator is found (and __transaction_state created) first.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"tx-bad"}
	fcr, err := fc.RequestWith(ctx, cl)
	if err != nil || fcr.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %+v %v", fcr, err)
	}
	retry := func(do func() int16) int16 {
		for {
			code := do()
			if code != kerr.CoordinatorLoadInProgress.Code && code != kerr.NotCoordinator.Code || ctx.Err() != nil {
				return code
			}
			time.Sleep(50 * time.Millisecond) // the shard is loading: poll, as clients do
		}
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx-bad", 77, 0, true
	if code := retry(func() int16 {
		r, err := end.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r.ErrorCode
	}); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("EndTxn for an unknown transactional ID: %s", kerr.ErrorForCode(code))
	}

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("tx-bad"), 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v %v", ir, err)
	}
	init.TransactionTimeoutMillis = 900001
	if r, err := init.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("InitProducerId above transaction.max.timeout.ms: %+v %v", r, err)
	}

	// kgo rewrites an AddPartitionsToTxn in place for the batched v4+ form: a fresh one each time.
	addReq := func(topic string, epoch int16) *kmsg.AddPartitionsToTxnRequest {
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-bad", ir.ProducerID, epoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
		return add
	}
	if r, err := addReq("nosuch", ir.ProducerEpoch).RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn for an unknown topic: %+v %v", r, err)
	}
	if r, err := addReq("bad", ir.ProducerEpoch-1).RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("AddPartitionsToTxn with a stale epoch: %+v %v", r, err)
	}

	// A transactional batch from a producer ID the coordinator never handed out.
	prod := kmsg.NewPtrProduceRequest()
	prod.Version, prod.Acks, prod.TimeoutMillis, prod.TransactionID = 11, -1, 10000, kmsg.StringPtr("tx-bad")
	batch := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, ProducerID: ir.ProducerID + 1000, ProducerEpoch: 0,
		FirstSequence: 0, NumRecords: 1, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli()}
	r := kmsg.Record{Value: []byte("zombie")}
	batch.Records = r.AppendTo(nil)
	raw := batch.AppendTo(nil)
	batch.Length = int32(len(raw) - 12)
	raw = batch.AppendTo(nil)
	batch.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	raw = batch.AppendTo(nil)
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "bad"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = raw
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	// Produce by topic name (v11), as a pre-KIP-890-part-2 producer does.
	old, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.MaxVersions(kversion.V3_8_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	pr, err := prod.RequestWith(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("transactional produce from an unknown producer ID: %s", kerr.ErrorForCode(code))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lot := kmsg.NewListOffsetsRequestTopic()
	lot.Topic = "bad"
	lop := kmsg.NewListOffsetsRequestTopicPartition()
	lop.Timestamp = -1
	lot.Partitions = append(lot.Partitions, lop)
	lo.Topics = append(lo.Topics, lot)
	lr, err := lo.RequestWith(ctx, cl)
	if err != nil || lr.Topics[0].Partitions[0].Offset != 0 {
		t.Fatalf("log end after the refused produce: %+v %v", lr, err)
	}
}

// Java's transactional producer (the perf tool with --transactional-id: initTransactions,
// transactions committed every 100 ms) against sluice, read back by a read_committed consumer;
// kafka-transactions.sh lists and describes the transactional ID.
func TestTransactionsJava(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), txnDeadline)
	defer cancel()
	createTxnTopic(t, ctx, b.Addr, "jtxn", 3)
	java := lookPath(t, "java")
	cp := filepath.Join(kafkaJars(t), "*")
	jvm := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", cp}
	const n = 2000
	stdout, stderr, err := runCmdErr(txnDeadline, "", java, append(jvm, "org.apache.kafka.tools.ProducerPerformance",
		"--topic", "jtxn", "--num-records", strconv.Itoa(n), "--record-size", "100", "--throughput", "-1",
		"--transactional-id", "tx-java", "--transaction-duration-ms", "100",
		"--producer-props", "bootstrap.servers="+b.Addr, "acks=all")...)
	if err != nil {
		t.Fatalf("ProducerPerformance --transactional-id: %v\nstdout:\n%s\nstderr:\n%s", err, clip(stdout), clip(stderr))
	}
	if got := readCommitted(t, ctx, b.Addr, "jtxn", n); len(got) != n {
		t.Fatalf("read_committed read %d records, want %d", len(got), n)
	}
	out := runCmd(t, txnDeadline, "", java, append(jvm, "org.apache.kafka.tools.TransactionsCommand",
		"--bootstrap-server", b.Addr, "list")...)
	if !strings.Contains(out, "tx-java") {
		t.Fatalf("kafka-transactions list:\n%s", out)
	}
	out = runCmd(t, txnDeadline, "", java, append(jvm, "org.apache.kafka.tools.TransactionsCommand",
		"--bootstrap-server", b.Addr, "describe", "--transactional-id", "tx-java")...)
	if !strings.Contains(out, "tx-java") || !strings.Contains(out, "CompleteCommit") {
		t.Fatalf("kafka-transactions describe:\n%s", out)
	}
}

// librdkafka's transactional producer (kcat with transactional.id: one transaction committed
// at the end of its input), read back by kcat with isolation.level=read_committed.
func TestTransactionsKcat(t *testing.T) {
	b := StartBroker(t)
	kcat := lookPath(t, "kcat")
	stdout, stderr, err := runCmdErr(txnDeadline, "a\nb\nc\n", kcat, "-b", b.Addr, "-P", "-t", "ktxn", "-X", "transactional.id=tx-kcat")
	if err != nil || !strings.Contains(stderr, "Transaction successfully committed") {
		t.Fatalf("kcat transactional produce: %v\nstdout:\n%s\nstderr:\n%s", err, clip(stdout), clip(stderr))
	}
	out := runCmd(t, txnDeadline, "", kcat, "-b", b.Addr, "-C", "-t", "ktxn", "-o", "beginning", "-e", "-X", "isolation.level=read_committed")
	if out != "a\nb\nc\n" {
		t.Fatalf("kcat read_committed read %q", out)
	}
}

// kill -9 of the broker in the middle of a transaction (a failover mid-commit is the datadriven
// coordinator/testdata/txn/failover): after the restart the coordinator rebuilds its state from __transaction_state, the next producer with
// the same transactional ID fences the dead one and has its open transaction aborted, and a
// read_committed consumer sees exactly the committed records, each once.
func TestTransactionsSurviveKill(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), txnDeadline)
	defer cancel()
	createTxnTopic(t, ctx, b.Addr, "ktx", 3)
	newProducer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("tx-kill"), kgo.DefaultProduceTopic("ktx"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	produce := func(cl *kgo.Client, prefix string, n int) {
		for i := 0; i < n; i++ {
			r := &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i)), Partition: int32(i % 3)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", prefix, err)
			}
		}
	}
	cl := newProducer()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(cl, "committed", 6)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(cl, "open", 6) // never committed: the broker dies under it
	b.Kill()
	cl.Close()
	b.Restart()

	cl = newProducer() // InitProducerId: fences the old epoch, aborts "open"
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(cl, "after", 6)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got := readCommitted(t, ctx, b.Addr, "ktx", 12)
	sort.Strings(got)
	var want []string
	for _, p := range []string{"after", "committed"} {
		for i := 0; i < 6; i++ {
			want = append(want, fmt.Sprintf("%s-%d", p, i))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed after the kill saw %v, want %v", got, want)
	}
	adm := kadm.NewClient(cl)
	described, err := adm.DescribeTransactions(ctx, "tx-kill")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["tx-kill"]; d.State != "CompleteCommit" {
		t.Fatalf("describe after the restart: %+v", d)
	}
}
