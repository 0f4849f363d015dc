package coordinator

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// simClient is a well-behaved KIP-848 client: it owns what the coordinator
// last assigned it and reports its owned partitions on every heartbeat.
type simClient struct {
	id     string
	epoch  int32
	owned  map[[16]byte][]int32
	topics []string
}

// TestConsumerGroupSimulation drives members joining, leaving and
// heartbeating in random order and checks, after every heartbeat, that no
// partition is owned by two members, and at the end that the group
// converges to a balanced, complete, stable assignment.
func TestConsumerGroupSimulation(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := cgHarness(t)
			rng := rand.New(rand.NewPCG(seed, seed))
			var clients []*simClient
			next := 0
			heartbeat := func(c *simClient) {
				r := h.cgHeartbeat(cgReq{member: c.id, epoch: c.epoch, topics: c.topics, owned: c.owned})
				if r.ErrorCode != 0 {
					t.Fatalf("%s heartbeat: %d", c.id, r.ErrorCode)
				}
				c.epoch = r.MemberEpoch
				if r.Assignment != nil {
					c.owned = map[[16]byte][]int32{}
					for _, tp := range r.Assignment.Topics {
						c.owned[tp.TopicID] = tp.Partitions
					}
				}
				checkExclusive(t, h)
				// What the clients believe they own never overlaps either.
				seen := map[string]string{}
				for _, o := range clients {
					for tid, ps := range o.owned {
						for _, p := range ps {
							k := fmt.Sprintf("%x/%d", tid[0], p)
							if other, ok := seen[k]; ok {
								t.Fatalf("clients %s and %s both own %s", other, o.id, k)
							}
							seen[k] = o.id
						}
					}
				}
			}
			for step := 0; step < 200; step++ {
				switch x := rng.IntN(10); {
				case x == 0 && len(clients) < 6:
					next++
					c := &simClient{id: fmt.Sprintf("m%d", next), topics: []string{"a", "b"}}
					clients = append(clients, c)
					heartbeat(c)
				case x == 1 && len(clients) > 1:
					i := rng.IntN(len(clients))
					c := clients[i]
					clients = append(clients[:i], clients[i+1:]...)
					if r := h.cgHeartbeat(cgReq{member: c.id, epoch: -1}); r.ErrorCode != 0 {
						t.Fatalf("leave %d", r.ErrorCode)
					}
				default:
					if len(clients) > 0 {
						heartbeat(clients[rng.IntN(len(clients))])
					}
				}
				if step == 100 && seed%2 == 1 {
					h.restart() // failover: the state reloads from the log
				}
				h.advance(100 * time.Millisecond)
			}
			if len(clients) == 0 {
				return
			}
			// Everyone heartbeats until stable.
			for round := 0; round < 5; round++ {
				for _, c := range clients {
					heartbeat(c)
				}
			}
			d := h.cgDescribe()
			if d.State != "Stable" {
				t.Fatalf("not stable after convergence: %+v", d)
			}
			total, lo, hi := 0, 1<<30, 0
			for _, m := range d.Members {
				n := 0
				for _, tp := range m.Assignment.TopicPartitions {
					n += len(tp.Partitions)
				}
				total += n
				lo, hi = min(lo, n), max(hi, n)
			}
			if total != 7 || hi-lo > 1 {
				t.Fatalf("assignment total %d, spread %d..%d", total, lo, hi)
			}
		})
	}
}

// checkExclusive asserts that no partition is owned (assigned or pending
// revocation) by two members.
func checkExclusive(t *testing.T, h *harness) {
	t.Helper()
	h.inShard("cg", func(s *shard) {
		g := s.groups["cg"]
		if g == nil || g.cg == nil {
			return
		}
		owner := map[string]string{}
		for id, m := range g.cg.members {
			for _, tp := range []topicPartitions{m.assigned, m.pendingRevoke} {
				for tid, ps := range tp {
					for _, p := range ps {
						k := fmt.Sprintf("%x/%d", tid[0], p)
						if o, ok := owner[k]; ok && o != id {
							t.Errorf("partition %s owned by %s and %s", k, o, id)
						}
						owner[k] = id
					}
				}
			}
		}
	})
}
