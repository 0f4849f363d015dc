package compattests

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

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
	// A transactional batch of producer 4242 at offset 1: its transaction stays open.
	now := time.Now().UnixMilli()
	txn := batch.Build(batch.Header{Attributes: batch.AttrTransactional, BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: 4242, ProducerEpoch: 3, BaseSequence: 0}, []batch.Record{{Value: []byte("aborted")}})
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30000
	tid := "hanging"
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
	if !regexp.MustCompile(`(?m)^4242\s+3\s+-1\s+0\s+\d+\s+1\s*$`).MatchString(out) {
		t.Fatalf("describe-producers does not show producer 4242 open at offset 1:\n%s", out)
	}

	javaTool(t, "", "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", b.Addr,
		"abort", "--topic", "hang", "--partition", "0", "--start-offset", "1")
	out, _ = javaTool(t, "", "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", b.Addr,
		"describe-producers", "--topic", "hang", "--partition", "0")
	if !regexp.MustCompile(`(?m)^4242\s+3\s+\d+\s+\S+\s+\d+\s+None\s*$`).MatchString(out) {
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
