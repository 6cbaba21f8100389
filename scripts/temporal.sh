#!/usr/bin/env bash
# temporal.sh starts a Temporal development server for Loom's tests and
# prints its host:port.
#
# The server is the temporal command built from its Go module through the Go
# module proxy (go install), once, into a cache directory (LOOM_TEMPORAL_CACHE,
# default $HOME/.cache/loom-temporal); later runs build nothing. It runs in
# memory, in the background, on 127.0.0.1 (port LOOM_TEMPORAL_PORT, default
# 7233); a server already answering there is reused. The script returns once
# the server's default namespace answers. Needs go.
#
#   LOOM_TEMPORAL_ADDR=$(scripts/temporal.sh); export LOOM_TEMPORAL_ADDR
set -euo pipefail

version=v1.5.1
cache=${LOOM_TEMPORAL_CACHE:-${HOME:-/tmp}/.cache/loom-temporal}
bin=$cache/$version/temporal
port=${LOOM_TEMPORAL_PORT:-7233}
addr=127.0.0.1:$port

if [ ! -x "$bin" ]; then
	echo "temporal.sh: building the temporal command $version into $cache (a few minutes, once)" >&2
	mkdir -p "$cache/$version"
	start=$(date +%s)
	(cd "$cache" && GOBIN="$cache/$version" GOFLAGS= nice -n 10 go install "github.com/temporalio/cli/cmd/temporal@$version") >&2
	echo "temporal.sh: built in $(($(date +%s) - start))s" >&2
fi

ready() {
	"$bin" operator namespace describe --address "$addr" --namespace default >/dev/null 2>&1
}

if ! ready; then
	log=$cache/server-$port.log
	echo "temporal.sh: starting a development server on $addr (log: $log)" >&2
	nohup "$bin" server start-dev --headless --ip 127.0.0.1 --port "$port" \
		--http-port $((port + 10)) --metrics-port $((port + 20)) \
		--log-level warn >"$log" 2>&1 </dev/null &
	for _ in $(seq 1 150); do
		if ready; then
			break
		fi
		sleep 0.2
	done
	if ! ready; then
		echo "temporal.sh: the server did not answer on $addr; its log:" >&2
		tail -n 40 "$log" >&2
		exit 1
	fi
fi
echo "$addr"
