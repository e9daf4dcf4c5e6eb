#!/usr/bin/env bash
# What `make compat` needs beyond .ci/deps.sh: the codecs kafka-python uses
# for snappy, lz4 and zstd (Debian packages). Tolerant as .ci/deps.sh is:
# without root or apt-get it warns, and those smoke checks fail.
set -euo pipefail
"$(dirname "${BASH_SOURCE[0]}")/../../.ci/deps.sh"
PY=/usr/bin/python3
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
