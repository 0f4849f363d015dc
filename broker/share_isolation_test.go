package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator/share"
	"sluice/internal/batch"
	"sluice/logstore"
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

// testBatches builds a log read of v2 batches: each spec is base offset, record count, producer
// ID and attributes.
func testBatches(specs ...[4]int64) []byte {
	var out []byte
	for _, s := range specs {
		recs := make([]batch.Record, s[1])
		for i := range recs {
			recs[i].Value = []byte("v")
		}
		out = append(out, batch.Build(batch.Header{BaseOffset: s[0], Magic: 2, LastOffsetDelta: int32(s[1] - 1),
			ProducerID: s[2], Attributes: int16(s[3]), RecordCount: int32(s[1])}, recs)...)
	}
	return out
}

// TestAbortedBatchRanges: the data batches of an aborted transaction are those of its producer,
// transactional, starting within its span; control batches, other producers' batches and the
// same producer's later transactions are not.
func TestAbortedBatchRanges(t *testing.T) {
	const txn, ctl = batch.AttrTransactional, batch.AttrTransactional | batch.AttrControl
	records := testBatches(
		[4]int64{0, 3, 7, txn},  // aborted
		[4]int64{3, 1, 7, ctl},  // its ABORT marker
		[4]int64{4, 1, -1, 0},   // not transactional
		[4]int64{5, 2, 8, txn},  // another producer's, committed
		[4]int64{7, 1, 7, txn},  // producer 7's next transaction, aborted too
		[4]int64{8, 1, 7, txn},  // ... the same transaction
		[4]int64{9, 1, 7, ctl},  // its marker
		[4]int64{10, 1, 7, txn}, // producer 7's third transaction, not aborted
	)
	aborted := []logstore.AbortedTxn{
		{ProducerID: 7, FirstOffset: 0, LastOffset: 3},
		{ProducerID: 7, FirstOffset: 7, LastOffset: 9},
	}
	got := abortedBatchRanges(records, aborted)
	want := []share.OffsetRange{{FirstOffset: 0, LastOffset: 2}, {FirstOffset: 7, LastOffset: 7}, {FirstOffset: 8, LastOffset: 8}}
	if !slices.Equal(got, want) {
		t.Fatalf("abortedBatchRanges = %v, want %v", got, want)
	}
	if got := abortedBatchRanges(records, nil); got != nil {
		t.Fatalf("no aborted transactions: %v", got)
	}
	if got := abortedBatchRanges(records[:20], aborted); got != nil {
		t.Fatalf("a torn batch: %v", got)
	}
}

// FuzzAbortedBatchRanges: bytes read from the log are untrusted; whatever they hold, nothing
// panics and every range found is a batch of the aborted producer.
func FuzzAbortedBatchRanges(f *testing.F) {
	f.Add(testBatches([4]int64{0, 3, 7, batch.AttrTransactional}), int64(7), int64(0), int64(3))
	f.Add([]byte{}, int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, records []byte, pid, first, last int64) {
		got := abortedBatchRanges(records, []logstore.AbortedTxn{{ProducerID: pid, FirstOffset: first, LastOffset: last}})
		for _, r := range got {
			if r.FirstOffset < first || r.FirstOffset > last {
				t.Fatalf("range %v starts outside the aborted transaction %d-%d", r, first, last)
			}
		}
	})
}

// TestTrimToAcquired: a share fetch answers with the batches holding acquired offsets; one run
// of them is the read's own bytes, uncopied, and batches around a gap are joined.
func TestTrimToAcquired(t *testing.T) {
	b0, b1, b2 := testBatches([4]int64{0, 2, -1, 0}), testBatches([4]int64{2, 2, -1, 0}), testBatches([4]int64{4, 2, -1, 0})
	records := slices.Concat(b0, b1, b2)
	acq := func(first, last int64) share.AcquiredRange {
		return share.AcquiredRange{FirstOffset: first, LastOffset: last, DeliveryCount: 1}
	}
	got := trimToAcquired(records, []share.AcquiredRange{acq(1, 3)})
	if !slices.Equal(got, slices.Concat(b0, b1)) || &got[0] != &records[0] {
		t.Errorf("one run: got %d bytes (copied: %v), want the first two batches uncopied", len(got), len(got) > 0 && &got[0] != &records[0])
	}
	if got := trimToAcquired(records, []share.AcquiredRange{acq(0, 0), acq(5, 5)}); !slices.Equal(got, slices.Concat(b0, b2)) {
		t.Errorf("around a gap: got %d bytes, want batches 0 and 2", len(got))
	}
	if got := trimToAcquired(records, []share.AcquiredRange{acq(9, 9)}); got != nil {
		t.Errorf("nothing acquired in the read: got %d bytes", len(got))
	}
}
