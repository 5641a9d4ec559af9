#!/usr/bin/env bash
# apicheck.sh — is the exported API of the root module compatible with the
# snapshot api/elector.txt? (make lint runs it.)
#
#   scripts/apicheck.sh           compare; exit 1 on an incompatible change
#                                 that CHANGELOG.md does not mark as breaking
#   scripts/apicheck.sh -update   rewrite the snapshot (make apisnapshot)
#
# The snapshot lists every exported symbol of every importable package of the
# module github.com/leaderkit/elector, one per line, in the format of the Go
# project's api/go1.*.txt (internal/cmd/apitext writes it from the compiler's
# export data; internal/ and main packages are left out; examples/ and
# integration_test/ are modules of their own). It reads in a diff: a renamed
# option is one line removed and one added.
#
# A line of the snapshot that the current API no longer has is an
# incompatible change: a removed or renamed identifier, a changed signature,
# field type or constant value, a method added to an interface (its
# "interface { … }" line changes). Lines only added are compatible. An
# incompatible change passes only when the Unreleased section of CHANGELOG.md
# has a line that starts with "- **Breaking:**". When a release is cut,
# `make apisnapshot` makes the released API the new base.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SNAPSHOT=api/elector.txt
CHANGELOG=CHANGELOG.md
MODULE=$(go list -m)

current() { go run ./internal/cmd/apitext ./...; }

# unreleased prints the Unreleased section of the changelog.
unreleased() {
	awk '/^## \[Unreleased\]/ { on = 1; next } /^## / { on = 0 } on' "$CHANGELOG"
}

case ${1:-} in
-update)
	mkdir -p api
	tmp=$(mktemp "api/.elector.txt.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	current >"$tmp"
	chmod 644 "$tmp"
	mv "$tmp" "$SNAPSHOT"
	echo "apicheck.sh: wrote $SNAPSHOT from $MODULE ($(wc -l <"$SNAPSHOT") lines); commit it" >&2
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
echo "=== API of $MODULE against $SNAPSHOT" >&2
now=$(mktemp)
trap 'rm -f "$now"' EXIT
current >"$now"
# Both files are sorted by apitext; comm needs the same collation.
incompatible=$(LC_ALL=C comm -23 <(LC_ALL=C sort "$SNAPSHOT") <(LC_ALL=C sort "$now"))
compatible=$(LC_ALL=C comm -13 <(LC_ALL=C sort "$SNAPSHOT") <(LC_ALL=C sort "$now"))
if [[ -n $compatible ]]; then
	printf 'apicheck.sh: additions (compatible; the snapshot is renewed at the next release):\n%s\n' "$compatible" >&2
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
cat >&2 <<MSG
apicheck.sh: incompatible changes to the exported API of $MODULE since the snapshot $SNAPSHOT
(lines of the snapshot the API no longer has):
$incompatible
Either say so in $CHANGELOG, in the Unreleased section, with a line that starts
  - **Breaking:** <what changed and what users do about it>
or, when these changes are the new base (a release is being cut, or the
maintainers agreed), run \`make apisnapshot\` and commit $SNAPSHOT.
MSG
exit 1
