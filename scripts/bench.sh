#!/usr/bin/env bash
# bench.sh — the integration_test benchmarks against real servers (what `make bench` runs).
#
# Environment: BENCHTIME (default 2s), BENCH (the -bench pattern, default .),
# BENCHFLAGS (extra go test flags, e.g. '-count 5 -cpu 1,2').
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/workspace.sh
SERVERS=$ROOT/scripts/servers.sh

if [[ -z $(find integration_test -name '*.go' -print -quit 2>/dev/null) ]]; then
	echo "bench.sh: integration_test has no Go files yet: no benchmarks to run" >&2
	exit 0
fi
if [[ $("$SERVERS" env | grep -c -E 'ELECTOR_(REDIS_ADDRS|ETCD_ENDPOINTS|ZK_SERVERS)=') -ne 3 ]]; then
	trap '"$SERVERS" stop all' EXIT
fi
"$SERVERS" start all
eval "$("$SERVERS" env)"
cd integration_test
# shellcheck disable=SC2086 # BENCHFLAGS is a word list
go test -run '^$' -bench "${BENCH:-.}" -benchtime "${BENCHTIME:-2s}" -benchmem -p 1 -timeout 60m ${BENCHFLAGS:-} ./...
