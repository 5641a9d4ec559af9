#!/usr/bin/env bash
# compare-readme.sh — regenerate README.md's measured which-backend table
# (what `make compare-readme` runs).
#
# Starts the test servers (and stops them on exit unless all were already
# running), builds cmd/elect, runs one full `elect compare --markdown` over
# the three test backends and replaces the block between the markers
# <!-- elect compare: begin --> and <!-- elect compare: end --> in README.md
# with the command, the load average before and after, and the table.
# Extra flags for elect compare may be given in COMPAREFLAGS (e.g.
# COMPAREFLAGS=--short to try the script quickly; do not commit that table).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SERVERS=$ROOT/scripts/servers.sh
README=$ROOT/README.md
BEGIN='<!-- elect compare: begin -->'
END='<!-- elect compare: end -->'
grep -qxF "$BEGIN" "$README" && grep -qxF "$END" "$README" || {
	echo "compare-readme.sh: README.md lacks the lines $BEGIN and $END" >&2
	exit 1
}

bin=$(mktemp -d)
stop=false
if [[ $("$SERVERS" env | grep -c -E 'ELECTOR_(REDIS_ADDRS|ETCD_ENDPOINTS|ZK_SERVERS)=') -ne 3 ]]; then
	stop=true
fi
cleanup() {
	rm -rf "$bin"
	if $stop; then "$SERVERS" stop all; fi
}
trap cleanup EXIT
"$SERVERS" start all
eval "$("$SERVERS" env)"

go build -o "$bin/elect" ./cmd/elect

# The same URLs as the tests use: a key prefix of the test namespace, and
# for Redis a node timeout of 1s instead of 100ms, as a loaded test machine
# needs (shown in the command pasted above the table).
redis="redis://$ELECTOR_REDIS_ADDRS?prefix=elect-test:&node_timeout=1s"
etcd="etcd://$ELECTOR_ETCD_ENDPOINTS?prefix=/elect-test/"
zk="zk://$ELECTOR_ZK_SERVERS/elect-test"
# shellcheck disable=SC2086 # COMPAREFLAGS is a word list
args=(compare --markdown ${COMPAREFLAGS:-} --backend "$redis" --backend "$etcd" --backend "$zk")

load() { cut -d' ' -f1-3 /proc/loadavg; }
before=$(load)
table=$("$bin/elect" "${args[@]}")
after=$(load)

block=$(mktemp)
{
	echo "$BEGIN"
	echo
	echo "Measured with \`make compare-readme\` on $(date -u +%Y-%m-%d), $(nproc) cores, load average"
	echo "$before before and $after after (1, 5, 15 min); servers on loopback (scripts/servers.sh):"
	echo
	echo '```'
	printf 'elect'
	printf " '%s'" "${args[@]}" | sed "s|$ELECTOR_REDIS_ADDRS|REDIS_ADDRS|; s|$ELECTOR_ETCD_ENDPOINTS|ETCD_ENDPOINTS|; s|$ELECTOR_ZK_SERVERS|ZK_SERVERS|"
	echo
	echo '```'
	echo
	echo "$table"
	echo
	echo "$END"
} >"$block"
awk -v begin="$BEGIN" -v end="$END" -v file="$block" '
	$0 == begin { while ((getline line < file) > 0) print line; skip = 1; next }
	$0 == end { skip = 0; next }
	!skip { print }
' "$README" >"$README.tmp"
mv "$README.tmp" "$README"
rm -f "$block"
echo "compare-readme.sh: README.md updated" >&2
