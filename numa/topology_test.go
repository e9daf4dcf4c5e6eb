package numa

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestLoadOneNode(t *testing.T) {
	tp, err := Load("testdata/one-node")
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.CPUs) != 2 || len(tp.Nodes) != 1 || tp.Sockets() != 1 || tp.Cores() != 2 {
		t.Fatalf("got %d cpus, nodes %v, %d sockets, %d cores; want 2, [0], 1, 2", len(tp.CPUs), tp.Nodes, tp.Sockets(), tp.Cores())
	}
	if len(tp.NVMe) != 0 {
		t.Fatalf("NVMe = %v, want none", tp.NVMe)
	}
	if want := []Device{{"eth0", -1}}; !reflect.DeepEqual(tp.NICs, want) {
		t.Fatalf("NICs = %v, want %v (lo has no device)", tp.NICs, want)
	}
	// L1d per CPU, one shared L3.
	if len(tp.Caches) != 3 || tp.Caches[2].Level != 3 || tp.Caches[2].SizeBytes != 32<<20 || !reflect.DeepEqual(tp.Caches[2].CPUs, []int{0, 1}) {
		t.Fatalf("caches = %+v", tp.Caches)
	}
	if n, dev := tp.NodeOfBlockDev(253, 0); n != -1 || dev != "vda" {
		t.Fatalf("NodeOfBlockDev(253:0) = %d %q, want -1 vda", n, dev)
	}
	if got := PlaceShards(tp, 4, -1, nil); !reflect.DeepEqual(got, []int{0, 1, 0, 1}) {
		t.Fatalf("PlaceShards(4) = %v, want [0 1 0 1]", got)
	}
}

func TestLoadTwoSocketSMT(t *testing.T) {
	tp, err := Load("testdata/two-socket-smt")
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.CPUs) != 8 || !reflect.DeepEqual(tp.Nodes, []int{0, 1}) || tp.Sockets() != 2 || tp.Cores() != 4 {
		t.Fatalf("got %d cpus, nodes %v, %d sockets, %d cores; want 8, [0 1], 2, 4", len(tp.CPUs), tp.Nodes, tp.Sockets(), tp.Cores())
	}
	c6 := tp.CPUs[6]
	if c6.ID != 6 || c6.Node != 1 || c6.Socket != 1 || c6.Core != 0 || !reflect.DeepEqual(c6.Siblings, []int{2, 6}) {
		t.Fatalf("cpu 6 = %+v", c6)
	}
	if want := []Device{{"eth0", 0}}; !reflect.DeepEqual(tp.NICs, want) {
		t.Fatalf("NICs = %v, want %v", tp.NICs, want)
	}
	// No device preference: node 0's cores, node 1's cores, then siblings.
	if got, want := PlaceShards(tp, 8, -1, nil), []int{0, 1, 4, 5, 2, 3, 6, 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PlaceShards(8) = %v, want %v", got, want)
	}
	// Fewer shards than cores on a node: skip siblings first.
	if got, want := PlaceShards(tp, 2, 0, nil), []int{0, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PlaceShards(2) = %v, want %v", got, want)
	}
	// A cpuset that leaves only some CPUs.
	if got, want := PlaceShards(tp, 3, -1, []int{1, 5, 7}), []int{1, 5, 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PlaceShards with allowed = %v, want %v", got, want)
	}
}

func TestLoadNVMeOnNode1(t *testing.T) {
	tp, err := Load("testdata/nvme-node1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Device{{"nvme0", 1}}; !reflect.DeepEqual(tp.NVMe, want) {
		t.Fatalf("NVMe = %v, want %v", tp.NVMe, want)
	}
	n, dev := tp.NodeOfBlockDev(259, 1)
	if n != 1 || dev != "nvme0n1" {
		t.Fatalf("NodeOfBlockDev(259:1) = %d %q, want 1 nvme0n1", n, dev)
	}
	// The data device's node comes first, its cores before their siblings.
	if got, want := PlaceShards(tp, 4, n, nil), []int{2, 3, 6, 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PlaceShards(4, node 1) = %v, want %v", got, want)
	}
	if got, want := PlaceShards(tp, 6, n, nil), []int{2, 3, 6, 7, 0, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PlaceShards(6, node 1) = %v, want %v", got, want)
	}
	out := Describe(tp, PlaceShards(tp, 2, n, nil), "/data", n, dev)
	for _, want := range []string{"2 sockets", "4 cores", "2 NUMA nodes", "nvme nvme0: node 1", "shard 1 -> cpu 3 (node 1)", "data dir /data: nvme0n1, node 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("Describe lacks %q:\n%s", want, out)
		}
	}
}

func TestLoadMissingRoot(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil {
		t.Fatal("Load of an empty tree succeeded")
	}
}

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{"", nil, false}, {"0", []int{0}, false}, {"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, false},
		{"3-1", nil, true}, {"x", nil, true},
	} {
		got, err := parseList(tc.in)
		if (err != nil) != tc.bad || !tc.bad && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseList(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
		if !tc.bad && FormatList(got) != tc.in {
			t.Errorf("FormatList(%v) = %q, want %q", got, FormatList(got), tc.in)
		}
	}
}

func TestPartitionShard(t *testing.T) {
	for _, tc := range []struct {
		load []int
		want int
	}{{[]int{0}, 0}, {[]int{1, 0}, 1}, {[]int{2, 1, 1}, 1}, {[]int{0, 0, 0}, 0}} {
		if got := PartitionShard(tc.load); got != tc.want {
			t.Errorf("PartitionShard(%v) = %d, want %d", tc.load, got, tc.want)
		}
	}
	load := []int{3, 0, 1, 0}
	if got, want := AssignPartitions(load, 6), []int{1, 3, 1, 2, 3, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("AssignPartitions = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(load, []int{3, 3, 2, 2}) {
		t.Fatalf("load after = %v", load)
	}
}

// TestPinAndPolicy runs on the real machine: pin a locked thread, read the
// mask back, set and reset a preferred node.
func TestPinAndPolicy(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // exits locked: the pinned thread dies with the goroutine
		allowed, err := AllowedCPUs()
		if err != nil || len(allowed) == 0 {
			t.Errorf("AllowedCPUs = %v, %v", allowed, err)
			return
		}
		cpu := allowed[len(allowed)-1]
		if err := PinThread(cpu); err != nil {
			t.Error(err)
			return
		}
		if got, _ := AllowedCPUs(); !reflect.DeepEqual(got, []int{cpu}) {
			t.Errorf("after PinThread(%d) the mask is %v", cpu, got)
		}
		if err := SetMemPolicy(MPolPreferred, []int{0}); err != nil {
			t.Logf("SetMemPolicy: %v (kernel without NUMA?)", err)
		}
		if err := SetMemPolicy(MPolDefault, nil); err != nil {
			t.Logf("SetMemPolicy default: %v", err)
		}
	}()
	<-done
}

func TestLoadRealMachine(t *testing.T) {
	tp, err := Load("/")
	if err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	if len(tp.CPUs) == 0 || tp.Info.LogicalCores == 0 && runtime.GOARCH == "amd64" {
		t.Fatalf("topology %+v", tp)
	}
	n, dev := tp.NodeOfPath(t.TempDir())
	t.Logf("%d cpus, nodes %v, temp dir on %q node %d, cpu %s", len(tp.CPUs), tp.Nodes, dev, n, tp.Info.Brand)
}
