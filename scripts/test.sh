#!/usr/bin/env bash
# test.sh — the whole test suite against real servers (what `make test` and CI run).
#
# Starts every test server with scripts/servers.sh (and stops them on exit,
# even on failure, unless they were all already running), then runs go vet and
# go test -race in each module: the root module, integration_test,
# examples and kube (a module with no .go file yet is skipped). Exits non-zero if
# anything failed; every module is tested even after a failure.
#
# Environment:
#   TESTFLAGS   extra `go test` flags, e.g. TESTFLAGS='-run Redis -v'
#   TESTPKGS    packages to test in each module (default ./...)
#   TESTP       test binaries run at once (default 1; see below)
#
# Packages share the servers and some tests inject faults into them (kill,
# pause, restart a node), so by default one package's tests run at a time:
# a fault injected by one package never lands in another's test. The test
# binaries are compiled first with full parallelism.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SERVERS=$ROOT/scripts/servers.sh
MODULES=(. cmd/elect integration_test examples kube)

# Leave servers alone that were all up before we came (a developer's `make
# servers`); otherwise stop them whatever happens.
if [[ $("$SERVERS" env | grep -c -E 'ELECTOR_(REDIS_ADDRS|ETCD_ENDPOINTS|ZK_SERVERS|KUBE_URL)=') -eq 4 ]]; then
	echo "test.sh: servers already running; leaving them up" >&2
else
	trap '"$SERVERS" stop all' EXIT
fi
"$SERVERS" start all
eval "$("$SERVERS" env)"

has_go_files() { [[ -n $(find "$1" -name '*.go' -print -quit) ]]; }

failed=()
for mod in "${MODULES[@]}"; do
	if [[ ! -f $mod/go.mod ]] || ! has_go_files "$mod"; then
		echo "test.sh: skipping module $mod: no Go files yet" >&2
		continue
	fi
	echo "=== module $mod: go vet" >&2
	(cd "$mod" && go vet ./...) || failed+=("$mod (vet)")
	echo "=== module $mod: go test" >&2
	# shellcheck disable=SC2086 # TESTFLAGS and TESTPKGS are word lists
	(
		cd "$mod"
		bin=$(mktemp -d)
		go test -race -c -o "$bin/" ${TESTPKGS:-./...} >/dev/null 2>&1 || true # warm the build cache
		rm -rf "$bin"
		go test -race -count=1 -timeout 30m -p "${TESTP:-1}" ${TESTFLAGS:-} ${TESTPKGS:-./...}
	) || failed+=("$mod (test)")
done

if ((${#failed[@]})); then
	echo "test.sh: FAILED: ${failed[*]}" >&2
	exit 1
fi
echo "test.sh: all modules passed" >&2
