#!/bin/sh
# `make bench`: runs ringbench's short suite (under 5 minutes on 2 cores)
# side by side against ringbroker and its peers, kfake and NATS JetStream,
# then writes bench/results/<date>-<host>.json, bench/results/latest.md, PNG
# plots next to the JSON, and the README's benchmark block.
#
# It builds bin/ringbroker and bin/ringbench from this module, and kfake,
# natsbench, ringplot and nats-server (github.com/nats-io/nats-server/v2,
# pinned in bench/peers/go.mod) from the bench/peers module into
# bench/peers/bin (gitignored), fetching modules from the Go module proxy.
#
# Targets: ringbroker netpoll/buffered, kfake and nats always; ringbroker
# with io.engine=uring and log.io.mode=direct is tried too, and ringbench
# drops it when the broker does not report that engine and mode in its
# "ringbroker listening" line (a fallback).
#   RINGBENCH_TARGETS   replaces the target list (space-separated)
#   NATS_SERVER         a nats-server binary to use instead of building one
#   RINGBENCH_README    README to rewrite (default README.md; "" skips)
# Extra arguments go to ringbench, e.g. --duration 30s.
set -eu
cd "$(dirname "$0")/.."
mkdir -p bin bench/peers/bin
go build -o bin/ringbroker ./tools/ringbroker
go build -o bin/ringbench ./tools/ringbench
(
	cd bench/peers
	go build -o bin/ ./cmd/kfake ./cmd/natsbench ./cmd/ringplot
	if [ -z "${NATS_SERVER:-}" ]; then
		go build -o bin/nats-server github.com/nats-io/nats-server/v2
	fi
)
b="ringbroker:shards=2"
# The two mixed modes (netpoll+direct, uring+buffered) would take the suite
# past 5 minutes; add them with RINGBENCH_TARGETS.
targets=${RINGBENCH_TARGETS:-"$b,io.engine=netpoll,log.io.mode=buffered $b,io.engine=uring,log.io.mode=direct kfake nats"}
args="--broker-bin bin/ringbroker --skip-unavailable-engines"
for t in $targets; do args="$args --target $t"; done
if [ -n "${NATS_SERVER:-}" ]; then args="$args --nats-server $NATS_SERVER"; fi
mkdir -p bench/results/tmp
marker=bench/results/tmp/.run-short-start
touch "$marker"
rc=0
# shellcheck disable=SC2086
bin/ringbench --suite bench/suites/short.json $args "$@" || rc=$?
# ringbench exits non-zero when a run reported errors; the report is still
# written, so plot it and update the README before passing the status on.
json=$(find bench/results -maxdepth 1 -name '*.json' -newer "$marker" | sort | tail -n 1)
if [ -n "$json" ]; then
	readme=${RINGBENCH_README-README.md}
	if [ -n "$readme" ]; then
		bench/peers/bin/ringplot --readme "$readme" --table bench/results/latest.md "$json"
	else
		bench/peers/bin/ringplot "$json"
	fi
fi
exit $rc
