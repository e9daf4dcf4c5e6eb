#!/usr/bin/env bash
# kcat (librdkafka) smoke: metadata, produce plain / idempotent / each codec,
# consume back, group consume with commit, transactional produce.
# Usage: kcat.sh HOST:PORT. Prints one "PASS name", "FAIL name: why" or
# "SKIP name: why" line per check; exits 1 when any check failed.
set -uo pipefail
B=${1:?usage: kcat.sh HOST:PORT}
RUN=${RUN_ID:-$$}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
K=(kcat -b "$B" -X socket.timeout.ms=10000 -m 20)

if ! command -v kcat >/dev/null; then
	echo "SKIP kcat: kcat not installed"
	exit 0
fi

# admin: metadata lists the broker as node 1.
if out=$("${K[@]}" -L -J 2>&1) && grep -q '"id":1' <<<"$out"; then pass metadata; else fail metadata "$out"; fi

# produce N lines with the given producer options, read them back with -e.
produce_consume() { # name topic n opts...
	local name=$1 topic=$2 n=$3
	shift 3
	if ! seq 1 "$n" | "${K[@]}" -P -t "$topic" "$@" 2>/tmp/kcat.$$.err; then
		fail "$name" "produce: $(tail -3 /tmp/kcat.$$.err)"
		return
	fi
	local got
	got=$("${K[@]}" -C -t "$topic" -o beginning -e -q -f '%s\n' 2>/tmp/kcat.$$.err | sort -n)
	local want
	want=$(seq 1 "$n")
	if [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "read $(wc -l <<<"$got") of $n records: $(tail -3 /tmp/kcat.$$.err)"; fi
}

produce_consume produce-plain "kcat-plain-$RUN" 500
produce_consume produce-idempotent "kcat-idem-$RUN" 500 -X enable.idempotence=true
for c in gzip snappy lz4 zstd; do
	produce_consume "produce-$c" "kcat-$c-$RUN" 500 -X compression.codec=$c -X enable.idempotence=true
done
produce_consume produce-transactional "kcat-txn-$RUN" 200 -X transactional.id="kcat-txn-$RUN"

# group consume with commit: a high-level (-G) consumer reads the topic and
# commits; a second run of the same group finds nothing new.
T="kcat-group-$RUN"
G="kcat-g-$RUN"
seq 1 300 | "${K[@]}" -P -t "$T" 2>/dev/null
n1=$(timeout 60 "${K[@]}" -G "$G" -X auto.offset.reset=earliest -X enable.auto.commit=true -X auto.commit.interval.ms=100 -e -q -f '%s\n' "$T" 2>/dev/null | wc -l)
seq 301 310 | "${K[@]}" -P -t "$T" 2>/dev/null
n2=$(timeout 60 "${K[@]}" -G "$G" -X auto.offset.reset=earliest -e -q -f '%s\n' "$T" 2>/dev/null | wc -l)
if [ "$n1" -eq 300 ] && [ "$n2" -eq 10 ]; then pass group-commit; else fail group-commit "first run read $n1 (want 300), second $n2 (want 10)"; fi

rm -f /tmp/kcat.$$.err
[ "$fails" -eq 0 ]
