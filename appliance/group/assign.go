package group

// The server-side assignors of KIP-848 consumer groups, selected by the
// ServerAssignor field of ConsumerGroupHeartbeat among those named in
// group.consumer.assignors:
//
//   - uniform (the default): spreads the partitions of the subscribed topics
//     evenly over the members subscribed to them (member counts differ by at
//     most one when every member subscribes to the same topics) and keeps
//     every partition of the previous target assignment where it was as long
//     as that stays balanced (sticky);
//   - range: per topic, the members subscribed to it (sorted by instance id,
//     then member id) get contiguous ranges of partitions, the first
//     partitions%members members one more.
//
// Both are deterministic: the same members, subscriptions and metadata give
// the same assignment.

import (
	"sort"
)

// cgSubscriber is one member as an assignor sees it.
type cgSubscriber struct {
	id, instanceID string
	topics         map[string]bool // resolved subscription
	prev           partSet         // the member's previous target
}

// computeAssignment runs the named assignor ("range", else uniform) over
// subs and topics; prev is the previous target assignment by member id.
func computeAssignment(assignor string, subs []cgSubscriber, topics map[string]cgTopic, prev map[string]partSet) map[string]partSet {
	subs = withPrev(subs, prev)
	return byMemberID(subs, assignSubscribers(assignor, subs, topics))
}

// assignSubscribers is computeAssignment by position: the target of
// subs[i] (its previous one in subs[i].prev) is the result's i-th. Member
// ids (which may be kilobytes long) are never hashed.
func assignSubscribers(assignor string, subs []cgSubscriber, topics map[string]cgTopic) []partSet {
	if assignor == "range" {
		return rangeAssignIdx(subs, topics)
	}
	return uniformAssignIdx(subs, topics)
}

func withPrev(subs []cgSubscriber, prev map[string]partSet) []cgSubscriber {
	out := make([]cgSubscriber, len(subs))
	for i, s := range subs {
		s.prev = prev[s.id]
		out[i] = s
	}
	return out
}

func byMemberID(subs []cgSubscriber, targets []partSet) map[string]partSet {
	out := make(map[string]partSet, len(subs))
	for i, s := range subs {
		out[s.id] = targets[i]
	}
	return out
}

func sortedTopicNames(topics map[string]cgTopic) []string {
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func rangeAssign(subs []cgSubscriber, topics map[string]cgTopic) map[string]partSet {
	return byMemberID(subs, rangeAssignIdx(subs, topics))
}

func rangeAssignIdx(subs []cgSubscriber, topics map[string]cgTopic) []partSet {
	out := make([]partSet, len(subs))
	for i := range subs {
		out[i] = partSet{}
	}
	for _, name := range sortedTopicNames(topics) {
		t := topics[name]
		var ms []int
		for i, s := range subs {
			if s.topics[name] {
				ms = append(ms, i)
			}
		}
		if len(ms) == 0 {
			continue
		}
		sort.Slice(ms, func(i, j int) bool {
			a, b := &subs[ms[i]], &subs[ms[j]]
			if a.instanceID != b.instanceID {
				return a.instanceID < b.instanceID
			}
			return a.id < b.id
		})
		per, extra := int(t.partitions)/len(ms), int(t.partitions)%len(ms)
		p := int32(0)
		for i, si := range ms {
			n := per
			if i < extra {
				n++
			}
			for k := 0; k < n; k++ {
				out[si][tpID{t.id, p}] = true
				p++
			}
		}
	}
	return out
}

func uniformAssign(subs []cgSubscriber, topics map[string]cgTopic, prev map[string]partSet) map[string]partSet {
	subs = withPrev(subs, prev)
	return byMemberID(subs, uniformAssignIdx(subs, topics))
}

func uniformAssignIdx(subs []cgSubscriber, topics map[string]cgTopic) []partSet {
	out := make([]partSet, len(subs))
	if len(subs) == 0 {
		return out
	}
	byID := map[TopicID]string{}
	for name, t := range topics {
		byID[t.id] = name
	}
	eligible := func(s *cgSubscriber, tp tpID) bool {
		name, ok := byID[tp.topic]
		return ok && s.topics[name] && tp.partition < topics[name].partitions
	}
	// Partitions to place, in a fixed order.
	var all []tpID
	for _, name := range sortedTopicNames(topics) {
		t := topics[name]
		for p := int32(0); p < t.partitions; p++ {
			all = append(all, tpID{t.id, p})
		}
	}
	// Members able to take each partition count toward its fair share:
	// with identical subscriptions this is partitions/members.
	owner := map[tpID]int{}
	counts := make([]int, len(subs))
	for i := range subs {
		out[i] = partSet{}
	}
	quota := func() (lo, hi int) {
		n := 0
		for _, tp := range all {
			for i := range subs {
				if eligible(&subs[i], tp) {
					n++
					break
				}
			}
		}
		return n / len(subs), (n + len(subs) - 1) / len(subs)
	}
	_, hi := quota()
	// Sticky pass: keep previous placements up to the upper quota.
	for i := range subs {
		s := &subs[i]
		if len(s.prev) == 0 {
			continue
		}
		for _, tp := range s.prev.sorted() {
			if _, taken := owner[tp]; taken || !eligible(s, tp) || counts[i] >= hi {
				continue
			}
			owner[tp] = i
			out[i][tp] = true
			counts[i]++
		}
	}
	// Place the rest on the least loaded eligible member.
	for _, tp := range all {
		if _, ok := owner[tp]; ok {
			continue
		}
		best := -1
		for i := range subs {
			if eligible(&subs[i], tp) && (best < 0 || counts[i] < counts[best]) {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		owner[tp] = best
		out[best][tp] = true
		counts[best]++
	}
	// Balance: move a partition from a member with two or more above another
	// eligible member, until none can move. The sum of squared counts drops
	// with every move, so this ends.
	for moved := true; moved; {
		moved = false
		order := make([]int, len(subs))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return counts[order[a]] > counts[order[b]] })
	search:
		for _, x := range order {
			for k := len(order) - 1; k >= 0; k-- {
				y := order[k]
				if counts[x]-counts[y] < 2 {
					break
				}
				for _, tp := range out[x].sorted() {
					if eligible(&subs[y], tp) {
						delete(out[x], tp)
						out[y][tp] = true
						counts[x]--
						counts[y]++
						moved = true
						break search
					}
				}
			}
		}
	}
	return out
}
