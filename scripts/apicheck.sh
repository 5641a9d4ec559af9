#!/usr/bin/env bash
# apicheck.sh — is the exported API of the library's modules compatible with
# their snapshots, api/elector.txt (the root module) and api/kube.txt (the
# kube driver's module)? (make lint runs it.)
#
#   scripts/apicheck.sh           compare; exit 1 on an incompatible change
#                                 that CHANGELOG.md does not mark as breaking
#   scripts/apicheck.sh -update   rewrite the snapshots (make apisnapshot)
#
# A snapshot lists every exported symbol of every importable package of its
# module, one per line, in the format of the Go
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
scripts/workspace.sh
CHANGELOG=$ROOT/CHANGELOG.md
# The modules whose API is checked: directory and snapshot.
MODULES=(". api/elector.txt" "kube api/kube.txt")

# current DIR prints the API of the module in DIR.
current() { (cd "$1" && go run github.com/leaderkit/elector/internal/cmd/apitext ./...); }

# unreleased prints the Unreleased section of the changelog.
unreleased() {
	awk '/^## \[Unreleased\]/ { on = 1; next } /^## / { on = 0 } on' "$CHANGELOG"
}

case ${1:-} in
-update)
	mkdir -p api
	for m in "${MODULES[@]}"; do
		read -r dir snapshot <<<"$m"
		tmp=$(mktemp "api/.snapshot.XXXXXX")
		current "$dir" >"$tmp"
		chmod 644 "$tmp"
		mv "$tmp" "$snapshot"
		echo "apicheck.sh: wrote $snapshot from $(sed -n "s/^module //p" "$dir/go.mod") ($(wc -l <"$snapshot") lines); commit it" >&2
	done
	exit 0
	;;
'') ;;
*)
	echo "usage: scripts/apicheck.sh [-update]" >&2
	exit 2
	;;
esac

# check DIR SNAPSHOT compares the API of the module in DIR with SNAPSHOT; it
# fails on an incompatible change the changelog does not mark as breaking.
check() {
	local dir=$1 snapshot=$2 module now incompatible compatible breaking
	module=$(sed -n "s/^module //p" "$dir/go.mod")
	if [[ ! -f $snapshot ]]; then
		echo "apicheck.sh: no API snapshot $snapshot; run make apisnapshot and commit it" >&2
		return 1
	fi
	echo "=== API of $module against $snapshot" >&2
	now=$(mktemp)
	current "$dir" >"$now"
	# Both files are sorted by apitext; comm needs the same collation.
	incompatible=$(LC_ALL=C comm -23 <(LC_ALL=C sort "$snapshot") <(LC_ALL=C sort "$now"))
	compatible=$(LC_ALL=C comm -13 <(LC_ALL=C sort "$snapshot") <(LC_ALL=C sort "$now"))
	rm -f "$now"
	if [[ -n $compatible ]]; then
		printf 'apicheck.sh: additions (compatible; the snapshot is renewed at the next release):\n%s\n' "$compatible" >&2
	fi
	if [[ -z $incompatible ]]; then
		return 0
	fi
	breaking=$(unreleased | grep -E '^[[:space:]]*[-*] \*\*Breaking:\*\*' || true)
	if [[ -n $breaking ]]; then
		printf 'apicheck.sh: incompatible API changes, allowed by the Breaking line(s) in %s, Unreleased:\n%s\n' \
			"$CHANGELOG" "$incompatible" >&2
		return 0
	fi
	cat >&2 <<MSG
apicheck.sh: incompatible changes to the exported API of $module since the snapshot $snapshot
(lines of the snapshot the API no longer has):
$incompatible
Either say so in $CHANGELOG, in the Unreleased section, with a line that starts
  - **Breaking:** <what changed and what users do about it>
or, when these changes are the new base (a release is being cut, or the
maintainers agreed), run \`make apisnapshot\` and commit $snapshot.
MSG
	return 1
}

rc=0
for m in "${MODULES[@]}"; do
	read -r dir snapshot <<<"$m"
	check "$dir" "$snapshot" || rc=1
done
exit $rc
