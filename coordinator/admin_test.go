package coordinator

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	h.load("missing")
	ids, _ := h.formGroup("g", 2)
	d := h.describe("g")
	if d.ErrorCode != 0 || d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != ids[0] || m.ClientID != "c" || m.ClientHost != "/127.0.0.1" || string(m.MemberAssignment) != ids[0] || string(m.ProtocolMetadata) != string(consumerMeta("t")) {
		t.Fatalf("member %+v", m)
	}
	// While rebalancing, members are listed without metadata/assignment.
	h.joinAsync(joinSpec{group: "g", memberID: ids[0]})
	h.waitFor("g", awaitingJoin("g", 1))
	d = h.describe("g")
	if d.State != "PreparingRebalance" || d.Protocol != "" || len(d.Members) != 2 || len(d.Members[0].MemberAssignment) != 0 {
		t.Fatalf("describe while rebalancing %+v", d)
	}

	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"missing"}
	for _, tc := range []struct {
		version int16
		code    int16
	}{{5, 0}, {6, kerr.GroupIDNotFound.Code}} {
		req.Version = tc.version
		r, err := h.c.DescribeGroups(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if g := r.Groups[0]; g.ErrorCode != tc.code || g.State != "Dead" {
			t.Fatalf("v%d missing group %+v", tc.version, g)
		}
	}
}

func TestListGroupsFilters(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	h.load("simple")
	h.formGroup("g", 1)
	h.commit("simple", -1, "", 8, "t", map[int32]int64{0: 1})
	list := func(version int16, states, types []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = version
		req.StatesFilter, req.TypesFilter = states, types
		r, err := h.c.ListGroups(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if r.ErrorCode != 0 {
			t.Fatalf("list error %d", r.ErrorCode)
		}
		var out []string
		for _, g := range r.Groups {
			out = append(out, g.Group+"/"+g.ProtocolType+"/"+g.GroupState+"/"+g.GroupType)
		}
		return out
	}
	if got := list(5, nil, nil); !slices.Equal(got, []string{"g/consumer/Stable/classic", "simple//Empty/classic"}) {
		t.Fatalf("all %v", got)
	}
	if got := list(4, []string{"stable"}, nil); !slices.Equal(got, []string{"g/consumer/Stable/classic"}) {
		t.Fatalf("stable %v", got)
	}
	if got := list(5, nil, []string{"Consumer"}); len(got) != 0 {
		t.Fatalf("consumer type %v", got)
	}
	if got := list(5, []string{"Empty"}, []string{"classic"}); !slices.Equal(got, []string{"simple//Empty/classic"}) {
		t.Fatalf("empty classic %v", got)
	}
}

func TestDeleteGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	h.load("simple")
	h.load("missing")
	ids, gen := h.formGroup("g", 1)
	h.commit("g", gen, ids[0], 8, "t", map[int32]int64{0: 4})
	h.commit("simple", -1, "", 8, "t", map[int32]int64{0: 1})
	del := func(groups ...string) []int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = 2
		req.Groups = groups
		r, err := h.c.DeleteGroups(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var out []int16
		for _, g := range r.Groups {
			out = append(out, g.ErrorCode)
		}
		return out
	}
	if got := del("g", "simple", "missing"); !slices.Equal(got, []int16{kerr.NonEmptyGroup.Code, 0, kerr.GroupIDNotFound.Code}) {
		t.Fatalf("delete %v", got)
	}
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Version = 3
	lreq.Group = "g"
	lreq.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}}
	h.c.LeaveGroup(ctx, lreq)
	if got := del("g"); !slices.Equal(got, []int16{0}) {
		t.Fatalf("delete emptied group %v", got)
	}
	if got := del("g"); !slices.Equal(got, []int16{kerr.GroupIDNotFound.Code}) {
		t.Fatalf("delete again %v", got)
	}
	h.restart()
	for _, g := range []string{"g", "simple"} {
		if got := h.fetch(g, "t", 0); got[0] != -1 {
			t.Fatalf("%s offsets survive deletion: %v", g, got)
		}
		if st := h.groupState(g); st != "none" {
			t.Fatalf("%s survives deletion: %s", g, st)
		}
	}
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	h.load("missing")
	ids, gen := h.formGroup("g", 1) // subscribed to "t"
	h.commit("g", gen, ids[0], 8, "t", map[int32]int64{0: 4})
	h.commit("g", gen, ids[0], 8, "u", map[int32]int64{0: 5})
	od := func(group string, topics ...string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, tp := range topics {
			req.Topics = append(req.Topics, kmsg.OffsetDeleteRequestTopic{Topic: tp, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		r, err := h.c.OffsetDelete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := od("g", "t", "u")
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || r.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete %+v", r)
	}
	if got := h.fetch("g", "u", 0); got[0] != -1 {
		t.Fatalf("u not deleted: %v", got)
	}
	if got := h.fetch("g", "t", 0); got[0] != 4 {
		t.Fatalf("t deleted: %v", got)
	}
	if r := od("missing", "t"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("missing group %d", r.ErrorCode)
	}
	h.restart()
	if got := h.fetch("g", "u", 0); got[0] != -1 {
		t.Fatalf("u back after restart: %v", got)
	}
}
