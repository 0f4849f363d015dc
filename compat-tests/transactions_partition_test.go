package compattests

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"sluice/internal/batch"
)

// The partition side of transactions through Kafka's own tool, without a transaction
// coordinator: a producer's transaction is opened on a partition by a hand-built
// transactional batch, `kafka-transactions describe-producers` (DescribeProducers) shows it
// open, `kafka-transactions abort` (DescribeProducers, then WriteTxnMarkers from the Java
// admin client) ends it, and a read_committed franz-go consumer sees the records written
// after the aborted ones but never the aborted ones.
func TestTransactionsToolDescribesAndAbortsAPartitionsTransaction(t *testing.T) {
	b := StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("hang"), kgo.AllowAutoTopicCreation(),
		kgo.MaxVersions(kversion.V3_0_0())) // Produce by topic name for the raw request
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A transactional batch at offset 1 whose transaction stays open. The producer ID comes
	// from the transaction coordinator, which verifies the batch (KIP-890) and, under
	// transaction version 2, adds the partition to the transaction; its timeout outlasts the
	// test.
	tid := "hanging"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &tid, 900000
	var pid int64
	var epoch int16
	for {
		ir, err := init.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if ir.ErrorCode == 0 {
			pid, epoch = ir.ProducerID, ir.ProducerEpoch
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ir.ErrorCode))
		}
		time.Sleep(50 * time.Millisecond) // the coordinator's shard is loading: poll as clients do
	}
	now := time.Now().UnixMilli()
	txn := batch.Build(batch.Header{Attributes: batch.AttrTransactional, BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 0}, []batch.Record{{Value: []byte("aborted")}})
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30000
	req.TransactionID = &tid
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "hang", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txn}}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("transactional produce: %v %+v", err, resp)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out, _ := javaTool(t, "", "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", b.Addr,
		"describe-producers", "--topic", "hang", "--partition", "0")
	// Columns: ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+%d\s+-1\s+0\s+\d+\s+1\s*$`, pid, epoch)).MatchString(out) {
		t.Fatalf("describe-producers does not show producer %d open at offset 1:\n%s", pid, out)
	}

	javaTool(t, "", "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", b.Addr,
		"abort", "--topic", "hang", "--partition", "0", "--start-offset", "1")
	out, _ = javaTool(t, "", "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", b.Addr,
		"describe-producers", "--topic", "hang", "--partition", "0")
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+%d\s+\d+\s+\S+\s+\d+\s+None\s*$`, pid, epoch)).MatchString(out) {
		t.Fatalf("describe-producers after abort still shows a transaction:\n%s", out)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"hang": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []string
	for len(got) < 2 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consumer got %q, want before and after", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "before,after" {
		t.Fatalf("read_committed consumer got %q, want before, after", got)
	}
}
