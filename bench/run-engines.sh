#!/bin/sh
# Runs the same produce and consume workloads (bench/suites/engines.json)
# against ringbroker with io.engine=netpoll and io.engine=uring (buffered
# log I/O, 2 shards, so the engine is the only difference), RINGBENCH_ROUNDS
# times (default 3) with the targets' order alternating from round to round,
# and writes the report (throughput, p50/p99/p999, broker CPU seconds per
# GB) to bench/results/. Its second table compares each target with the
# first, netpoll: per workload the median over the rounds, with min and max,
# of the ratios of CPU s/GB, publish and end-to-end p99 and publish MB/s.
# Not a test: a round takes about 110 s on 2 cores, the default 3 about
# 6 minutes. RINGBENCH_TARGETS replaces the targets (space-separated, the
# first is the baseline). Extra arguments go to ringbench. The direct-I/O
# runs in the README's io.engine section used
#   b=ringbroker:shards=2,log.io.mode=direct,log.io.cache.prefault=true
#   RINGBENCH_ROUNDS=5 RINGBENCH_TARGETS="$b,io.engine=netpoll $b,io.engine=uring"
# (prefault on both, so the 8 s windows do not measure the block caches'
# first fill; about 9-14 minutes).
set -eu
cd "$(dirname "$0")/.."
mkdir -p bin bench/results/tmp
go build -o bin/ringbroker ./tools/ringbroker
go build -o bin/ringbench ./tools/ringbench
b="ringbroker:shards=2,log.io.mode=buffered"
targets=${RINGBENCH_TARGETS:-"$b,io.engine=netpoll $b,io.engine=uring"}
args="--broker-bin bin/ringbroker --skip-unavailable-engines --limits=false"
for t in $targets; do args="$args --target $t"; done
# shellcheck disable=SC2086
exec bin/ringbench --suite bench/suites/engines.json --rounds "${RINGBENCH_ROUNDS:-3}" $args "$@"
