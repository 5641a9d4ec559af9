#!/usr/bin/env bash
# chaos.sh — the long chaos campaign (what `make chaos` runs).
#
# Usage: scripts/chaos.sh [-seed N[,N...]]
#        SEEDS="424242 1 2 3 4" scripts/chaos.sh    (or: make chaos SEEDS="...")
#
# Starts the test servers with scripts/servers.sh (and stops them on exit,
# unless they were all running already), then runs
# integration_test/chaos.TestChaos with -chaos.long: for each campaign
# (redlock with AOF, redlock without, etcd, zookeeper, zookeeper-stock,
# kube: Leases on the kube-apiserver, TTL 3 s) three candidate processes, a fencing store and a seeded nemesis, until the
# campaign has at least 300 terms and 100 faults. zookeeper runs on
# ensemble 1-3 (tickTime 100 ms, syncLimit 5; TTL 2 s), zookeeper-stock on
# ensemble 5-7 with ZooKeeper's stock timing (tickTime 2 s, syncLimit 5; TTL
# 32 s, the driver refusing less than 30.25 s there), which takes some two
# hours; both draw pause-store-leader (the ensemble's leader stopped for
# less than syncLimit × tickTime) among their faults. The seed is printed; pass it back with
# -seed to replay the same fault schedule (timings still differ run to run).
# Several seeds (comma- or space-separated, in -seed or in SEEDS) run one
# after the other on the same servers, each with its own report directory
# ($CHAOS_OUT/seed-N); every seed's table is printed again at the end, and the
# script fails if any seed failed.
#
# The nemesis kills, pauses and restarts the servers' nodes: do not run
# anything else against the same servers meanwhile (use another
# ELECTOR_STATE_DIR in a network namespace of its own to keep them apart).
#
# Environment:
#   CHAOS_OUT        report directory (default /tmp/elector-chaos-report):
#                    report.txt, report.json, <campaign>.svg timelines,
#                    <campaign>-history.jsonl, candidates' stderr
#   CHAOS_CAMPAIGNS  comma-separated subset of redlock-aof,redlock-noaof,etcd,zookeeper,
#                    zookeeper-stock,kube (Leases on the kube-apiserver: the
#                    nemesis also kills and pauses it and the etcd members under it);
#                    a suffix -restarts or -concurrent picks a fault mode
#                    (redlock-noaof-restarts, etcd-concurrent, ...), -partitions
#                    the partition mode (etcd-partitions: 5 members, 64
#                    partitions), -priority preferred leaders (etcd-priority:
#                    4 candidates of priorities 1-3); migrate-<old>-<new> a rolling migration
#                    (migrate-redis-etcd, migrate-redis-zookeeper)
#   CHAOS_FAULTS, CHAOS_TERMS   minimum faults and terms per campaign (100, 300)
#   CHAOS_FLAGS      extra `go test` flags, e.g. -race
#   CHAOS_TIMEOUT    go test -timeout per seed (default 240m)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVERS=$ROOT/scripts/servers.sh
"$ROOT/scripts/workspace.sh"
seeds=${SEEDS:-}
while (($#)); do
	case $1 in
	-seed | --seed)
		seeds=${2:?-seed needs a value}
		shift 2
		;;
	-seed=* | --seed=*)
		seeds=${1#*=}
		shift
		;;
	*)
		echo "chaos.sh: unknown argument '$1'; usage: scripts/chaos.sh [-seed N[,N...]]" >&2
		exit 2
		;;
	esac
done
read -r -a seeds <<<"${seeds//,/ }"
((${#seeds[@]})) || seeds=(0)
for i in "${!seeds[@]}"; do
	[[ ${seeds[i]} =~ ^[0-9]+$ ]] || {
		echo "chaos.sh: -seed must be non-negative integers, got '${seeds[i]}'" >&2
		exit 2
	}
	if ((seeds[i] == 0)); then seeds[i]=$(((RANDOM << 30 | RANDOM << 15 | RANDOM) + 1)); fi
done
OUT=${CHAOS_OUT:-/tmp/elector-chaos-report}
echo "chaos.sh: seeds ${seeds[*]} (rerun one: scripts/chaos.sh -seed N); report in $OUT" >&2

if [[ $("$SERVERS" env | grep -c -E 'ELECTOR_(REDIS_ADDRS|ETCD_ENDPOINTS|ZK_SERVERS)=') -eq 3 ]]; then
	echo "chaos.sh: servers already running; leaving them up" >&2
else
	trap '"$SERVERS" stop all' EXIT
fi
"$SERVERS" start all
eval "$("$SERVERS" env)"

# run_seed SEED DIR runs the campaigns with one seed, reporting into DIR.
run_seed() {
	local seed=$1 dir=$2 status=0
	mkdir -p "$dir"
	echo "chaos.sh: seed $seed (load average: $(cut -d' ' -f1-3 /proc/loadavg)); report in $dir" >&2
	# shellcheck disable=SC2086 # CHAOS_FLAGS is a word list
	(cd "$ROOT/integration_test" && go test -count=1 -timeout "${CHAOS_TIMEOUT:-240m}" -v ${CHAOS_FLAGS:-} ./chaos -run '^TestChaos$' \
		-chaos.long -chaos.seed "$seed" -chaos.out "$dir" \
		-chaos.campaigns "${CHAOS_CAMPAIGNS:-redlock-aof,redlock-noaof,etcd,zookeeper,zookeeper-stock,kube}" \
		-chaos.faults "${CHAOS_FAULTS:-0}" -chaos.terms "${CHAOS_TERMS:-0}") 2>&1 | tee "$dir/chaos.log" || status=$?
	echo "chaos.sh: seed $seed done (exit $status, load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	return "$status"
}

status=0
if ((${#seeds[@]} == 1)); then
	run_seed "${seeds[0]}" "$OUT" || status=$?
	echo "chaos.sh: report: $OUT/report.txt, $OUT/report.json, timelines $OUT/*.svg (seed ${seeds[0]})" >&2
	exit "$status"
fi
failed=()
for seed in "${seeds[@]}"; do
	run_seed "$seed" "$OUT/seed-$seed" || failed+=("$seed")
done
for seed in "${seeds[@]}"; do
	printf '\n== seed %s (%s)\n' "$seed" "$OUT/seed-$seed"
	cat "$OUT/seed-$seed/report.txt" 2>/dev/null || echo "(no report)"
done
if ((${#failed[@]})); then
	echo "chaos.sh: seeds that failed: ${failed[*]}" >&2
	exit 1
fi
echo "chaos.sh: all ${#seeds[@]} seeds passed" >&2
