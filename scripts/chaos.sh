#!/usr/bin/env bash
# chaos.sh — the long chaos campaign (what `make chaos` runs).
#
# Usage: scripts/chaos.sh [-seed N]
#
# Starts the test servers with scripts/servers.sh (and stops them on exit,
# unless they were all running already), then runs
# integration_test/chaos.TestChaos with -chaos.long: for each campaign
# (redlock with AOF, redlock without, etcd, zookeeper) three candidate
# processes, a fencing store and a seeded nemesis, until the campaign has at
# least 300 terms and 100 faults. The seed is printed; pass it back with
# -seed to replay the same fault schedule (timings still differ run to run).
#
# The nemesis kills, pauses and restarts the servers' nodes: do not run
# anything else against the same servers meanwhile (use another
# ELECTOR_STATE_DIR in a network namespace of its own to keep them apart).
#
# Environment:
#   CHAOS_OUT        report directory (default /tmp/elector-chaos-report):
#                    report.txt, report.json, <campaign>.svg timelines,
#                    <campaign>-history.jsonl, candidates' stderr
#   CHAOS_CAMPAIGNS  comma-separated subset of redlock-aof,redlock-noaof,etcd,zookeeper
#   CHAOS_FAULTS, CHAOS_TERMS   minimum faults and terms per campaign (100, 300)
#   CHAOS_FLAGS      extra `go test` flags, e.g. -race
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVERS=$ROOT/scripts/servers.sh
seed=0
while (($#)); do
	case $1 in
	-seed | --seed)
		seed=${2:?-seed needs a value}
		shift 2
		;;
	-seed=* | --seed=*)
		seed=${1#*=}
		shift
		;;
	*)
		echo "chaos.sh: unknown argument '$1'; usage: scripts/chaos.sh [-seed N]" >&2
		exit 2
		;;
	esac
done
[[ $seed =~ ^[0-9]+$ ]] || {
	echo "chaos.sh: -seed must be a non-negative integer, got '$seed'" >&2
	exit 2
}
if ((seed == 0)); then seed=$(((RANDOM << 30 | RANDOM << 15 | RANDOM) + 1)); fi
OUT=${CHAOS_OUT:-/tmp/elector-chaos-report}
echo "chaos.sh: seed $seed (rerun: scripts/chaos.sh -seed $seed); report in $OUT" >&2

if [[ $("$SERVERS" env | grep -c -E 'ELECTOR_(REDIS_ADDRS|ETCD_ENDPOINTS|ZK_SERVERS)=') -eq 3 ]]; then
	echo "chaos.sh: servers already running; leaving them up" >&2
else
	trap '"$SERVERS" stop all' EXIT
fi
"$SERVERS" start all
eval "$("$SERVERS" env)"

mkdir -p "$OUT"
cd "$ROOT/integration_test"
status=0
# shellcheck disable=SC2086 # CHAOS_FLAGS is a word list
go test -count=1 -timeout 120m -v ${CHAOS_FLAGS:-} ./chaos -run '^TestChaos$' \
	-chaos.long -chaos.seed "$seed" -chaos.out "$OUT" \
	-chaos.campaigns "${CHAOS_CAMPAIGNS:-redlock-aof,redlock-noaof,etcd,zookeeper}" \
	-chaos.faults "${CHAOS_FAULTS:-0}" -chaos.terms "${CHAOS_TERMS:-0}" 2>&1 | tee "$OUT/chaos.log" || status=$?
echo "chaos.sh: report: $OUT/report.txt, $OUT/report.json, timelines $OUT/*.svg (seed $seed)" >&2
exit "$status"
