#!/bin/sh
# Keeps every core busy with plain busy loops, at normal priority, until it is stopped (Ctrl-C,
# SIGTERM, SIGHUP): the load a test suite whose verdicts do not depend on how fast the machine
# is must pass beside. Its loops go when it does.
#
# Usage: hack/hog.sh [LOOPS]    (default: one loop per core, as nproc counts them)
#   hack/hog.sh & hog=$!; make test; kill $hog
set -eu

loops=${1:-$(nproc)}
case $loops in
'' | *[!0-9]*) echo "hog: LOOPS must be a number, got '$loops'" >&2; exit 2 ;;
esac

pids=
stop() {
	trap - INT TERM HUP EXIT
	# shellcheck disable=SC2086 # one pid a word
	[ -z "$pids" ] || kill $pids 2>/dev/null || true
	wait 2>/dev/null || true
	exit 0
}
trap stop INT TERM HUP EXIT

i=0
while [ "$i" -lt "$loops" ]; do
	# A subshell starts with the default signal handlers: each loop dies of its own signal.
	(while :; do :; done) &
	pids="$pids $!"
	i=$((i + 1))
done
echo "hog: $loops busy loops (pids$pids) at normal priority; stop with Ctrl-C or kill $$" >&2
wait
