#!/bin/sh
# Regenerates the fake sysfs trees the numa tests read. Run from numa/testdata.
set -e
rm -rf one-node two-socket-smt nvme-node1
cpu() { # tree id core socket siblings
	d=$1/sys/devices/system/cpu/cpu$2
	mkdir -p $d/topology $d/cache/index0 $d/cache/index3
	echo $3 > $d/topology/core_id; echo $4 > $d/topology/physical_package_id; echo $5 > $d/topology/thread_siblings_list
	echo 1 > $d/cache/index0/level; echo Data > $d/cache/index0/type; echo 48K > $d/cache/index0/size; echo $5 > $d/cache/index0/shared_cpu_list
	echo 3 > $d/cache/index3/level; echo Unified > $d/cache/index3/type; echo 32768K > $d/cache/index3/size; echo $6 > $d/cache/index3/shared_cpu_list
}
node() { mkdir -p $1/sys/devices/system/node/node$2; echo $3 > $1/sys/devices/system/node/node$2/cpulist; }
# 1 node, 2 CPUs, one virtio disk without a NUMA node (the dev machine).
t=one-node
mkdir -p $t/sys/devices/system/cpu; echo 0-1 > $t/sys/devices/system/cpu/online
node $t 0 0-1
cpu $t 0 0 0 0 0-1; cpu $t 1 1 0 1 0-1
mkdir -p $t/sys/block/vda $t/sys/dev/block/253:0 $t/sys/class/net/eth0/device $t/sys/class/net/lo
printf 'MAJOR=253\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n' > $t/sys/dev/block/253:0/uevent
# 2 sockets x 2 cores x 2 threads; siblings are n and n+4; node n = socket n.
smt() {
	t=$1
	mkdir -p $t/sys/devices/system/cpu; echo 0-7 > $t/sys/devices/system/cpu/online
	node $t 0 0-1,4-5; node $t 1 2-3,6-7
	cpu $t 0 0 0 0,4 0-1,4-5; cpu $t 1 1 0 1,5 0-1,4-5; cpu $t 4 0 0 0,4 0-1,4-5; cpu $t 5 1 0 1,5 0-1,4-5
	cpu $t 2 0 1 2,6 2-3,6-7; cpu $t 3 1 1 3,7 2-3,6-7; cpu $t 6 0 1 2,6 2-3,6-7; cpu $t 7 1 1 3,7 2-3,6-7
	mkdir -p $t/sys/class/net/eth0/device; echo 0 > $t/sys/class/net/eth0/device/numa_node
	mkdir -p $t/sys/class/net/lo
}
smt two-socket-smt
# The same machine with an NVMe controller on node 1 holding the data dir (partition nvme0n1p1, 259:1).
smt nvme-node1
t=nvme-node1
mkdir -p $t/sys/class/nvme/nvme0 $t/sys/block/nvme0n1/device $t/sys/block/nvme0n1/nvme0n1p1 $t/sys/dev/block/259:1
echo 1 > $t/sys/class/nvme/nvme0/numa_node; echo 1 > $t/sys/block/nvme0n1/device/numa_node
printf 'MAJOR=259\nMINOR=1\nDEVNAME=nvme0n1p1\nDEVTYPE=partition\n' > $t/sys/dev/block/259:1/uevent
# git keeps no empty directories: mark them so a clone has the same trees.
find one-node two-socket-smt nvme-node1 -type d -empty -exec touch {}/.keep \;
