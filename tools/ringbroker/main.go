// Command ringbroker is the broker daemon.
//
//	ringbroker config/server.properties [--override key=value ...]
//	ringbroker config/server.properties --print-topology
//	ringbroker random-uuid
//	ringbroker format --cluster-id <id> [--ignore-formatted] [--standalone] config/server.properties
//	ringbroker --version
//
// As Kafka's kafka-server-start.sh, it takes a server.properties file and any
// property as --override key=value; ringbroker's own knobs (io.engine,
// log.io.mode, shards) are properties too. An unknown property is logged
// as a warning with the closest known name, or refused with
// config.strict=true. SIGTERM or SIGINT shut it down cleanly.
//
// random-uuid and format are kafka-storage.sh's: a node configured with
// controller.quorum.voters (or controller.quorum.bootstrap.servers) starts
// only on a log directory that format wrote meta.properties into; a node
// without voters formats itself on first start.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/ringbroker/ringbroker/appliance"
)

type overrides []string

func (o *overrides) String() string { return strings.Join(*o, ",") }
func (o *overrides) Set(v string) error {
	k, _, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("override %q is not key=value", v)
	}
	if strings.TrimSpace(k) == "" {
		return fmt.Errorf("override %q has an empty key", v)
	}
	*o = append(*o, v)
	return nil
}

func main() {
	if err := dispatch(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ringbroker:", err)
		os.Exit(1)
	}
}

// parseArgs parses the flags of fs from args and returns the properties
// file, which may come before, between or after the flags (as with
// Kafka's script). Any other word is an error: flag parsing stops at the
// first word that is not a flag, so a stray one (a value whose --override
// was forgotten) used to drop every flag after it without a word.
func parseArgs(fs *flag.FlagSet, args []string) (file string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			return file, nil
		}
		if file != "" {
			fs.Usage()
			return "", fmt.Errorf("unexpected argument %q after the properties file %q (set each property with its own --override key=value)", fs.Arg(0), file)
		}
		file, args = fs.Arg(0), fs.Args()[1:]
	}
}

// dispatch runs the subcommand args name (random-uuid, format), or the
// broker.
func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "random-uuid":
			return runRandomUUID(args[1:], stdout)
		case "format":
			return runFormat(args[1:], stdout, stderr)
		}
	}
	return run(args, stdout, stderr)
}

// usage is the first lines of --help.
const usage = `usage: ringbroker <server.properties> [--override key=value ...] [--print-topology]
       ringbroker random-uuid
       ringbroker format --cluster-id <id> [--ignore-formatted] [--standalone | --no-initial-controllers]
                         [--override key=value ...] <server.properties>
       ringbroker --version

A node with controller.quorum.voters set starts only on log directories
written by format; without voters a node formats itself on first start.
Flags of the broker:`

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ringbroker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ovs overrides
	fs.Var(&ovs, "override", "set a property, key=value (repeatable)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	printTopo := fs.Bool("print-topology", false, "print the machine's topology and the shard placement, then exit")
	printVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	file, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if *printVersion {
		_, err := fmt.Fprintln(stdout, version())
		return err
	}
	if file == "" {
		// As kafka-server-start.sh: the properties file is required, so a
		// stray invocation never starts a broker on ./data by accident.
		fs.Usage()
		return errors.New("missing the server.properties argument")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("cannot parse -log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := loadConfig(file, ovs)
	if err != nil {
		return err
	}
	warnUnknownKeys(logger, cfg.UnknownKeys)
	for _, w := range cfg.Cluster.Warnings {
		logger.Warn(w)
	}
	if *printTopo {
		out, err := appliance.DescribeTopology(cfg)
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(stdout, out)
		return err
	}
	b, err := appliance.New(cfg, logger)
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	if err := sdNotify("READY=1\nSTATUS=serving Kafka on " + b.Addr().String()); err != nil {
		logger.Warn("sd_notify READY failed", "err", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sigs:
		logger.Info("shutting down", "signal", s.String())
	case err := <-b.ServeErr():
		if err != nil {
			logger.Error("network engine failed", "err", err)
			_ = b.Close()
			return err
		}
	}
	_ = sdNotify("STOPPING=1")
	return closeReporting(b, sigs, logger)
}

// closeReporting closes b; a SIGTERM or SIGINT that arrives meanwhile does
// not interrupt the shutdown (acknowledged data is being made durable) but
// logs what it is waiting for and for how long.
func closeReporting(b *appliance.Broker, sigs chan os.Signal, logger *slog.Logger) error {
	defer signal.Stop(sigs)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	for {
		select {
		case err := <-done:
			return err
		case s := <-sigs:
			logger.Warn("shutdown in progress; waiting for it to finish (kill -9 skips the clean shutdown, and the next start checks the logs)",
				"signal", s.String(), "waiting_for", b.ShutdownStage(), "elapsed", time.Since(start).Round(time.Millisecond).String())
		}
	}
}

// warnUnknownKeys logs one warning per property that ringbroker does not
// know, naming the closest known one when there is one (a misspelt key is
// otherwise ignored without a word; config.strict=true refuses it instead).
func warnUnknownKeys(logger *slog.Logger, unknown []appliance.UnknownConfigKey) {
	for _, u := range unknown {
		if u.Suggestion == "" {
			logger.Warn("ignoring unknown configuration key", "key", u.Key)
			continue
		}
		logger.Warn("ignoring unknown configuration key", "key", u.Key, "suggestion", u.Suggestion)
	}
}

// version is the module version, VCS revision and Go version the binary
// was built with (runtime/debug.ReadBuildInfo), "ringbroker (devel)" when
// the build recorded none.
func version() string {
	v, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	out := "ringbroker " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		out += " " + rev
	}
	return out + " " + runtime.Version()
}
