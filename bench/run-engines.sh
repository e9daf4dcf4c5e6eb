#!/bin/sh
# Runs the same produce and consume workloads (bench/suites/engines.json)
# against ringbroker with io.engine=uring and io.engine=netpoll in one run
# (buffered log I/O, 2 shards, so the engine is the only difference), and
# writes the report (throughput, p50/p99/p999, broker CPU seconds per GB,
# ratios against the first target) to bench/results/. Not a test: it takes
# about 2 minutes on 2 cores. Extra arguments go to ringbench.
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
exec bin/ringbench --suite bench/suites/engines.json $args "$@"
