#!/usr/bin/env bash
# installcheck.sh — prove that what a user installs works from a commit of
# this branch alone, as published: no tags, no replace directives, no
# go.work, an empty module cache. Run by .ci/run.
#
# Serving the branch as github.com/leaderkit/elector from a bare clone
# (scripts/modserve.sh), it checks that
#   go install github.com/leaderkit/elector/cmd/elect@<HEAD>
# builds and that `elect version` names the commit, and that a new module
# can `go get github.com/leaderkit/elector/kube@<HEAD>` and build a program
# that imports the root package and every driver. A failure here while the
# workspace builds means a nested module's pin is behind the code it uses:
# commit, run `make pin`, commit the pin (see scripts/pin.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/modserve.sh
source scripts/modserve.sh

fail() {
	printf 'installcheck.sh: %s\n' "$*" >&2
	exit 1
}

if grep -qE '^replace([[:space:]]|\()' go.mod kube/go.mod cmd/elect/go.mod; then
	fail "a published module's go.mod has a replace directive, which go install refuses: develop through go.work and pin with make pin"
fi
rev=$(git rev-parse HEAD)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
modserve_setup "$tmp" clean
version=$(modserve_version "$rev")
echo "installcheck.sh: HEAD $rev is $MODULE $version" >&2

go install "$MODULE/cmd/elect@$rev" || fail "go install $MODULE/cmd/elect@$rev failed"
out=$("$GOBIN/elect" version) || fail "elect version failed: $out"
[[ $out == *"${rev:0:12}"* ]] || fail "elect version does not name commit ${rev:0:12}:
$out"
echo "installcheck.sh: go install …/cmd/elect@${rev:0:12}: $(head -n 1 <<<"$out")" >&2

mkdir "$tmp/user"
cd "$tmp/user"
go mod init example.com/user >/dev/null 2>&1
go get "$MODULE/kube@$rev" || fail "go get $MODULE/kube@$rev failed"
cat >main.go <<-'EOF'
	package main

	import (
		"fmt"

		"github.com/leaderkit/elector"
		"github.com/leaderkit/elector/etcd"
		"github.com/leaderkit/elector/kube"
		"github.com/leaderkit/elector/redlock"
		"github.com/leaderkit/elector/zookeeper"
	)

	func main() {
		fmt.Println(elector.ErrLeaseLost != nil, etcd.New != nil, kube.New != nil, redlock.New != nil, zookeeper.New != nil)
	}
EOF
go mod tidy >/dev/null 2>&1 || fail "go mod tidy of a module importing elector and kube@${rev:0:12} failed"
got=$(go run .) || fail "a program importing elector and kube@${rev:0:12} does not build"
[[ $got == "true true true true true" ]] || fail "the program printed $got"
echo "installcheck.sh: go get …/kube@${rev:0:12}: builds with $(go list -m -f '{{.Path}} {{.Version}}' "$MODULE")" >&2
