package broker

// Wire tests of the newest versions of Fetch (18), ListOffsets (11), DescribeLogDirs (5),
// DeleteGroups (3) and TxnOffsetCommit (6, through franz-go): each request is encoded at its version, sent on a TCP connection to the
// broker's listener and its answer decoded at that version, beside the previous version's
// answer to the same request, which must not change.

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

// wireAt sends req at its own version to tb's listener on a fresh connection and returns the
// answer decoded at that version.
func wireAt[R kmsg.Response](t *testing.T, tb *testBroker, req kmsg.Request) R {
	t.Helper()
	conn, err := net.DialTimeout("tcp", tb.Addr, testWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp := req.ResponseKind()
	rawRoundTrip(t, conn, req, resp)
	return resp.(R)
}

// TestFetchV18OnTheWire: v18 adds only the tagged HighWatermark a KRaft voter sends (KIP-1166);
// a broker's Fetch at v18 answers as at v17, whatever the field says.
func TestFetchV18OnTheWire(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "f18", 1, nil)
	tb.produce(t, "f18", 0, 3)
	topicID := tb.Ctrl.Image().Topics["f18"].ID
	for _, tc := range []struct {
		version       int16
		highWatermark int64
	}{{17, 9223372036854775807}, {18, 9223372036854775807}, {18, 1}, {18, -1}} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = tc.version
		req.MaxWaitMillis, req.MinBytes = 0, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = [16]byte(topicID)
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = 0, 1<<20
		rp.HighWatermark = tc.highWatermark
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := wireAt[*kmsg.FetchResponse](t, tb, req)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", tc.version, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 3 || p.LastStableOffset != 3 {
			t.Fatalf("v%d (hw %d): error %d hw %d lso %d", tc.version, tc.highWatermark, p.ErrorCode, p.HighWatermark, p.LastStableOffset)
		}
		var n int
		for _, b := range readBatches(t, p.RecordBatches) {
			n += int(b.NumRecords)
		}
		if n != 3 {
			t.Fatalf("v%d (hw %d): %d records, want 3", tc.version, tc.highWatermark, n)
		}
	}
}

// readBatches splits a fetch's record bytes into batches.
func readBatches(t *testing.T, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) >= 12 {
		length := int(int32(uint32(b[8])<<24 | uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11])))
		if 12+length > len(b) {
			break // a partial batch at the end
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:12+length]); err != nil {
			t.Fatalf("batch: %v", err)
		}
		out = append(out, rb)
		b = b[12+length:]
	}
	return out
}

// listOffsetsAt asks for one timestamp of topic/0 at version.
func listOffsetsAt(t *testing.T, tb *testBroker, version int16, topic string, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := wireAt[*kmsg.ListOffsetsResponse](t, tb, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("v%d: %+v", version, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestListOffsetsV11EarliestPendingUpload: v11's -6 (KIP-1023) answers what Kafka 4.4 answers
// for a topic without remote storage, -1 for offset, timestamp and leader epoch, without an
// error; v10 keeps refusing -6 as an unknown negative timestamp, and the other special
// timestamps answer the same at both versions.
func TestListOffsetsV11EarliestPendingUpload(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "lo11", 1, nil)
	tb.produce(t, "lo11", 0, 4)

	p := listOffsetsAt(t, tb, 11, "lo11", listEarliestPendingUpload)
	if p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
		t.Fatalf("v11 -6: error %d offset %d timestamp %d epoch %d; want 0 -1 -1 -1", p.ErrorCode, p.Offset, p.Timestamp, p.LeaderEpoch)
	}
	if p := listOffsetsAt(t, tb, 10, "lo11", listEarliestPendingUpload); p.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v10 -6: error %d, want INVALID_REQUEST", p.ErrorCode)
	}
	for _, ts := range []int64{listLatest, listEarliest, listEarliestLocal, listLatestTiered} {
		v10, v11 := listOffsetsAt(t, tb, 10, "lo11", ts), listOffsetsAt(t, tb, 11, "lo11", ts)
		if v10.ErrorCode != 0 || v10.ErrorCode != v11.ErrorCode || v10.Offset != v11.Offset || v10.LeaderEpoch != v11.LeaderEpoch {
			t.Fatalf("timestamp %d: v10 %+v, v11 %+v", ts, v10, v11)
		}
	}
	if p := listOffsetsAt(t, tb, 11, "lo11", listLatest); p.Offset != 4 {
		t.Fatalf("v11 latest: offset %d, want 4", p.Offset)
	}
	if p := listOffsetsAt(t, tb, 11, "missing", listEarliestPendingUpload); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v11 -6 of a missing topic: error %d", p.ErrorCode)
	}
}

// TestDescribeLogDirsV5: v5 (KIP-1066) lists every directory with IsCordoned false (sluice
// cannot cordon one) and otherwise answers as v4.
func TestDescribeLogDirsV5(t *testing.T) {
	tb, dirs := startJBODBroker(t)
	tb.createTopic(t, "dl5", 2, nil)
	tb.produce(t, "dl5", 0, 5)
	for _, version := range []int16{4, 5} {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = version
		resp := wireAt[*kmsg.DescribeLogDirsResponse](t, tb, req)
		if resp.ErrorCode != 0 || len(resp.Dirs) != 2 || resp.Dirs[0].Dir != dirs[0] || resp.Dirs[1].Dir != dirs[1] {
			t.Fatalf("v%d: %+v", version, resp)
		}
		var partitions int
		for _, d := range resp.Dirs {
			if d.ErrorCode != 0 || d.IsCordoned || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
				t.Fatalf("v%d dir %s: error %d cordoned %v total %d usable %d", version, d.Dir, d.ErrorCode, d.IsCordoned, d.TotalBytes, d.UsableBytes)
			}
			for _, tt := range d.Topics {
				partitions += len(tt.Partitions)
			}
		}
		if partitions != 2 {
			t.Fatalf("v%d lists %d partitions of dl5, want 2", version, partitions)
		}
	}
}

// TestDeleteGroupsV3: v3 adds a per-group ErrorMessage, which Kafka 4.4 leaves null for the
// per-group answers; the codes are v2's.
func TestDeleteGroupsV3(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "dg3", 1, nil)
	for _, version := range []int16{2, 3} {
		commitOffset(t, tb, "dg3-group", "dg3", 1)
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = version
		req.Groups = []string{"dg3-group", "dg3-missing", ""}
		resp := wireAt[*kmsg.DeleteGroupsResponse](t, tb, req)
		want := map[string]int16{"dg3-group": 0, "dg3-missing": kerr.GroupIDNotFound.Code, "": kerr.InvalidGroupID.Code}
		if len(resp.Groups) != len(want) {
			t.Fatalf("v%d: %+v", version, resp.Groups)
		}
		for _, g := range resp.Groups {
			if code, ok := want[g.Group]; !ok || g.ErrorCode != code || g.ErrorMessage != nil {
				t.Fatalf("v%d group %q: error %d message %v, want %d and no message", version, g.Group, g.ErrorCode, g.ErrorMessage, code)
			}
		}
	}
}

// TestTxnOffsetCommitV6FranzGo: franz-go (go.mod's version) sends TxnOffsetCommit v6, with
// topic IDs, from a GroupTransactSession under transaction version 2; the consumed offsets
// become the group's at the commit, and every input is transformed once.
func TestTxnOffsetCommitV6FranzGo(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "etl6-in", 1, nil)
	tb.createTopic(t, "etl6-out", 1, nil)
	const n = 20
	tb.produce(t, "etl6-in", 0, n)
	var mu sync.Mutex
	versions := map[int16]bool{}
	observe := func(r *wire.Request) {
		if r.Key == 28 {
			mu.Lock()
			versions[r.Version] = true
			mu.Unlock()
		}
	}
	tb.handler.observe.Store(&observe)
	defer tb.handler.observe.Store(nil)

	ctx := testContext(t)
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tb.Addr), kgo.TransactionalID("tx-etl6"),
		kgo.ConsumerGroup("etl6"), kgo.ConsumeTopics("etl6-in"), kgo.DefaultProduceTopic("etl6-out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for seen := 0; seen < n; {
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
			sess.Produce(ctx, &kgo.Record{Partition: 0, Value: append([]byte("out-"), r.Value...)}, func(_ *kgo.Record, err error) {
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
	// The transaction's offsets become visible once its commit marker reaches the group's
	// __consumer_offsets partition, which EndTxn does not wait for: wait with a deadline.
	deadline := time.Now().Add(testWait)
	for {
		offsets, err := tb.Admin.FetchOffsets(ctx, "etl6")
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offsets.Lookup("etl6-in", 0)
		if ok && o.Err == nil && o.At == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group etl6 offset of etl6-in/0: %+v (found %v), want %d", o, ok, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The outputs, read committed: each input transformed once.
	out, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"etl6-out": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]int{}
	for total := 0; total < n; {
		fs := out.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d outputs", total, n)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++; total++ })
	}
	for i := range n {
		if v := "out-v" + strconv.Itoa(i); got[v] != 1 {
			t.Fatalf("output %s seen %d times: %v", v, got[v], got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !versions[6] || len(versions) != 1 {
		t.Fatalf("TxnOffsetCommit versions sent: %v, want only 6", versions)
	}
}

// TestAuthorizationTxnOffsetCommitV6: v6 names topics by ID, and READ is checked on the
// topic the ID names: a commit naming a topic the client may not read is refused for it
// (TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED), one naming only readable
// topics passes to the coordinator, and an unknown ID is left to the coordinator.
func TestAuthorizationTxnOffsetCommitV6(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"authorizer.class.name": authz.StandardAuthorizerClass})
	tb.addACLs(t, anonACL(authz.ResourceCluster, authz.ClusterName, authz.OpCreate),
		anonACL(authz.ResourceTransactionalID, "tx6", authz.OpWrite),
		anonACL(authz.ResourceGroup, "g6", authz.OpRead),
		anonACL(authz.ResourceTopic, "readable6", authz.OpRead))
	for _, name := range []string{"readable6", "hidden6"} {
		if _, err := tb.Admin.CreateTopic(testContext(t), 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	im := tb.Ctrl.Image()
	commit := func(ids ...[16]byte) []int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 6
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx6", "g6", 1, 0
		for _, id := range ids {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.TopicID = id
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := wireAt[*kmsg.TxnOffsetCommitResponse](t, tb, req)
		var codes []int16
		for i, rt := range resp.Topics {
			if rt.TopicID != ids[i] {
				t.Fatalf("topic %d answered as %x, want %x", i, rt.TopicID, ids[i])
			}
			codes = append(codes, rt.Partitions[0].ErrorCode)
		}
		return codes
	}
	readable, hidden := [16]byte(im.Topics["readable6"].ID), [16]byte(im.Topics["hidden6"].ID)
	if codes := commit(readable, hidden); len(codes) != 2 || codes[0] != kerr.OperationNotAttempted.Code || codes[1] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("readable and hidden: %v, want OPERATION_NOT_ATTEMPTED and TOPIC_AUTHORIZATION_FAILED", codes)
	}
	for _, ids := range [][][16]byte{{readable}, {{7}}} {
		if codes := commit(ids...); len(codes) != 1 || codes[0] == kerr.TopicAuthorizationFailed.Code || codes[0] == kerr.OperationNotAttempted.Code {
			t.Fatalf("%x: %v, want the coordinator's answer", ids, codes)
		}
	}
}
