#!/usr/bin/env bash
# compare-readme.sh — regenerate the measured table of backends side by
# side in docs/benchmarks.md (what `make compare-readme` runs).
#
# Starts the test servers (and stops them on exit unless all were already
# running), builds cmd/elect, runs one full `elect compare --markdown` over
# the four test backends (Redis, etcd, ZooKeeper, Kubernetes Leases) and replaces the block between the markers
# <!-- elect compare: begin --> and <!-- elect compare: end --> in
# docs/benchmarks.md with the command, one Measured line (date, cores, load
# average before and after, commit) and the table.
# Extra flags for elect compare may be given in COMPAREFLAGS (e.g.
# COMPAREFLAGS=--short to try the script quickly; do not commit that table).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/workspace.sh
SERVERS=$ROOT/scripts/servers.sh
DOC=$ROOT/docs/benchmarks.md
BEGIN='<!-- elect compare: begin -->'
END='<!-- elect compare: end -->'
grep -qxF "$BEGIN" "$DOC" && grep -qxF "$END" "$DOC" || {
	echo "compare-readme.sh: docs/benchmarks.md lacks the lines $BEGIN and $END" >&2
	exit 1
}

bin=$(mktemp -d)
stop=false
if [[ $("$SERVERS" env | grep -c -E 'ELECTOR_(REDIS_ADDRS|ETCD_ENDPOINTS|ZK_SERVERS|KUBE_URL)=') -ne 4 ]]; then
	stop=true
fi
cleanup() {
	rm -rf "$bin"
	if $stop; then "$SERVERS" stop all; fi
}
trap cleanup EXIT
"$SERVERS" start all
eval "$("$SERVERS" env)"

(cd cmd/elect && go build -o "$bin/elect" .) # elect is a module of its own

# The same URLs as the tests use: a key prefix of the test namespace, and
# for Redis a request timeout of 1s instead of 100ms, as a loaded test machine
# needs (shown in the command pasted above the table).
redis="redis://$ELECTOR_REDIS_ADDRS?prefix=elect-test:&request_timeout=1s"
etcd="etcd://$ELECTOR_ETCD_ENDPOINTS?prefix=/elect-test/"
zk="zk://$ELECTOR_ZK_SERVERS?prefix=/elect-test"
# Leases in the test namespace of the test kube-apiserver; elector_only lifts
# the 3 s floor that sharing a Lease with client-go needs (compare runs a 2 s TTL).
# The client keeps the opener's default rate limit (qps 50), which bounds the
# elections the renew workload holds on it; the table says how many.
kube="$ELECTOR_KUBE_URL&elector_only=true"
# shellcheck disable=SC2086 # COMPAREFLAGS is a word list
args=(compare --markdown ${COMPAREFLAGS:-} --backend "$redis" --backend "$etcd" --backend "$zk" --backend "$kube")

load() { cut -d' ' -f1-3 /proc/loadavg; }
before=$(load)
table=$("$bin/elect" "${args[@]}")
after=$(load)

commit=$(git rev-parse --short HEAD)
if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
	commit="$commit plus uncommitted changes"
fi
block=$(mktemp)
{
	echo "$BEGIN"
	echo
	echo "The run below is \`elect\` with these arguments (servers on loopback, \`scripts/servers.sh\`):"
	echo
	echo '```'
	shown=$(printf " '%s'" "${args[@]}")
	# The servers' addresses and the kube URL's host and files depend on
	# the machine (ELECTOR_STATE_DIR, ELECTOR_PORT_OFFSET): names instead.
	shown=${shown//"$ELECTOR_KUBE_URL"/KUBE_URL}
	shown=${shown//"$ELECTOR_REDIS_ADDRS"/REDIS_ADDRS}
	shown=${shown//"$ELECTOR_ETCD_ENDPOINTS"/ETCD_ENDPOINTS}
	shown=${shown//"$ELECTOR_ZK_SERVERS"/ZK_SERVERS}
	echo "elect$shown"
	echo '```'
	echo
	echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores, load average $before before and $after after (1, 5, 15 min), commit $commit, with \`make compare-readme\`:"
	echo
	echo "$table"
	echo
	echo "$END"
} >"$block"
awk -v begin="$BEGIN" -v end="$END" -v file="$block" '
	$0 == begin { while ((getline line < file) > 0) print line; skip = 1; next }
	$0 == end { skip = 0; next }
	!skip { print }
' "$DOC" >"$DOC.tmp"
mv "$DOC.tmp" "$DOC"
rm -f "$block"
echo "compare-readme.sh: docs/benchmarks.md updated" >&2
