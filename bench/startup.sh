#!/bin/sh
# startup.sh LOOM [ARG ...] measures start-up to ready: it starts
# "LOOM api --port 0 [ARG ...]" in a new temporary directory (so the default
# SQLite session database is created as on a first run), waits for the
# address the server prints, checks that it answers GET /version, then stops
# the server. It prints the milliseconds from the server's start to its
# address ("ready N ms", GNU date; the reading of the clock adds about a
# millisecond). Time the whole script too, for example
#
#	go build -o /tmp/loom ./cmd/loom
#	/usr/bin/time -f '%e s %M KiB' bench/startup.sh /tmp/loom
set -eu
loom=$(command -v "${1:?usage: startup.sh LOOM [ARG ...]}")
shift
dir=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
trap cleanup EXIT
mkfifo "$dir/stderr"
start=$(date +%s%N)
(cd "$dir" && exec "$loom" api --port 0 "$@" 2>"$dir/stderr") &
pid=$!
url=
while IFS= read -r line; do
	case $line in
	*"API at "*)
		url=${line##*API at }
		ready=$(date +%s%N)
		break
		;;
	esac
done <"$dir/stderr"
if [ -z "$url" ]; then
	echo "startup.sh: the server printed no address" >&2
	exit 1
fi
curl -fsS -o /dev/null "$url/version"
echo "ready $(((ready - start) / 1000000)) ms"
