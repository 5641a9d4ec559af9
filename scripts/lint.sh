#!/usr/bin/env bash
# lint.sh — no tracked binary or large file; gofmt, go vet and staticcheck
# over every module; the exported API against the snapshot in api/
# (scripts/apicheck.sh); the test apiserver on the module versions of
# cmd/elect and kube (scripts/apiserver-deps.sh); no commit hashes, dates,
# times of day or run letters in docs and comments (scripts/doclint.sh).
# What `make lint` runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/workspace.sh
# shellcheck source=scripts/goenv.sh
. "$ROOT/scripts/goenv.sh"
# 2026.2.2: the first staticcheck release line that builds with Go 1.26.
STATICCHECK=${STATICCHECK:-honnef.co/go/tools/cmd/staticcheck@v0.8.2}
MODULES=(. cmd/elect integration_test examples kube)

status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Nothing generated is tracked: no binary (git's own test: the index holds
# content it does not consider text) and no file over 1 MiB.
bad=$(git ls-files --eol | awk '$1 == "i/-text" { sub(/^[^\t]*\t/, ""); print "  binary: " $0 }')
big=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$1 > 1048576 { print "  over 1 MiB (" $1 " bytes): " $2 }')
if [[ -n $bad$big ]]; then
	printf 'lint.sh: tracked files that must not be (build them, do not commit them):\n%s\n' "$(printf '%s\n%s' "$bad" "$big" | sed '/^$/d')" >&2
	status=1
fi

unformatted=$(gofmt -l .)
if [[ -n $unformatted ]]; then
	printf 'lint.sh: not gofmt-ed (run gofmt -w):\n%s\n' "$unformatted" >&2
	status=1
fi
# staticcheck is built once, not by a go run in each module.
if ! GOBIN=$tmp go install "$STATICCHECK"; then
	echo "lint.sh: building $STATICCHECK failed" >&2
	exit 1
fi
# -race: go vet and staticcheck type-check against the export data of the
# build the tests use (make test is go test -race), so a new machine
# compiles the dependencies once for both, not once more without -race. The
# packages with files built only without the race detector (//go:build
# !race) are checked once more without it.
for mod in "${MODULES[@]}"; do
	if [[ ! -f $mod/go.mod || -z $(find "$mod" -name '*.go' -print -quit) ]]; then
		echo "lint.sh: skipping module $mod: no Go files yet" >&2
		continue
	fi
	echo "=== module $mod: go vet, staticcheck" >&2
	(cd "$mod" && GOFLAGS="$GOFLAGS -race" go vet ./...) || status=1
	(cd "$mod" && GOFLAGS="$GOFLAGS -race" "$tmp/staticcheck" ./...) || status=1
done
while read -r dir; do
	echo "=== $dir without -race: go vet, staticcheck" >&2
	(cd "$dir" && go vet . && "$tmp/staticcheck" .) || status=1
done < <(norace_dirs)
scripts/apicheck.sh || status=1
scripts/apiserver-deps.sh -check || status=1
echo "=== doclint: docs and comments state behaviour, not run logs" >&2
scripts/doclint.sh || status=1
exit "$status"
