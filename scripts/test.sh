#!/usr/bin/env bash
# test.sh — the whole test suite against real servers (what `make test` and CI run).
#
# Splits the packages of every module (the root module, integration_test,
# examples and kube; a module with no .go file yet is skipped) into shards
# and runs the shards at once, each on a server set of its own started with
# scripts/servers.sh. Within a shard the packages that use servers run one
# after the other: some tests inject faults into their servers (kill, pause,
# restart a node), so no two packages ever share a set while they run. The
# packages that use none (SERVER_USE below) run at once. The shards take the
# packages from one queue, longest measured duration first, each the next
# one when its last ends.
#
# Set i (0-based) listens at port offset ELECTOR_PORT_OFFSET + 100 × i and
# keeps its state in ELECTOR_STATE_DIR (set 0) or ELECTOR_STATE_DIR-i beside
# it (default servers.sh's: /dev/shm/elector-servers, or /tmp/elector-servers
# without a writable /dev/shm). Every set runs Redis, etcd and ZooKeeper;
# the kube-apiserver in as many sets as a longest-first deal of the packages
# would give one whose tests use it (testenv.Kube*), and only those sets
# run such packages. A shard that needs the apiserver starts it (waiting for
# its build, which .ci/run starts in the background) before its first package.
# A set whose servers were all running already is left up; every other set
# is stopped when its shard ends, and on exit whatever happens (a failure,
# Ctrl-C, SIGTERM).
#
# Each shard's log is printed whole when the shard ends; then one line per
# package (PASS/FAIL, seconds, shard) and the total. Exits non-zero if any
# package or module failed. go test runs no vet here (-vet=off): `make lint`
# runs all of it, on the same race build.
#
# Environment:
#   TESTFLAGS    extra `go test` flags, e.g. TESTFLAGS='-run Redis -v'
#   TESTPKGS     packages to test in each module (default ./...), e.g.
#                TESTPKGS=./zookeeper/...
#   TESTP        test binaries a shard's `go test` runs at once on its servers
#                (go test -p; default 1: packages never share servers);
#                packages that use no server run at go test's default
#   TESTPARALLEL tests a test binary runs at once (go test -parallel;
#                default: each package's own, testenv.DefaultParallel in its
#                TestMain, else GOMAXPROCS)
#   TESTSHARDS   shards, hence server sets, at once (default 3; at most what
#                the port offsets allow: ELECTOR_PORT_OFFSET + 100 × (TESTSHARDS-1)
#                below 2000)
#   ELECTOR_PORT_OFFSET, ELECTOR_STATE_DIR   where set 0 lives (above)
#
# Package durations for the balance come from scripts/test-durations (seconds
# and import path, one package a line), overridden by the durations this
# script measured last on this machine (written to
# ${XDG_CACHE_HOME:-~/.cache}/elector/test-durations for the packages that
# passed in a run without TESTFLAGS). A package in neither counts 5 s.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/workspace.sh
# shellcheck source=scripts/goenv.sh
. "$ROOT/scripts/goenv.sh"
SERVERS=$ROOT/scripts/servers.sh
# A race-built binary sleeps a second before it exits (the race runtime's
# atexit_sleep_ms), which only gives goroutines still running at exit a last
# chance to race: every test binary and every race-built process the tests
# wait for would add that second. A race found while they run is reported,
# and fails the package, as ever.
export GORACE="${GORACE:+$GORACE }atexit_sleep_ms=0"
# Test binaries are linked without the symbol table and DWARF (-s -w): a
# third less link time for each of the run's ~45 links (the kube driver's
# race-built test binary: 10.3 CPU-s to 6.6). Race reports, panics and
# goroutine dumps read the runtime's own tables and keep every file:line.
LDFLAGS='-s -w'
MODULES=(. cmd/elect integration_test examples kube)
# A package whose files (tests or test helpers) match SERVER_USE uses the
# test servers: testenv's accessors of them, servers.sh's environment.
SERVER_USE='testenv\.(Redis|Etcd|ZK|Kube|Scripts|Fault)|ELECTOR_(REDIS|ETCD|ZK|KUBE|SCRIPTS|STATE)'
SHARDS=${TESTSHARDS:-3}
BASE_OFF=${ELECTOR_PORT_OFFSET:-0}
BASE_STATE=$("$SERVERS" statedir)
DURATIONS=$ROOT/scripts/test-durations
CACHED_DURATIONS=${XDG_CACHE_HOME:-$HOME/.cache}/elector/test-durations

log() { printf 'test.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 2
}

[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || die "TESTSHARDS must be a positive integer, got '$SHARDS'"
[[ $BASE_OFF =~ ^[0-9]+$ ]] && ((BASE_OFF % 100 == 0)) ||
	die "ELECTOR_PORT_OFFSET must be a multiple of 100, got '$BASE_OFF'"
((BASE_OFF + 100 * (SHARDS - 1) < 2000)) ||
	die "TESTSHARDS=$SHARDS from ELECTOR_PORT_OFFSET=$BASE_OFF needs offsets up to $((BASE_OFF + 100 * (SHARDS - 1))); servers.sh allows offsets below 2000"
[[ ${TESTP:-1} =~ ^[1-9][0-9]*$ ]] || die "TESTP must be a positive integer, got '${TESTP:-}'"
[[ -z ${TESTPARALLEL:-} || $TESTPARALLEL =~ ^[1-9][0-9]*$ ]] || die "TESTPARALLEL must be a positive integer, got '$TESTPARALLEL'"

OUT=$(mktemp -d "${TMPDIR:-/tmp}/elector-test.XXXXXX")

set_off() { echo $((BASE_OFF + 100 * $1)); }
set_state() { if (($1 == 0)); then echo "$BASE_STATE"; else echo "$BASE_STATE-$1"; fi; }
set_servers() { ELECTOR_PORT_OFFSET=$(set_off "$1") ELECTOR_STATE_DIR=$(set_state "$1") "$SERVERS" "${@:2}"; }

# ---------------------------------------------------------------- packages

has_go_files() { [[ -n $(find "$1" -name '*.go' -print -quit) ]]; }

# Every package to test: "MODULE IMPORTPATH NEEDS_KUBE NEEDS_SERVERS" into
# $OUT/pkgs (the apiserver: its tests name testenv.Kube* or ELECTOR_KUBE_*;
# servers: its files match SERVER_USE), and the main packages among them
# into $OUT/mains. Each
# TESTPKGS pattern is read in every module; a pattern naming a directory that
# is not in a module is skipped there, and fails only if no module has it.
failed_modules=()
declare -A matched=()
: >"$OUT/pkgs"
: >"$OUT/mains"
for mod in "${MODULES[@]}"; do
	if [[ ! -f $mod/go.mod ]] || ! has_go_files "$mod"; then
		log "skipping module $mod: no Go files yet"
		continue
	fi
	# shellcheck disable=SC2086 # TESTPKGS is a word list
	for pat in ${TESTPKGS:-./...}; do
		if ! list=$(cd "$mod" && go list -f '{{.ImportPath}} {{.Name}} {{.Dir}}' "$pat" 2>"$OUT/list.err"); then
			# A pattern naming a directory of another module.
			grep -q -E 'directory not found|no such file or directory|is not in std|main module .* does not contain' "$OUT/list.err" && continue
			cat "$OUT/list.err" >&2
			failed_modules+=("$mod (go list $pat)")
			continue
		fi
		while read -r pkg name dir; do
			[[ -n $pkg ]] || continue
			matched[$pat]=1
			kube=0 srv=0
			if compgen -G "$dir/*_test.go" >/dev/null && grep -q -E 'testenv\.Kube|ELECTOR_KUBE_' "$dir"/*_test.go; then kube=1; fi
			if grep -q -E "$SERVER_USE" "$dir"/*.go 2>/dev/null; then srv=1; fi
			echo "$mod $pkg $kube $srv" >>"$OUT/pkgs"
			[[ $name != main ]] || echo "$pkg" >>"$OUT/mains"
		done <<<"$list"
	done
done
# shellcheck disable=SC2086 # TESTPKGS is a word list
for pat in ${TESTPKGS:-./...}; do
	[[ -n ${matched[$pat]:-} ]] || failed_modules+=("pattern $pat (no package in any module)")
done
[[ -s $OUT/pkgs ]] || die "no packages to test (TESTPKGS=${TESTPKGS:-./...}); modules: ${MODULES[*]}"
sort -u -o "$OUT/pkgs" "$OUT/pkgs"

# duration PKG prints the package's expected seconds.
declare -A dur=()
for f in "$DURATIONS" "$CACHED_DURATIONS"; do
	[[ -r $f ]] || continue
	while read -r s p; do
		[[ $s =~ ^[0-9]+$ && -n $p ]] && dur[$p]=$s
	done <"$f"
done

# The queue the shards take their work from, "SECONDS KUBE SERVERS MODULE
# PKG..." a line, longest expected first: a package expected to take SOLO
# seconds or more is an item of its own, the others of a module (and a kube
# need, and a need of servers) one item together, so that a go command's
# start is paid once for them. A shard whose item ends takes the next one
# its set can serve, so the shards end together even when a package takes
# longer than measured.
SOLO=20
while read -r mod pkg k srv; do echo "${dur[$pkg]:-5} $k $srv $mod $pkg"; done <"$OUT/pkgs" |
	awk -v solo="$SOLO" '
		$1 >= solo { print; next }
		{ key = $2 " " $3 " " $4; sum[key] += $1; pkgs[key] = pkgs[key] " " $5 }
		END { for (key in sum) print sum[key], key pkgs[key] }' |
	sort -k1,1nr -k4,4 >"$OUT/queue"
# No more shards, hence sets, than items to run.
nitems=$(wc -l <"$OUT/queue")
((SHARDS <= nitems)) || SHARDS=$nitems

# Which sets run the apiserver: as if the items were dealt out longest first,
# each to the shard with the least expected time so far, a set runs it if it
# would be dealt an item that needs it.
declare -a load=() kube=()
for ((i = 0; i < SHARDS; i++)); do
	load[i]=0 kube[i]=0
done
while read -r s k _; do
	best=0
	for ((i = 1; i < SHARDS; i++)); do ((load[i] < load[best])) && best=$i; done
	load[best]=$((load[best] + s))
	((k)) && kube[best]=1
done <"$OUT/queue"

# take I prints the next queue item set I can serve ("SERVERS MODULE
# PKG...") and removes it from the queue; it fails when none is left.
take() {
	local item queue_fd
	exec {queue_fd}>>"$OUT/queue.lock"
	flock "$queue_fd"
	item=$(awk -v k="${kube[$1]}" -v rest="$OUT/queue.tmp" '
		BEGIN { printf "" >rest }
		!taken && $2 <= k { taken = 1; $1 = $2 = ""; sub(/^ +/, ""); print; next }
		{ print >rest }' "$OUT/queue")
	mv "$OUT/queue.tmp" "$OUT/queue"
	exec {queue_fd}>&-
	[[ -n $item ]] && echo "$item"
}

# ---------------------------------------------------------------- servers

# kinds I prints the server kinds set I needs.
kinds() { if ((kube[$1])); then echo redis etcd zk kube; else echo redis etcd zk; fi; }

# all_running I succeeds if every kind set I needs runs already (a
# developer's `make servers`): such a set is left up.
all_running() {
	local want=(ELECTOR_REDIS_ADDRS ELECTOR_ETCD_ENDPOINTS ELECTOR_ZK_SERVERS) env v
	((kube[$1])) && want+=(ELECTOR_KUBE_URL)
	env=$(set_servers "$1" env) || return 1
	for v in "${want[@]}"; do grep -q "^export $v=" <<<"$env" || return 1; done
}

declare -a owned=()
for ((i = 0; i < SHARDS; i++)); do
	if all_running "$i"; then
		owned[i]=0
		log "set $i (offset $(set_off "$i"), $(set_state "$i")): servers already running; leaving them up"
	else
		owned[i]=1
	fi
done

# start_set I starts (idempotently) the kinds set I needs. Without kube the
# kinds start at once, each its own servers.sh (the kinds share nothing but
# the state dir); with kube, `start all`, which starts etcd before the
# apiserver that stores in it (waiting for its build).
start_set() {
	local k pids=() pid rc=0
	if ((kube[$1])); then
		set_servers "$1" start all
		return
	fi
	for k in $(kinds "$1"); do
		set_servers "$1" start "$k" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
	return "$rc"
}

# ---------------------------------------------------------------- compile

# compile_deps builds, at full parallelism and once for all shards, what the
# tests would otherwise compile one package at a time (go test -p 1), or
# several times at once: with -race every non-main package the tested
# packages and their tests import, while the shards start their servers;
# then without -race the dependencies of the commands some tests build
# plainly with go build (elect, the chaos candidate, an example), which on a
# new machine three TestMains would each compile at the same time. On a warm
# build cache it only checks the cache. One go list and one go build a mode
# over every module (the workspace holds them all): each go command hashes
# the sources of the whole graph. Its errors are go test's to report.
# The compiler runs under scripts/compilegc.sh's environment (its garbage
# collector off up to a heap limit), as in servers.sh's apiserver build;
# the tests never do.
compile_deps() {
	local gc deps='{{if and (not .Standard) (ne .Name "main")}}{{.ImportPath}}{{end}}'
	gc=$("$ROOT/scripts/compilegc.sh")
	# shellcheck disable=SC2046,SC2086 # word lists
	go list -deps -test -f "$deps" $(awk '{ print $2 }' "$OUT/pkgs") 2>/dev/null | grep -v ' \[' | sort -u |
		xargs -r env $gc go build -race >/dev/null 2>&1 || true
	# shellcheck disable=SC2046,SC2086
	[[ ! -s $OUT/mains ]] || go list -deps -f "$deps" $(cat "$OUT/mains") 2>/dev/null | sort -u |
		xargs -r env $gc go build >/dev/null 2>&1 || true
}

# ---------------------------------------------------------------- shards

# run_shard I starts set I if needed, runs the queue items it takes one at a
# time and writes "STATUS SECONDS PKG" lines to $OUT/shardI.result.
run_shard() {
	local i=$1 mod pkgs st secs pkg t0 rc kinds_i item srv p
	local logf=$OUT/shard$i.log res=$OUT/shard$i.result
	: >"$res"
	exec >"$logf" 2>&1
	kinds_i=$(kinds "$i")
	echo "=== shard $i: set at offset $(set_off "$i") ($kinds_i)"
	if ! start_set "$i"; then
		echo "=== shard $i: starting its servers failed"
		echo "FAIL - set $i (servers did not start)" >>"$res"
		return 1
	fi
	eval "$(set_servers "$i" env)"
	flock "$OUT/compile.lock" true # compile_deps is done
	while item=$(take "$i"); do
		srv=${item%% *} item=${item#* }
		mod=${item%% *} pkgs=${item#* }
		# Packages that use no server share none: they run at once, as many
		# as go test runs by default.
		p=(-p "${TESTP:-1}")
		((srv)) || p=()
		echo "=== shard $i: module $mod: go test $pkgs"
		t0=$SECONDS
		# shellcheck disable=SC2086 # TESTFLAGS and pkgs are word lists
		(cd "$mod" && go test -race -vet=off -ldflags="$LDFLAGS" -count=1 -timeout 30m "${p[@]}" ${TESTPARALLEL:+-parallel "$TESTPARALLEL"} ${TESTFLAGS:-} $pkgs) >"$OUT/shard$i.go" 2>&1 && rc=0 || rc=$?
		cat "$OUT/shard$i.go"
		# go test's own result lines: "ok  \tPKG\t1.234s", "FAIL\tPKG\t1.234s",
		# "FAIL\tPKG [build failed]", "?   \tPKG\t[no test files]".
		for pkg in $pkgs; do
			read -r st secs < <(awk -F'\t' -v p="$pkg" '
				$1 ~ /^(ok|FAIL|\?) *$/ && (split($2, w, " ") && w[1] == p) {
					st = $1 ~ /^FAIL/ ? "FAIL" : "PASS"
					split($3, t, " ")
					secs = t[1] ~ /^[0-9.]+s$/ ? substr(t[1], 1, length(t[1]) - 1) : ($1 ~ /^\?/ ? 0 : "-")
				}
				END { print (st == "" ? "-" : st), (secs == "" ? "-" : secs) }' "$OUT/shard$i.go")
			# No result line (e.g. TESTFLAGS=-json, or go test itself
			# failed): the module's exit status decides.
			if [[ $st == - ]]; then if ((rc == 0)); then st=PASS; else st=FAIL; fi; fi
			echo "$st ${secs:--} $pkg" >>"$res"
		done
		echo "=== shard $i: module $mod: exit $rc after $((SECONDS - t0))s"
		if ((rc != 0)) && ! grep -q '^FAIL ' "$res"; then echo "FAIL - $mod (go test exit $rc)" >>"$res"; fi
	done
	if grep -q '^FAIL' "$res"; then
		echo "=== shard $i: its servers' logs (the set is removed when it stops)"
		dump_logs "$i"
	fi
	if ((owned[i])); then set_servers "$i" stop all || true; fi
}

# dump_logs I prints, for each server log of set I, its last warnings,
# errors and ZooKeeper peer state changes, then its last lines.
dump_logs() {
	local dir f
	dir=$(set_state "$1")
	for f in "$dir"/*/*/log; do
		[[ -f $f ]] || continue
		echo "--- ${f#"$dir"/}: last warnings, errors and peer state changes"
		grep -E ' (WARN|ERROR) |"level":"(warn|error)"|Peer state changed|^[0-9]+:[A-Z] .* # ' "$f" | tail -n 15 || true
		echo "--- ${f#"$dir"/}: last lines"
		tail -n 5 "$f"
	done
}

declare -A shard_of=()

cleanup() {
	local pid i
	trap - EXIT INT TERM
	[[ -z ${compile_pid:-} ]] || kill -TERM -- "-$compile_pid" 2>/dev/null || true
	# Only shards not yet reaped: a reaped shard's group ID may be reused.
	for pid in "${!shard_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
	for pid in "${!shard_of[@]}"; do wait "$pid" 2>/dev/null || true; done
	for ((i = 0; i < SHARDS; i++)); do
		if ((owned[i])); then set_servers "$i" stop all >/dev/null 2>&1 & fi
	done
	wait
	rm -rf "$OUT"
}
trap cleanup EXIT
trap 'log "interrupted; stopping the shards and their servers"; exit 130' INT TERM

# Job control: each shard is a process group of its own, so that cleanup can
# stop a shard's go test and test binaries with one signal.
set -m
t_all=$SECONDS
# compile_deps holds the lock until it is done; the shards wait for it.
exec {compile_fd}>"$OUT/compile.lock"
flock "$compile_fd"
compile_deps &
compile_pid=$!
exec {compile_fd}>&-
for ((i = 0; i < SHARDS; i++)); do
	run_shard "$i" &
	shard_of[$!]=$i
	log "shard $i: set at offset $(set_off "$i") ($(kinds "$i"))"
done
set +m
wait "$compile_pid" || true
compile_pid=

# Print each shard's log whole as it ends.
left=$SHARDS
while ((left > 0)); do
	done_pid=
	wait -n -p done_pid "${!shard_of[@]}" || true
	[[ -n $done_pid ]] || break
	left=$((left - 1))
	i=${shard_of[$done_pid]}
	unset "shard_of[$done_pid]"
	cat "$OUT/shard$i.log"
	echo "=== shard $i ended after $((SECONDS - t_all))s"
done

# Summary, the durations to keep, the exit status.
failed=("${failed_modules[@]}")
# What no shard took: its set failed to start and no other could serve it.
while read -r _ _ _ _ pkgs; do
	for pkg in $pkgs; do failed+=("$pkg (not run: no set could serve it)"); done
done <"$OUT/queue"

# Tests of what the race detector changes (stack sizes) are built only
# without it (//go:build !race): run them once more, without -race, in
# their packages.
while read -r dir; do
	names=$(grep -l -E "$NORACE_BUILD" "$dir"/*_test.go 2>/dev/null | xargs -r grep -ho '^func Test[A-Za-z0-9_]*' | sed 's/^func //' | paste -sd'|')
	[[ -n $names ]] || continue
	log "without -race in $dir: $names"
	(cd "$dir" && go test -vet=off -ldflags="$LDFLAGS" -count=1 -run "^($names)\$" .) || failed+=("$dir (tests without -race)")
done < <(norace_dirs)
printf '\n=== summary (%d shards, %ds)\n' "$SHARDS" "$((SECONDS - t_all))"
for ((i = 0; i < SHARDS; i++)); do
	[[ -s $OUT/shard$i.result ]] || { failed+=("shard $i (no result)"); continue; }
	while read -r st secs pkg; do
		printf '%-4s %8s  %s  (shard %d)\n' "$st" "$secs" "$pkg" "$i"
		[[ $st == PASS ]] || failed+=("$pkg")
		# Only a pass measures a package's duration: a failure may end early.
		if [[ $st == PASS && $secs =~ ^[0-9.]+$ ]]; then echo "$(printf '%.0f' "$secs") $pkg" >>"$OUT/measured"; fi
	done <"$OUT/shard$i.result"
done
if [[ -z ${TESTFLAGS:-} && -s $OUT/measured ]]; then
	mkdir -p "$(dirname "$CACHED_DURATIONS")"
	{
		[[ -r $CACHED_DURATIONS ]] && cat "$CACHED_DURATIONS"
		cat "$OUT/measured"
	} | awk '{ d[$2] = $1 } END { for (p in d) print d[p], p }' | sort -k2 >"$CACHED_DURATIONS.tmp.$$"
	mv "$CACHED_DURATIONS.tmp.$$" "$CACHED_DURATIONS"
fi
if ((${#failed[@]})); then
	log "FAILED: ${failed[*]}"
	exit 1
fi
log "all packages passed"
