package coordinator

import (
	"slices"
	"sort"
)

// Server-side assignors of KIP-848 (group.consumer.assignors): "uniform"
// (the default) and "range". Both are pure functions of the members'
// subscriptions and the topics' partition counts; uniform is also sticky to
// the previous target assignment.

const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

var supportedAssignors = []string{assignorUniform, assignorRange}

type assignorMember struct {
	id     string
	topics map[string]bool // subscribed topic names that exist
	prev   topicPartitions // previous target, for stickiness
}

type topicInfo struct {
	name  string
	id    [16]byte
	parts int32
}

type partitionRef struct {
	topic int // index into topics
	part  int32
}

// assign runs the named assignor. members must be sorted by id and topics by
// name.
func assign(name string, members []assignorMember, topics []topicInfo) map[string]topicPartitions {
	out := make(map[string]topicPartitions, len(members))
	for _, m := range members {
		out[m.id] = make(topicPartitions)
	}
	if len(members) == 0 {
		return out
	}
	if name == assignorRange {
		assignRange(members, topics, out)
	} else {
		assignUniform(members, topics, out)
	}
	return out
}

// assignRange gives each topic's partitions in contiguous ranges to the
// topic's subscribers in member ID order; the first (partitions mod members)
// get one extra, as Kafka's range assignor.
func assignRange(members []assignorMember, topics []topicInfo, out map[string]topicPartitions) {
	for _, t := range topics {
		var subs []string
		for _, m := range members {
			if m.topics[t.name] {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		per, extra := int(t.parts)/len(subs), int(t.parts)%len(subs)
		p := int32(0)
		for i, id := range subs {
			n := per
			if i < extra {
				n++
			}
			for j := 0; j < n; j++ {
				out[id].add(t.id, p)
				p++
			}
		}
	}
}

// assignUniform spreads every subscribed partition as evenly as the
// subscriptions allow, keeping partitions where they were when that does
// not unbalance the result.
func assignUniform(members []assignorMember, topics []topicInfo, out map[string]topicPartitions) {
	byID := make(map[[16]byte]int, len(topics))
	var all []partitionRef
	for i, t := range topics {
		byID[t.id] = i
		subscribed := false
		for _, m := range members {
			if m.topics[t.name] {
				subscribed = true
				break
			}
		}
		if !subscribed {
			continue
		}
		for p := int32(0); p < t.parts; p++ {
			all = append(all, partitionRef{i, p})
		}
	}
	if len(all) == 0 {
		return
	}
	quota := (len(all) + len(members) - 1) / len(members)
	count := make(map[string]int, len(members))
	owner := make(map[partitionRef]string, len(all))
	eligible := func(m *assignorMember, pr partitionRef) bool { return m.topics[topics[pr.topic].name] }

	// Keep previous partitions still valid, up to the quota.
	for i := range members {
		m := &members[i]
		for _, tid := range m.prev.sortedIDs() {
			ti, ok := byID[tid]
			if !ok {
				continue
			}
			for _, p := range m.prev[tid] {
				pr := partitionRef{ti, p}
				if p >= topics[ti].parts || !eligible(m, pr) || count[m.id] >= quota {
					continue
				}
				if _, taken := owner[pr]; taken {
					continue
				}
				owner[pr] = m.id
				count[m.id]++
			}
		}
	}
	// Give the rest to the least loaded eligible member.
	for _, pr := range all {
		if _, ok := owner[pr]; ok {
			continue
		}
		best := -1
		for i := range members {
			if !eligible(&members[i], pr) {
				continue
			}
			if best < 0 || count[members[i].id] < count[members[best].id] {
				best = i
			}
		}
		owner[pr] = members[best].id
		count[members[best].id]++
	}
	// Even out: move partitions from the most to the least loaded member
	// while they differ by more than one and the move is allowed. Bounded
	// by the number of partitions.
	for range len(all) {
		ids := make([]string, len(members))
		for i, m := range members {
			ids[i] = m.id
		}
		sort.SliceStable(ids, func(a, b int) bool { return count[ids[a]] < count[ids[b]] })
		moved := false
		for hi := len(ids) - 1; hi > 0 && !moved; hi-- {
			for lo := 0; lo < hi && !moved; lo++ {
				from, to := ids[hi], ids[lo]
				if count[from]-count[to] <= 1 {
					break
				}
				toMember := &members[slices.IndexFunc(members, func(m assignorMember) bool { return m.id == to })]
				// Move the highest partition of from that to may take.
				for j := len(all) - 1; j >= 0; j-- {
					pr := all[j]
					if owner[pr] == from && eligible(toMember, pr) {
						owner[pr] = to
						count[from]--
						count[to]++
						moved = true
						break
					}
				}
			}
		}
		if !moved {
			break
		}
	}
	for _, pr := range all {
		out[owner[pr]].add(topics[pr.topic].id, pr.part)
	}
}
