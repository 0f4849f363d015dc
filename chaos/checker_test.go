package chaos

import (
	"slices"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// ack is an acknowledged send of v to partition p at offset o, issued at seq, completed at t ms.
func ack(producer int, seq int64, v string, p int32, o int64, t int) Send {
	return Send{Producer: producer, Seq: seq, Value: v, Partition: p, Offset: o, OK: true, Invoke: ms(t - 1), Complete: ms(t)}
}

func failed(producer int, seq int64, v string, p int32, t int) Send {
	return Send{Producer: producer, Seq: seq, Value: v, Partition: p, Invoke: ms(t - 1), Complete: ms(t), Err: "timeout"}
}

func poll(consumer string, session int, p int32, o int64, v string) Poll {
	return Poll{Consumer: consumer, Session: session, Partition: p, Offset: o, Value: v}
}

// clean is a history with no anomaly: three acknowledged values on partition 0, one failed
// send, read back in order by a consumer and the final read.
func clean() History {
	return History{
		Partitions: 1, WorkloadStart: 0, WorkloadEnd: ms(100), FinalComplete: true,
		Sends:   []Send{ack(0, 0, "a", 0, 0, 10), ack(0, 1, "b", 0, 1, 20), ack(0, 2, "c", 0, 2, 30), failed(0, 3, "d", 0, 40)},
		Polls:   []Poll{poll("g1", 1, 0, 0, "a"), poll("g1", 1, 0, 1, "b"), poll("g1", 1, 0, 2, "c")},
		Final:   map[int32][]Record{0: {{0, "a"}, {1, "b"}, {2, "c"}}},
		Commits: []CommitObservation{{ms(10), 0, 1}, {ms(20), 0, 3}},
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(h *History)
		class  string // the only class expected non-zero ("" for none)
		count  int
		verify func(t *testing.T, r Report)
	}{
		{name: "clean", edit: func(h *History) {}},
		{name: "acknowledged write lost", class: "lost", count: 1, edit: func(h *History) {
			h.Final[0] = h.Final[0][:2]
			h.Polls = h.Polls[:2]
		}},
		{name: "failed write in the log is recovered, not an anomaly", edit: func(h *History) {
			h.Final[0] = append(h.Final[0], Record{3, "d"})
		}, verify: func(t *testing.T, r Report) {
			if r.Recovered != 1 {
				t.Errorf("recovered %d, want 1", r.Recovered)
			}
		}},
		{name: "duplicate in the log", class: "duplicate", count: 1, edit: func(h *History) {
			h.Final[0] = append(h.Final[0], Record{3, "b"})
		}},
		{name: "two values at one offset", class: "inconsistent-offset", count: 1, edit: func(h *History) {
			h.Polls[2] = poll("g1", 1, 0, 2, "x")
			h.Sends = append(h.Sends, failed(0, 4, "x", 0, 50))
		}, verify: func(t *testing.T, r Report) {}},
		{name: "acknowledged at one offset, found at another", class: "inconsistent-offset", count: 2, edit: func(h *History) {
			// c acked at 2 but the log has c at 3 and nothing at 2: c seen at two offsets, and
			// offset 2 holding c (ack) is fine alone; d in the log at 2 makes 2 hold two values.
			h.Final[0] = []Record{{0, "a"}, {1, "b"}, {2, "d"}, {3, "c"}}
			h.Polls = h.Polls[:2]
		}, verify: func(t *testing.T, r Report) {
			if r.Recovered != 1 {
				t.Errorf("recovered %d, want 1", r.Recovered)
			}
		}},
		{name: "value nobody sent", class: "unexpected", count: 1, edit: func(h *History) {
			h.Final[0] = append(h.Final[0], Record{3, "zz"})
		}},
		{name: "send acknowledged at a lower offset than an earlier one", class: "nonmonotonic-send", count: 1, edit: func(h *History) {
			h.Sends[0].Seq, h.Sends[1].Seq = 1, 0 // b issued first, acknowledged at offset 1 > a's 0: fine; swap so a (seq 1) at 0 < b (seq 0) at 1
		}},
		{name: "consumer going back within a session", class: "nonmonotonic-poll", count: 1, edit: func(h *History) {
			h.Polls = append(h.Polls, poll("g1", 1, 0, 1, "b"))
		}},
		{name: "consumer going back in a new session is a rebalance", edit: func(h *History) {
			h.Polls = append(h.Polls, poll("g1", 2, 0, 1, "b"))
		}},
		{name: "consumer skipping a record in the log", class: "poll-skip", count: 1, edit: func(h *History) {
			h.Polls = []Poll{poll("r", 0, 0, 0, "a"), poll("r", 0, 0, 2, "c")}
		}},
		{name: "committed offset moving backwards", class: "commit-regression", count: 1, edit: func(h *History) {
			h.Commits = append(h.Commits, CommitObservation{ms(30), 0, 2})
		}},
		{name: "incomplete final read judges no loss", edit: func(h *History) {
			h.FinalComplete = false
			h.Final[0] = nil
		}, verify: func(t *testing.T, r Report) {
			if r.Anomalies() != 1 {
				t.Errorf("an incomplete final read counts as one anomaly; got %d", r.Anomalies())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := clean()
			tc.edit(&h)
			r := Check(h)
			for _, c := range r.Classes() {
				want := 0
				if c.Name == tc.class {
					want = tc.count
				}
				if c.Class.Count != want {
					t.Errorf("%s: %d (%v), want %d", c.Name, c.Class.Count, c.Class.Examples, want)
				}
			}
			if tc.verify != nil {
				tc.verify(t, r)
			}
		})
	}
}

func TestCheckUnavailability(t *testing.T) {
	h := History{
		Partitions: 2, WorkloadStart: ms(0), WorkloadEnd: ms(10000), FinalComplete: true,
		Sends: []Send{
			ack(0, 0, "a", 0, 0, 100), ack(0, 0, "b", 1, 0, 200),
			// node 2 (leader of partition 1) killed at 1000; partition 0 keeps going, partition
			// 1 is acknowledged again at 4500.
			ack(0, 1, "c", 0, 1, 1500), ack(0, 1, "d", 1, 1, 4500),
			// then nothing at all from 5000 to 9000
			ack(0, 2, "e", 0, 2, 5000), ack(0, 3, "f", 0, 3, 9000),
		},
		Nemesis: []NemesisEvent{
			{Time: ms(1000), Kind: "kill", Nodes: []int32{2}, Led: []int32{1}},
			{Time: ms(2000), Kind: "kill", Nodes: []int32{3}},                     // led nothing: not measured
			{Time: ms(9500), Kind: "kill", Nodes: []int32{1}, Led: []int32{0, 1}}, // never recovered
			{Time: ms(4000), Kind: "pause", Nodes: []int32{1}, Led: []int32{0}},   // partition 0 acknowledged at 5000
		},
		Final: map[int32][]Record{0: {{0, "a"}, {1, "c"}, {2, "e"}, {3, "f"}}, 1: {{0, "b"}, {1, "d"}}},
	}
	r := Check(h)
	if r.Anomalies() != 0 {
		t.Fatalf("anomalies: %+v", r)
	}
	if r.LongestUnavailable != ms(4000) || r.LongestUnavailableAt != ms(5000) {
		t.Errorf("longest unavailable %v at %v, want 4s at 5s", r.LongestUnavailable, r.LongestUnavailableAt)
	}
	if want := []time.Duration{ms(3500), -1}; !slices.Equal(r.LeaderKills, want) {
		t.Errorf("leader kill recoveries %v, want %v", r.LeaderKills, want)
	}
	if want := []time.Duration{ms(1000)}; !slices.Equal(r.LeaderPauses, want) {
		t.Errorf("leader pause recoveries %v, want %v", r.LeaderPauses, want)
	}
	// Partition 1's last ack is at 4500: 5.5 s to the end of the workload.
	if r.WorstPartitionUnavailable != ms(5500) || r.WorstPartition != 1 || r.WorstPartitionUnavailableAt != ms(4500) {
		t.Errorf("worst partition %d without an ack for %v from %v, want 1 for 5.5s from 4.5s", r.WorstPartition, r.WorstPartitionUnavailable, r.WorstPartitionUnavailableAt)
	}
}
