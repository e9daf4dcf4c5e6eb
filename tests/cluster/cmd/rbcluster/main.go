// Command rbcluster runs a cluster of ringbroker nodes in the foreground,
// for `make cluster`: nodes 1 to -nodes (3) on 127.0.0.1 to 127.0.0.N,
// each combined (process.roles=broker,controller) with its client listener
// on port 9092, its controller listener on 9093 and metrics on 9644 of its
// own address, and all of them in controller.quorum.voters. Node N keeps
// its data in DATA/node-N and its server.properties in DATA/node-N.properties
// (rewritten at each start); the first run stores a new cluster id in
// DATA/cluster.id and formats every node with it (`ringbroker format`),
// later runs format only nodes whose directory lacks meta.properties. The
// nodes' output is printed with a "node-N | " prefix. SIGINT (Ctrl-C) or
// SIGTERM stops every node with SIGTERM; a second one kills them.
//
//	rbcluster [-bin bin/ringbroker] [-data ./data] [-nodes 3] [-override key=value ...]
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/ringbroker/ringbroker/tests/cluster/harness"
)

type overrides map[string]string

func (o overrides) String() string { return fmt.Sprint(map[string]string(o)) }
func (o overrides) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("override %q is not key=value", v)
	}
	o[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "rbcluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("rbcluster", flag.ContinueOnError)
	bin := fs.String("bin", "bin/ringbroker", "the ringbroker binary")
	data := fs.String("data", "./data", "the directory holding node-N/, node-N.properties and cluster.id")
	nodes := fs.Int("nodes", 3, "number of nodes, on 127.0.0.1 to 127.0.0.N (at most 254)")
	ovs := overrides{}
	fs.Var(ovs, "override", "a property for every node, key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *nodes < 1 || *nodes > 254 {
		return fmt.Errorf("-nodes %d: 1 to 254", *nodes)
	}
	if err := os.MkdirAll(*data, 0o755); err != nil {
		return err
	}
	id, err := clusterID(*bin, filepath.Join(*data, "cluster.id"))
	if err != nil {
		return err
	}
	cfgs := make([]harness.NodeConfig, *nodes)
	for i, host := range harness.LoopbackHosts(*nodes) {
		cfgs[i] = harness.NodeConfig{
			ID: int32(i + 1), Host: host, Port: 9092, ControllerPort: 9093, MetricsPort: 9644,
			LogDirs: []string{filepath.Join(*data, fmt.Sprintf("node-%d", i+1))}, Props: ovs,
		}
	}
	voters := harness.VotersString(cfgs)
	props := make([]string, len(cfgs))
	for i := range cfgs {
		cfgs[i].Voters = voters
		props[i] = filepath.Join(*data, fmt.Sprintf("node-%d.properties", i+1))
		if err := os.WriteFile(props[i], []byte(cfgs[i].Properties()), 0o644); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(cfgs[i].LogDirs[0], "meta.properties")); errors.Is(err, os.ErrNotExist) {
			out, err := harness.Format(*bin, id, props[i])
			if err != nil {
				return fmt.Errorf("format of node %d: %w\n%s", i+1, err, out)
			}
			fmt.Print(out)
		}
	}
	fmt.Printf("rbcluster: cluster %s, %d nodes, bootstrap %s; Ctrl-C stops them\n", id, len(cfgs), bootstrap(cfgs))

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var out sync.Mutex
	var wg sync.WaitGroup
	cmds := make([]*exec.Cmd, len(cfgs))
	exits := make(chan string, len(cfgs))
	for i := range cfgs {
		cmd := exec.Command(*bin, props[i])
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			stopAll(cmds, syscall.SIGKILL)
			return fmt.Errorf("cannot start node %d: %w", i+1, err)
		}
		cmds[i] = cmd
		prefix := fmt.Sprintf("node-%d | ", i+1)
		wg.Go(func() {
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				out.Lock()
				fmt.Println(prefix + sc.Text())
				out.Unlock()
			}
			io.Copy(io.Discard, pr)
		})
		go func() {
			err := cmd.Wait()
			pw.Close()
			status := "exit status 0"
			if err != nil {
				status = err.Error()
			}
			exits <- fmt.Sprintf("node-%d %s", i+1, status)
		}()
	}
	stopping, failed := false, false
	for left := len(cmds); left > 0; {
		select {
		case s := <-sigs:
			if !stopping {
				fmt.Printf("rbcluster: %v: stopping the nodes (SIGTERM); again to kill them\n", s)
				stopping = true
				stopAll(cmds, syscall.SIGTERM)
			} else {
				fmt.Printf("rbcluster: %v: killing the nodes\n", s)
				stopAll(cmds, syscall.SIGKILL)
			}
		case e := <-exits:
			left--
			fmt.Println("rbcluster:", e)
			if !strings.HasSuffix(e, "exit status 0") || !stopping {
				failed = true
			}
		}
	}
	wg.Wait()
	if failed {
		return errors.New("a node stopped on its own or did not exit cleanly")
	}
	return nil
}

// clusterID reads the cluster id from path, or makes a new one
// (ringbroker random-uuid) and stores it there.
func clusterID(bin, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	out, err := exec.Command(bin, "random-uuid").Output()
	if err != nil {
		return "", fmt.Errorf("%s random-uuid: %w", bin, err)
	}
	id := strings.TrimSpace(string(out))
	return id, os.WriteFile(path, []byte(id+"\n"), 0o644)
}

func stopAll(cmds []*exec.Cmd, sig syscall.Signal) {
	for _, c := range cmds {
		if c != nil && c.Process != nil {
			syscall.Kill(-c.Process.Pid, sig)
		}
	}
}

func bootstrap(cfgs []harness.NodeConfig) string {
	addrs := make([]string, len(cfgs))
	for i, c := range cfgs {
		addrs[i] = c.Addr()
	}
	return strings.Join(addrs, ",")
}
