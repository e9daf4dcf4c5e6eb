#!/usr/bin/env bash
# Installs the external clients the integration tests drive (kcat, confluent-kafka
# and kafka-python for the system python3), and iproute2 and iptables for the
# cluster suite's network namespaces (make test-cluster), only when they are missing.
# Tolerant: without root (and without passwordless sudo) it warns and exits 0;
# the tests then skip locally, and fail when CI is set.
set -euo pipefail

PY=/usr/bin/python3
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
if ! [ -x "$PY" ] || ! "$PY" -c 'import confluent_kafka' >/dev/null 2>&1; then
	missing+=(python3-confluent-kafka)
fi
if ! [ -x "$PY" ] || ! "$PY" -c 'import kafka' >/dev/null 2>&1; then
	missing+=(python3-kafka)
fi

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: kcat, python3-confluent-kafka, python3-kafka, iproute2, iptables present"
	exit 0
fi

echo "deps: missing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
		sudo_cmd=(sudo -n)
	else
		echo "deps: not root and no passwordless sudo; not installing (tests needing them skip, or fail under CI)" >&2
		exit 0
	fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: no apt-get on this machine; install ${missing[*]} by hand" >&2
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -q; then
	echo "deps: apt-get update failed" >&2
	exit 0
fi
if ! "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
	echo "deps: apt-get install ${missing[*]} failed" >&2
	exit 0
fi
