package main

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// describeConsumerGroup describes a KIP-848 consumer-protocol group, which
// DescribeGroups (and so kadm's Lag) answers GROUP_ID_NOT_FOUND, as Kafka 4
// does: state, assignor and members from ConsumerGroupDescribe, committed
// offsets from OffsetFetch, and each partition's lag against its log end
// offset (against its log start offset when nothing is committed). ok is
// false when name is not such a group either.
func describeConsumerGroup(ctx context.Context, e *env, name string) (d groupDescription, ok bool, err error) {
	cgs, err := e.adm.DescribeConsumerGroups(ctx, name)
	if err != nil {
		return d, false, err
	}
	cg, found := cgs[name]
	if !found || cg.Err != nil {
		return d, false, nil
	}
	d = groupDescription{Group: name, State: cg.State, ProtocolType: "consumer", Protocol: cg.AssignorName,
		Coordinator: cg.Coordinator.NodeID, Members: []memberRow{}, Offsets: []lagRow{}}
	owner := map[string]map[int32]string{}
	topics := map[string]bool{}
	for _, m := range cg.Members {
		mr := memberRow{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		if m.InstanceID != nil {
			mr.InstanceID = *m.InstanceID
		}
		d.Members = append(d.Members, mr)
		for t, ps := range m.Assignment {
			topics[t] = true
			if owner[t] == nil {
				owner[t] = map[int32]string{}
			}
			for p := range ps {
				owner[t][p] = m.MemberID
			}
		}
	}
	commits, err := e.adm.FetchOffsets(ctx, name)
	if err != nil {
		return d, false, err
	}
	commits.Each(func(o kadm.OffsetResponse) { topics[o.Topic] = true })
	if len(topics) == 0 {
		return d, true, nil
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	ends, err := e.adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return d, false, err
	}
	starts, err := e.adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return d, false, err
	}
	for _, t := range names {
		var parts []int32
		seen := map[int32]bool{}
		add := func(p int32) {
			if !seen[p] {
				seen[p] = true
				parts = append(parts, p)
			}
		}
		for p := range owner[t] {
			add(p)
		}
		for p := range commits[t] {
			add(p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		for _, p := range parts {
			r := lagRow{Topic: t, Partition: p, Committed: -1, End: -1, Lag: -1, MemberID: owner[t][p]}
			c, committed := commits.Lookup(t, p)
			if committed {
				if c.Err != nil {
					r.Error = errString(c.Err)
				} else {
					r.Committed = c.At
				}
			}
			end, okEnd := ends.Lookup(t, p)
			switch {
			case !okEnd:
			case end.Err != nil:
				r.Error = errString(end.Err)
			default:
				r.End = end.Offset
				if r.Committed >= 0 {
					r.Lag = max(end.Offset-r.Committed, 0)
				} else if start, ok := starts.Lookup(t, p); ok && start.Err == nil && r.Error == "" {
					r.Lag = end.Offset - start.Offset
				}
			}
			if r.Lag > 0 {
				d.TotalLag += r.Lag
			}
			d.Offsets = append(d.Offsets, r)
		}
	}
	return d, true, nil
}
