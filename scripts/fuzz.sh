#!/usr/bin/env bash
# fuzz.sh — run every fuzz target of the root module in turn (what `make fuzz` runs).
#
# `go test` (and so `make test`) already runs each target's seed corpus (the
# f.Add seeds and testdata/fuzz/<Target>/); this script runs the fuzzing
# engine itself on each target for FUZZTIME. A failure leaves the input in
# testdata/fuzz/<Target>/ of its package, where it becomes a regression seed
# once committed. The targets need no server.
#
# Environment:
#   FUZZTIME      time per target (default 5m; anything -fuzztime takes)
#   FUZZ          regexp of the targets to run (default: all)
#   FUZZPARALLEL  fuzzing workers per target (default 1)
#
# At the end it prints, per target, the fuzzer's last progress line (execs,
# new interesting inputs) and exits non-zero if any target failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/workspace.sh

mapfile -t targets < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
	grep -v -e '^./integration_test/' -e '^./examples/' |
	while read -r file; do
		pkg=./$(dirname "${file#./}")
		grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed "s|^func |$pkg |"
	done | sort)

summary=()
failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	[[ $name =~ ${FUZZ:-.} ]] || continue
	echo "=== $pkg $name (${FUZZTIME:-5m})" >&2
	log=$(mktemp)
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-5m}" -parallel "${FUZZPARALLEL:-1}" "$pkg" 2>&1 | tee "$log" >&2; then
		status=ok
	else
		status=FAIL
		failed+=("$pkg $name")
	fi
	last=$(grep -E 'fuzz: elapsed: .*execs' "$log" | tail -n 1 || true)
	summary+=("$status $pkg $name: ${last#fuzz: }")
	rm -f "$log"
done

printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
	echo "fuzz.sh: FAILED: ${failed[*]}" >&2
	exit 1
fi
