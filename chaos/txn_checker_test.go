package chaos

import (
	"strings"
	"testing"
	"time"
)

// txnFixture is a clean transactional history on one partition: inputs i0..i3 at offsets
// 0..3; etl attempt 0 transforms i0,i1 and commits; attempt 1 transforms i2 and aborts;
// attempt 2 transforms i2,i3 again and commits; the aborter's attempt 0 commits a0, attempt 1
// aborts b1 on purpose. The output log (read_committed) holds, by offset: o0 (0), o1 (1), a0
// (3), o2' (6), o3 (7) - the gaps are markers and aborted records. The group committed offset
// 4. A reader polled o0 and o1.
func txnFixture() TxnHistory {
	in := History{Partitions: 1, FinalComplete: true, WorkloadStart: 0, WorkloadEnd: 10 * time.Second}
	for i, v := range []string{"i0", "i1", "i2", "i3"} {
		in.Sends = append(in.Sends, Send{Value: v, Seq: int64(i), OK: true, Offset: int64(i), Complete: time.Second})
		in.Final = map[int32][]Record{0: append(in.Final[0], Record{Offset: int64(i), Value: v})}
	}
	out := func(v, input string, off int64) TxnValue {
		return TxnValue{Value: v, Input: input, InputOffset: off}
	}
	return TxnHistory{
		Input: in, Partitions: 1, WorkloadStart: 0, WorkloadEnd: 10 * time.Second,
		Attempts: []TxnAttempt{
			{TxnID: "etl", Seq: 0, Transform: true, Outcome: TxnCommitted, Complete: 2 * time.Second, Values: []TxnValue{out("o0", "i0", 0), out("o1", "i1", 1)}},
			{TxnID: "etl", Seq: 1, Transform: true, Outcome: TxnAborted, Complete: 3 * time.Second, Values: []TxnValue{out("o2", "i2", 2)}},
			{TxnID: "etl", Seq: 2, Transform: true, Outcome: TxnCommitted, Complete: 4 * time.Second, Values: []TxnValue{out("o2'", "i2", 2), out("o3", "i3", 3)}},
			{TxnID: "aborter", Seq: 0, Outcome: TxnCommitted, Complete: 2 * time.Second, Values: []TxnValue{{Value: "a0"}}},
			{TxnID: "aborter", Seq: 1, WantAbort: true, Outcome: TxnAborted, Complete: 3 * time.Second, Values: []TxnValue{{Value: "b1"}}},
		},
		Polls: []Poll{{Consumer: "reader", Offset: 0, Value: "o0"}, {Consumer: "reader", Offset: 1, Value: "o1"}},
		Final: map[int32][]Record{0: {{Offset: 0, Value: "o0"}, {Offset: 1, Value: "o1"}, {Offset: 3, Value: "a0"},
			{Offset: 6, Value: "o2'"}, {Offset: 7, Value: "o3"}}},
		Final2: map[int32][]Record{0: {{Offset: 0, Value: "o0"}, {Offset: 1, Value: "o1"}, {Offset: 3, Value: "a0"},
			{Offset: 6, Value: "o2'"}, {Offset: 7, Value: "o3"}}},
		FinalComplete: true, GroupOffsets: map[int32]int64{0: 4}, GroupOffsetsKnown: true,
	}
}

// only asserts that exactly the named class (or none, for "") found anomalies, and returns its
// examples.
func only(t *testing.T, r TxnReport, name string, want int) []string {
	t.Helper()
	if n := r.Input.Anomalies(); n != 0 {
		t.Errorf("input queue anomalies: %d (%s)", n, r.Input.Summary())
	}
	var ex []string
	for _, c := range r.Classes() {
		switch {
		case c.Name == name:
			if c.Class.Count != want {
				t.Errorf("%s: %d, want %d (%v)", c.Name, c.Class.Count, want, c.Class.Examples)
			}
			ex = c.Class.Examples
		case c.Class.Count != 0:
			t.Errorf("%s: %d, want 0 (%v)", c.Name, c.Class.Count, c.Class.Examples)
		}
	}
	return ex
}

func TestCheckTxnClean(t *testing.T) {
	r := CheckTxn(txnFixture())
	only(t, r, "", 0)
	if r.Attempts != 5 || r.Committed != 3 || r.Aborted != 2 || r.WantAborted != 1 || r.Unknown != 0 {
		t.Errorf("attempts %d committed %d aborted %d wanted %d unknown %d", r.Attempts, r.Committed, r.Aborted, r.WantAborted, r.Unknown)
	}
	if r.Inputs != 4 || r.Processed != 4 || r.BelowOffset != 4 || !r.FinalComplete || r.Anomalies() != 0 {
		t.Errorf("inputs %d processed %d below %d complete %v anomalies %d", r.Inputs, r.Processed, r.BelowOffset, r.FinalComplete, r.Anomalies())
	}
	if r.LongestWithoutCommit != 6*time.Second || r.LongestWithoutCommitAt != 4*time.Second {
		t.Errorf("longest without a commit %v at %v, want 6s at 4s", r.LongestWithoutCommit, r.LongestWithoutCommitAt)
	}
}

func TestCheckTxnAbortedRead(t *testing.T) {
	for _, where := range []string{"poll", "final"} {
		h := txnFixture()
		if where == "poll" {
			h.Polls = append(h.Polls, Poll{Consumer: "reader", Offset: 4, Value: "b1"})
			h.FinalComplete = false // the poll's offset is not in the final read: judge the poll alone
		} else {
			h.Final[0] = append(h.Final[0], Record{Offset: 8, Value: "b1"})
			h.Final2[0] = append(h.Final2[0], Record{Offset: 8, Value: "b1"})
		}
		r := CheckTxn(h)
		if r.AbortedReads.Count != 1 || !strings.Contains(r.AbortedReads.Examples[0], "wanted abort: true") {
			t.Errorf("%s: aborted reads %d %v", where, r.AbortedReads.Count, r.AbortedReads.Examples)
		}
	}
	// A session's own abort counts too, and the input it transformed is then doubled.
	h := txnFixture()
	h.Final[0] = append(h.Final[0], Record{Offset: 8, Value: "o2"})
	h.Final2 = h.Final
	r := CheckTxn(h)
	if r.AbortedReads.Count != 1 || r.Duplicates.Count != 1 || !strings.Contains(r.Duplicates.Examples[0], `input "i2" transformed 2 times`) {
		t.Errorf("aborted reads %v, duplicates %v", r.AbortedReads.Examples, r.Duplicates.Examples)
	}
}

func TestCheckTxnLostCommitted(t *testing.T) {
	h := txnFixture()
	h.Final[0] = h.Final[0][:4] // o3 lost
	h.Final2 = h.Final
	if r := CheckTxn(h); r.OffsetWithoutOutput.Count != 1 {
		t.Errorf("i3's offset committed without its lost output: %v", r.OffsetWithoutOutput.Examples)
	}
	h.GroupOffsetsKnown = false
	r := CheckTxn(h)
	ex := only(t, r, "lost-committed", 1)
	if len(ex) != 1 || !strings.Contains(ex[0], `etl attempt 2`) || !strings.Contains(ex[0], `"o3"`) {
		t.Errorf("examples %v", ex)
	}
	// An incomplete final read judges no loss.
	h.FinalComplete = false
	if r := CheckTxn(h); r.LostCommitted.Count != 0 || r.Anomalies() != 1 {
		t.Errorf("incomplete final read: lost %d, anomalies %d", r.LostCommitted.Count, r.Anomalies())
	}
}

func TestCheckTxnDuplicate(t *testing.T) {
	// Two committed transactions transformed i1: the input's output appears twice.
	h := txnFixture()
	h.Attempts = append(h.Attempts, TxnAttempt{TxnID: "etl-2", Seq: 0, Transform: true, Outcome: TxnCommitted, Complete: 5 * time.Second,
		Values: []TxnValue{{Value: "o1'", Input: "i1", InputOffset: 1}}})
	h.Final[0] = append(h.Final[0], Record{Offset: 9, Value: "o1'"})
	h.Final2 = h.Final
	ex := only(t, CheckTxn(h), "duplicate", 1)
	if len(ex) != 1 || !strings.Contains(ex[0], `input "i1" transformed 2 times`) {
		t.Errorf("examples %v", ex)
	}
	// One value at two offsets is a duplicate of the value and of its input.
	h = txnFixture()
	h.Final[0] = append(h.Final[0], Record{Offset: 9, Value: "o3"})
	h.Final2 = h.Final
	only(t, CheckTxn(h), "duplicate", 2)
}

func TestCheckTxnNonRepeatable(t *testing.T) {
	h := txnFixture()
	h.Final2 = map[int32][]Record{0: {{Offset: 0, Value: "o0"}, {Offset: 3, Value: "a0"}, {Offset: 6, Value: "o2'"}, {Offset: 7, Value: "o3"}}}
	ex := only(t, CheckTxn(h), "non-repeatable-read", 1)
	if len(ex) != 1 || !strings.Contains(ex[0], `partition 0 offset 1: "o1" in the first final read, nothing in the second`) {
		t.Errorf("examples %v", ex)
	}
	// A shorter second read is not a difference past its end.
	h = txnFixture()
	h.Final2 = map[int32][]Record{0: h.Final[0][:3]}
	only(t, CheckTxn(h), "", 0)
}

func TestCheckTxnInconsistentRead(t *testing.T) {
	h := txnFixture()
	h.Polls = append(h.Polls, Poll{Consumer: "reader", Offset: 6, Value: "o3"})
	ex := only(t, CheckTxn(h), "inconsistent-read", 1)
	if len(ex) != 1 || !strings.Contains(ex[0], `the final read has "o2'" there`) {
		t.Errorf("examples %v", ex)
	}
}

func TestCheckTxnNonMonotonicPoll(t *testing.T) {
	h := txnFixture()
	h.Polls = append(h.Polls, Poll{Consumer: "reader", Offset: 0, Value: "o0"})
	only(t, CheckTxn(h), "nonmonotonic-poll", 1)
}

func TestCheckTxnUnexpected(t *testing.T) {
	h := txnFixture()
	h.Final[0] = append(h.Final[0], Record{Offset: 9, Value: "zz"})
	h.Final2 = h.Final
	only(t, CheckTxn(h), "unexpected", 1)
}

func TestCheckTxnPartial(t *testing.T) {
	h := txnFixture()
	h.Attempts = append(h.Attempts, TxnAttempt{TxnID: "aborter", Seq: 2, Outcome: TxnUnknown, Err: "EndTxn timed out",
		Values: []TxnValue{{Value: "a2"}, {Value: "a2b"}}})
	h.Final[0] = append(h.Final[0], Record{Offset: 9, Value: "a2"})
	h.Final2 = h.Final
	only(t, CheckTxn(h), "partial-txn", 1)
	// All or nothing of an unknown transaction is fine.
	h.Final[0] = append(h.Final[0], Record{Offset: 10, Value: "a2b"})
	h.Final2 = h.Final
	only(t, CheckTxn(h), "", 0)
}

func TestCheckTxnGroupOffsets(t *testing.T) {
	// i3's transaction of unknown outcome left half its values, and the offset past i3 (4)
	// committed: both a partial transaction and an offset without its output.
	h := txnFixture()
	h.Attempts[2].Outcome = TxnUnknown
	h.Final[0] = h.Final[0][:4]
	h.Final2 = h.Final
	if r := CheckTxn(h); r.PartialTxns.Count != 1 || r.OffsetWithoutOutput.Count != 1 || r.LostCommitted.Count != 0 {
		t.Errorf("partial %v, offset without output %v, lost %v", r.PartialTxns.Examples, r.OffsetWithoutOutput.Examples, r.LostCommitted.Examples)
	}
	h = txnFixture()
	h.Attempts[2].Values = h.Attempts[2].Values[:1] // o3 never produced
	h.Final[0] = h.Final[0][:4]
	h.Final2 = h.Final
	ex := only(t, CheckTxn(h), "offset-without-output", 1)
	if len(ex) != 1 || !strings.Contains(ex[0], `input "i3" at 0@3 is below the committed offset 4`) {
		t.Errorf("examples %v", ex)
	}
	// The offset committed only to 3, but i3 has an output.
	h = txnFixture()
	h.GroupOffsets[0] = 3
	ex = only(t, CheckTxn(h), "output-beyond-offset", 1)
	if len(ex) != 1 || !strings.Contains(ex[0], `input "i3" at 0@3 is at or past the committed offset 3`) {
		t.Errorf("examples %v", ex)
	}
}

func TestCheckTxnRecoveries(t *testing.T) {
	h := txnFixture()
	h.Nemesis = []NemesisEvent{
		{Time: 1500 * time.Millisecond, Kind: "kill", Note: "kill-txn-coordinator: node 2 coordinates etl"},
		{Time: 2500 * time.Millisecond, Kind: "restart"},
		{Time: 5 * time.Second, Kind: "pause", Note: "leader of partition 0"},
	}
	r := CheckTxn(h)
	if len(r.Recoveries) != 2 || r.Recoveries[0] != (TxnRecovery{"kill-txn-coordinator", 500 * time.Millisecond}) || r.Recoveries[1] != (TxnRecovery{"pause", -1}) {
		t.Errorf("recoveries %v", r.Recoveries)
	}
}
