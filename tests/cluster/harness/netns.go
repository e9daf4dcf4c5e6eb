package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Namespace names start with nsPrefix, then the owning test process's id
// and the network's slot: rbt-PID-SLOT-hub and rbt-PID-SLOT-nI. The
// slot's link in this process's namespace is rbh-SLOT and its subnet
// 10.213.SLOT.0/24.
const (
	nsPrefix   = "rbt-"
	hostLink   = "rbh-"
	faultChain = "RB-FAULTS"
	cmdTimeout = 30 * time.Second
)

// RequireNetnsEnv names the environment variable that turns a skip for
// want of network namespaces into a failure (make test-cluster sets it).
const RequireNetnsEnv = "RB_REQUIRE_NETNS"

var netnsCheck struct {
	once     sync.Once
	err      error
	iptables string // the iptables command that works in a namespace
}

// NetnsAvailable reports why network namespaces with veth, a bridge and
// iptables cannot be used here, or nil when they can. It checks once per
// process: root, the ip command, a namespace with a bridge, and an
// iptables (iptables, iptables-nft or iptables-legacy, the first that can
// add a chain inside a namespace).
func NetnsAvailable() error {
	netnsCheck.once.Do(func() { netnsCheck.err = checkNetns() })
	return netnsCheck.err
}

func checkNetns() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (run as root, or make test-cluster in CI)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the ip command (iproute2) is missing: apt-get install -y iproute2")
	}
	removeNamespaces(func(pid int) bool { return !pidAlive(pid) })
	probe := fmt.Sprintf("%s%d-probe", nsPrefix, os.Getpid())
	if out, err := run("ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("cannot create a network namespace: %v: %s", err, out)
	}
	defer run("ip", "netns", "del", probe)
	if out, err := run("ip", "-n", probe, "link", "add", "br0", "type", "bridge"); err != nil {
		return fmt.Errorf("cannot create a bridge in a network namespace: %v: %s", err, out)
	}
	if out, err := run("ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1"); err != nil {
		return fmt.Errorf("cannot create a veth pair in a network namespace: %v: %s", err, out)
	}
	if out, err := run("ip", "netns", "exec", probe, "true"); err != nil {
		return fmt.Errorf("ip netns exec fails: %v: %s", err, out)
	}
	var tried []string
	for _, ipt := range []string{"iptables", "iptables-nft", "iptables-legacy"} {
		if _, err := exec.LookPath(ipt); err != nil {
			continue
		}
		out, err := run("ip", "netns", "exec", probe, ipt, "-w", "-N", faultChain)
		if err == nil {
			netnsCheck.iptables = ipt
			return nil
		}
		tried = append(tried, fmt.Sprintf("%s: %v: %s", ipt, err, strings.TrimSpace(out)))
	}
	if len(tried) == 0 {
		return errors.New("iptables is missing: apt-get update && apt-get install -y iptables")
	}
	return fmt.Errorf("no iptables works in a network namespace: %s", strings.Join(tried, "; "))
}

// RequireNetns skips the test, with the reason, when network namespaces
// cannot be used here, and fails it instead when RB_REQUIRE_NETNS=1 (CI
// runs as root, where a skip would hide a broken set-up).
func RequireNetns(t testing.TB) {
	t.Helper()
	err := NetnsAvailable()
	if err == nil {
		return
	}
	if os.Getenv(RequireNetnsEnv) == "1" {
		t.Fatalf("harness: network namespaces are required (%s=1) but not usable: %v", RequireNetnsEnv, err)
	}
	t.Skipf("harness: skipping, network namespaces not usable: %v (set %s=1 to fail instead)", err, RequireNetnsEnv)
}

// Network is a set of network namespaces, one per node, each with an eth0
// on a veth pair into a bridge that lives in a namespace of its own (the
// hub), so nothing but one link is added to the test's own namespace: that
// link (rbh-SLOT, address 10.213.SLOT.254, Network.HostIP) joins the bridge
// too, so the test process reaches every node directly. Node i (1-based)
// has address 10.213.SLOT.i. Faults are iptables DROP rules in the nodes'
// namespaces (a chain RB-FAULTS hooked into INPUT and OUTPUT); this kernel
// has no netem, so delay and loss need a userspace proxy. The test's
// clean-up kills what runs inside and deletes the namespaces; namespaces
// left by a test process that died are removed by the next NewNetwork.
type Network struct {
	t        testing.TB
	pid      int
	slot     int
	n        int
	iptables string

	mu      sync.Mutex
	blocked map[[2]int]bool
}

// NewNetwork creates n node namespaces, the hub and the link to them,
// after RequireNetns (so it skips or fails the test where namespaces cannot
// be used).
func NewNetwork(t testing.TB, n int) *Network {
	t.Helper()
	RequireNetns(t)
	if n < 1 || n > 200 {
		t.Fatalf("harness: NewNetwork(%d): 1 to 200 nodes", n)
	}
	nw := &Network{t: t, pid: os.Getpid(), n: n, iptables: netnsCheck.iptables, blocked: map[[2]int]bool{}}
	removeNamespaces(func(pid int) bool { return !pidAlive(pid) })
	for slot := 1; slot <= 250; slot++ {
		hub := nw.nsName(slot, "hub")
		if out, err := run("ip", "netns", "add", hub); err != nil {
			t.Fatalf("harness: cannot create namespace %s: %v: %s", hub, err, out)
		}
		link := hostLink + strconv.Itoa(slot)
		if _, err := run("ip", "link", "add", link, "type", "veth", "peer", "name", "up0", "netns", hub); err != nil {
			// Another network (this or another process) holds the slot.
			run("ip", "netns", "del", hub)
			continue
		}
		nw.slot = slot
		break
	}
	if nw.slot == 0 {
		t.Fatal("harness: no free network slot (rbh-1 to rbh-250 all exist)")
	}
	t.Cleanup(nw.teardown)
	hub := nw.nsName(nw.slot, "hub")
	link := hostLink + strconv.Itoa(nw.slot)
	nw.must("ip", "-n", hub, "link", "set", "lo", "up")
	nw.must("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
	nw.must("ip", "-n", hub, "link", "set", "br0", "up")
	nw.must("ip", "-n", hub, "link", "set", "up0", "master", "br0", "up")
	nw.must("ip", "addr", "add", nw.HostIP()+"/24", "dev", link)
	nw.must("ip", "link", "set", link, "up")
	for i := 1; i <= n; i++ {
		ns := nw.Namespace(i)
		veth := "v" + strconv.Itoa(i)
		nw.must("ip", "netns", "add", ns)
		nw.must("ip", "-n", ns, "link", "set", "lo", "up")
		nw.must("ip", "-n", hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		nw.must("ip", "-n", hub, "link", "set", veth, "master", "br0", "up")
		nw.must("ip", "-n", ns, "addr", "add", nw.IP(i)+"/24", "dev", "eth0")
		nw.must("ip", "-n", ns, "link", "set", "eth0", "up")
		nw.must("ip", "netns", "exec", ns, nw.iptables, "-w", "-N", faultChain)
		nw.must("ip", "netns", "exec", ns, nw.iptables, "-w", "-I", "INPUT", "-j", faultChain)
		nw.must("ip", "netns", "exec", ns, nw.iptables, "-w", "-I", "OUTPUT", "-j", faultChain)
	}
	t.Logf("harness: network %s with %d namespaces on 10.213.%d.0/24 (%s)", nw.nsName(nw.slot, "*"), n, nw.slot, nw.iptables)
	return nw
}

func (nw *Network) nsName(slot int, what string) string {
	return fmt.Sprintf("%s%d-%d-%s", nsPrefix, nw.pid, slot, what)
}

// Nodes is the number of node namespaces.
func (nw *Network) Nodes() int { return nw.n }

// Namespace is node i's namespace name (1-based), for `ip netns exec`.
func (nw *Network) Namespace(i int) string { return nw.nsName(nw.slot, "n"+strconv.Itoa(i)) }

// IP is node i's address (1-based); IP(0) is HostIP.
func (nw *Network) IP(i int) string {
	if i == 0 {
		return nw.HostIP()
	}
	return fmt.Sprintf("10.213.%d.%d", nw.slot, i)
}

// HostIP is the test process's address on the network.
func (nw *Network) HostIP() string { return fmt.Sprintf("10.213.%d.254", nw.slot) }

// Command returns a command that runs name with args inside node i's
// namespace (`ip netns exec`).
func (nw *Network) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", nw.Namespace(i), name}, args...)...)
}

// Block cuts all traffic between nodes a and b, both ways (0 is the test
// process): packets are dropped, so connections time out rather than
// being refused. Established connections stop too. While node i is blocked
// from 0, its WaitReady and Probe (from the test process) fail.
func (nw *Network) Block(a, b int) {
	nw.t.Helper()
	if a == b {
		nw.t.Fatalf("harness: Block(%d, %d)", a, b)
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	key := [2]int{min(a, b), max(a, b)}
	if nw.blocked[key] {
		return
	}
	for _, p := range [][2]int{{a, b}, {b, a}} {
		if p[0] == 0 {
			continue // the rules in the other node's namespace cut the test process off
		}
		ns, peer := nw.Namespace(p[0]), nw.IP(p[1])
		nw.must("ip", "netns", "exec", ns, nw.iptables, "-w", "-A", faultChain, "-s", peer, "-j", "DROP")
		nw.must("ip", "netns", "exec", ns, nw.iptables, "-w", "-A", faultChain, "-d", peer, "-j", "DROP")
	}
	nw.blocked[key] = true
}

// Loss drops each packet between nodes a and b (0 is the test process)
// with probability p, in each direction (iptables' statistic match: this kernel has
// no netem). TCP goes on, slower, through retransmits. Heal removes it.
func (nw *Network) Loss(a, b int, p float64) {
	nw.t.Helper()
	if a == b || p <= 0 || p > 1 {
		nw.t.Fatalf("harness: Loss(%d, %d, %v)", a, b, p)
	}
	prob := strconv.FormatFloat(p, 'f', -1, 64)
	// Once per direction: on the sender's way out, or for the test
	// process (whose namespace the harness leaves alone) on the way in.
	for _, pr := range [][2]int{{a, b}, {b, a}} {
		ns, match, peer := nw.Namespace(pr[0]), "-d", nw.IP(pr[1])
		if pr[0] == 0 {
			ns, match, peer = nw.Namespace(pr[1]), "-s", nw.IP(0)
		}
		nw.must("ip", "netns", "exec", ns, nw.iptables, "-w", "-A", faultChain, match, peer,
			"-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP")
	}
}

// Dropped is the number of packets node i's fault rules have dropped
// since the last Heal.
func (nw *Network) Dropped(i int) int64 {
	nw.t.Helper()
	out, err := run("ip", "netns", "exec", nw.Namespace(i), nw.iptables, "-w", "-L", faultChain, "-v", "-n", "-x")
	if err != nil {
		nw.t.Fatalf("harness: iptables -L in %s: %v: %s", nw.Namespace(i), err, out)
	}
	var n int64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[2] == "DROP" {
			if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				n += v
			}
		}
	}
	return n
}

// Isolate cuts node i off from every other node (not from the test
// process: Block(i, 0) does that).
func (nw *Network) Isolate(i int) {
	nw.t.Helper()
	for j := 1; j <= nw.n; j++ {
		if j != i {
			nw.Block(i, j)
		}
	}
}

// Partition cuts every node of one group off from every node of the
// others; nodes in no group keep talking to everyone.
func (nw *Network) Partition(groups ...[]int) {
	nw.t.Helper()
	for gi, g := range groups {
		for _, other := range groups[gi+1:] {
			for _, a := range g {
				for _, b := range other {
					nw.Block(a, b)
				}
			}
		}
	}
}

// Heal removes every fault: each node's RB-FAULTS chain is flushed.
func (nw *Network) Heal() {
	nw.t.Helper()
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for i := 1; i <= nw.n; i++ {
		nw.must("ip", "netns", "exec", nw.Namespace(i), nw.iptables, "-w", "-F", faultChain)
	}
	clear(nw.blocked)
}

// Blocked reports whether traffic between a and b is cut.
func (nw *Network) Blocked(a, b int) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.blocked[[2]int{min(a, b), max(a, b)}]
}

// Dialer returns a dial function whose sockets are created inside node
// i's namespace (connections then come from node i's address, through its
// iptables rules); addresses must be IP literals. Use it with Probe, or
// with kgo.Dialer for a client that sits on node i.
func (nw *Network) Dialer(i int) DialFunc {
	ns := nw.Namespace(i)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, err := netip.ParseAddrPort(addr); err != nil {
			return nil, fmt.Errorf("dial from namespace %s: %q is not ip:port: %w", ns, addr, err)
		}
		var conn net.Conn
		err := inNamespace(ns, func() error {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			conn = c
			return err
		})
		return conn, err
	}
}

// Listen opens a TCP listener inside node i's namespace, on addr (an IP
// literal and port of that namespace, e.g. IP(i)+":7000").
func (nw *Network) Listen(i int, addr string) (net.Listener, error) {
	var ln net.Listener
	err := inNamespace(nw.Namespace(i), func() error {
		l, err := net.Listen("tcp", addr)
		ln = l
		return err
	})
	return ln, err
}

// inNamespace runs fn on an OS thread moved into the named network
// namespace; sockets fn creates stay in that namespace. The thread goes
// back to the test's namespace before it is unlocked; should that fail it
// stays locked, and Go ends it with its goroutine. Ending threads is not
// harmless: a child started from a thread gets its Pdeathsig when that
// thread ends (not the process), so a node started earlier from the same
// thread would be killed; an unlocked thread stays in Go's pool.
func inNamespace(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("cannot open this thread's namespace: %w", err)
			return
		}
		defer orig.Close()
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("cannot open namespace %s: %w", ns, err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("cannot enter namespace %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// must runs a command, failing the test with its output on error.
func (nw *Network) must(name string, args ...string) {
	nw.t.Helper()
	if out, err := run(name, args...); err != nil {
		nw.t.Fatalf("harness: %s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// teardown kills everything running in the network's namespaces and
// deletes them, and the link.
func (nw *Network) teardown() {
	removeNamespaces(func(pid int) bool { return pid == nw.pid }, nw.slot)
	run("ip", "link", "del", hostLink+strconv.Itoa(nw.slot))
}

// run runs a command with a time limit and returns its combined output.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// removeNamespaces deletes the harness's namespaces (rbt-PID-...) whose
// owner pid matches, killing the processes inside first; with slots, only
// those of these slots.
func removeNamespaces(owner func(pid int) bool, slots ...int) {
	out, err := run("ip", "netns", "list")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok {
			continue
		}
		parts := strings.SplitN(rest, "-", 3)
		pid, err := strconv.Atoi(parts[0])
		if err != nil || !owner(pid) {
			continue
		}
		if len(slots) > 0 {
			if len(parts) < 2 {
				continue
			}
			slot, err := strconv.Atoi(parts[1])
			if err != nil || !containsInt(slots, slot) {
				continue
			}
		}
		if pids, err := run("ip", "netns", "pids", name); err == nil {
			for _, f := range strings.Fields(pids) {
				if p, err := strconv.Atoi(f); err == nil && p != os.Getpid() {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		run("ip", "netns", "del", name)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
