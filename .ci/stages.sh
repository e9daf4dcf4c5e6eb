#!/usr/bin/env bash
# Runs make test's stages (Makefile targets) as a small dependency graph:
# each stage starts once the stages it needs have passed, up to TEST_JOBS at
# a time, in the order given (put the long ones first). A stage's output goes
# to $TEST_LOG_DIR/<stage>.log and is printed whole when it ends, so stages
# side by side do not interleave. At the end, and also on failure or Ctrl-C,
# it prints one line per stage: its wall seconds, the CPU seconds (user+sys)
# of its processes, and its result. Exit status 1 when any stage failed or did
# not run, 130 on SIGINT/SIGTERM (every running stage's process group gets
# SIGTERM first; the brokers die with their test binaries).
#
#   .ci/stages.sh "name:need1,need2" "name2" ...
#
# The Makefile's test target builds the list (TEST_STAGES).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE=${MAKE:-make}
JOBS=${TEST_JOBS:-8}
LOGS=${TEST_LOG_DIR:-build/test-logs}
mkdir -p "$LOGS"
rm -f "$LOGS"/*.log "$LOGS"/*.cpu

names=() needs=()
declare -A state start_s wall cpu pid_of rcs
for spec in "$@"; do
	n=${spec%%:*}
	d=""
	[[ $spec == *:* ]] && d=${spec#*:}
	names+=("$n")
	needs+=("${d//,/ }")
	state[$n]=waiting
done

T0=$(date +%s.%N)
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
say() { printf 'stages: %s %s\n' "$(date -u +%T)" "$*"; }

# run_stage NAME: in its own process group (set -m), make NAME, then the CPU
# time of everything it waited for (bash's times: the children's line).
run_stage() {
	local n=$1
	(
		$MAKE --no-print-directory "$n" </dev/null >"$LOGS/$n.log" 2>&1
		rc=$?
		times >"$LOGS/$n.cpu"
		exit $rc
	) &
	pid_of[$n]=$!
	state[$n]=running
	start_s[$n]=$(now)
	say "start $n"
}

# cpu_of NAME: "1m2.5s 0m3.1s" -> 65.6
cpu_of() {
	[ -s "$LOGS/$1.cpu" ] || { echo "?"; return; }
	sed -n 2p "$LOGS/$1.cpu" | tr 'ms' '  ' | awk '{ printf "%.0f", $1 * 60 + $2 + $3 * 60 + $4 }'
}

finish_stage() {
	local n=$1 rc=$2
	wall[$n]=$(secs "${start_s[$n]}" "$(now)")
	cpu[$n]=$(cpu_of "$n")
	rcs[$n]=$rc
	if [ "$rc" -eq 0 ]; then state[$n]=passed; else state[$n]=FAILED; fi
	echo "==================== $n: ${state[$n]} (rc $rc, ${wall[$n]} s, cpu ${cpu[$n]} s) ===================="
	cat "$LOGS/$n.log"
	echo "==================== end of $n ===================="
}

table() {
	local total n st failed=0
	total=$(secs "$T0" "$(now)")
	echo
	echo "make test stages (wall = seconds from the stage's start to its end; cpu = user+sys of its processes)"
	printf '  %-28s %7s %7s  %s\n' stage wall cpu result
	for n in "${names[@]}"; do
		st=${state[$n]}
		case $st in
		passed) ;;
		FAILED) st="FAILED (rc ${rcs[$n]}; log $LOGS/$n.log)"; failed=1 ;;
		running) st="INTERRUPTED"; failed=1; wall[$n]=$(secs "${start_s[$n]}" "$(now)") ;;
		*) st="NOT RUN ($st)"; failed=1 ;;
		esac
		printf '  %-28s %7s %7s  %s\n' "$n" "${wall[$n]:--}" "${cpu[$n]:--}" "$st"
	done
	local sum=0
	for n in "${names[@]}"; do [[ ${cpu[$n]:-} =~ ^[0-9]+$ ]] && sum=$((sum + cpu[$n])); done
	printf '  %-28s %7s %7s  %s\n' total "$total" "$sum" "$([ $failed = 0 ] && echo passed || echo FAILED)"
	return $failed
}

interrupted() {
	trap - INT TERM
	say "interrupted: stopping the running stages"
	for n in "${names[@]}"; do
		[ "${state[$n]}" = running ] && kill -TERM -- "-${pid_of[$n]}" 2>/dev/null
	done
	wait 2>/dev/null
	table
	exit 130
}
trap interrupted INT TERM
set -m

while :; do
	running=0 waiting=0
	for n in "${names[@]}"; do
		case ${state[$n]} in running) running=$((running + 1)) ;; waiting) waiting=$((waiting + 1)) ;; esac
	done
	# Start what can start, in list order.
	for i in "${!names[@]}"; do
		n=${names[$i]}
		[ "${state[$n]}" = waiting ] || continue
		[ "$running" -lt "$JOBS" ] || break
		ready=1
		for d in ${needs[$i]}; do
			case ${state[$d]:-} in
			passed) ;;
			"") ;; # not in this run: taken as done
			FAILED | "needs "*) state[$n]="needs $d"; ready=0; break ;;
			*) ready=0 ;;
			esac
		done
		[ "${state[$n]}" = waiting ] && [ $ready = 1 ] && { run_stage "$n"; running=$((running + 1)); }
	done
	[ "$running" -eq 0 ] && break
	# Wait for a stage to end.
	ended=""
	wait -n -p ended
	rc=$?
	for n in "${names[@]}"; do
		[ "${state[$n]}" = running ] && [ "${pid_of[$n]}" = "$ended" ] && finish_stage "$n" "$rc"
	done
done
table
