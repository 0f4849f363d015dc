package coordinator

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicClient follows the classic consumer protocol as a client library
// does. Its calls go straight into the shard from the test goroutine, so
// the whole simulation is deterministic for a seed.
type classicClient struct {
	name     string
	memberID string
	state    string // new, needJoin, joining, needSync, syncing, stable
	gen      int32
	leader   bool
	members  []string
	assign   []int32
	joinResp *kmsg.JoinGroupResponse
	syncResp *syncResult
}

type syncResult struct {
	code       int16
	assignment []byte
}

const simPartitions = 12

// leaderAssign spreads simPartitions round-robin over the sorted members.
func leaderAssign(members []string) map[string][]byte {
	ids := slices.Clone(members)
	sort.Strings(ids)
	out := make(map[string][]byte)
	for p := 0; p < simPartitions; p++ {
		id := ids[p%len(ids)]
		out[id] = append(out[id], byte(p))
	}
	return out
}

func (c *classicClient) step(t *testing.T, h *harness) {
	req := func(id string) *kmsg.JoinGroupRequest { return h.joinReq(joinSpec{group: "g", memberID: id}) }
	switch c.state {
	case "new":
		c.memberID, c.joinResp = "", nil
		h.inShard("g", func(s *shard) {
			s.joinGroup(JoinClient{ClientID: c.name}, req(""), func(r *kmsg.JoinGroupResponse) { c.joinResp = r })
		})
		if c.joinResp.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("%s: first join %d", c.name, c.joinResp.ErrorCode)
		}
		c.memberID, c.state = c.joinResp.MemberID, "needJoin"
	case "needJoin":
		c.joinResp = nil
		c.state = "joining"
		h.inShard("g", func(s *shard) {
			s.joinGroup(JoinClient{ClientID: c.name}, req(c.memberID), func(r *kmsg.JoinGroupResponse) { c.joinResp = r })
		})
	case "joining":
		r := c.joinResp
		if r == nil {
			return // still waiting for the others
		}
		switch r.ErrorCode {
		case 0:
			c.gen, c.leader, c.state = r.Generation, r.LeaderID == c.memberID, "needSync"
			c.members = nil
			for _, m := range r.Members {
				c.members = append(c.members, m.MemberID)
			}
		case errUnknownMember:
			c.state = "new"
		default:
			c.state = "needJoin"
		}
	case "needSync":
		sreq := kmsg.NewPtrSyncGroupRequest()
		sreq.Version = 5
		sreq.Group, sreq.MemberID, sreq.Generation = "g", c.memberID, c.gen
		if c.leader {
			for id, a := range leaderAssign(c.members) {
				sreq.GroupAssignment = append(sreq.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
			}
		}
		c.syncResp = nil
		c.state = "syncing"
		h.inShard("g", func(s *shard) {
			s.syncGroup(sreq, func(code int16, a []byte) { c.syncResp = &syncResult{code, a} })
		})
	case "syncing":
		r := c.syncResp
		if r == nil {
			return
		}
		switch r.code {
		case 0:
			c.assign = nil
			for _, b := range r.assignment {
				c.assign = append(c.assign, int32(b))
			}
			c.state = "stable"
		case errUnknownMember:
			c.state = "new"
		default:
			c.state = "needJoin"
		}
	case "stable", "needSync2":
		var code int16
		hreq := kmsg.NewPtrHeartbeatRequest()
		hreq.Group, hreq.MemberID, hreq.Generation = "g", c.memberID, c.gen
		h.inShard("g", func(s *shard) { code = s.heartbeat(hreq) })
		switch code {
		case 0:
		case errUnknownMember:
			c.state = "new"
		default:
			c.state = "needJoin"
		}
	}
}

// TestClassicGroupSimulation runs clients that join, leave and go silent in
// random order, checking that two members stable in the same generation
// never own the same partition, and that the group converges to one
// generation that assigns every partition exactly once.
func TestClassicGroupSimulation(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := newHarness(t, nil)
			h.load("g")
			rng := rand.New(rand.NewPCG(seed, 7))
			var clients []*classicClient
			next := 0
			for step := 0; step < 400; step++ {
				switch x := rng.IntN(40); {
				case x == 0 && len(clients) < 5:
					next++
					clients = append(clients, &classicClient{name: fmt.Sprintf("c%d", next), state: "new"})
				case x == 1 && len(clients) > 1:
					i := rng.IntN(len(clients))
					c := clients[i]
					clients = slices.Delete(clients, i, i+1)
					if c.memberID != "" && rng.IntN(2) == 0 {
						// Leaves politely; otherwise it goes silent and its
						// session expires.
						lreq := kmsg.NewPtrLeaveGroupRequest()
						lreq.Version = 3
						lreq.Group = "g"
						lreq.Members = []kmsg.LeaveGroupRequestMember{{MemberID: c.memberID}}
						h.inShard("g", func(s *shard) { s.leaveGroup(lreq) })
					}
				default:
					if len(clients) > 0 {
						clients[rng.IntN(len(clients))].step(t, h)
					}
				}
				if step == 200 && seed%2 == 1 {
					// Coordinator failover mid-run: waiting calls are
					// answered NOT_COORDINATOR and the group reloads from
					// its last committed metadata.
					h.restart()
				}
				h.advance(500 * time.Millisecond)
				checkClassicExclusive(t, clients)
			}
			if len(clients) == 0 {
				return
			}
			// Everyone acts in turn until the group settles.
			for round := 0; round < 40; round++ {
				for _, c := range clients {
					c.step(t, h)
				}
				h.advance(time.Second)
				checkClassicExclusive(t, clients)
			}
			var gen int32 = -1
			var owned []int32
			var states []string
			for _, c := range clients {
				states = append(states, c.name+":"+c.state)
				if c.state != "stable" {
					continue
				}
				if gen != -1 && c.gen != gen {
					t.Fatalf("generations differ: %d vs %d", gen, c.gen)
				}
				gen = c.gen
				owned = append(owned, c.assign...)
			}
			slices.Sort(owned)
			t.Logf("clients %d, generation %d, clients ever %d", len(clients), gen, next)
			if st := h.groupState("g"); st != "Stable" || len(owned) != simPartitions {
				t.Fatalf("group %s, clients %s, owned %v", st, strings.Join(states, " "), owned)
			}
			var members int
			h.inShard("g", func(s *shard) { members = len(s.groups["g"].members) })
			if members != len(clients) {
				t.Fatalf("%d members for %d clients", members, len(clients))
			}
		})
	}
}

func checkClassicExclusive(t *testing.T, clients []*classicClient) {
	t.Helper()
	owner := map[[2]int32]string{}
	for _, c := range clients {
		if c.state != "stable" {
			continue
		}
		for _, p := range c.assign {
			k := [2]int32{c.gen, p}
			if o, ok := owner[k]; ok {
				t.Fatalf("generation %d partition %d owned by %s and %s", c.gen, p, o, c.name)
			}
			owner[k] = c.name
		}
	}
}
