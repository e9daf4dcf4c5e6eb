package numa

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// CPU is one logical CPU (hardware thread).
type CPU struct {
	ID       int   // logical CPU number (cpuN)
	Core     int   // topology/core_id (unique only within a socket)
	Socket   int   // topology/physical_package_id
	Node     int   // NUMA node (0 when the kernel has no node directories)
	Siblings []int // topology/thread_siblings_list, itself included
}

// Cache is one cache instance (cpu*/cache/index*), deduplicated by the CPUs
// that share it.
type Cache struct {
	Level     int
	Type      string // Data, Instruction, Unified
	SizeBytes int64
	CPUs      []int // shared_cpu_list
}

// Device is a PCI device with its NUMA node (-1 when the firmware does not
// say, as on single-node machines and most VMs).
type Device struct {
	Name string // nvme0, eth0
	Node int
}

// CPUInfo are facts from cpuid about the CPU the process runs on.
type CPUInfo struct {
	Vendor         string
	Brand          string
	PhysicalCores  int
	ThreadsPerCore int
	LogicalCores   int
	CacheLine      int
	L1D, L2, L3    int // bytes, -1 unknown
	Features       []string
}

// Topology is the machine as sysfs and cpuid describe it.
type Topology struct {
	Root   string // the sysfs root it was read from ("/" on a real machine)
	CPUs   []CPU  // online CPUs, by ID
	Nodes  []int  // NUMA node ids (at least one)
	Caches []Cache
	NVMe   []Device
	NICs   []Device
	Info   CPUInfo
}

// Load reads the topology below root ("" or "/" for the running machine).
// Missing optional files (caches, devices, nodes) leave their parts empty;
// a tree without online CPUs is an error.
func Load(root string) (*Topology, error) {
	if root == "" {
		root = "/"
	}
	t := &Topology{Root: root}
	sys := filepath.Join(root, "sys")
	online, err := readList(filepath.Join(sys, "devices/system/cpu/online"))
	if err != nil {
		return nil, fmt.Errorf("cannot read online CPUs below %q: %w", root, err)
	}
	nodeOf := map[int]int{}
	nodeDirs, _ := filepath.Glob(filepath.Join(sys, "devices/system/node/node[0-9]*"))
	for _, d := range nodeDirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "node"))
		if err != nil {
			continue
		}
		t.Nodes = append(t.Nodes, id)
		cpus, err := readList(filepath.Join(d, "cpulist"))
		if err != nil {
			continue
		}
		for _, c := range cpus {
			nodeOf[c] = id
		}
	}
	sort.Ints(t.Nodes)
	if len(t.Nodes) == 0 {
		t.Nodes = []int{0}
	}
	seenCache := map[string]bool{}
	for _, id := range online {
		dir := filepath.Join(sys, "devices/system/cpu", "cpu"+strconv.Itoa(id))
		c := CPU{ID: id, Node: nodeOf[id]}
		c.Core, _ = readInt(filepath.Join(dir, "topology/core_id"))
		c.Socket, _ = readInt(filepath.Join(dir, "topology/physical_package_id"))
		if sib, err := readList(filepath.Join(dir, "topology/thread_siblings_list")); err == nil {
			c.Siblings = sib
		} else {
			c.Siblings = []int{id}
		}
		t.CPUs = append(t.CPUs, c)
		idx, _ := filepath.Glob(filepath.Join(dir, "cache/index[0-9]*"))
		for _, ci := range idx {
			shared := readString(filepath.Join(ci, "shared_cpu_list"))
			level, _ := readInt(filepath.Join(ci, "level"))
			typ := readString(filepath.Join(ci, "type"))
			key := fmt.Sprintf("%d/%s/%s", level, typ, shared)
			if seenCache[key] {
				continue
			}
			seenCache[key] = true
			cpus, _ := parseList(shared)
			t.Caches = append(t.Caches, Cache{Level: level, Type: typ, SizeBytes: parseSize(readString(filepath.Join(ci, "size"))), CPUs: cpus})
		}
	}
	sort.Slice(t.Caches, func(i, j int) bool {
		a, b := t.Caches[i], t.Caches[j]
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return firstOr(a.CPUs, -1) < firstOr(b.CPUs, -1)
	})
	t.NVMe = nvmeDevices(sys)
	t.NICs = nicDevices(sys)
	t.Info = cpuInfo()
	return t, nil
}

func nvmeDevices(sys string) []Device {
	var out []Device
	seen := map[string]bool{}
	// Controllers first (/sys/class/nvme/nvmeN/numa_node), then namespaces
	// whose controller was not listed (/sys/block/nvmeNnM/device/numa_node).
	ctrls, _ := filepath.Glob(filepath.Join(sys, "class/nvme/nvme[0-9]*"))
	for _, d := range ctrls {
		name := filepath.Base(d)
		n, err := readInt(filepath.Join(d, "numa_node"))
		if err != nil {
			n, err = readInt(filepath.Join(d, "device/numa_node"))
		}
		if err != nil {
			n = -1
		}
		seen[name] = true
		out = append(out, Device{Name: name, Node: n})
	}
	blocks, _ := filepath.Glob(filepath.Join(sys, "block/nvme[0-9]*"))
	for _, d := range blocks {
		name := filepath.Base(d)
		ctrl := name
		if i := strings.IndexByte(name[4:], 'n'); i >= 0 {
			ctrl = name[:4+i]
		}
		if seen[ctrl] {
			continue
		}
		n, err := readInt(filepath.Join(d, "device/numa_node"))
		if err != nil {
			n = -1
		}
		seen[ctrl] = true
		out = append(out, Device{Name: ctrl, Node: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func nicDevices(sys string) []Device {
	var out []Device
	nics, _ := filepath.Glob(filepath.Join(sys, "class/net/*"))
	for _, d := range nics {
		// Only NICs with a device (skips lo, bridges, ifb, veth).
		if _, err := os.Stat(filepath.Join(d, "device")); err != nil {
			continue
		}
		n, err := readInt(filepath.Join(d, "device/numa_node"))
		if err != nil {
			n = -1
		}
		out = append(out, Device{Name: filepath.Base(d), Node: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func cpuInfo() CPUInfo {
	c := &cpuid.CPU
	ci := CPUInfo{
		Vendor: c.VendorString, Brand: c.BrandName, PhysicalCores: c.PhysicalCores, ThreadsPerCore: c.ThreadsPerCore,
		LogicalCores: c.LogicalCores, CacheLine: c.CacheLine, L1D: c.Cache.L1D, L2: c.Cache.L2, L3: c.Cache.L3,
	}
	for _, f := range []cpuid.FeatureID{cpuid.AVX2, cpuid.AVX512F, cpuid.VPCLMULQDQ, cpuid.SSE42, cpuid.ASIMD, cpuid.CRC32} {
		if c.Supports(f) {
			ci.Features = append(ci.Features, f.String())
		}
	}
	return ci
}

// NodeOfCPU is the NUMA node of CPU id (0 if unknown).
func (t *Topology) NodeOfCPU(id int) int {
	for _, c := range t.CPUs {
		if c.ID == id {
			return c.Node
		}
	}
	return 0
}

// Sockets is the number of distinct physical packages.
func (t *Topology) Sockets() int {
	s := map[int]bool{}
	for _, c := range t.CPUs {
		s[c.Socket] = true
	}
	return len(s)
}

// Cores is the number of distinct physical cores.
func (t *Topology) Cores() int {
	s := map[[2]int]bool{}
	for _, c := range t.CPUs {
		s[[2]int{c.Socket, c.Core}] = true
	}
	return len(s)
}

// NodeOfPath is the NUMA node of the block device that holds path, with
// the device's name: the device number from stat(2), its uevent DEVNAME
// under sys/dev/block/MAJ:MIN, the whole disk under sys/block, then that
// disk's device/numa_node (a controller's, for NVMe). Node -1: unknown
// (not a PCI device, a VM, or a single-node machine without the file).
func (t *Topology) NodeOfPath(path string) (node int, device string) {
	maj, min, err := devOf(path)
	if err != nil {
		return -1, ""
	}
	return t.NodeOfBlockDev(maj, min)
}

// NodeOfBlockDev is NodeOfPath for a device number.
func (t *Topology) NodeOfBlockDev(maj, min uint32) (node int, device string) {
	sys := filepath.Join(t.Root, "sys")
	ue := readString(filepath.Join(sys, "dev/block", fmt.Sprintf("%d:%d", maj, min), "uevent"))
	name := ""
	for _, l := range strings.Split(ue, "\n") {
		if v, ok := strings.CutPrefix(l, "DEVNAME="); ok {
			name = strings.TrimSpace(v)
		}
	}
	if name == "" {
		return -1, ""
	}
	disk := name
	if _, err := os.Stat(filepath.Join(sys, "block", name)); err != nil {
		// A partition: find the disk that has it as a subdirectory.
		disks, _ := filepath.Glob(filepath.Join(sys, "block/*"))
		for _, d := range disks {
			if _, err := os.Stat(filepath.Join(d, name)); err == nil {
				disk = filepath.Base(d)
				break
			}
		}
	}
	for _, p := range []string{"device/numa_node", "device/device/numa_node"} {
		if n, err := readInt(filepath.Join(sys, "block", disk, p)); err == nil {
			return n, disk
		}
	}
	return -1, disk
}

func readString(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(p string) (int, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func readList(p string) ([]int, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return parseList(strings.TrimSpace(string(b)))
}

// parseList parses a kernel CPU list such as "0-3,8,10-11".
func parseList(s string) ([]int, error) {
	var out []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("cannot parse CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("cannot parse CPU list %q: bad range %q", s, part)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// FormatList formats CPU ids as a kernel CPU list ("0-3,8").
func FormatList(ids []int) string {
	if len(ids) == 0 {
		return ""
	}
	s := append([]int(nil), ids...)
	sort.Ints(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			b.WriteString(strconv.Itoa(s[i]))
		} else {
			fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		}
		i = j + 1
	}
	return b.String()
}

// parseSize parses sysfs cache sizes ("48K", "1024K", "32M").
func parseSize(s string) int64 {
	if s == "" {
		return 0
	}
	mul := int64(1)
	switch s[len(s)-1] {
	case 'K':
		mul, s = 1<<10, s[:len(s)-1]
	case 'M':
		mul, s = 1<<20, s[:len(s)-1]
	case 'G':
		mul, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n * mul
}

func firstOr(s []int, d int) int {
	if len(s) == 0 {
		return d
	}
	return s[0]
}
