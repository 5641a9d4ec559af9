#!/usr/bin/env bash
# lint.sh — gofmt, go vet and staticcheck over every module, and the exported
# API against the snapshot in api/ (scripts/apicheck.sh); what `make lint` runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# 2026.2.2: the first staticcheck release line that builds with Go 1.26.
STATICCHECK=${STATICCHECK:-honnef.co/go/tools/cmd/staticcheck@v0.8.2}
MODULES=(. integration_test examples kube)

status=0
unformatted=$(gofmt -l .)
if [[ -n $unformatted ]]; then
	printf 'lint.sh: not gofmt-ed (run gofmt -w):\n%s\n' "$unformatted" >&2
	status=1
fi
for mod in "${MODULES[@]}"; do
	if [[ ! -f $mod/go.mod || -z $(find "$mod" -name '*.go' -print -quit) ]]; then
		echo "lint.sh: skipping module $mod: no Go files yet" >&2
		continue
	fi
	echo "=== module $mod: go vet, staticcheck" >&2
	(cd "$mod" && go vet ./...) || status=1
	(cd "$mod" && go run "$STATICCHECK" ./...) || status=1
done
scripts/apicheck.sh || status=1
exit "$status"
