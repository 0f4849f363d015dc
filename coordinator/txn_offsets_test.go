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

// txnCommitAs sends TxnOffsetCommit at version with the group fields v3+
// carries (v0–v2 carry none: the fields are left at their defaults) and
// returns the code of its one partition.
func (h *harness) txnCommitAs(version int16, group string, gen int32, member string, instance *string, topic string, offset int64) int16 {
	h.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = version
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, 7, 0
	if version >= 3 {
		req.Generation, req.MemberID, req.InstanceID = gen, member, instance
	}
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset = 0, offset
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	r, err := h.c.TxnOffsetCommit(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// TxnOffsetCommit v0–v4 against a classic group, as Kafka's
// OffsetMetadataManager.validateTransactionalOffsetCommit and
// ClassicGroup.validateOffsetCommit(isTransactional) judge it: v0–v2 carry
// no generation or member and are accepted whatever the group's state (the
// transaction coordinator, not the group, guards them); v3+ that name a
// generation, member or instance must match the group; one naming none is
// accepted as a v0 one is; and unlike OffsetCommit a member may commit while
// the group completes a rebalance. Regression: sluice ran OffsetCommit's
// rules on v3+, so a v3 commit with generation -1 to a non-empty group got
// UNKNOWN_MEMBER_ID and a valid member's commit during CompletingRebalance
// got REBALANCE_IN_PROGRESS.
func TestTxnOffsetCommitVersionsClassic(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	ids, gen := h.formGroup("g", 1)
	member := ids[0]
	inst := "i1"
	cases := []struct {
		name    string
		version int16
		group   string
		gen     int32
		member  string
		inst    *string
		want    int16
	}{
		{"v0 unknown group: a simple group is created", 0, "new0", -1, "", nil, 0},
		{"v2 unknown group", 2, "new2", -1, "", nil, 0},
		{"v3 unknown group, no generation", 3, "new3", -1, "", nil, 0},
		{"v3 unknown group with a generation", 3, "new3g", 1, "m", nil, errIllegalGeneration},
		{"v4 unknown group with a generation", 4, "new4g", 1, "m", nil, errIllegalGeneration},
		{"v0 stable group", 0, "g", 0, "", nil, 0},
		{"v1 stable group", 1, "g", 0, "", nil, 0},
		{"v2 stable group", 2, "g", 0, "", nil, 0},
		{"v3 member and generation", 3, "g", gen, member, nil, 0},
		{"v4 member and generation", 4, "g", gen, member, nil, 0},
		{"v3 no generation, no member", 3, "g", -1, "", nil, 0},
		{"v3 stale generation", 3, "g", gen - 1, member, nil, errIllegalGeneration},
		{"v4 newer generation", 4, "g", gen + 1, member, nil, errIllegalGeneration},
		{"v3 unknown member", 3, "g", gen, "nobody", nil, errUnknownMember},
		{"v4 generation without member", 4, "g", gen, "", nil, errUnknownMember},
		{"v3 unknown instance", 3, "g", gen, member, &inst, errUnknownMember},
	}
	for _, c := range cases {
		h.load(c.group)
		if got := h.txnCommitAs(c.version, c.group, c.gen, c.member, c.inst, "t", 5); got != c.want {
			t.Errorf("%s: code %d (%s), want %d (%s)", c.name, got, codeName(got), c.want, codeName(c.want))
		}
	}
	// A second member joins: the group completes a rebalance at gen+1.
	j2 := h.joinAsync(joinSpec{group: "g", memberID: h.joinNew(joinSpec{group: "g"})})
	j1 := h.joinAsync(joinSpec{group: "g", memberID: member})
	r1, r2 := j1.wait(t), j2.wait(t)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || h.groupState("g") != "CompletingRebalance" {
		t.Fatalf("rejoin: codes %d %d, state %s", r1.ErrorCode, r2.ErrorCode, h.groupState("g"))
	}
	if got := h.commit("g", r1.Generation, member, 8, "t", map[int32]int64{0: 6}); got.Topics[0].Partitions[0].ErrorCode != errRebalanceInProgress {
		t.Fatalf("OffsetCommit during CompletingRebalance: code %d, want REBALANCE_IN_PROGRESS", got.Topics[0].Partitions[0].ErrorCode)
	}
	for _, v := range []int16{3, 4} {
		if got := h.txnCommitAs(v, "g", r1.Generation, member, nil, "t", 6); got != 0 {
			t.Errorf("v%d during CompletingRebalance: code %d (%s), want OK", v, got, codeName(got))
		}
		if got := h.txnCommitAs(v, "g", r1.Generation-1, member, nil, "t", 6); got != errIllegalGeneration {
			t.Errorf("v%d old generation during CompletingRebalance: code %d (%s), want ILLEGAL_GENERATION", v, got, codeName(got))
		}
	}
}

// TxnOffsetCommit v0–v4 against a KIP-848 consumer group: with members, a
// commit must name one (v0–v2 cannot: UNKNOWN_MEMBER_ID) and its member
// epoch as the generation (another: ILLEGAL_GENERATION, Kafka's mapping of
// STALE_MEMBER_EPOCH for this API). Regression: v0–v2 skipped the check.
func TestTxnOffsetCommitVersionsConsumerGroup(t *testing.T) {
	h := cgHarness(t)
	r := h.cgHeartbeat(cgReq{member: "m1", epoch: 0, topics: []string{"a"}})
	if r.ErrorCode != 0 {
		t.Fatalf("join: code %d", r.ErrorCode)
	}
	member, epoch := "m1", r.MemberEpoch
	cases := []struct {
		name    string
		version int16
		gen     int32
		member  string
		want    int16
	}{
		{"v0", 0, -1, "", errUnknownMember},
		{"v1", 1, -1, "", errUnknownMember},
		{"v2", 2, -1, "", errUnknownMember},
		{"v3 no member", 3, -1, "", errUnknownMember},
		{"v3 member and epoch", 3, epoch, member, 0},
		{"v4 member and epoch", 4, epoch, member, 0},
		{"v3 stale epoch", 3, epoch - 1, member, errIllegalGeneration},
		{"v4 unknown member", 4, epoch, "nobody", errUnknownMember},
	}
	for _, c := range cases {
		if got := h.txnCommitAs(c.version, "cg", c.gen, c.member, nil, "a", 3); got != c.want {
			t.Errorf("%s: code %d (%s), want %d (%s)", c.name, got, codeName(got), c.want, codeName(c.want))
		}
	}
}

// txnCommitV6 sends a TxnOffsetCommit at version (5 names topic, 6 its ID)
// for one partition of one topic and returns the answer.
func (h *harness) txnCommitV6(version int16, group string, gen int32, member string, topic string, id [16]byte, partition int32, offset int64) *kmsg.TxnOffsetCommitResponse {
	h.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = version
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, 7, 0
	req.Generation, req.MemberID = gen, member
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic, t.TopicID = topic, id
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset = partition, offset
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	r, err := h.c.TxnOffsetCommit(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].TopicID != id {
		h.t.Fatalf("v%d answer %+v", version, r)
	}
	return r
}

// TxnOffsetCommit v6 (KIP-1319) against a KIP-848 consumer group, beside v5:
// topics by ID (an unknown one UNKNOWN_TOPIC_ID), GROUP_ID_NOT_FOUND for a
// member's commit to no group, STALE_MEMBER_EPOCH for a newer epoch or an
// older one the member has not held the partition since, an older epoch
// standing where it has (KIP-1251), as Kafka 4.4's
// validateTransactionalOffsetCommit; v5 answers ILLEGAL_GENERATION to each
// of those, as before. A v6 commit becomes the group's offset under the
// topic's name at the commit marker.
func TestTxnOffsetCommitV6ConsumerGroup(t *testing.T) {
	h := cgHarness(t)
	r := h.cgHeartbeat(cgReq{member: "m1", epoch: 0, topics: []string{"a"}})
	if r.ErrorCode != 0 {
		t.Fatalf("join: code %d", r.ErrorCode)
	}
	old := r.MemberEpoch
	r = h.cgHeartbeat(cgReq{member: "m1", epoch: old, topics: []string{"a", "b"}})
	if r.ErrorCode != 0 || r.MemberEpoch <= old {
		t.Fatalf("subscribe to b: %+v %s", r, assigned(r))
	}
	epoch := r.MemberEpoch
	code := func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }
	cases := []struct {
		name    string
		version int16
		group   string
		gen     int32
		topic   string
		id      [16]byte
		want    int16
	}{
		{"v6 current epoch", 6, "cg", epoch, "", topicA, 0},
		{"v5 current epoch", 5, "cg", epoch, "a", [16]byte{}, 0},
		{"v6 unknown topic ID", 6, "cg", epoch, "", [16]byte{9}, kerr.UnknownTopicID.Code},
		{"v6 newer epoch", 6, "cg", epoch + 1, "", topicA, kerr.StaleMemberEpoch.Code},
		{"v5 newer epoch", 5, "cg", epoch + 1, "a", [16]byte{}, errIllegalGeneration},
		{"v6 older epoch, partition held since", 6, "cg", old, "", topicA, 0},
		{"v6 older epoch, partition assigned later", 6, "cg", old, "", topicB, kerr.StaleMemberEpoch.Code},
		{"v5 older epoch", 5, "cg", old, "a", [16]byte{}, errIllegalGeneration},
		{"v6 no group, with a generation", 6, "nogroup", 1, "", topicA, kerr.GroupIDNotFound.Code},
		{"v5 no group, with a generation", 5, "nogroup", 1, "a", [16]byte{}, errIllegalGeneration},
	}
	for _, c := range cases {
		h.load(c.group)
		if got := code(h.txnCommitV6(c.version, c.group, c.gen, "m1", c.topic, c.id, 0, 4)); got != c.want {
			t.Errorf("%s: code %d (%s), want %d (%s)", c.name, got, codeName(got), c.want, codeName(c.want))
		}
	}

	// The v6 commit is pending under a's name and becomes the offset at the marker.
	l := h.load("cg")
	h.txnCommitV6(6, "cg", epoch, "m1", "", topicA, 1, 11)
	l.appendControl(7, 0, true)
	h.c.CompleteTxnOffsets(h.c.PartitionFor("cg"), 7, true)
	if got := h.fetch("cg", "a", 1); !slices.Equal(got, []int64{11}) {
		t.Fatalf("a-1 after the commit marker: %v", got)
	}
}

// A v6 commit into a classic group: another generation stays
// ILLEGAL_GENERATION (a classic group has no member epochs).
func TestTxnOffsetCommitV6Classic(t *testing.T) {
	topics := fakeTopics{"a": {id: topicA, parts: 4}}
	h := newHarness(t, func(c *Config) { c.Topics = topics })
	h.load("g")
	ids, gen := h.formGroup("g", 1)
	code := func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }
	if got := code(h.txnCommitV6(6, "g", gen, ids[0], "", topicA, 0, 3)); got != 0 {
		t.Fatalf("v6 member and generation: %s", codeName(got))
	}
	if got := code(h.txnCommitV6(6, "g", gen+1, ids[0], "", topicA, 0, 3)); got != errIllegalGeneration {
		t.Fatalf("v6 other generation: %s, want ILLEGAL_GENERATION", codeName(got))
	}
}
