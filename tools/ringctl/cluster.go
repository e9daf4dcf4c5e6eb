package main

import (
	"flag"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

type brokerRow struct {
	NodeID int32  `json:"node_id"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
	Rack   string `json:"rack,omitempty"`
}

func brokerRows(bs kadm.BrokerDetails) []brokerRow {
	rows := []brokerRow{}
	for _, b := range bs {
		r := brokerRow{NodeID: b.NodeID, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			r.Rack = *b.Rack
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].NodeID < rows[j].NodeID })
	return rows
}

func noArgs(name string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("%s takes no arguments", name)
	}
	return nil
}

func clusterInfo(e *env, args []string) error {
	if err := noArgs("cluster info", args); err != nil {
		return err
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	md, err := e.adm.Metadata(ctx)
	if err != nil {
		return e.reqErr("read cluster metadata", err)
	}
	partitions := 0
	for _, td := range md.Topics {
		partitions += len(td.Partitions)
	}
	info := map[string]any{
		"cluster_id": md.Cluster,
		"controller": md.Controller,
		"brokers":    brokerRows(md.Brokers),
		"topics":     len(md.Topics),
		"partitions": partitions,
	}
	if e.json {
		return e.printJSON(info)
	}
	fmt.Fprintf(e.out, "Cluster ID:  %s\nController:  %d\nBrokers:     %d\nTopics:      %d\nPartitions:  %d\n",
		md.Cluster, md.Controller, len(md.Brokers), len(md.Topics), partitions)
	return nil
}

func brokerList(e *env, args []string) error {
	if err := noArgs("broker list", args); err != nil {
		return err
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	md, err := e.adm.BrokerMetadata(ctx)
	if err != nil {
		return e.reqErr("list brokers", err)
	}
	rows := brokerRows(md.Brokers)
	if e.json {
		return e.printJSON(rows)
	}
	t := e.table("NODE", "HOST", "PORT", "RACK", "CONTROLLER")
	for _, r := range rows {
		ctrl := ""
		if r.NodeID == md.Controller {
			ctrl = "yes"
		}
		t.row(r.NodeID, r.Host, r.Port, r.Rack, ctrl)
	}
	t.flush()
	return nil
}

type logDirRow struct {
	Broker    int32  `json:"broker"`
	Dir       string `json:"dir"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Size      int64  `json:"size_bytes"`
	OffsetLag int64  `json:"offset_lag"`
}

type logDirSummary struct {
	Broker      int32       `json:"broker"`
	Dir         string      `json:"dir"`
	TotalBytes  int64       `json:"total_bytes"`
	UsableBytes int64       `json:"usable_bytes"`
	Size        int64       `json:"size_bytes"`
	Error       string      `json:"error,omitempty"`
	Partitions  []logDirRow `json:"partitions"`
}

func logDirs(e *env, args []string) error {
	fs := flag.NewFlagSet("log-dirs", flag.ContinueOnError)
	topic := fs.String("topic", "", "only this topic")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("log-dirs takes no arguments")
	}
	if err := e.connect(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	var set kadm.TopicsSet
	if *topic != "" {
		tds, err := e.adm.ListTopics(ctx, *topic)
		if err != nil {
			return e.reqErr("describe topic "+*topic, err)
		}
		if td, ok := tds[*topic]; !ok || td.Err != nil {
			var terr error
			if ok {
				terr = td.Err
			}
			return kafkaErr(terr, "", "describe log dirs of topic "+*topic, subject{"topic", *topic})
		}
		set = kadm.TopicsSet{}
		set.Add(*topic, tds[*topic].Partitions.Numbers()...)
	}
	all, err := e.adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return e.reqErr("describe log dirs", err)
	}
	var sums []logDirSummary
	var fails errs
	for _, dirs := range all {
		for _, d := range dirs {
			s := logDirSummary{Broker: d.Broker, Dir: d.Dir, TotalBytes: d.TotalBytes, UsableBytes: d.UsableBytes, Size: d.Size(), Error: errString(d.Err), Partitions: []logDirRow{}}
			if d.Err != nil {
				fails = append(fails, kafkaErr(d.Err, "", fmt.Sprintf("describe log dir %s of broker %d", d.Dir, d.Broker)))
			}
			for _, p := range d.Topics.Sorted() {
				s.Partitions = append(s.Partitions, logDirRow{Broker: p.Broker, Dir: p.Dir, Topic: p.Topic, Partition: p.Partition, Size: p.Size, OffsetLag: p.OffsetLag})
			}
			sums = append(sums, s)
		}
	}
	sort.Slice(sums, func(i, j int) bool {
		if sums[i].Broker != sums[j].Broker {
			return sums[i].Broker < sums[j].Broker
		}
		return sums[i].Dir < sums[j].Dir
	})
	if e.json {
		if sums == nil {
			sums = []logDirSummary{}
		}
		if err := e.printJSON(sums); err != nil {
			return err
		}
		return fails.err()
	}
	for i, s := range sums {
		if i > 0 {
			fmt.Fprintln(e.out)
		}
		fmt.Fprintf(e.out, "Broker: %d\tDir: %s\tSize: %d\tVolume: %d of %d bytes usable\t%s\n", s.Broker, s.Dir, s.Size, s.UsableBytes, s.TotalBytes, s.Error)
		t := e.table("TOPIC", "PARTITION", "SIZE", "OFFSET-LAG")
		for _, p := range s.Partitions {
			t.row(p.Topic, p.Partition, p.Size, p.OffsetLag)
		}
		t.flush()
	}
	return fails.err()
}
