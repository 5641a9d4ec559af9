#!/usr/bin/env bash
# apicheck.sh — is the exported API of the root module compatible with the
# snapshot in api/? (make lint runs it.)
#
#   scripts/apicheck.sh           compare; exit 1 on an incompatible change
#                                 that CHANGELOG.md does not mark as breaking
#   scripts/apicheck.sh -update   rewrite the snapshot (make apisnapshot)
#
# The snapshot, api/elector.zip, is apidiff's export data of every package of
# the module github.com/leaderkit/elector (internal/ packages excluded;
# examples/ and integration_test/ are modules of their own). It is the API of
# the last release; until the first tag, the API as of the last
# `make apisnapshot`. apidiff (golang.org/x/exp/cmd/apidiff) decides what is
# incompatible: a removed package or identifier, a changed signature, a
# method added to an interface users may implement, and so on.
#
# An incompatible change passes only when the Unreleased section of
# CHANGELOG.md has a line that starts with "- **Breaking:**". When the
# release is cut, `make apisnapshot` makes the released API the new base.
#
# apidiff runs with `go run` at a pinned version (APIDIFF overrides it), as
# staticcheck does in lint.sh: it stays out of go.mod and so out of the
# module graph of everyone who imports the library.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
APIDIFF=${APIDIFF:-golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4}
SNAPSHOT=api/elector.zip
CHANGELOG=CHANGELOG.md
# With -trimpath the export data records file names relative to the module,
# not this checkout's directory: the snapshot is the same on every machine.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
MODULE=$(go list -m)

# apidiff runs apidiff; its notes on skipped internal packages are dropped.
apidiff() {
	go run "$APIDIFF" "$@" 2> >(grep -v '^Ignoring internal package' >&2)
}

# unreleased prints the Unreleased section of the changelog.
unreleased() {
	awk '/^## \[Unreleased\]/ { on = 1; next } /^## / { on = 0 } on' "$CHANGELOG"
}

case ${1:-} in
-update)
	mkdir -p api
	tmp=$(mktemp "api/.elector.zip.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	apidiff -m -w "$tmp" "$MODULE"
	chmod 644 "$tmp"
	mv "$tmp" "$SNAPSHOT"
	echo "apicheck.sh: wrote $SNAPSHOT from $MODULE; commit it" >&2
	exit 0
	;;
'') ;;
*)
	echo "usage: scripts/apicheck.sh [-update]" >&2
	exit 2
	;;
esac

if [[ ! -f $SNAPSHOT ]]; then
	echo "apicheck.sh: no API snapshot $SNAPSHOT; run make apisnapshot and commit it" >&2
	exit 1
fi
echo "=== API of $MODULE against $SNAPSHOT (apidiff)" >&2
report=$(apidiff -m "$SNAPSHOT" "$MODULE")
incompatible=$(awk '/^Incompatible changes:/ { on = 1; next } /^[A-Z]/ { on = 0 } on' <<<"$report")
compatible=$(awk '/^Compatible changes:/ { on = 1; next } /^[A-Z]/ { on = 0 } on' <<<"$report")
if [[ -n $compatible ]]; then
	printf 'apicheck.sh: compatible changes (fine; the snapshot is renewed at the next release):\n%s\n' "$compatible" >&2
fi
if [[ -z $incompatible ]]; then
	exit 0
fi
breaking=$(unreleased | grep -E '^[[:space:]]*[-*] \*\*Breaking:\*\*' || true)
if [[ -n $breaking ]]; then
	printf 'apicheck.sh: incompatible API changes, allowed by the Breaking line(s) in %s, Unreleased:\n%s\n' \
		"$CHANGELOG" "$incompatible" >&2
	exit 0
fi
cat >&2 <<EOF
apicheck.sh: incompatible changes to the exported API of $MODULE since the snapshot $SNAPSHOT:
$incompatible
Either say so in $CHANGELOG, in the Unreleased section, with a line that starts
  - **Breaking:** <what changed and what users do about it>
or, when these changes are the new base (a release is being cut, or the
maintainers agreed), run \`make apisnapshot\` and commit $SNAPSHOT.
EOF
exit 1
