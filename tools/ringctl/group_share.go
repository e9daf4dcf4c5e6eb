package main

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// describeShareGroup describes a KIP-932 share group, which DescribeGroups
// does not describe: state, assignor and members from ShareGroupDescribe,
// and per partition the share-partition start offset (shown as the
// committed offset: what the group has consumed up to) from
// DescribeShareGroupOffsets, with the log end offset and the lag. ok is
// false when name is not a share group.
func describeShareGroup(ctx context.Context, e *env, name string) (d groupDescription, ok bool, err error) {
	sgs, err := e.adm.DescribeShareGroups(ctx, name)
	if err != nil {
		return d, false, err
	}
	sg, found := sgs[name]
	if !found || sg.Err != nil {
		return d, false, nil
	}
	d = groupDescription{Group: name, State: sg.GroupState, ProtocolType: "share", Protocol: sg.Assignor,
		Coordinator: sg.Coordinator.NodeID, Members: []memberRow{}, Offsets: []lagRow{}}
	owners := map[string]map[int32]string{} // a share-partition may have several members: the first is shown
	for _, m := range sg.Members {
		d.Members = append(d.Members, memberRow{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost})
		for t, ps := range m.Assignment {
			if owners[t] == nil {
				owners[t] = map[int32]string{}
			}
			for p := range ps {
				if _, dup := owners[t][p]; !dup {
					owners[t][p] = m.MemberID
				}
			}
		}
	}
	offs, err := e.adm.DescribeShareGroupOffsets(ctx, name)
	if err != nil {
		return d, false, err
	}
	so := offs[name]
	if so.Err != nil {
		return d, false, so.Err
	}
	topics := make([]string, 0, len(so.Offsets))
	for t := range so.Offsets {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		if ends, err = e.adm.ListEndOffsets(ctx, topics...); err != nil {
			return d, false, err
		}
	}
	for _, t := range topics {
		parts := make([]int32, 0, len(so.Offsets[t]))
		for p := range so.Offsets[t] {
			parts = append(parts, p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		for _, p := range parts {
			o := so.Offsets[t][p]
			r := lagRow{Topic: t, Partition: p, Committed: o.StartOffset, End: -1, Lag: o.Lag, MemberID: owners[t][p], Error: errString(o.Err)}
			if end, ok := ends.Lookup(t, p); ok && end.Err == nil {
				r.End = end.Offset
				if r.Lag < 0 && r.Committed >= 0 {
					r.Lag = max(end.Offset-r.Committed, 0)
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

// shareGroupState returns a share group's state and member count; ok is
// false when group is not a share group.
func shareGroupState(ctx context.Context, e *env, group string) (state string, members int, ok bool, err error) {
	sgs, err := e.adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return "", 0, false, err
	}
	sg, found := sgs[group]
	if !found || sg.Err != nil {
		return "", 0, false, nil
	}
	return sg.GroupState, len(sg.Members), true, nil
}
