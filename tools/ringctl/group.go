package main

import (
	"errors"
	"flag"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

type groupRow struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func groupList(e *env, args []string) error {
	fs := flag.NewFlagSet("group list", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("group list takes no arguments")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	gs, err := e.adm.ListGroups(ctx)
	if err != nil {
		return e.reqErr("list groups", err)
	}
	rows := []groupRow{}
	for _, g := range gs.Sorted() {
		rows = append(rows, groupRow{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	if e.json {
		return e.printJSON(rows)
	}
	t := e.table("GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR")
	for _, r := range rows {
		t.row(r.Group, r.State, r.ProtocolType, r.Coordinator)
	}
	t.flush()
	return nil
}

type memberRow struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	ClientHost string `json:"client_host"`
}

type lagRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed_offset"` // -1: nothing committed
	End       int64  `json:"log_end_offset"`
	Lag       int64  `json:"lag"` // -1 when unknown
	MemberID  string `json:"member_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

type groupDescription struct {
	Group        string      `json:"group"`
	State        string      `json:"state"`
	ProtocolType string      `json:"protocol_type"`
	Protocol     string      `json:"protocol"`
	Coordinator  int32       `json:"coordinator"`
	Members      []memberRow `json:"members"`
	Offsets      []lagRow    `json:"offsets"`
	TotalLag     int64       `json:"total_lag"`
}

func groupDescribe(e *env, args []string) error {
	fs := flag.NewFlagSet("group describe", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("group describe needs at least one group")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	lags, err := e.adm.Lag(ctx, pos...)
	if err != nil {
		return e.reqErr("describe groups", err)
	}
	var fails errs
	var descs []groupDescription
	for _, name := range pos {
		l, ok := lags[name]
		if !ok {
			fails = append(fails, failed("cannot describe group %s: no answer for it", name))
			continue
		}
		if err := l.Error(); err != nil {
			if errors.Is(err, kerr.GroupIDNotFound) {
				// Possibly a KIP-848 consumer group (describeConsumerGroup).
				d, ok, cerr := describeConsumerGroup(ctx, e, name)
				if cerr != nil {
					return e.reqErr("describe group "+name, cerr)
				}
				if ok {
					descs = append(descs, d)
					continue
				}
				// Or a KIP-932 share group (describeShareGroup).
				if d, ok, serr := describeShareGroup(ctx, e, name); serr != nil {
					return e.reqErr("describe group "+name, serr)
				} else if ok {
					descs = append(descs, d)
					continue
				}
			}
			fails = append(fails, kafkaErr(err, "", "describe group "+name, subject{"group", name}))
			continue
		}
		if l.State == "Dead" && len(l.Lag) == 0 {
			if d, ok, serr := describeShareGroup(ctx, e, name); serr != nil {
				return e.reqErr("describe group "+name, serr)
			} else if ok {
				descs = append(descs, d)
				continue
			}
			// Kafka describes a group it does not know as Dead with no members.
			fails = append(fails, failed("GROUP_ID_NOT_FOUND (69): cannot describe group %s: group %q does not exist; list groups with `ringctl group list`", name, name))
			continue
		}
		d := groupDescription{Group: name, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol, Coordinator: l.Coordinator.NodeID,
			Members: []memberRow{}, Offsets: []lagRow{}}
		for _, m := range l.Members {
			mr := memberRow{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
			if m.InstanceID != nil {
				mr.InstanceID = *m.InstanceID
			}
			d.Members = append(d.Members, mr)
		}
		for _, ml := range l.Lag.Sorted() {
			r := lagRow{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag, Error: errString(ml.Err)}
			if ml.Member != nil {
				r.MemberID = ml.Member.MemberID
			}
			if r.Lag > 0 {
				d.TotalLag += r.Lag
			}
			d.Offsets = append(d.Offsets, r)
		}
		descs = append(descs, d)
	}
	if e.json {
		if descs == nil {
			descs = []groupDescription{}
		}
		if err := e.printJSON(descs); err != nil {
			return err
		}
		return fails.err()
	}
	for i, d := range descs {
		if i > 0 {
			fmt.Fprintln(e.out)
		}
		fmt.Fprintf(e.out, "Group: %s\tState: %s\tProtocol: %s\tCoordinator: %d\tMembers: %d\tTotal lag: %d\n",
			d.Group, d.State, protocolLabel(d.ProtocolType, d.Protocol), d.Coordinator, len(d.Members), d.TotalLag)
		t := e.table("TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "MEMBER", "ERROR")
		for _, r := range d.Offsets {
			t.row(r.Topic, r.Partition, r.Committed, r.End, r.Lag, r.MemberID, r.Error)
		}
		t.flush()
		if len(d.Members) > 0 {
			t := e.table("MEMBER", "CLIENT-ID", "HOST")
			for _, m := range d.Members {
				t.row(m.MemberID, m.ClientID, m.ClientHost)
			}
			t.flush()
		}
	}
	return fails.err()
}

type resetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Previous  int64  `json:"previous_offset"` // -1: nothing committed
	New       int64  `json:"new_offset"`
	Error     string `json:"error,omitempty"`
}

func groupResetOffsets(e *env, args []string) error {
	fs := flag.NewFlagSet("group reset-offsets", flag.ContinueOnError)
	topic := fs.String("topic", "", "topic whose offsets to reset (required)")
	partition := fs.Int("partition", -1, "only this partition (default: all)")
	earliest := fs.Bool("to-earliest", false, "reset to the log start offset")
	latest := fs.Bool("to-latest", false, "reset to the log end offset")
	toOffset := fs.Int64("to-offset", -1, "reset to this offset (clamped to [start, end])")
	dry := fs.Bool("dry-run", false, "print the plan, commit nothing")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("group reset-offsets takes one group, got %d", len(pos))
	}
	if err := checkPartitionFlag(*partition); err != nil {
		return err
	}
	if *topic == "" {
		return usageErr("group reset-offsets needs --topic")
	}
	offsetGiven := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "to-offset" {
			offsetGiven = true
		}
	})
	n := 0
	for _, b := range []bool{*earliest, *latest, offsetGiven} {
		if b {
			n++
		}
	}
	if n != 1 {
		return usageErr("group reset-offsets needs exactly one of --to-earliest, --to-latest, --to-offset N")
	}
	if offsetGiven && *toOffset < 0 {
		return usageErr("--to-offset must be >= 0, got %d", *toOffset)
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	group := pos[0]

	// Kafka refuses to reset the offsets of a group with live members.
	dgs, err := e.adm.DescribeGroups(ctx, group)
	if err != nil {
		return e.reqErr("describe group "+group, err)
	}
	// A share group's position is its share-partition start offset,
	// reset with AlterShareGroupOffsets (KIP-932) instead of a commit.
	sstate, smembers, share, err := shareGroupState(ctx, e, group)
	if err != nil {
		return e.reqErr("describe group "+group, err)
	}
	if share {
		if sstate != "Empty" {
			return failed("cannot reset offsets of share group %s: it is %s with %d members; stop its consumers first", group, sstate, smembers)
		}
	} else if dg, ok := dgs[group]; ok {
		state, members := dg.State, len(dg.Members)
		if errors.Is(dg.Err, kerr.GroupIDNotFound) {
			// Not a classic group: a KIP-848 consumer group, which
			// DescribeGroups does not describe (as in Kafka), or none.
			cgs, err := e.adm.DescribeConsumerGroups(ctx, group)
			if err != nil {
				return e.reqErr("describe group "+group, err)
			}
			if cg, ok := cgs[group]; ok && cg.Err == nil {
				dg.Err, state, members = nil, cg.State, len(cg.Members)
			}
		}
		if dg.Err != nil {
			return kafkaErr(dg.Err, dg.ErrMessage, "describe group "+group, subject{"group", group})
		}
		if state != "Empty" && state != "Dead" && state != "" {
			return failed("cannot reset offsets of group %s: it is %s with %d members; stop its consumers first", group, state, members)
		}
	}
	tds, err := e.adm.ListTopics(ctx, *topic)
	if err != nil {
		return e.reqErr("describe topic "+*topic, err)
	}
	td, ok := tds[*topic]
	if !ok {
		return failed("cannot reset offsets: no metadata for topic %s", *topic)
	}
	if td.Err != nil {
		return kafkaErr(td.Err, "", "reset offsets of group "+group, subject{"topic", *topic})
	}
	if *partition >= 0 {
		if _, ok := td.Partitions[int32(*partition)]; !ok {
			return failed("UNKNOWN_TOPIC_OR_PARTITION (3): cannot reset offsets of group %s: topic %s has no partition %d; see `ringctl topic describe %s`", group, *topic, *partition, *topic)
		}
	}
	starts, err := e.adm.ListStartOffsets(ctx, *topic)
	if err != nil {
		return e.reqErr("list start offsets", err)
	}
	ends, err := e.adm.ListEndOffsets(ctx, *topic)
	if err != nil {
		return e.reqErr("list end offsets", err)
	}
	prev := kadm.OffsetResponses{}
	if share {
		so, err := e.adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return e.reqErr("describe share group offsets of group "+group, err)
		}
		for _, ps := range so[group].Offsets {
			for _, o := range ps {
				if o.Topic == *topic && o.Err == nil && o.StartOffset >= 0 {
					prev.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.StartOffset}})
				}
			}
		}
	} else if prev, err = e.adm.FetchOffsetsForTopics(ctx, group, *topic); err != nil {
		return e.reqErr("fetch committed offsets of group "+group, err)
	}
	offsets := kadm.Offsets{}
	var rows []resetRow
	for _, p := range td.Partitions.Numbers() {
		if *partition >= 0 && p != int32(*partition) {
			continue
		}
		s, sok := starts.Lookup(*topic, p)
		en, eok := ends.Lookup(*topic, p)
		if !sok || !eok || s.Err != nil || en.Err != nil {
			return failed("cannot list offsets of %s-%d: start %v, end %v", *topic, p, s.Err, en.Err)
		}
		var target int64
		switch {
		case *earliest:
			target = s.Offset
		case *latest:
			target = en.Offset
		default:
			target = min(max(*toOffset, s.Offset), en.Offset)
		}
		r := resetRow{Topic: *topic, Partition: p, Previous: -1, New: target}
		if o, ok := prev.Lookup(*topic, p); ok && o.Err == nil {
			r.Previous = o.At
		}
		rows = append(rows, r)
		offsets.Add(kadm.Offset{Topic: *topic, Partition: p, At: target, LeaderEpoch: -1})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Partition < rows[j].Partition })
	var fails errs
	if !*dry && share {
		resp, err := e.adm.AlterShareGroupOffsets(ctx, group, offsets)
		if err != nil {
			return e.reqErr("alter share group offsets of group "+group, err)
		}
		for i := range rows {
			if oerr, ok := resp.Lookup(*topic, rows[i].Partition); ok && oerr != nil {
				rows[i].Error = errString(oerr)
				fails = append(fails, kafkaErr(oerr, "", fmt.Sprintf("alter share offset of %s-%d for group %s", *topic, rows[i].Partition, group), subject{"group", group}))
			}
		}
	} else if !*dry {
		resp, err := e.adm.CommitOffsets(ctx, group, offsets)
		if err != nil {
			return e.reqErr("commit offsets of group "+group, err)
		}
		for i := range rows {
			if o, ok := resp.Lookup(*topic, rows[i].Partition); ok && o.Err != nil {
				rows[i].Error = errString(o.Err)
				fails = append(fails, kafkaErr(o.Err, "", fmt.Sprintf("commit offset of %s-%d for group %s", *topic, rows[i].Partition, group), subject{"group", group}))
			}
		}
	}
	if e.json {
		if err := e.printJSON(map[string]any{"group": group, "dry_run": *dry, "offsets": rows}); err != nil {
			return err
		}
		return fails.err()
	}
	t := e.table("TOPIC", "PARTITION", "PREVIOUS", "NEW", "ERROR")
	for _, r := range rows {
		t.row(r.Topic, r.Partition, r.Previous, r.New, r.Error)
	}
	t.flush()
	if *dry {
		fmt.Fprintln(e.out, "dry run: nothing committed")
	}
	return fails.err()
}

func groupDelete(e *env, args []string) error {
	fs := flag.NewFlagSet("group delete", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("group delete needs at least one group")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.adm.DeleteGroups(ctx, pos...)
	if err != nil {
		return e.reqErr("delete groups", err)
	}
	var fails errs
	deleted := []string{}
	for _, g := range pos {
		r, ok := resp[g]
		switch {
		case !ok:
			fails = append(fails, failed("cannot delete group %s: no answer for it", g))
		case r.Err != nil:
			fails = append(fails, kafkaErr(r.Err, "", "delete group "+g, subject{"group", g}))
		default:
			deleted = append(deleted, g)
		}
	}
	if e.json {
		if err := e.printJSON(map[string]any{"deleted": deleted}); err != nil {
			return err
		}
	} else {
		for _, g := range deleted {
			fmt.Fprintf(e.out, "deleted group %s\n", g)
		}
	}
	return fails.err()
}

// protocolLabel joins a group's protocol type and protocol as "type/protocol",
// leaving out the separator when either is empty (an empty group has no
// chosen protocol yet).
func protocolLabel(protocolType, protocol string) string {
	switch {
	case protocolType == "":
		return protocol
	case protocol == "":
		return protocolType
	}
	return protocolType + "/" + protocol
}
