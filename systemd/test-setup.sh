#!/usr/bin/env bash
# Installs what systemd/systemd_test.go needs: systemd-analyze (Debian's
# systemd package). Idempotent; needs root (or passwordless sudo) and apt-get.
set -euo pipefail
if command -v systemd-analyze >/dev/null 2>&1; then
	echo "systemd-analyze present"
	exit 0
fi
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
		sudo_cmd=(sudo -n)
	else
		echo "test-setup: not root and no passwordless sudo; install the systemd package by hand" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends systemd
command -v systemd-analyze >/dev/null
