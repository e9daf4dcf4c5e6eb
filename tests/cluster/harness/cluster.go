package harness

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options shape a Cluster. The zero value is three combined nodes
// (process.roles=broker,controller) on 127.0.0.1, every one a voter of
// controller.quorum.voters, formatted with one new cluster id, started and
// ready.
type Options struct {
	// Nodes is the number of nodes, with node.id 1 to Nodes (3 when 0).
	Nodes int
	// Controllers makes the first Controllers nodes combined voters and the
	// others broker-only nodes (process.roles=broker); 0 makes every node a
	// voter.
	Controllers int
	// Standalone leaves controller.quorum.voters out: each node is a
	// one-node cluster that formats itself on first start (today's default
	// broker), with no controller listener.
	Standalone bool
	// Hosts are the nodes' addresses, one per node, or one for all
	// (127.0.0.1 when empty); LoopbackHosts(n) gives 127.0.0.1 to 127.0.0.n.
	// Ignored with Network: node i gets Network.IP(i).
	Hosts []string
	// Network runs node i inside namespace i of the Network (NewNetwork),
	// every node on ports 9092 (client), 9093 (controller) and 9644
	// (metrics) of its own address.
	Network *Network
	// Metrics gives each node a metrics.listener (/metrics, /healthz,
	// /readyz) on a free port; otherwise metrics.listener=none.
	Metrics bool
	// Props are properties for every node, NodeProps for one node id;
	// NodeProps win over Props, which win over the harness's.
	Props     map[string]string
	NodeProps map[int32]map[string]string
	// DataRoot holds node-ID/ for each node (its log directory data/ and
	// its process logs): t.TempDir() when empty.
	DataRoot string
	// ClusterID is the id format writes; a new one (ringbroker
	// random-uuid) when empty.
	ClusterID string
	// Env is added to each node process's environment (KEY=value).
	Env []string
	// ReadyTimeout bounds each node's WaitReady (60 s when 0).
	ReadyTimeout time.Duration
	// ShutdownTimeout bounds the clean-up's SIGTERM of every node, after
	// which the rest are killed (20 s when 0).
	ShutdownTimeout time.Duration
	// NoStart writes and formats, but starts nothing: call Start.
	NoStart bool
}

// Cluster is a set of ringbroker processes started by one test. Its
// clean-up (t.Cleanup) sends SIGTERM to every running node at once, waits
// ShutdownTimeout, then SIGKILLs each remaining process group; when the
// test failed it logs the tail of every node's logs first.
type Cluster struct {
	ID    string // the cluster id the nodes were formatted with ("" when Standalone)
	Nodes []*Node

	t    testing.TB
	bin  string
	opts Options
}

// New writes each node's server.properties, formats the nodes (unless
// Standalone), starts them and waits until every one is ready (unless
// NoStart), failing the test on any error.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Controllers <= 0 || o.Controllers > o.Nodes {
		o.Controllers = o.Nodes
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 20 * time.Second
	}
	if o.Network != nil && o.Network.Nodes() < o.Nodes {
		t.Fatalf("harness: a network of %d namespaces for %d nodes", o.Network.Nodes(), o.Nodes)
	}
	if len(o.Hosts) > 1 && len(o.Hosts) != o.Nodes {
		t.Fatalf("harness: %d hosts for %d nodes", len(o.Hosts), o.Nodes)
	}
	bin := Binary(t)
	if o.DataRoot == "" {
		o.DataRoot = t.TempDir()
	}
	c := &Cluster{t: t, bin: bin, opts: o}
	cfgs := make([]NodeConfig, o.Nodes)
	for i := range cfgs {
		id := int32(i + 1)
		cfg := NodeConfig{ID: id, LogDirs: []string{filepath.Join(o.DataRoot, fmt.Sprintf("node-%d", id), "data")}}
		switch {
		case o.Network != nil:
			cfg.Host, cfg.Port, cfg.ControllerPort = o.Network.IP(i+1), 9092, 9093
			if o.Metrics {
				cfg.MetricsPort = 9644
			}
		default:
			cfg.Host = "127.0.0.1"
			if len(o.Hosts) == 1 {
				cfg.Host = o.Hosts[0]
			} else if len(o.Hosts) > 1 {
				cfg.Host = o.Hosts[i]
			}
			cfg.Port = FreePort(t, cfg.Host)
			cfg.ControllerPort = FreePort(t, cfg.Host)
			if o.Metrics {
				cfg.MetricsPort = FreePort(t, cfg.Host)
			}
		}
		if o.Standalone || i >= o.Controllers {
			cfg.ControllerPort = 0
		}
		if i >= o.Controllers {
			cfg.Roles = "broker"
		}
		cfg.Props = maps.Clone(o.Props)
		if cfg.Props == nil {
			cfg.Props = map[string]string{}
		}
		maps.Copy(cfg.Props, o.NodeProps[id])
		cfgs[i] = cfg
	}
	if !o.Standalone {
		voters := VotersString(cfgs)
		for i := range cfgs {
			cfgs[i].Voters = voters
			if cfgs[i].Roles == "broker" {
				// A broker-only node reaches the controllers on this listener.
				cfgs[i].Props["controller.listener.names"] = "CONTROLLER"
				cfgs[i].Props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
			}
		}
		c.ID = o.ClusterID
		if c.ID == "" {
			c.ID = RandomUUID(t)
		}
	}
	t.Cleanup(c.cleanup)
	for i, cfg := range cfgs {
		dir := filepath.Join(o.DataRoot, fmt.Sprintf("node-%d", cfg.ID))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("harness: %v", err)
		}
		n := &Node{
			Config: cfg, Dir: dir, PropsPath: filepath.Join(dir, "server.properties"),
			t: t, bin: bin, env: o.Env, readyTimeout: o.ReadyTimeout,
		}
		if o.Network != nil {
			n.Netns = o.Network.Namespace(i + 1)
		}
		if err := os.WriteFile(n.PropsPath, []byte(cfg.Properties()), 0o644); err != nil {
			t.Fatalf("harness: %v", err)
		}
		if !o.Standalone {
			if out, err := Format(bin, c.ID, n.PropsPath); err != nil {
				t.Fatalf("harness: format of node %d: %v\n%s", cfg.ID, err, out)
			}
		}
		c.Nodes = append(c.Nodes, n)
	}
	if !o.NoStart {
		c.Start()
	}
	return c
}

// RandomUUID is `ringbroker random-uuid`: a new Kafka UUID (22 characters
// of base64url).
func RandomUUID(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(Binary(t), "random-uuid").Output()
	if err != nil {
		t.Fatalf("harness: ringbroker random-uuid: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Format runs `ringbroker format --cluster-id id props` and returns its
// combined output.
func Format(bin, id, props string) (string, error) {
	out, err := exec.Command(bin, "format", "--cluster-id", id, props).CombinedOutput()
	return string(out), err
}

// Node returns the node with this node.id, failing the test when there is
// none.
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	for _, n := range c.Nodes {
		if n.Config.ID == id {
			return n
		}
	}
	c.t.Fatalf("harness: no node %d", id)
	return nil
}

// Bootstrap is every node's client address, for kgo.SeedBrokers.
func (c *Cluster) Bootstrap() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Voters is the controller.quorum.voters every node was given ("" when
// Standalone).
func (c *Cluster) Voters() string { return c.Nodes[0].Config.Voters }

// Start starts every node that is not running, all at once (a quorum's
// nodes must find each other), then waits until each is ready.
func (c *Cluster) Start() {
	c.t.Helper()
	var started []*Node
	for _, n := range c.Nodes {
		if !n.Running() {
			n.Start()
			started = append(started, n)
		}
	}
	c.waitReady(started)
}

// WaitReady waits until every running node is ready, failing the test
// with the logs of the first that is not.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	var running []*Node
	for _, n := range c.Nodes {
		if n.Running() {
			running = append(running, n)
		}
	}
	c.waitReady(running)
}

func (c *Cluster) waitReady(nodes []*Node) {
	c.t.Helper()
	start := time.Now()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.WaitReady(0) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			c.t.Fatalf("harness: %v\n%s", err, nodes[i].Tail())
		}
	}
	c.t.Logf("harness: %d node(s) ready after %v", len(nodes), time.Since(start).Round(time.Millisecond))
}

// Terminate sends SIGTERM to every running node at once and waits up to
// timeout for each; it returns how each ended, by node id, and an error
// naming the nodes that had to be killed.
func (c *Cluster) Terminate(timeout time.Duration) (map[int32]ExitInfo, error) {
	var mu sync.Mutex
	infos := map[int32]ExitInfo{}
	var errs []string
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		wg.Go(func() {
			info, err := n.Terminate(timeout)
			mu.Lock()
			defer mu.Unlock()
			infos[n.Config.ID] = info
			if err != nil {
				errs = append(errs, err.Error())
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return infos, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return infos, nil
}

// Probe probes every node (Probe) and returns the error of each that does
// not answer, by node id.
func (c *Cluster) Probe(ctx context.Context) map[int32]error {
	out := map[int32]error{}
	for _, n := range c.Nodes {
		if err := n.Probe(ctx); err != nil {
			out[n.Config.ID] = err
		}
	}
	return out
}

// cleanup ends every process: SIGTERM to all at once, SIGKILL to what is
// left after ShutdownTimeout, and the process logs of a failed test.
func (c *Cluster) cleanup() {
	infos, err := c.Terminate(c.opts.ShutdownTimeout)
	for _, n := range c.Nodes {
		n.kill()
	}
	if err != nil {
		c.t.Logf("harness: clean-up: %v", err)
	}
	for id, info := range infos {
		if info.Code != 0 {
			c.t.Logf("harness: clean-up: node %d ended with %s", id, info)
		}
	}
	if c.t.Failed() {
		for _, n := range c.Nodes {
			c.t.Logf("harness: logs of %s:\n%s", n, n.Tail())
		}
	}
}
