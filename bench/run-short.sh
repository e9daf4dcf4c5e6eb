#!/bin/sh
# Runs ringbench's short suite (under 5 minutes on 2 cores) against a broker
# it builds and starts itself, and writes bench/results/<date>-<host>.json and
# bench/results/latest.md. Extra arguments go to ringbench, e.g.
#   bench/run-short.sh --target ringbroker:shards=2,log.io.mode=direct
# RINGBENCH_TARGETS replaces the default target list (space-separated).
set -eu
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/ringbench ./tools/ringbench
targets=${RINGBENCH_TARGETS:-"ringbroker:shards=2,io.engine=netpoll,log.io.mode=buffered"}
args=""
for t in $targets; do args="$args --target $t"; done
# shellcheck disable=SC2086
exec bin/ringbench --suite bench/suites/short.json $args "$@"
