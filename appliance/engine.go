package appliance

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/numa"
)

// enginePlan is what Start decided about the network engine and the shard
// loops: which engine, and where each shard runs.
type enginePlan struct {
	ring      bool               // io.engine resolved to uring
	placement []ioring.Placement // per shard; nil: not pinned (netpoll)
}

// planEngine resolves io.engine (auto: uring when ioring.Available, else
// netpoll with one log line) and, for uring, places the shards on CPUs
// with numa.PlaceShards: the data device's NUMA node first, one thread per
// core before SMT siblings, within the process's affinity mask. netpoll
// shards are not pinned: their connections run on goroutines anywhere, and
// locking the inbox goroutine to a thread only adds hand-offs.
//
// io.uring.pin.shards=false leaves the ring shards' threads (still one
// locked thread per ring) to the kernel's scheduler, for machines whose
// CPUs the broker shares with other load: a pinned loop woken while
// another process holds its CPU waits for that CPU even when another is
// idle. On the 2-vCPU development VM, with the load generator on the same
// CPUs, 3 order-alternating rounds of bench/run-engines.sh put unpinned
// and pinned within noise of each other (broker CPU per GB against
// netpoll's: 0.63 and 0.76 at 10 MB/s, publish p99 1.01 and 1.12; 1.02 and
// 0.97 at maximum rate; 1.06 and 1.04 at catch-up), so pinning stays the
// default.
func (b *Broker) planEngine() (enginePlan, error) {
	var p enginePlan
	switch b.cfg.IOEngine {
	case "netpoll":
		return p, nil
	case "uring":
		if ok, why := ioring.Available(); !ok {
			return p, fmt.Errorf("cannot use io.engine=uring: %s", why)
		}
	default: // auto
		if ok, why := ioring.Available(); !ok {
			b.log.Warn("io_uring unavailable, io.engine=auto falls back to netpoll", "reason", why)
			return p, nil
		}
	}
	p.ring = true
	b.spareProcsForRings()
	if !b.cfg.UringPinShards {
		b.log.Info("ring shards are not pinned to CPUs (io.uring.pin.shards=false)")
		return p, nil
	}
	cpus, node, _, err := placeShards(b.cfg.Shards, b.cfg.LogDir)
	if err != nil {
		b.log.Warn("cannot read the topology, shards are not pinned", "err", err)
		return p, nil
	}
	for _, c := range cpus {
		p.placement = append(p.placement, ioring.Placement{CPU: c, Node: node})
	}
	return p, nil
}

// spareProcsForRings raises GOMAXPROCS by one per ring shard. A ring
// shard's goroutine keeps its P while it sleeps in io_uring_enter (a
// blocking syscall: the runtime takes the P back only through sysmon, 20 us
// to 10 ms later), so with GOMAXPROCS at the CPU count, sleeping shards hold
// every P and the goroutines they wake (deferred handlers, the group
// committer, timers) wait for sysmon. The extra Ps leave the usual count to
// the rest of the runtime; a shard asleep uses no CPU. GOMAXPROCS set in
// the environment, or io.uring.spare.procs=false, leaves it alone.
func (b *Broker) spareProcsForRings() {
	if os.Getenv("GOMAXPROCS") != "" || !b.cfg.UringSpareProcs {
		return
	}
	want := runtime.NumCPU() + b.cfg.Shards
	if prev := runtime.GOMAXPROCS(0); prev < want {
		runtime.GOMAXPROCS(want)
		b.log.Info("GOMAXPROCS raised for the ring shards", "from", prev, "to", want)
	}
}

// placeShards loads the machine's topology and places n shards. node is the
// NUMA node for the shards' memory policy: the node of the data device on a
// multi-node machine, -1 otherwise (nothing to prefer).
func placeShards(n int, dataDir string) (cpus []int, node int, topo *numa.Topology, err error) {
	topo, err = numa.Load("/")
	if err != nil {
		return nil, -1, nil, err
	}
	allowed, _ := numa.AllowedCPUs()
	dataNode, _ := topo.NodeOfPath(dataDir)
	cpus = numa.PlaceShards(topo, n, dataNode, allowed)
	node = -1
	if len(topo.Nodes) > 1 {
		node = dataNode
	}
	return cpus, node, topo, nil
}

// newShardLoop starts shard i's loop for the plan.
func (b *Broker) newShardLoop(i int, p enginePlan) (*ioring.Shard, error) {
	if !p.ring {
		return ioring.NewShard(i, ioring.ShardOptions{LockThread: false}), nil
	}
	o := ioring.ShardOptions{Ring: ioring.Options{PlugPad: b.cfg.UringPlugPad}}
	if i < len(p.placement) {
		pl := p.placement[i]
		o.Pin = &pl
	}
	s, err := ioring.NewRingShard(i, o)
	if err != nil && o.Pin != nil {
		b.log.Warn("cannot pin shard, running it unpinned", "shard", i, "cpu", o.Pin.CPU, "err", err)
		o.Pin = nil
		s, err = ioring.NewRingShard(i, o)
	}
	return s, err
}

// newEngine binds the listeners of the planned engine: every listener of
// cfg.Listeners on every shard, in that order (the engine's listener index
// is the index in cfg.Listeners).
func (b *Broker) newEngine(p enginePlan) (ioring.Engine, error) {
	addrs := make([]string, len(b.cfg.Listeners))
	goroutines := make([]bool, len(b.cfg.Listeners)) // TLS: see security/tls.go
	for i, l := range b.cfg.Listeners {
		addrs[i], goroutines[i] = l.Addr, l.TLS != nil
	}
	if !p.ring {
		return ioring.NewNetpoll(ioring.NetpollOptions{Addrs: addrs, Shards: b.cfg.Shards, Logger: b.log})
	}
	shards := make([]*ioring.Shard, len(b.shards))
	for i, st := range b.shards {
		shards[i] = st.loop
	}
	// io.uring.fetch.read.max.bytes: log parts of fetch answers up to
	// this size are read into memory (inline for page-cached data) and
	// sent with their answer; larger ones, or all with 0, are spliced.
	fileCopyMax := int(b.cfg.UringFetchReadMaxBytes)
	if fileCopyMax <= 0 {
		fileCopyMax = -1
	}
	// io.uring.send.max.bytes: one send SQE carries at most this many
	// bytes, so a large fetch answer does not hold the shard's thread
	// (and every other connection of the shard) for the whole copy; 0
	// unbounded.
	sendMax := int(b.cfg.UringSendMaxBytes)
	if sendMax <= 0 {
		sendMax = -1
	}
	return ioring.NewUring(ioring.UringOptions{
		Addrs: addrs, Netpoll: goroutines, Shards: shards, Logger: b.log,
		MaxFrame: b.cfg.SocketRequestMaxBytes, MinFrame: 8,
		IdleTimeout: time.Duration(b.cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		FileCopyMax: fileCopyMax,
		// io.uring.fetch.sendfile.min.bytes: page-cached log parts of at
		// least this size are sent with sendfile(2) from the loop (0, the
		// default, never: at max rate each answer then took a ring round
		// trip per part, and end-to-end p50 rose ~34 -> ~41 ms).
		SendfileMin: int(max(b.cfg.UringFetchSendfileMin, 0)),
		SendMax:     sendMax,
	})
}

// DescribeTopology renders the machine and the placement a broker with
// cfg would use (ringbroker --print-topology).
func DescribeTopology(cfg Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	cpus, _, topo, err := placeShards(cfg.Shards, existingParent(cfg.LogDir))
	if err != nil {
		return "", err
	}
	node, dev := topo.NodeOfPath(existingParent(cfg.LogDir))
	out := numa.Describe(topo, cpus, cfg.LogDir, node, dev)
	ok, why := ioring.Available()
	engine := cfg.IOEngine
	if engine == "auto" {
		engine = "netpoll"
		if ok {
			engine = "uring"
		}
	}
	return out + fmt.Sprintf("io.engine=%s resolves to %s (%s); shards are pinned with the uring engine only (unless io.uring.pin.shards=false)\n", cfg.IOEngine, engine, why), nil
}

// existingParent is dir, or its nearest existing ancestor (log.dirs may not
// exist yet).
func existingParent(dir string) string {
	d, _ := filepath.Abs(dir)
	for {
		if _, err := os.Stat(d); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return d
		}
		d = parent
	}
}
