package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareConsumeUntil polls a franz-go share consumer (records accepted on the next poll) until
// done says it has enough, and returns the values in the order received.
func shareConsumeUntil(t *testing.T, cl *kgo.Client, got []string, done func([]string) bool) []string {
	t.Helper()
	ctx := testContext(t)
	for !done(got) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("share consumer: gave up waiting; received %q", got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("share fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestShareGroupReadCommitted: a franz-go transactional producer commits some records, aborts
// others and leaves one transaction open; a share group with share.isolation.level
// read_committed is handed exactly the committed records, and the open transaction's only once
// it commits, while a read_uncommitted group (the default) is handed every data record. Both
// groups were handed every record, aborted ones included, and the key was refused.
func TestShareGroupReadCommitted(t *testing.T) {
	tb := startTestBroker(t, nil)
	const topic = "share-txn"
	tb.createTopic(t, topic, 1, nil)
	for _, g := range []string{"rc", "ru"} {
		if code, msg := alterGroupConfigs(t, tb, g, false, setOp("share.auto.offset.reset", "earliest")); code != 0 {
			t.Fatalf("%s: %v %s", g, kerr.ErrorForCode(code), msg)
		}
	}
	if code, msg := alterGroupConfigs(t, tb, "rc", false, setOp("share.isolation.level", "read_committed")); code != 0 {
		t.Fatalf("share.isolation.level=read_committed: %v %s", kerr.ErrorForCode(code), msg)
	}
	wantGroupConfig(t, describeGroupConfigs(t, tb, "rc"), "share.isolation.level", "read_committed", kmsg.ConfigSourceGroupConfig)
	wantGroupConfig(t, describeGroupConfigs(t, tb, "ru"), "share.isolation.level", "read_uncommitted", kmsg.ConfigSourceDefaultConfig)

	ctx := testContext(t)
	producer, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.TransactionalID("share-txn-producer"),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(producer.Close)
	// end: "commit", "abort", or "" to leave the transaction open.
	txn := func(end string, values ...string) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if end != "" {
			if err := producer.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit")); err != nil {
				t.Fatalf("end transaction: %v", err)
			}
		}
	}
	txn("commit", "c0", "c1", "c2")
	txn("abort", "a0", "a1")
	txn("commit", "c3")
	txn("abort", "a2")
	txn("", "o0") // written below the high watermark, but above the last stable offset

	consumer := func(group string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	has := func(v string) func([]string) bool { return func(got []string) bool { return slices.Contains(got, v) } }

	ru := shareConsumeUntil(t, consumer("ru"), nil, has("o0"))
	if want := []string{"c0", "c1", "c2", "a0", "a1", "c3", "a2", "o0"}; !slices.Equal(ru, want) {
		t.Errorf("read_uncommitted share group received %q, want every data record %q", ru, want)
	}

	rcClient := consumer("rc")
	rc := shareConsumeUntil(t, rcClient, nil, has("c3"))
	if want := []string{"c0", "c1", "c2", "c3"}; !slices.Equal(rc, want) {
		t.Fatalf("read_committed share group received %q before the open transaction ended, want %q", rc, want)
	}
	if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit the open transaction: %v", err)
	}
	rc = shareConsumeUntil(t, rcClient, rc, has("o0"))
	if want := []string{"c0", "c1", "c2", "c3", "o0"}; !slices.Equal(rc, want) {
		t.Errorf("read_committed share group received %q, want the committed records %q", rc, want)
	}
}
