#!/usr/bin/env bash
# chromium.sh makes sure Debian's Chromium is installed and prints its path.
#
# The dev UI end-to-end test (cli/ui_e2e_test.go) drives it headless. The
# install uses apt and needs root; when Chromium is already there (or
# LOOM_CHROMIUM names an executable) nothing is installed.
#
#   LOOM_CHROMIUM=$(scripts/chromium.sh)
set -euo pipefail

if [ -n "${LOOM_CHROMIUM:-}" ] && [ -x "$LOOM_CHROMIUM" ]; then
	echo "$LOOM_CHROMIUM"
	exit 0
fi

find_chromium() {
	for p in /usr/bin/chromium /usr/bin/chromium-browser; do
		if [ -x "$p" ]; then
			echo "$p"
			return 0
		fi
	done
	command -v chromium 2>/dev/null || return 1
}

if path=$(find_chromium); then
	echo "$path"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "chromium.sh: Chromium is not installed and installing it needs root (apt-get install chromium)" >&2
	exit 1
fi
echo "chromium.sh: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium >&2

if path=$(find_chromium); then
	echo "$path"
	exit 0
fi
echo "chromium.sh: chromium was installed but not found on PATH" >&2
exit 1
