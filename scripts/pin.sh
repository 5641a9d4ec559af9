#!/usr/bin/env bash
# pin.sh — make the nested modules require the root module (and kube) at a
# commit of this branch, so that `go install …/cmd/elect@<commit>` and
# `go get …/kube@<commit>` work from main without tags or replace directives.
# What `make pin` runs.
#
# Usage: scripts/pin.sh [REV]     (default HEAD)
#
# The modules are developed together through go.work, which the go command
# ignores when a user installs one of them; outside the workspace each
# nested module's go.mod decides which root (and kube) it builds against. So
# whenever kube or cmd/elect starts using root API that a pinned commit lacks,
# commit that change, run `make pin` (which pins to it) and commit the pin:
#   kube                            requires the root module at REV;
#   cmd/elect, integration_test,    require the root module and kube at REV
#   examples                        (kube's own go.mod at REV must name a
#                                   version that exists, which it does once
#                                   it has been pinned before).
# scripts/installcheck.sh (in .ci/run) proves the pins build from a clean
# module cache. At a tagged release CONTRIBUTING's steps pin to the tags.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/modserve.sh
source scripts/modserve.sh

rev=$(git rev-parse --verify "${1:-HEAD}^{commit}")
git merge-base --is-ancestor "$rev" HEAD || {
	echo "pin.sh: $rev is not on this branch: pin to a commit that main will publish" >&2
	exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
modserve_setup "$tmp"
version=$(modserve_version "$rev")
echo "pin.sh: $MODULE@$rev is $version" >&2

pin() { # pin DIR MODULE...
	local dir=$1 m
	shift
	for m in "$@"; do
		(cd "$dir" && go mod edit -dropreplace="$m" -require="$m@$version")
	done
	(cd "$dir" && go mod tidy)
	echo "pin.sh: $dir requires $* at $version" >&2
}
pin kube "$MODULE"
pin cmd/elect "$MODULE" "$MODULE/kube"
pin integration_test "$MODULE" "$MODULE/kube"
pin examples "$MODULE"
