package broker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"sluice/controller"
	"sluice/internal/batch"
)

// txnBatch is a batch of a transactional producer (or an idempotent one, transactional false)
// holding one record per value.
func txnBatch(producerID int64, epoch int16, seq int32, transactional bool, values ...string) []byte {
	recs := make([]batch.Record, len(values))
	for i, v := range values {
		recs[i] = batch.Record{Value: []byte(v)}
	}
	var attrs int16
	if transactional {
		attrs = batch.AttrTransactional
	}
	now := time.Now().UnixMilli()
	return batch.Build(batch.Header{
		Attributes: attrs, BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: producerID, ProducerEpoch: epoch, BaseSequence: seq,
	}, recs)
}

// produceRaw sends one batch to topic/partition with acks=all and returns the partition's
// error code and base offset.
func (tb *testBroker) produceRaw(t *testing.T, topic string, partition int32, transactionalID *string, records []byte) (int16, int64) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 11
	req.Acks = -1
	req.TimeoutMillis = int32(testWait.Milliseconds())
	req.TransactionID = transactionalID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.direct(t, req).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// writeMarker ends producerID's transaction on topic/partition and returns the partition's
// error code.
func (tb *testBroker) writeMarker(t *testing.T, topic string, partition int32, producerID int64, epoch int16, coordinatorEpoch int32, commit bool, tv int8) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 2
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = producerID, epoch, commit, coordinatorEpoch, tv
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic = topic
	mt.Partitions = []int32{partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := tb.Broker.WriteTxnMarkers(testContext(t), req)
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// consumeValues reads topic/0 from the start with a fresh franz-go consumer at the given
// isolation level until it has seen want records, and returns their values.
func consumeAtIsolation(t *testing.T, tb *testBroker, topic string, isolation kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.FetchIsolationLevel(isolation),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	ctx := testContext(t)
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("got %q, want %d records: %v", got, want, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// A read_committed consumer (franz-go) sees committed and non-transactional records only,
// none of an aborted transaction and nothing at or past an open transaction's first offset;
// read_uncommitted sees every data record. Once the open transaction commits, its records
// and those after it become visible.
func TestReadCommittedFetchDropsAbortedAndStopsAtOpenTransaction(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.Broker.SetTxnVerifier(nil) // the partition side alone: no transaction coordinator asked
	tb.createTopic(t, "txn", 1, nil)
	tb.waitHosted(t, "txn")
	tid := "app"
	steps := []struct {
		records []byte
		tid     *string
	}{
		{txnBatch(1, 0, 0, true, "a1", "a2"), &tid}, // 0-1, aborted below
		{txnBatch(2, 0, 0, true, "b1"), &tid},       // 2, committed below
	}
	for _, s := range steps {
		if code, _ := tb.produceRaw(t, "txn", 0, s.tid, s.records); code != 0 {
			t.Fatalf("transactional produce: %v", kerr.ErrorForCode(code))
		}
	}
	if code := tb.writeMarker(t, "txn", 0, 1, 0, 0, false, 1); code != 0 { // 3
		t.Fatalf("abort marker: %v", kerr.ErrorForCode(code))
	}
	if code := tb.writeMarker(t, "txn", 0, 2, 0, 0, true, 1); code != 0 { // 4
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(code))
	}
	tb.produceRaw(t, "txn", 0, nil, txnBatch(-1, -1, -1, false, "plain1")) // 5
	tb.produceRaw(t, "txn", 0, &tid, txnBatch(3, 0, 0, true, "c1"))        // 6, open
	tb.produceRaw(t, "txn", 0, nil, txnBatch(-1, -1, -1, false, "plain2")) // 7
	p := tb.Broker.partition("txn", 0)
	if s := p.replica.Snapshot(); s.LastStable != 6 || s.HighWatermark != 8 {
		t.Fatalf("LSO %d HW %d, want 6 and 8", s.LastStable, s.HighWatermark)
	}

	if got, want := consumeAtIsolation(t, tb, "txn", kgo.ReadCommitted(), 2), []string{"b1", "plain1"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed got %q, want %q", got, want)
	}
	all := []string{"a1", "a2", "b1", "plain1", "c1", "plain2"}
	if got := consumeAtIsolation(t, tb, "txn", kgo.ReadUncommitted(), 6); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted got %q, want %q", got, all)
	}

	// ListOffsets: latest is the LSO for read_committed, the HW otherwise.
	for _, tc := range []struct {
		isolation int8
		want      int64
	}{{1, 6}, {0, 8}} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 5
		req.IsolationLevel = tc.isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "txn"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		got := tb.direct(t, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.Offset != tc.want {
			t.Errorf("ListOffsets latest isolation %d: error %d offset %d, want %d", tc.isolation, got.ErrorCode, got.Offset, tc.want)
		}
	}

	if code := tb.writeMarker(t, "txn", 0, 3, 0, 0, true, 1); code != 0 { // 8
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(code))
	}
	if got, want := consumeAtIsolation(t, tb, "txn", kgo.ReadCommitted(), 4), []string{"b1", "plain1", "c1", "plain2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed after the commit got %q, want %q", got, want)
	}
}

// The fetch response of a read_committed fetch lists the aborted transaction that overlaps
// the records it returns, with its producer ID and first offset, and LastStableOffset.
func TestReadCommittedFetchListsAbortedTransactions(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.Broker.SetTxnVerifier(nil) // the partition side alone: no transaction coordinator asked
	tb.createTopic(t, "ab", 1, nil)
	tb.waitHosted(t, "ab")
	tid := "x"
	tb.produceRaw(t, "ab", 0, nil, txnBatch(-1, -1, -1, false, "p0"))                        // 0
	if code, _ := tb.produceRaw(t, "ab", 0, &tid, txnBatch(7, 2, 0, true, "x")); code != 0 { // 1
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := tb.writeMarker(t, "ab", 0, 7, 2, 5, false, 1); code != 0 { // 2
		t.Fatal(kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.IsolationLevel = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "ab"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp := fetchDirect(t, tb, req)
	part := resp.Topics[0].Partitions[0]
	if part.ErrorCode != 0 || part.LastStableOffset != 3 || part.HighWatermark != 3 {
		t.Fatalf("error %d LSO %d HW %d, want 0 3 3", part.ErrorCode, part.LastStableOffset, part.HighWatermark)
	}
	want := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 1}}
	if len(part.AbortedTransactions) != 1 || part.AbortedTransactions[0].ProducerID != 7 || part.AbortedTransactions[0].FirstOffset != 1 {
		t.Fatalf("aborted transactions %+v, want %+v", part.AbortedTransactions, want)
	}
	// Fetching from past the aborted transaction lists nothing.
	req.Topics[0].Partitions[0].FetchOffset = 3
	req.MaxWaitMillis = 0
	if got := fetchDirect(t, tb, req).Topics[0].Partitions[0].AbortedTransactions; len(got) != 0 {
		t.Fatalf("aborted transactions from offset 3: %+v", got)
	}
}

// fetchDirect serves a fetch on the broker and decodes its response as a client would.
func fetchDirect(t *testing.T, tb *testBroker, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	// Fetch v12 at most: topics by name.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Markers are refused as Kafka's ProducerStateManager refuses them: an epoch older than the
// producer's (INVALID_PRODUCER_EPOCH), under TV2 one not above it while its transaction is
// open, an older coordinator epoch (TRANSACTION_COORDINATOR_FENCED); a partition not hosted
// is UNKNOWN_TOPIC_OR_PARTITION. Nothing is appended for a refused marker.
func TestWriteTxnMarkersRefusals(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.Broker.SetTxnVerifier(nil) // the partition side alone: no transaction coordinator asked
	tb.createTopic(t, "m", 1, nil)
	tb.waitHosted(t, "m")
	tid := "t"
	if code, _ := tb.produceRaw(t, "m", 0, &tid, txnBatch(5, 3, 0, true, "v")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := tb.writeMarker(t, "m", 0, 5, 2, 0, false, 1); code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("older epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if code := tb.writeMarker(t, "m", 0, 5, 3, 0, true, 2); code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("TV2 marker at the current epoch with the transaction open: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if code := tb.writeMarker(t, "m", 0, 5, 4, 7, true, 2); code != 0 {
		t.Fatalf("TV2 marker at the bumped epoch: %v", kerr.ErrorForCode(code))
	}
	end := tb.Broker.partition("m", 0).replica.Snapshot().LogEnd
	if code := tb.writeMarker(t, "m", 0, 5, 4, 6, true, 1); code != kerr.TransactionCoordinatorFenced.Code {
		t.Errorf("older coordinator epoch: %v, want TRANSACTION_COORDINATOR_FENCED", kerr.ErrorForCode(code))
	}
	if code := tb.writeMarker(t, "nope", 0, 5, 4, 7, true, 1); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	if got := tb.Broker.partition("m", 0).replica.Snapshot().LogEnd; got != end {
		t.Errorf("refused markers appended: log end %d, want %d", got, end)
	}
}

// Produce checks of transactional batches: a batch with an older epoch than the producer's
// is INVALID_PRODUCER_EPOCH, a non-transactional batch while the producer's transaction is
// open is INVALID_TXN_STATE, a client's control batch is INVALID_RECORD.
func TestTransactionalProduceRefusals(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.Broker.SetTxnVerifier(nil) // the partition side alone: no transaction coordinator asked
	tb.createTopic(t, "pr", 1, nil)
	tb.waitHosted(t, "pr")
	tid := "t"
	if code, _ := tb.produceRaw(t, "pr", 0, &tid, txnBatch(9, 1, 0, true, "a")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code, _ := tb.produceRaw(t, "pr", 0, &tid, txnBatch(9, 0, 1, true, "b")); code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("older epoch: %v", kerr.ErrorForCode(code))
	}
	if code, _ := tb.produceRaw(t, "pr", 0, nil, txnBatch(9, 1, 1, false, "c")); code != kerr.InvalidTxnState.Code {
		t.Errorf("non-transactional batch in an open transaction: %v", kerr.ErrorForCode(code))
	}
	now := time.Now().UnixMilli()
	control := batch.Build(batch.Header{Attributes: batch.AttrControl | batch.AttrTransactional, BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: 9, ProducerEpoch: 1, BaseSequence: -1}, []batch.Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	if code, _ := tb.produceRaw(t, "pr", 0, &tid, control); code != kerr.InvalidRecord.Code {
		t.Errorf("client control batch: %v", kerr.ErrorForCode(code))
	}
}

// fakeVerifier answers VerifyTxnPartition from a table and records the calls.
type fakeVerifier struct {
	err   error
	calls []string
}

func (f *fakeVerifier) VerifyTxnPartition(_ context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32) error {
	f.calls = append(f.calls, transactionalID+"/"+topic)
	return f.err
}

// With a verifier installed, the first transactional batch of a transaction on a partition
// is verified (its error answered, nothing appended); later batches of the open transaction
// are not verified again.
func TestTransactionalProduceVerification(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "v", 1, nil)
	tb.waitHosted(t, "v")
	v := &fakeVerifier{err: kerr.InvalidTxnState}
	tb.Broker.SetTxnVerifier(v)
	tid := "tv"
	if code, _ := tb.produceRaw(t, "v", 0, &tid, txnBatch(4, 0, 0, true, "a")); code != kerr.InvalidTxnState.Code {
		t.Fatalf("unverified transaction: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if end := tb.Broker.partition("v", 0).replica.Snapshot().LogEnd; end != 0 {
		t.Fatalf("refused batch appended: log end %d", end)
	}
	v.err = nil
	for seq := int32(0); seq < 2; seq++ {
		if code, _ := tb.produceRaw(t, "v", 0, &tid, txnBatch(4, 0, seq, true, "a")); code != 0 {
			t.Fatalf("verified produce: %v", kerr.ErrorForCode(code))
		}
	}
	if len(v.calls) != 2 { // the refused one and the first accepted one
		t.Fatalf("verifier calls %v, want 2", v.calls)
	}
	v.err = errors.New("coordinator unreachable")
	if code, _ := tb.produceRaw(t, "v", 0, &tid, txnBatch(4, 0, 2, true, "b")); code != 0 {
		t.Fatalf("batch of the open transaction: %v", kerr.ErrorForCode(code))
	}
}

// DescribeProducers lists each producer of a led partition with its epoch, last sequence,
// coordinator epoch and open transaction's first offset, as kafka-transactions
// describe-producers shows them.
func TestDescribeProducers(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.Broker.SetTxnVerifier(nil) // the partition side alone: no transaction coordinator asked
	tb.createTopic(t, "dp", 1, nil)
	tb.waitHosted(t, "dp")
	tid := "d"
	tb.produceRaw(t, "dp", 0, nil, txnBatch(11, 0, 0, false, "i0", "i1")) // idempotent, 0-1
	tb.produceRaw(t, "dp", 0, &tid, txnBatch(12, 3, 0, true, "t0"))       // open at 2
	tb.produceRaw(t, "dp", 0, &tid, txnBatch(13, 1, 0, true, "u0"))       // 3
	if code := tb.writeMarker(t, "dp", 0, 13, 1, 4, true, 1); code != 0 { // 4
		t.Fatal(kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic = "dp"
	rt.Partitions = []int32{0, 5}
	req.Topics = append(req.Topics, rt)
	resp := tb.direct(t, req).(*kmsg.DescribeProducersResponse)
	parts := resp.Topics[0].Partitions
	if len(parts) != 2 || parts[0].ErrorCode != 0 || parts[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partitions %+v", parts)
	}
	type row struct {
		id             int64
		epoch, lastSeq int32
		coordEpoch     int32
		txnStart       int64
	}
	var got []row
	for _, p := range parts[0].ActiveProducers {
		got = append(got, row{p.ProducerID, p.ProducerEpoch, p.LastSequence, p.CoordinatorEpoch, p.CurrentTxnStartOffset})
	}
	want := []row{{11, 0, 1, -1, -1}, {12, 3, 0, -1, 2}, {13, 1, 0, 4, -1}}
	if !slices.Equal(got, want) {
		t.Fatalf("producers %+v, want %+v", got, want)
	}
}

// Markers replicate like any batch: a follower's producer state, LSO and .txnindex follow the
// leader's, so it serves read_committed fetches the same once it leads. WriteTxnMarkers
// answers only once the follower has the marker (acks=all semantics).
func TestReplicatedTransactionStateOnFollower(t *testing.T) {
	c := startReplCluster(t, []int32{1, 2}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	leader := &testBroker{Broker: c.nodes[1].broker}
	leader.Broker.SetTxnVerifier(nil) // the partition side alone: no transaction coordinator asked
	tid := "r"
	if code, _ := leader.produceRaw(t, c.topic, 0, &tid, txnBatch(1, 0, 0, true, "a", "b")); code != 0 { // 0-1
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := leader.writeMarker(t, c.topic, 0, 1, 0, 0, false, 1); code != 0 { // 2
		t.Fatal(kerr.ErrorForCode(code))
	}
	if end := c.part(2).replica.Snapshot().LogEnd; end < 3 {
		t.Fatalf("WriteTxnMarkers answered before the follower had the marker: follower log end %d", end)
	}
	if code, _ := leader.produceRaw(t, c.topic, 0, &tid, txnBatch(2, 0, 0, true, "c")); code != 0 { // 3, open
		t.Fatal(kerr.ErrorForCode(code))
	}
	waitFor(t, "the follower's HW to reach 4", func() bool { return c.part(2).replica.Snapshot().HighWatermark == 4 })
	for _, id := range []int32{1, 2} {
		p := c.part(id)
		if s := p.replica.Snapshot(); s.LastStable != 3 {
			t.Errorf("node %d: LSO %d, want 3 (producer 2's open transaction)", id, s.LastStable)
		}
		got := p.log.AbortedTransactions(0, 1<<62)
		if len(got) != 1 || got[0].ProducerID != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].LastStableOffset != 3 {
			t.Errorf("node %d: aborted transactions %+v, want producer 1 [0, 2] lso 3", id, got)
		}
		if !p.log.HasOngoingTxn(2, 0) || p.log.HasOngoingTxn(1, 0) {
			t.Errorf("node %d: open transactions wrong: %+v", id, p.log.Producers())
		}
	}
}

// A marker is answered only once it is below the HW: with a follower in the ISR that has
// not fetched it, WriteTxnMarkers waits, and answers once the follower has it.
func TestWriteTxnMarkersWaitsForTheHighWatermark(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.Broker.SetTxnVerifier(nil) // the partition side alone: no transaction coordinator asked
	tb.createTopic(t, "wm", 1, nil)
	tb.waitHosted(t, "wm")
	tid := "w"
	if code, _ := tb.produceRaw(t, "wm", 0, &tid, txnBatch(3, 0, 0, true, "x")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	p := withFollower(t, tb, "wm")
	if _, err := p.replica.UpdateFollowerFetch(2, -1, 1, -1, time.Now()); err != nil {
		t.Fatal(err)
	}
	done := make(chan int16, 1)
	go func() {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = 3, true
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "wm", Partitions: []int32{0}}}
		req.Markers = append(req.Markers, m)
		done <- tb.Broker.WriteTxnMarkers(testContext(t), req).Markers[0].Topics[0].Partitions[0].ErrorCode
	}()
	waitFor(t, "the marker to be appended", func() bool { return p.replica.Snapshot().LogEnd == 2 })
	select {
	case code := <-done:
		t.Fatalf("answered (%v) before the follower had the marker", kerr.ErrorForCode(code))
	default:
	}
	if s := p.replica.Snapshot(); s.LastStable != 0 {
		t.Fatalf("LSO %d while the commit marker is not replicated, want 0", s.LastStable)
	}
	if _, err := p.replica.UpdateFollowerFetch(2, -1, 2, -1, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("marker: %v", kerr.ErrorForCode(code))
		}
	case <-time.After(testWait):
		t.Fatal("not answered after the HW passed the marker")
	}
	if s := p.replica.Snapshot(); s.LastStable != 2 || s.HighWatermark != 2 {
		t.Fatalf("after the commit: LSO %d HW %d, want 2 and 2", s.LastStable, s.HighWatermark)
	}
}

// A marker committed on a partition of __consumer_offsets calls the group coordinator's hook
// with the partition, producer and outcome; a marker on another topic does not.
func TestWriteTxnMarkersCallsOffsetsHook(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"offsets.topic.num.partitions": "2"})
	if err := tb.Broker.ensureOffsetsTopic(testContext(t)); err != nil {
		t.Fatal(err)
	}
	tb.createTopic(t, "data", 1, nil)
	tb.waitHosted(t, "data")
	waitFor(t, "__consumer_offsets to be led here", func() bool {
		p := tb.Broker.partition(offsetsTopic, 1)
		return p != nil && p.replica.Snapshot().Leader
	})
	type call struct {
		partition int32
		producer  int64
		commit    bool
	}
	calls := make(chan call, 4)
	tb.Broker.SetOffsetsTxnMarkerHook(func(partition int32, producerID int64, commit bool) {
		calls <- call{partition, producerID, commit}
	})
	if code := tb.writeMarker(t, "data", 0, 8, 0, 0, true, 1); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := tb.writeMarker(t, offsetsTopic, 1, 8, 0, 0, false, 1); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	select {
	case c := <-calls:
		if c != (call{1, 8, false}) {
			t.Fatalf("hook called with %+v, want partition 1, producer 8, abort", c)
		}
	default:
		t.Fatal("hook not called for the __consumer_offsets marker")
	}
	if len(calls) != 0 {
		t.Fatalf("hook called for the data topic's marker too: %+v", <-calls)
	}
}

// abortingVerifier plays a coordinator that aborts the transaction (writing its marker to
// the partition) while the batch is being verified, then answers as if it were still on.
type abortingVerifier struct{ tb *testBroker }

func (v abortingVerifier) VerifyTxnPartition(ctx context.Context, _ string, producerID int64, epoch int16, topic string, partition int32) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch = producerID, epoch
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{partition}}}
	req.Markers = append(req.Markers, m)
	v.tb.Broker.WriteTxnMarkers(ctx, req)
	return nil
}

// A transaction ended by a marker while its first batch on a partition was being verified
// must not be restarted by that batch (a hanging transaction, KIP-890): the batch is refused
// with INVALID_TXN_STATE and the partition has no open transaction.
func TestVerifiedBatchAfterAMarkerIsRefused(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "hang", 1, nil)
	tb.waitHosted(t, "hang")
	tb.Broker.SetTxnVerifier(abortingVerifier{tb})
	tid := "h"
	if code, _ := tb.produceRaw(t, "hang", 0, &tid, txnBatch(21, 0, 0, true, "late")); code != kerr.InvalidTxnState.Code {
		t.Fatalf("batch verified across an abort: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	p := tb.Broker.partition("hang", 0)
	if s := p.replica.Snapshot(); s.LastStable != s.HighWatermark || p.log.HasOngoingTxn(21, 0) {
		t.Fatalf("a transaction was left open: LSO %d HW %d", s.LastStable, s.HighWatermark)
	}
}

// A transactional batch in a produce request without a transactional ID is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's KafkaApis refuses it, and nothing is
// appended.
func TestTransactionalBatchWithoutTransactionalIDRefused(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "noid", 1, nil)
	tb.waitHosted(t, "noid")
	if code, _ := tb.produceRaw(t, "noid", 0, nil, txnBatch(31, 0, 0, true, "x")); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional ID: %v", kerr.ErrorForCode(code))
	}
	if end := tb.Broker.partition("noid", 0).replica.Snapshot().LogEnd; end != 0 {
		t.Fatalf("log end %d, want nothing appended", end)
	}
}

// txnRequest sends req until the coordinator has loaded its partition (answers other than
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR), with code
// extracting the answer's error code.
func txnRequest[R kmsg.Response](t *testing.T, tb *testBroker, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	var resp R
	waitFor(t, "the coordinator to answer", func() bool {
		resp = tb.direct(t, req).(R)
		switch code(resp) {
		case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
			return false
		}
		return true
	})
	return resp
}

// TxnOffsetCommit v0–v4 is verified with the transaction coordinator before anything is
// appended, as Kafka's group coordinator verifies a transactional write (verify-only: the
// producer adds the group's partition with AddOffsetsToTxn): without AddOffsetsToTxn it is
// INVALID_TXN_STATE, with a stale epoch INVALID_PRODUCER_EPOCH, with an unknown producer ID
// INVALID_PRODUCER_ID_MAPPING, and the offsets stay neither pending nor committed.
// Regression: v0–v4 went straight to the group coordinator, which appended the offsets into
// a transaction that did not include __consumer_offsets, so no marker would ever resolve
// them (OffsetFetch with RequireStable answered UNSTABLE_OFFSET_COMMIT until the coordinator
// moved).
func TestTxnOffsetCommitVerifiedBeforeAppend(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "in", 1, nil)
	tb.waitHosted(t, "in")
	if err := tb.Broker.ensureTxnTopic(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := tb.Broker.ensureOffsetsTopic(testContext(t)); err != nil {
		t.Fatal(err)
	}
	tid := "tx-oc"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	init.TransactionalID, init.TransactionTimeoutMillis = &tid, 60000
	ir := txnRequest(t, tb, init, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	commit := func(version int16, pid int64, epoch int16, offset int64) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = version
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = tid, "g-oc", pid, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := txnRequest(t, tb, req, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
		return r.Topics[0].Partitions[0].ErrorCode
	}
	stable := func() (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group, req.RequireStable = "g-oc", true
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "in", Partitions: []int32{0}}}
		r := txnRequest(t, tb, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.ErrorCode })
		p := r.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	for v := int16(0); v <= 4; v++ {
		if code := commit(v, pid, epoch, 5); code != kerr.InvalidTxnState.Code {
			t.Errorf("v%d without AddOffsetsToTxn: %v, want INVALID_TXN_STATE", v, kerr.ErrorForCode(code))
		}
	}
	if off, code := stable(); off != -1 || code != 0 {
		t.Fatalf("after refused commits: offset %d code %v, want -1 and no error (nothing pending)", off, kerr.ErrorForCode(code))
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version = 3
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = tid, pid, epoch, "g-oc"
	if r := txnRequest(t, tb, ao, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode }); r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if code := commit(3, pid, epoch+1, 5); code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("stale epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if code := commit(3, pid+100, epoch, 5); code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("unknown producer ID: %v, want INVALID_PRODUCER_ID_MAPPING", kerr.ErrorForCode(code))
	}
	for v := int16(0); v <= 4; v++ {
		if code := commit(v, pid, epoch, int64(10+v)); code != 0 {
			t.Errorf("v%d after AddOffsetsToTxn: %v", v, kerr.ErrorForCode(code))
		}
	}
	if _, code := stable(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("offsets of the open transaction: code %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
}

// concurrentVerifier answers CONCURRENT_TRANSACTIONS to its first busy calls, then nil.
type concurrentVerifier struct {
	busy  int
	calls int
}

func (f *concurrentVerifier) VerifyTxnPartition(context.Context, string, int64, int16, string, int32) error {
	f.calls++
	if f.calls <= f.busy {
		return kerr.ConcurrentTransactions
	}
	return nil
}

// TestTransactionalProduceRetriesConcurrentTransactions: the leader retries a verification
// answered CONCURRENT_TRANSACTIONS (the previous transaction's markers still being written)
// for add.partitions.to.txn.retry.backoff.max.ms before it answers the producer, as Kafka's
// ReplicaManager does; before, it answered at once, and franz-go waited 5 s for a metadata
// refresh before producing again (one transaction in ten took 5 s in the bench).
func TestTransactionalProduceRetriesConcurrentTransactions(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "cc", 1, nil)
	tb.waitHosted(t, "cc")
	v := &concurrentVerifier{busy: 2}
	tb.Broker.SetTxnVerifier(v)
	tid := "tcc"
	if code, _ := tb.produceRaw(t, "cc", 0, &tid, txnBatch(5, 0, 0, true, "a")); code != 0 {
		t.Fatalf("produce after two busy answers: %v", kerr.ErrorForCode(code))
	}
	if v.calls != 3 {
		t.Fatalf("verifier asked %d times, want 3 (two busy answers, then yes)", v.calls)
	}
	// Still busy after the retry budget (100 ms by default): the producer gets the error.
	v2 := &concurrentVerifier{busy: 1 << 30}
	tb.Broker.SetTxnVerifier(v2)
	if code, _ := tb.produceRaw(t, "cc", 0, &tid, txnBatch(6, 0, 0, true, "b")); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("produce while always busy: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
	if v2.calls < 2 || v2.calls > 5 {
		t.Fatalf("verifier asked %d times within the budget (20, 40 ms backoff up to 100 ms)", v2.calls)
	}
}
