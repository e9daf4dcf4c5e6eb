package main

// The storage subcommands, as Kafka's kafka-storage.sh has them:
//
//	ringbroker random-uuid
//	ringbroker format --cluster-id <id> [--ignore-formatted] [--standalone | --no-initial-controllers]
//	                  [--override key=value ...] <server.properties>
//
// format writes meta.properties (version 1, cluster.id, node.id and a new
// directory.id per directory) into every directory of log.dirs, so that a
// node configured to join a controller quorum (controller.quorum.voters)
// can start: such a node refuses an unformatted directory. A node without
// voters formats itself on first start and needs no format.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/ringbroker/ringbroker/appliance"
	"github.com/ringbroker/ringbroker/nvme"
)

// runRandomUUID prints a new Kafka UUID (nvme.RandomUUID), as
// `kafka-storage.sh random-uuid` does.
func runRandomUUID(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("random-uuid takes no arguments, got %q", args)
	}
	id, err := nvme.RandomUUID()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}

// runFormat is `ringbroker format`: Kafka's StorageTool format for the
// meta.properties part (ringbroker keeps no bootstrap metadata snapshot; the
// metadata log starts empty). Already formatted directories are refused
// unless --ignore-formatted, which formats the empty ones only and leaves
// the others as they are (they must hold the same cluster.id and node.id).
func runFormat(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ringbroker format", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ovs overrides
	var clusterID, configFile string
	var ignore, standalone, noInitial bool
	fs.StringVar(&clusterID, "cluster-id", "", "the cluster id, a 22-character base64url UUID (ringbroker random-uuid)")
	fs.StringVar(&clusterID, "t", "", "short for --cluster-id")
	fs.BoolVar(&ignore, "ignore-formatted", false, "format the directories that are not formatted yet and leave the others")
	fs.BoolVar(&ignore, "g", false, "short for --ignore-formatted")
	fs.BoolVar(&standalone, "standalone", false, "a controller without controller.quorum.voters: this node is the quorum's one initial voter")
	fs.BoolVar(&standalone, "s", false, "short for --standalone")
	fs.BoolVar(&noInitial, "no-initial-controllers", false, "a controller without controller.quorum.voters that joins an existing quorum")
	fs.BoolVar(&noInitial, "N", false, "short for --no-initial-controllers")
	fs.StringVar(&configFile, "config", "", "the server.properties file (or give it as the argument)")
	fs.StringVar(&configFile, "c", "", "short for --config")
	fs.Var(&ovs, "override", "set a property, key=value (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ringbroker format --cluster-id <id> [--ignore-formatted] [--standalone | --no-initial-controllers] [--override key=value ...] <server.properties>")
		fs.PrintDefaults()
	}
	file, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case file != "" && configFile != "" && file != configFile:
		return fmt.Errorf("two properties files: %q and --config %q", file, configFile)
	case file == "":
		file = configFile
	}
	if file == "" {
		fs.Usage()
		return errors.New("missing the server.properties argument")
	}
	if clusterID == "" {
		return errors.New("you must specify the cluster id (--cluster-id; a new one from `ringbroker random-uuid`)")
	}
	if _, err := nvme.ParseUUID(clusterID); err != nil {
		return fmt.Errorf("cluster id %q does not appear to be a valid UUID: %w", clusterID, err)
	}
	cfg, err := loadConfig(file, ovs)
	if err != nil {
		return err
	}
	warnUnknownKeys(slog.New(slog.NewTextHandler(stderr, nil)), cfg.UnknownKeys)
	if err := checkQuorumFlags(cfg, standalone, noInitial); err != nil {
		return err
	}
	return formatDirs(cfg, clusterID, ignore, stdout)
}

// checkQuorumFlags applies Kafka's rules for --standalone and
// --no-initial-controllers (KIP-853's dynamic quorum): at most one of them;
// only on a controller, and only without controller.quorum.voters (static
// voters are the quorum); and a controller with bootstrap servers but no
// voters needs one. ringbroker keeps no bootstrap snapshot with the initial
// voter set yet, so the flags are checked and change nothing written; they
// let Kafka's own format command lines run unchanged.
func checkQuorumFlags(cfg appliance.Config, standalone, noInitial bool) error {
	cl := &cfg.Cluster
	switch {
	case standalone && noInitial:
		return errors.New("--standalone and --no-initial-controllers exclude each other")
	case (standalone || noInitial) && !cl.Controller:
		return errors.New("--standalone and --no-initial-controllers are for a node with the controller role (process.roles)")
	case (standalone || noInitial) && len(cl.Voters) > 0:
		return errors.New("--standalone and --no-initial-controllers are for a dynamic quorum: remove controller.quorum.voters, or drop the flag")
	case cl.Controller && len(cl.Voters) == 0 && len(cl.BootstrapServers) > 0 && !standalone && !noInitial:
		return errors.New("controller.quorum.voters is not set on this controller, so give --standalone (this node founds the quorum) " +
			"or --no-initial-controllers (it joins a quorum through controller.quorum.bootstrap.servers)")
	}
	return nil
}

// formatDirs writes meta.properties into the unformatted directories of
// cfg.LogDirs, after checking the formatted ones (MetaDirs.Verify).
func formatDirs(cfg appliance.Config, clusterID string, ignore bool, stdout io.Writer) error {
	md, err := nvme.LoadMetaDirs(cfg.LogDirs)
	if err != nil {
		return err
	}
	if err := md.Verify(clusterID, cfg.NodeID); err != nil {
		return err
	}
	if !ignore {
		for _, d := range md.Dirs {
			if _, ok := md.Props[d]; ok {
				return fmt.Errorf("log directory %s is already formatted: use --ignore-formatted to ignore this directory and format the others", d)
			}
		}
	}
	empty := md.Empty()
	if len(empty) == 0 {
		_, err := fmt.Fprintln(stdout, "All of the log directories are already formatted.")
		return err
	}
	for _, d := range empty {
		id, err := md.NewDirectoryID()
		if err != nil {
			return err
		}
		m := nvme.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: cfg.NodeID, DirectoryID: id}
		kind := "data directory"
		if d == cfg.LogDir {
			kind = "metadata directory" // the metadata log lives in the first directory
		}
		fmt.Fprintf(stdout, "Formatting %s %s with cluster.id %s and node.id %d.\n", kind, d, clusterID, cfg.NodeID)
		if err := nvme.WriteMetaProperties(d, m); err != nil {
			return fmt.Errorf("error while writing meta.properties file %s: %w", d, err)
		}
		md.Props[d] = m
	}
	return nil
}

// loadConfig reads the properties file, applies the overrides and builds
// the typed configuration.
func loadConfig(file string, ovs overrides) (appliance.Config, error) {
	f, err := os.Open(file)
	if err != nil {
		return appliance.Config{}, fmt.Errorf("cannot open config: %w", err)
	}
	props, err := appliance.ParseProperties(f)
	f.Close()
	if err != nil {
		return appliance.Config{}, err
	}
	for _, o := range ovs {
		k, v, _ := strings.Cut(o, "=")
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return appliance.ConfigFromProperties(props)
}
