package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchReq builds a v12 fetch (names, flexible) of topic's partitions at the given offsets.
func fetchReq(sessionID, epoch int32, topic string, offsets map[int32]int64) *kmsg.FetchRequest {
	return fetchReqV(12, [16]byte{}, sessionID, epoch, topic, offsets)
}

// fetchReqV builds a fetch at version, naming the topic by id from v13 on.
func fetchReqV(version int16, id [16]byte, sessionID, epoch int32, topic string, offsets map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 1<<20, 0, 0
	req.SessionID, req.SessionEpoch = sessionID, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p, off := range offsets {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// partitionsIn lists the partitions a fetch response answers, with their record byte counts.
func partitionsIn(t *testing.T, resp kmsg.Response) map[int32]int {
	t.Helper()
	fr := resp.(*splicedFetchResponse)
	// Encode and decode so the spliced record bytes are really read.
	back := kmsg.NewPtrFetchResponse()
	back.Version = fr.Version
	if err := back.ReadFrom(fr.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if back.ErrorCode != 0 {
		t.Fatalf("fetch error %v", kerr.ErrorForCode(back.ErrorCode))
	}
	got := map[int32]int{}
	for _, topic := range back.Topics {
		for _, p := range topic.Partitions {
			got[p.Partition] = len(p.RecordBatches)
		}
	}
	return got
}

func TestFetchSessions(t *testing.T) {
	// v12 names topics; v17 (what franz-go and the Java client send) uses topic IDs.
	for _, version := range []int16{12, 17} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) { testFetchSessions(t, version) })
	}
}

func testFetchSessions(t *testing.T, version int16) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "s", 3, nil)
	tb.produce(t, "s", 0, 2)
	id := [16]byte(tb.Ctrl.Image().Topics["s"].ID)
	fetchReq := func(sessionID, epoch int32, topic string, offsets map[int32]int64) *kmsg.FetchRequest {
		return fetchReqV(version, id, sessionID, epoch, topic, offsets)
	}

	// A full fetch with epoch 0 opens a session and answers every partition.
	full := tb.direct(t, fetchReq(0, 0, "s", map[int32]int64{0: 0, 1: 0, 2: 0})).(*splicedFetchResponse)
	if full.SessionID == 0 {
		t.Fatal("full fetch with epoch 0 opened no session")
	}
	if got := partitionsIn(t, full); len(got) != 3 || got[0] == 0 {
		t.Fatalf("full fetch answered %v, want all 3 partitions with records in 0", got)
	}
	sid := full.SessionID

	// Incremental, nothing new: an empty answer.
	if got := partitionsIn(t, tb.direct(t, fetchReq(sid, 1, "s", map[int32]int64{0: 2}))); len(got) != 0 {
		t.Fatalf("incremental fetch without news answered %v", got)
	}
	// New records in partition 1 (its fetch offset stays 0 in the session): only it answers.
	tb.produce(t, "s", 1, 1)
	if got := partitionsIn(t, tb.direct(t, fetchReq(sid, 2, "s", nil))); len(got) != 1 || got[1] == 0 {
		t.Fatalf("incremental fetch after a produce to partition 1 answered %v", got)
	}
	// A stale epoch and an unknown session are refused.
	if code := tb.direct(t, fetchReq(sid, 2, "s", nil)).(*kmsg.FetchResponse).ErrorCode; code != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("stale epoch answered %v", kerr.ErrorForCode(code))
	}
	if code := tb.direct(t, fetchReq(sid+1000, 1, "s", nil)).(*kmsg.FetchResponse).ErrorCode; code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session answered %v", kerr.ErrorForCode(code))
	}
	// Forgetting partition 1 stops it being answered even with records available.
	req := fetchReq(sid, 3, "s", nil)
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "s", TopicID: id, Partitions: []int32{1}}}
	tb.produce(t, "s", 1, 1)
	if got := partitionsIn(t, tb.direct(t, req)); len(got) != 0 {
		t.Fatalf("after forgetting partition 1 the session answered %v", got)
	}
	// Epoch -1 closes the session: the next incremental fetch finds none.
	tb.direct(t, fetchReq(sid, -1, "s", map[int32]int64{0: 0}))
	if code := tb.direct(t, fetchReq(sid, 4, "s", nil)).(*kmsg.FetchResponse).ErrorCode; code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session answered %v", kerr.ErrorForCode(code))
	}
}
