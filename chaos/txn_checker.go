package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// TxnReport is what CheckTxn finds in a TxnHistory: Jepsen's transactional anomalies over the
// output topic, the queue anomalies of the input topic (Input), and availability.
type TxnReport struct {
	// Input is Check over the input topic's queue history.
	Input Report

	Attempts, Committed, Aborted, Unknown int
	// TransformCommitted counts the committed consume-transform-produce transactions, and
	// TransformMedian, TransformMax their durations (Begin to the end's acknowledgement).
	TransformCommitted            int
	TransformMedian, TransformMax time.Duration
	// WantAborted counts the attempts the workload meant to abort (the aborter's every k-th).
	WantAborted int
	// Inputs is the number of records in the input's final read; Processed those with an
	// output in the output's final read; BelowOffset those below the group's final committed
	// offset (the inputs the group says it has consumed).
	Inputs, Processed, BelowOffset int
	Polled, FinalRecords           int
	FinalComplete                  bool

	// AbortedReads: a read_committed read returned a value written by an aborted transaction.
	AbortedReads Class
	// LostCommitted: a value of a transaction whose commit was acknowledged is missing from the
	// final read.
	LostCommitted Class
	// Duplicates: an input value whose output is in the final read more than once (across all
	// transactions), or an output value at more than one offset.
	Duplicates Class
	// NonRepeatable: the two final reads differ at an offset both cover.
	NonRepeatable Class
	// InconsistentReads: a value the read_committed reader polled during the run at an offset
	// that the final read holds with another value, or does not hold at all.
	InconsistentReads Class
	// Unexpected: an output value that no transaction produced.
	Unexpected Class
	// PartialTxns: a transaction of unknown outcome of which some values are in the final read
	// and some are not (a transaction is all or nothing, whatever its outcome).
	PartialTxns Class
	// OffsetWithoutOutput: an input below the group's committed offset with no output in the
	// final read (its offset was committed without its output).
	OffsetWithoutOutput Class
	// OutputBeyondOffset: an output in the final read for an input at or past the group's
	// committed offset (its output was committed without its offset: it will be transformed
	// again).
	OutputBeyondOffset Class
	// NonMonotonicPolls: the reader's offsets for a partition not increasing.
	NonMonotonicPolls Class

	// LongestWithoutCommit is the longest time inside the workload without an acknowledged
	// commit of a transform transaction, starting at LongestWithoutCommitAt.
	LongestWithoutCommit, LongestWithoutCommitAt time.Duration
	// Recoveries are, for every kill and pause, the time to the next acknowledged commit of a
	// transform transaction (-1: none before the workload ended).
	Recoveries []TxnRecovery
}

// TxnRecovery is the time from one fault to the next committed transform transaction.
type TxnRecovery struct {
	Fault string // the nemesis kind, e.g. kill-txn-coordinator
	After time.Duration
}

// Classes lists the transactional correctness classes in report order.
func (r *TxnReport) Classes() []NamedClass {
	return []NamedClass{
		{"aborted-read", &r.AbortedReads}, {"lost-committed", &r.LostCommitted}, {"duplicate", &r.Duplicates},
		{"non-repeatable-read", &r.NonRepeatable}, {"inconsistent-read", &r.InconsistentReads},
		{"unexpected", &r.Unexpected}, {"partial-txn", &r.PartialTxns},
		{"offset-without-output", &r.OffsetWithoutOutput}, {"output-beyond-offset", &r.OutputBeyondOffset},
		{"nonmonotonic-poll", &r.NonMonotonicPolls},
	}
}

// Anomalies counts every transactional and input-queue anomaly (unavailability is not one).
func (r *TxnReport) Anomalies() int {
	n := r.Input.Anomalies()
	for _, c := range r.Classes() {
		n += c.Class.Count
	}
	if !r.FinalComplete {
		n++
	}
	return n
}

// Summary is one line of counts.
func (r *TxnReport) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d transactions (%d committed, %d aborted of which %d on purpose, %d unknown); %d inputs, %d below the committed offset, %d transformed; %d polled, %d in the final read",
		r.Attempts, r.Committed, r.Aborted, r.WantAborted, r.Unknown, r.Inputs, r.BelowOffset, r.Processed, r.Polled, r.FinalRecords)
	if !r.FinalComplete {
		b.WriteString(", FINAL READ INCOMPLETE")
	}
	for _, c := range r.Classes() {
		fmt.Fprintf(&b, "; %s %d", c.Name, c.Class.Count)
	}
	fmt.Fprintf(&b, "; %d transform commits (median %v, max %v)", r.TransformCommitted, r.TransformMedian.Round(time.Millisecond), r.TransformMax.Round(time.Millisecond))
	fmt.Fprintf(&b, "; longest without a commit %v at %v; recoveries %v; input queue: %s",
		r.LongestWithoutCommit.Round(time.Millisecond), r.LongestWithoutCommitAt.Round(time.Millisecond), r.Recoveries, r.Input.Summary())
	return b.String()
}

func (r TxnRecovery) String() string {
	if r.After < 0 {
		return r.Fault + " never"
	}
	return fmt.Sprintf("%s %.1fs", r.Fault, r.After.Seconds())
}

// CheckTxn is a pure function of a TxnHistory.
func CheckTxn(h TxnHistory) TxnReport {
	r := TxnReport{Input: Check(h.Input), FinalComplete: h.FinalComplete}

	type produced struct {
		attempt *TxnAttempt
		value   TxnValue
	}
	byValue := map[string]produced{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		r.Attempts++
		switch a.Outcome {
		case TxnCommitted:
			r.Committed++
		case TxnAborted:
			r.Aborted++
		default:
			r.Unknown++
		}
		if a.WantAbort {
			r.WantAborted++
		}
		for _, v := range a.Values {
			byValue[v.Value] = produced{a, v}
		}
	}

	// Every read_committed observation: unexpected values and aborted reads.
	unexpected, aborted := map[string]bool{}, map[string]bool{}
	observe := func(v string, pos position, where string) {
		p, ok := byValue[v]
		switch {
		case !ok:
			if !unexpected[v] {
				unexpected[v] = true
				r.Unexpected.add("%q at %s (%s) was never produced", v, pos, where)
			}
		case p.attempt.Outcome == TxnAborted:
			if !aborted[v] {
				aborted[v] = true
				r.AbortedReads.add("%q at %s (%s) was written by %s attempt %d, aborted (wanted abort: %v, t=%v)",
					v, pos, where, p.attempt.TxnID, p.attempt.Seq, p.attempt.WantAbort, p.attempt.Complete.Round(time.Millisecond))
			}
		}
	}
	lastPoll := map[string]Poll{}
	for _, p := range h.Polls {
		r.Polled++
		observe(p.Value, position{p.Partition, p.Offset}, p.Consumer)
		k := fmt.Sprintf("%s/%d", p.Consumer, p.Partition)
		if prev, ok := lastPoll[k]; ok && p.Offset <= prev.Offset {
			r.NonMonotonicPolls.add("%s partition %d: offset %d polled after %d (t=%v)", p.Consumer, p.Partition, p.Offset, prev.Offset, p.Time.Round(time.Millisecond))
		}
		lastPoll[k] = p
	}
	finalCount := map[string]int{}
	positionsOf := map[string][]position{}
	finalAt := map[position]string{}
	for _, part := range sortedPartitions(h.Final) {
		for _, rec := range h.Final[part] {
			r.FinalRecords++
			pos := position{part, rec.Offset}
			observe(rec.Value, pos, "final read")
			finalCount[rec.Value]++
			positionsOf[rec.Value] = append(positionsOf[rec.Value], pos)
			finalAt[pos] = rec.Value
		}
	}
	for _, part := range sortedPartitions(h.Final2) {
		for _, rec := range h.Final2[part] {
			observe(rec.Value, position{part, rec.Offset}, "second final read")
		}
	}

	// Duplicates: one value twice, or one input's output more than once.
	outputsOf := map[string][]string{}
	for _, v := range sortedKeys(finalCount) {
		if finalCount[v] > 1 {
			r.Duplicates.add("%q is in the log %d times, at %v", v, finalCount[v], positionsOf[v])
		}
		if p, ok := byValue[v]; ok && p.value.Input != "" {
			for range finalCount[v] {
				outputsOf[p.value.Input] = append(outputsOf[p.value.Input], v)
			}
		}
	}
	for _, in := range sortedKeys(outputsOf) {
		if outs := outputsOf[in]; len(outs) > 1 {
			var where []string
			for _, v := range outs {
				p := byValue[v]
				where = append(where, fmt.Sprintf("%q (%s attempt %d, %s) at %v", v, p.attempt.TxnID, p.attempt.Seq, p.attempt.Outcome, positionsOf[v]))
			}
			r.Duplicates.add("input %q transformed %d times: %s", in, len(outs), strings.Join(slices.Compact(where), ", "))
		}
	}

	if h.FinalComplete {
		// Lost committed writes and partial transactions.
		for _, a := range h.Attempts {
			var present, missing []string
			for _, v := range a.Values {
				if finalCount[v.Value] > 0 {
					present = append(present, v.Value)
				} else {
					missing = append(missing, v.Value)
				}
			}
			switch {
			case a.Outcome == TxnCommitted && len(missing) > 0:
				r.LostCommitted.add("%s attempt %d committed at t=%v: %d of its %d values missing from the final read, e.g. %q",
					a.TxnID, a.Seq, a.Complete.Round(time.Millisecond), len(missing), len(a.Values), missing[0])
			case a.Outcome == TxnUnknown && len(missing) > 0 && len(present) > 0:
				r.PartialTxns.add("%s attempt %d (outcome unknown: %s): %d values in the final read (e.g. %q), %d not (e.g. %q)",
					a.TxnID, a.Seq, a.Err, len(present), present[0], len(missing), missing[0])
			}
		}
		// The two final reads, over the offsets both reach.
		for p := range h.Partitions {
			a, b := h.Final[p], h.Final2[p]
			limit := min(lastOffset(a), lastOffset(b))
			av, bv := offsetMap(a, limit), offsetMap(b, limit)
			for _, off := range unionOffsets(av, bv) {
				if x, y := av[off], bv[off]; x != y {
					r.NonRepeatable.add("partition %d offset %d: %s in the first final read, %s in the second", p, off, orNothing(x), orNothing(y))
				}
			}
		}
		// The run's polls against the final read.
		for _, p := range h.Polls {
			pos := position{p.Partition, p.Offset}
			if v, ok := finalAt[pos]; !ok || v != p.Value {
				r.InconsistentReads.add("%s polled %q at %s (t=%v); the final read has %s there", p.Consumer, p.Value, pos, p.Time.Round(time.Millisecond), orNothing(v))
			}
		}
	}

	// The group's committed offsets against the outputs: consumed inputs have an output,
	// inputs not consumed have none.
	if h.FinalComplete && h.Input.FinalComplete {
		for _, part := range sortedPartitions(h.Input.Final) {
			for _, rec := range h.Input.Final[part] {
				r.Inputs++
				outs := len(outputsOf[rec.Value])
				if outs > 0 {
					r.Processed++
				}
				if !h.GroupOffsetsKnown {
					continue
				}
				below := rec.Offset < h.GroupOffsets[part]
				switch {
				case below:
					r.BelowOffset++
					if outs == 0 {
						r.OffsetWithoutOutput.add("input %q at %d@%d is below the committed offset %d but has no output", rec.Value, part, rec.Offset, h.GroupOffsets[part])
					}
				case outs > 0:
					r.OutputBeyondOffset.add("input %q at %d@%d is at or past the committed offset %d but has output %v", rec.Value, part, rec.Offset, h.GroupOffsets[part], outputsOf[rec.Value])
				}
			}
		}
	}

	// Availability: commits of transform transactions.
	var commits []time.Duration
	for _, a := range h.Attempts {
		if a.Transform && a.Outcome == TxnCommitted {
			commits = append(commits, a.Complete)
		}
	}
	slices.Sort(commits)
	var took []time.Duration
	for _, a := range h.Attempts {
		if a.Transform && a.Outcome == TxnCommitted {
			took = append(took, a.Complete-a.Begin)
		}
	}
	slices.Sort(took)
	if r.TransformCommitted = len(took); len(took) > 0 {
		r.TransformMedian, r.TransformMax = took[len(took)/2], took[len(took)-1]
	}
	var inside []time.Duration
	for _, c := range commits {
		if c >= h.WorkloadStart && c <= h.WorkloadEnd {
			inside = append(inside, c)
		}
	}
	r.LongestWithoutCommit, r.LongestWithoutCommitAt = longestGap(inside, h.WorkloadStart, h.WorkloadEnd)
	for _, e := range h.Nemesis {
		if e.Kind != "kill" && e.Kind != "pause" {
			continue
		}
		rec := TxnRecovery{Fault: faultName(e), After: -1}
		if i, _ := slices.BinarySearch(commits, e.Time+1); i < len(commits) && commits[i] <= h.WorkloadEnd {
			rec.After = commits[i] - e.Time
		}
		r.Recoveries = append(r.Recoveries, rec)
	}
	return r
}

// faultName is the nemesis kind an event names first in its note ("kill-txn-coordinator: ..."),
// else its kind.
func faultName(e NemesisEvent) string {
	if k, _, ok := strings.Cut(e.Note, ":"); ok && !strings.Contains(k, " ") {
		return k
	}
	return e.Kind
}

func lastOffset(rs []Record) int64 {
	if len(rs) == 0 {
		return -1
	}
	return rs[len(rs)-1].Offset
}

func offsetMap(rs []Record, limit int64) map[int64]string {
	m := map[int64]string{}
	for _, r := range rs {
		if r.Offset <= limit {
			m[r.Offset] = r.Value
		}
	}
	return m
}

func unionOffsets(a, b map[int64]string) []int64 {
	var out []int64
	for o := range a {
		out = append(out, o)
	}
	for o := range b {
		if _, ok := a[o]; !ok {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

func orNothing(v string) string {
	if v == "" {
		return "nothing"
	}
	return fmt.Sprintf("%q", v)
}
