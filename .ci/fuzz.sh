#!/usr/bin/env bash
# Runs every Fuzz target in the module for FUZZTIME (default 30s) each.
# Targets are discovered with `go test -list '^Fuzz' ./...`, which prints a
# package's target names followed by an "ok <package>" line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME="${FUZZTIME:-30s}"

names=()
targets=()
while IFS= read -r line; do
	case "$line" in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg=$(awk '{print $2}' <<<"$line")
		for n in "${names[@]}"; do targets+=("$pkg $n"); done
		names=()
		;;
	*) names=() ;;
	esac
done < <(go test -list '^Fuzz' ./...)

if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no Fuzz targets found"
	exit 0
fi
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $pkg $name for $FUZZTIME"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"
done
