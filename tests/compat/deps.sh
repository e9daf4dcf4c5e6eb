#!/usr/bin/env bash
# What `make compat` needs beyond .ci/deps.sh: the codecs kafka-python uses
# for snappy, lz4 and zstd (Debian packages), and kafkajs (npm ci from
# tests/compat/smoke/kafkajs/package-lock.json into $COMPAT_NPM_DIR, outside
# the repository; a no-op when that lock file is installed there already).
# Tolerant as .ci/deps.sh is: without root, apt-get, npm or the network it
# warns, and those smoke checks fail or skip.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$HERE/../../.ci/deps.sh"
PY=/usr/bin/python3

# kafkajs: run.sh passes NODE_PATH=$COMPAT_NPM_DIR/node_modules to the smoke.
# installed.lock.json is the lock file of the last npm ci there that finished.
NPM_DIR=${COMPAT_NPM_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/ringbroker-compat/kafkajs}
LOCK=$HERE/smoke/kafkajs/package-lock.json
if [ -f "$NPM_DIR/node_modules/kafkajs/package.json" ] && cmp -s "$LOCK" "$NPM_DIR/installed.lock.json"; then
	echo "compat deps: kafkajs present in $NPM_DIR"
elif ! command -v npm >/dev/null 2>&1; then
	echo "compat deps: no npm; kafkajs not installed (its smoke check skips)" >&2
elif mkdir -p "$NPM_DIR" && rm -f "$NPM_DIR/installed.lock.json" &&
	cp "$HERE/smoke/kafkajs/package.json" "$LOCK" "$NPM_DIR/" &&
	(cd "$NPM_DIR" && timeout -k 5 120 npm ci --omit=dev --no-audit --no-fund --prefer-offline --loglevel=error \
		--fetch-retries=1 --fetch-retry-mintimeout=1000 --fetch-retry-maxtimeout=3000 --fetch-timeout=30000); then
	cp "$LOCK" "$NPM_DIR/installed.lock.json"
	echo "compat deps: kafkajs installed in $NPM_DIR"
else
	echo "compat deps: npm ci of kafkajs into $NPM_DIR failed; its smoke check skips" >&2
fi

missing=()
for m in snappy:python3-snappy lz4:python3-lz4 zstandard:python3-zstandard; do
	"$PY" -c "import ${m%%:*}" >/dev/null 2>&1 || missing+=("${m#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "compat deps: missing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
		sudo_cmd=(sudo -n)
	else
		echo "compat deps: not root; not installing" >&2
		exit 0
	fi
fi
command -v apt-get >/dev/null 2>&1 || { echo "compat deps: no apt-get; install ${missing[*]} by hand" >&2; exit 0; }
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" ||
	{ "${sudo_cmd[@]}" apt-get update -q && "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; } ||
	echo "compat deps: apt-get install ${missing[*]} failed" >&2
