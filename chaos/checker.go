package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// maxExamples bounds the examples kept per anomaly class in a Report.
const maxExamples = 10

// Class is one of Jepsen's queue anomaly classes, with a count and a few examples.
type Class struct {
	Count    int
	Examples []string
}

func (c *Class) add(format string, args ...any) {
	c.Count++
	if len(c.Examples) < maxExamples {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
}

// Report is what Check finds in a History.
type Report struct {
	Sends, Acked, Failed int
	Polled               int
	FinalRecords         int
	FinalComplete        bool
	// Recovered counts failed (indeterminate) sends found in the log anyway.
	Recovered int

	// Lost: acknowledged values missing from the final read.
	Lost Class
	// Duplicates: values held at more than one offset in the final read.
	Duplicates Class
	// InconsistentOffsets: an offset observed (ack, poll, final read) with two values, or a
	// value observed at two offsets where the log does not hold it twice.
	InconsistentOffsets Class
	// Unexpected: values read that no producer sent.
	Unexpected Class
	// NonMonotonicSends: a producer's acknowledged offsets for a partition not increasing in
	// the order it issued the sends.
	NonMonotonicSends Class
	// NonMonotonicPolls: a consumer's offsets for a partition not increasing within a session.
	NonMonotonicPolls Class
	// PollSkips: a consumer jumping over offsets that the final read holds, within a session.
	PollSkips Class
	// CommitRegressions: the group's committed offset for a partition moving backwards.
	CommitRegressions Class

	// LongestUnavailable is the longest time inside the workload without an acknowledged
	// produce, starting at LongestUnavailableAt.
	LongestUnavailable, LongestUnavailableAt time.Duration
	// WorstPartitionUnavailable is the longest time inside the workload that one partition
	// went without an acknowledged produce (the worst partition), starting at
	// WorstPartitionUnavailableAt.
	WorstPartitionUnavailable, WorstPartitionUnavailableAt time.Duration
	WorstPartition                                         int32
	// LeaderKills are the times from each kill -9 of a node that led partitions to the next
	// acknowledged produce to one of those partitions (-1: none before the workload ended).
	LeaderKills []time.Duration
	// LeaderPauses are the same for each SIGSTOP of a node that led partitions.
	LeaderPauses []time.Duration
}

// Anomalies is the number of anomalies of every correctness class (unavailability is not one).
func (r *Report) Anomalies() int {
	n := 0
	for _, c := range r.Classes() {
		n += c.Class.Count
	}
	if !r.FinalComplete {
		n++
	}
	return n
}

// NamedClass pairs a class with its name.
type NamedClass struct {
	Name  string
	Class *Class
}

// Classes lists the correctness classes in report order.
func (r *Report) Classes() []NamedClass {
	return []NamedClass{
		{"lost", &r.Lost}, {"duplicate", &r.Duplicates}, {"inconsistent-offset", &r.InconsistentOffsets},
		{"unexpected", &r.Unexpected}, {"nonmonotonic-send", &r.NonMonotonicSends},
		{"nonmonotonic-poll", &r.NonMonotonicPolls}, {"poll-skip", &r.PollSkips},
		{"commit-regression", &r.CommitRegressions},
	}
}

type position struct {
	partition int32
	offset    int64
}

func (p position) String() string { return fmt.Sprintf("%d@%d", p.partition, p.offset) }

// Check is a pure function of a History: it never looks at a clock or a cluster.
func Check(h History) Report {
	r := Report{FinalComplete: h.FinalComplete}
	sent := map[string]*Send{}
	for i := range h.Sends {
		s := &h.Sends[i]
		sent[s.Value] = s
		r.Sends++
		if s.OK {
			r.Acked++
		} else {
			r.Failed++
		}
	}

	// Every observation of a value at a position: acks, polls, the final read.
	valuesAt := map[position]map[string]bool{}
	positionsOf := map[string]map[position]bool{}
	observe := func(p position, v string) {
		if valuesAt[p] == nil {
			valuesAt[p] = map[string]bool{}
		}
		valuesAt[p][v] = true
		if positionsOf[v] == nil {
			positionsOf[v] = map[position]bool{}
		}
		positionsOf[v][p] = true
	}
	for _, s := range h.Sends {
		if s.OK {
			observe(position{s.Partition, s.Offset}, s.Value)
		}
	}
	unexpected := map[string]bool{}
	noteUnexpected := func(v string, p position, where string) {
		if _, ok := sent[v]; !ok && !unexpected[v] {
			unexpected[v] = true
			r.Unexpected.add("%q at %s (%s) was never sent", v, p, where)
		}
	}
	for _, p := range h.Polls {
		r.Polled++
		pos := position{p.Partition, p.Offset}
		observe(pos, p.Value)
		noteUnexpected(p.Value, pos, p.Consumer)
	}
	finalCount := map[string]int{}
	finalOffsets := map[int32][]int64{}
	for _, part := range sortedPartitions(h.Final) {
		for _, rec := range h.Final[part] {
			r.FinalRecords++
			pos := position{part, rec.Offset}
			observe(pos, rec.Value)
			noteUnexpected(rec.Value, pos, "final read")
			finalCount[rec.Value]++
			finalOffsets[part] = append(finalOffsets[part], rec.Offset)
		}
	}

	// Lost and recovered.
	if h.FinalComplete {
		for _, s := range h.Sends {
			switch {
			case s.OK && finalCount[s.Value] == 0:
				r.Lost.add("%q acknowledged at %d@%d (t=%v) is not in the final read", s.Value, s.Partition, s.Offset, s.Complete.Round(time.Millisecond))
			case !s.OK && finalCount[s.Value] > 0:
				r.Recovered++
			}
		}
	}
	// Duplicates in the log.
	for _, v := range sortedKeys(finalCount) {
		if finalCount[v] > 1 {
			r.Duplicates.add("%q is in the log %d times, at %v", v, finalCount[v], sortedPositions(positionsOf[v]))
		}
	}
	// Inconsistent offsets.
	for _, p := range sortedPositionKeys(valuesAt) {
		if vs := valuesAt[p]; len(vs) > 1 {
			r.InconsistentOffsets.add("offset %s seen holding %v", p, sortedKeys(vs))
		}
	}
	for _, v := range sortedKeys(positionsOf) {
		if ps := positionsOf[v]; len(ps) > 1 && finalCount[v] < 2 {
			r.InconsistentOffsets.add("%q seen at %v", v, sortedPositions(ps))
		}
	}

	// Non-monotonic sends: per producer and partition, in issue order.
	type prodPart struct {
		producer  int
		partition int32
	}
	byProducer := map[prodPart][]Send{}
	for _, s := range h.Sends {
		if s.OK {
			k := prodPart{s.Producer, s.Partition}
			byProducer[k] = append(byProducer[k], s)
		}
	}
	for _, k := range sortedMapKeys(byProducer, func(a, b prodPart) bool {
		return a.producer < b.producer || a.producer == b.producer && a.partition < b.partition
	}) {
		ss := byProducer[k]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Seq < ss[j].Seq })
		for i := 1; i < len(ss); i++ {
			if ss[i].Offset <= ss[i-1].Offset {
				r.NonMonotonicSends.add("producer %d partition %d: %q (seq %d) acknowledged at offset %d after %q (seq %d) at %d",
					k.producer, k.partition, ss[i].Value, ss[i].Seq, ss[i].Offset, ss[i-1].Value, ss[i-1].Seq, ss[i-1].Offset)
			}
		}
	}

	// Non-monotonic polls and skips: per consumer, partition and session, in poll order.
	type session struct {
		consumer  string
		partition int32
		session   int
	}
	last := map[session]Poll{}
	for _, p := range h.Polls {
		k := session{p.Consumer, p.Partition, p.Session}
		prev, ok := last[k]
		last[k] = p
		if !ok {
			continue
		}
		switch {
		case p.Offset <= prev.Offset:
			r.NonMonotonicPolls.add("%s partition %d (session %d): offset %d polled after %d (t=%v)", p.Consumer, p.Partition, p.Session, p.Offset, prev.Offset, p.Time.Round(time.Millisecond))
		case p.Offset > prev.Offset+1:
			if skipped := countBetween(finalOffsets[p.Partition], prev.Offset, p.Offset); skipped > 0 {
				r.PollSkips.add("%s partition %d (session %d): jumped from offset %d to %d over %d records in the log (t=%v)", p.Consumer, p.Partition, p.Session, prev.Offset, p.Offset, skipped, p.Time.Round(time.Millisecond))
			}
		}
	}

	// Committed offsets never move backwards.
	commits := slices.Clone(h.Commits)
	sort.SliceStable(commits, func(i, j int) bool { return commits[i].Time < commits[j].Time })
	highest := map[int32]CommitObservation{}
	for _, c := range commits {
		if prev, ok := highest[c.Partition]; ok && c.Offset < prev.Offset {
			r.CommitRegressions.add("partition %d: committed offset %d at t=%v after %d at t=%v", c.Partition, c.Offset, c.Time.Round(time.Millisecond), prev.Offset, prev.Time.Round(time.Millisecond))
			continue
		}
		highest[c.Partition] = c
	}

	// Unavailability.
	var acks []time.Duration
	perPartition := map[int32][]time.Duration{}
	for _, s := range h.Sends {
		if s.OK && s.Complete >= h.WorkloadStart && s.Complete <= h.WorkloadEnd {
			acks = append(acks, s.Complete)
			perPartition[s.Partition] = append(perPartition[s.Partition], s.Complete)
		}
	}
	r.LongestUnavailable, r.LongestUnavailableAt = longestGap(acks, h.WorkloadStart, h.WorkloadEnd)
	for p := range h.Partitions {
		if gap, at := longestGap(perPartition[p], h.WorkloadStart, h.WorkloadEnd); gap > r.WorstPartitionUnavailable {
			r.WorstPartitionUnavailable, r.WorstPartitionUnavailableAt, r.WorstPartition = gap, at, p
		}
	}
	for _, e := range h.Nemesis {
		if (e.Kind != "kill" && e.Kind != "pause") || len(e.Led) == 0 {
			continue
		}
		recovery := time.Duration(-1)
		for _, s := range h.Sends {
			if s.OK && s.Complete > e.Time && slices.Contains(e.Led, s.Partition) {
				if d := s.Complete - e.Time; recovery < 0 || d < recovery {
					recovery = d
				}
			}
		}
		if e.Kind == "kill" {
			r.LeaderKills = append(r.LeaderKills, recovery)
		} else {
			r.LeaderPauses = append(r.LeaderPauses, recovery)
		}
	}
	return r
}

// longestGap is the longest interval between consecutive times of the sorted-or-not times
// within [start, end], the bounds included, and where it starts.
func longestGap(times []time.Duration, start, end time.Duration) (gap, at time.Duration) {
	times = slices.Clone(times)
	slices.Sort(times)
	prev := start
	for _, t := range append(times, end) {
		if d := t - prev; d > gap {
			gap, at = d, prev
		}
		prev = t
	}
	return gap, at
}

// countBetween counts the sorted offsets strictly between lo and hi.
func countBetween(sorted []int64, lo, hi int64) int {
	i, _ := slices.BinarySearch(sorted, lo+1)
	j, _ := slices.BinarySearch(sorted, hi)
	return j - i
}

func sortedPartitions(m map[int32][]Record) []int32 {
	var out []int32
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func lessPosition(a, b position) bool {
	return a.partition < b.partition || a.partition == b.partition && a.offset < b.offset
}

func sortedPositions(m map[position]bool) []position {
	return sortedMapKeys(m, lessPosition)
}

func sortedPositionKeys(m map[position]map[string]bool) []position {
	return sortedMapKeys(m, lessPosition)
}

func sortedMapKeys[K comparable, V any](m map[K]V, less func(a, b K) bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}
