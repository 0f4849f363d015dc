package coordinator

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) txnCommit(group string, gen int32, member string, pid int64, topic string, offsets map[int32]int64) *kmsg.TxnOffsetCommitResponse {
	h.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, pid, 0
	req.Generation, req.MemberID = gen, member
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	for p, o := range offsets {
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset = p, o
		t.Partitions = append(t.Partitions, tp)
	}
	req.Topics = append(req.Topics, t)
	r, err := h.c.TxnOffsetCommit(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) fetchStable(group, topic string, part int32) (int64, int16) {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group, req.RequireStable = group, true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{part}}}
	r, err := h.c.OffsetFetch(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	p := r.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// Transactional offsets stay invisible until the commit marker, are dropped
// by an abort marker, and replay resolves them at the stored markers.
func TestTxnOffsetCommitPendingUntilMarker(t *testing.T) {
	h := newHarness(t, nil)
	l := h.load("g")
	p := h.c.PartitionFor("g")
	if r := h.txnCommit("g", -1, "", 7, "t", map[int32]int64{0: 10}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn commit: %+v", r)
	}
	if got := h.fetch("g", "t", 0); !slices.Equal(got, []int64{-1}) {
		t.Fatalf("before the marker: %v", got)
	}
	if _, code := h.fetchStable("g", "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require stable before the marker: code %d", code)
	}
	l.appendControl(7, 0, true)
	h.c.CompleteTxnOffsets(p, 7, true)
	if got := h.fetch("g", "t", 0); !slices.Equal(got, []int64{10}) {
		t.Fatalf("after commit: %v", got)
	}
	// An aborted one is dropped.
	h.txnCommit("g", -1, "", 8, "t", map[int32]int64{0: 20})
	l.appendControl(8, 0, false)
	h.c.CompleteTxnOffsets(p, 8, false)
	if got := h.fetch("g", "t", 0); !slices.Equal(got, []int64{10}) {
		t.Fatalf("after abort: %v", got)
	}
	// One left open survives a reload as pending; its marker written
	// after the reload commits it.
	h.txnCommit("g", -1, "", 9, "t", map[int32]int64{0: 30})
	h.restart()
	if got := h.fetch("g", "t", 0); !slices.Equal(got, []int64{10}) {
		t.Fatalf("after reload: %v", got)
	}
	if _, code := h.fetchStable("g", "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require stable after reload: code %d", code)
	}
	l.appendControl(9, 0, true)
	h.c.CompleteTxnOffsets(p, 9, true)
	if got := h.fetch("g", "t", 0); !slices.Equal(got, []int64{30}) {
		t.Fatalf("after commit post reload: %v", got)
	}
	h.restart()
	if got := h.fetch("g", "t", 0); !slices.Equal(got, []int64{30}) {
		t.Fatalf("replayed: %v", got)
	}
}

func TestTxnOffsetCommitChecksGeneration(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	if r := h.txnCommit("g", 3, "m", 7, "t", map[int32]int64{0: 1}); r.Topics[0].Partitions[0].ErrorCode != errIllegalGeneration {
		t.Fatalf("unknown group with a generation: %+v", r)
	}
	h.commit("g", -1, "", 8, "t", map[int32]int64{0: 1}) // creates the simple group
	if r := h.txnCommit("g", 1, "m", 7, "t", map[int32]int64{0: 1}); r.Topics[0].Partitions[0].ErrorCode != errUnknownMember {
		t.Fatalf("unknown member: %+v", r)
	}
}
