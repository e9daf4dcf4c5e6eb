package main

import (
	"encoding/base64"
	"flag"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicCreate(e *env, args []string) error {
	fs := flag.NewFlagSet("topic create", flag.ContinueOnError)
	partitions := fs.Int("partitions", -1, "partition count (-1: the broker's num.partitions)")
	rf := fs.Int("replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	var cfgs multiFlag
	fs.Var(&cfgs, "config", "topic config k=v (repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("topic create takes one topic name, got %d", len(pos))
	}
	configs := map[string]*string{}
	for _, c := range cfgs {
		k, v, ok := strings.Cut(c, "=")
		if !ok || k == "" {
			return usageErr("--config %q is not key=value", c)
		}
		configs[k] = &v
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	name := pos[0]
	resp, err := e.adm.CreateTopics(ctx, int32(*partitions), int16(*rf), configs, name)
	if err != nil {
		return e.reqErr("create topic "+name, err)
	}
	r, ok := resp[name]
	if !ok {
		return failed("cannot create topic %s: no answer for it", name)
	}
	if r.Err != nil {
		return kafkaErr(r.Err, r.ErrMessage, "create topic "+name, subject{"topic", name})
	}
	if e.json {
		return e.printJSON(map[string]any{"topic": r.Topic, "id": topicID(r.ID), "partitions": r.NumPartitions, "replication_factor": r.ReplicationFactor})
	}
	fmt.Fprintf(e.out, "created topic %s (id %s, %d partitions, replication factor %d)\n", r.Topic, topicID(r.ID), r.NumPartitions, r.ReplicationFactor)
	return nil
}

type topicRow struct {
	Topic             string `json:"topic"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
}

func topicList(e *env, args []string) error {
	fs := flag.NewFlagSet("topic list", flag.ContinueOnError)
	internal := fs.Bool("internal", false, "include internal topics")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("topic list takes no arguments")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	var tds kadm.TopicDetails
	if *internal {
		tds, err = e.adm.ListTopicsWithInternal(ctx)
	} else {
		tds, err = e.adm.ListTopics(ctx)
	}
	if err != nil {
		return e.reqErr("list topics", err)
	}
	rows := []topicRow{}
	for _, name := range tds.Names() {
		td := tds[name]
		rows = append(rows, topicRow{Topic: name, ID: topicID(td.ID), Partitions: len(td.Partitions), ReplicationFactor: td.Partitions.NumReplicas(), Internal: td.IsInternal})
	}
	if e.json {
		return e.printJSON(rows)
	}
	t := e.table("TOPIC", "PARTITIONS", "REPLICATION", "ID")
	for _, r := range rows {
		t.row(r.Topic, r.Partitions, r.ReplicationFactor, r.ID)
	}
	t.flush()
	return nil
}

type partitionRow struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	StartOffset int64   `json:"log_start_offset"`
	EndOffset   int64   `json:"log_end_offset"`
	Error       string  `json:"error,omitempty"`
}

type topicDescription struct {
	Topic      string            `json:"topic"`
	ID         string            `json:"id"`
	Internal   bool              `json:"internal"`
	Partitions []partitionRow    `json:"partitions"`
	Configs    map[string]string `json:"configs"` // overrides only (source: topic)
}

func topicDescribe(e *env, args []string) error {
	fs := flag.NewFlagSet("topic describe", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("topic describe needs at least one topic name")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	tds, err := e.adm.ListTopicsWithInternal(ctx, pos...)
	if err != nil {
		return e.reqErr("describe topics", err)
	}
	var fails errs
	var known []string
	for _, name := range pos {
		td, ok := tds[name]
		if !ok {
			fails = append(fails, failed("cannot describe topic %s: no metadata for it", name))
			continue
		}
		if td.Err != nil {
			fails = append(fails, kafkaErr(td.Err, "", "describe topic "+name, subject{"topic", name}))
			continue
		}
		known = append(known, name)
	}
	var descs []topicDescription
	if len(known) > 0 {
		// A partition without a leader (offline after an I/O error) fails
		// its shard of the listing; the others still answer, and the row
		// of that one shows the error instead of failing the describe.
		starts, startErr := e.adm.ListStartOffsets(ctx, known...)
		if startErr != nil && len(starts) == 0 {
			return e.reqErr("list start offsets", startErr)
		}
		ends, endErr := e.adm.ListEndOffsets(ctx, known...)
		if endErr != nil && len(ends) == 0 {
			return e.reqErr("list end offsets", endErr)
		}
		rcs, err := e.adm.DescribeTopicConfigs(ctx, known...)
		if err != nil {
			return e.reqErr("describe topic configs", err)
		}
		for _, name := range known {
			td := tds[name]
			d := topicDescription{Topic: name, ID: topicID(td.ID), Internal: td.IsInternal, Configs: map[string]string{}}
			for _, p := range td.Partitions.Sorted() {
				row := partitionRow{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
					StartOffset: -1, EndOffset: -1, Error: errString(p.Err)}
				for _, l := range []struct {
					got kadm.ListedOffsets
					err error
					dst *int64
				}{{starts, startErr, &row.StartOffset}, {ends, endErr, &row.EndOffset}} {
					o, ok := l.got.Lookup(name, p.Partition)
					switch {
					case ok && o.Err == nil:
						*l.dst = o.Offset
					case row.Error != "":
					case ok:
						row.Error = errString(o.Err)
					case l.err != nil:
						row.Error = errString(l.err)
					}
				}
				d.Partitions = append(d.Partitions, row)
			}
			for _, rc := range rcs {
				if rc.Name != name || rc.Err != nil {
					continue
				}
				for _, c := range rc.Configs {
					if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
						d.Configs[c.Key] = c.MaybeValue()
					}
				}
			}
			descs = append(descs, d)
		}
	}
	if e.json {
		if descs == nil {
			descs = []topicDescription{}
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
		cfg := make([]string, 0, len(d.Configs))
		for _, k := range sortedKeys(d.Configs) {
			cfg = append(cfg, k+"="+d.Configs[k])
		}
		fmt.Fprintf(e.out, "Topic: %s\tID: %s\tPartitions: %d\tConfigs: %s\n", d.Topic, d.ID, len(d.Partitions), strings.Join(cfg, ","))
		t := e.table("PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "START", "END", "ERROR")
		for _, p := range d.Partitions {
			t.row(p.Partition, p.Leader, p.LeaderEpoch, int32List(p.Replicas), int32List(p.ISR), p.StartOffset, p.EndOffset, p.Error)
		}
		t.flush()
	}
	return fails.err()
}

func topicDelete(e *env, args []string) error {
	fs := flag.NewFlagSet("topic delete", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("topic delete needs at least one topic name")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.adm.DeleteTopics(ctx, pos...)
	if err != nil {
		return e.reqErr("delete topics", err)
	}
	var fails errs
	var deleted []string
	for _, name := range pos {
		r, ok := resp[name]
		switch {
		case !ok:
			fails = append(fails, failed("cannot delete topic %s: no answer for it", name))
		case r.Err != nil:
			fails = append(fails, kafkaErr(r.Err, r.ErrMessage, "delete topic "+name, subject{"topic", name}))
		default:
			deleted = append(deleted, name)
		}
	}
	if e.json {
		if deleted == nil {
			deleted = []string{}
		}
		if err := e.printJSON(map[string]any{"deleted": deleted}); err != nil {
			return err
		}
	} else {
		for _, n := range deleted {
			fmt.Fprintf(e.out, "deleted topic %s\n", n)
		}
	}
	return fails.err()
}

func topicAlterConfig(e *env, args []string) error {
	fs := flag.NewFlagSet("topic alter-config", flag.ContinueOnError)
	var sets, dels multiFlag
	fs.Var(&sets, "set", "config k=v to set (repeatable)")
	fs.Var(&dels, "delete", "config to reset to the broker default (repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("topic alter-config takes one topic name, got %d", len(pos))
	}
	if len(sets)+len(dels) == 0 {
		return usageErr("topic alter-config needs --set k=v or --delete k")
	}
	var alters []kadm.AlterConfig
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return usageErr("--set %q is not key=value", s)
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range dels {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	name := pos[0]
	resp, err := e.adm.AlterTopicConfigs(ctx, alters, name)
	if err != nil {
		return e.reqErr("alter configs of topic "+name, err)
	}
	for _, r := range resp {
		if r.Err != nil {
			return kafkaErr(r.Err, r.ErrMessage, "alter configs of topic "+name, subject{"topic", name})
		}
	}
	if e.json {
		return e.printJSON(map[string]any{"topic": name, "set": []string(sets), "deleted": []string(dels)})
	}
	fmt.Fprintf(e.out, "altered configs of topic %s\n", name)
	return nil
}

func topicAddPartitions(e *env, args []string) error {
	fs := flag.NewFlagSet("topic add-partitions", flag.ContinueOnError)
	total := fs.Int("partitions", 0, "new total partition count")
	add := fs.Int("add", 0, "partitions to add")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("topic add-partitions takes one topic name, got %d", len(pos))
	}
	if (*total > 0) == (*add > 0) {
		return usageErr("topic add-partitions needs exactly one of --partitions TOTAL or --add N, positive")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	name := pos[0]
	var resp kadm.CreatePartitionsResponses
	if *total > 0 {
		resp, err = e.adm.UpdatePartitions(ctx, *total, name)
	} else {
		resp, err = e.adm.CreatePartitions(ctx, *add, name)
	}
	if err != nil {
		return e.reqErr("add partitions to topic "+name, err)
	}
	r, ok := resp[name]
	if !ok {
		return failed("cannot add partitions to topic %s: no answer for it", name)
	}
	if r.Err != nil {
		return kafkaErr(r.Err, r.ErrMessage, "add partitions to topic "+name, subject{"topic", name})
	}
	// Report the count the broker now has.
	tds, err := e.adm.ListTopics(ctx, name)
	count := -1
	if err == nil {
		if td, ok := tds[name]; ok && td.Err == nil {
			count = len(td.Partitions)
		}
	}
	if e.json {
		return e.printJSON(map[string]any{"topic": name, "partitions": count})
	}
	fmt.Fprintf(e.out, "topic %s now has %d partitions\n", name, count)
	return nil
}

// topicID formats a topic id as Kafka does (Uuid.toString: URL-safe
// base64 without padding), the form the broker logs and the CLI tools of
// Kafka print.
func topicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
