#!/usr/bin/env bash
# apiserver-deps.sh — keep the kube-apiserver the tests build
# (scripts/kube-apiserver) on the versions the published elect command and
# kube driver select of every module they share with it (client-go,
# apimachinery, gRPC, protobuf, the etcd client, golang.org/x/...).
#
# Usage: scripts/apiserver-deps.sh [-check]
#
# On a new machine the apiserver build compiles those modules without -race
# and with -trimpath, as `make installcheck` does: at the same versions
# installcheck finds them in the build cache (255 CPU-seconds become 65),
# at another version of golang.org/x/sys or protobuf nearly every package
# compiles again. Without -check it raises the wrapper module's requirements
# to cmd/elect's and kube's (go get, go mod tidy); with -check (make lint) it
# lists the modules whose versions differ and fails. A module the apiserver
# needs at a higher version than ours is reported, not lowered: raise it in
# our modules instead.
#
# The versions are read from the go.mod files (a tidy go.mod lists every
# module its build uses), so the check needs no network.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
WRAPPER=scripts/kube-apiserver
check=0
case ${1:-} in
-check) check=1 ;;
'') ;;
*)
	echo "usage: scripts/apiserver-deps.sh [-check]" >&2
	exit 2
	;;
esac

# newer A B prints the higher of two module versions: a release is above
# its own pre-releases (v1.36.12 above v1.36.12-0.2026…, a pseudo-version).
newer() {
	local a=${1%%+*} b=${2%%+*} base_a base_b
	base_a=${a%%-*} base_b=${b%%-*}
	if [[ $base_a != "$base_b" ]]; then
		[[ $(printf '%s\n%s\n' "$base_a" "$base_b" | sort -V | tail -n 1) == "$base_a" ]] && echo "$1" || echo "$2"
	elif [[ $a == "$base_a" ]]; then echo "$1"
	elif [[ $b == "$base_b" ]]; then echo "$2"
	else
		[[ $(printf '%s\n%s\n' "$a" "$b" | sort -V | tail -n 1) == "$a" ]] && echo "$1" || echo "$2"
	fi
}

# requires FILE... prints "PATH VERSION" for every requirement, the highest
# version where the files differ.
requires() {
	local -A v=()
	local path ver
	while read -r path ver; do
		if [[ -n ${v[$path]:-} ]]; then v[$path]=$(newer "${v[$path]}" "$ver"); else v[$path]=$ver; fi
	done < <(awk '
		$1 == "require" && $2 == "(" { inblock = 1; next }
		inblock && $1 == ")" { inblock = 0; next }
		inblock && NF >= 2 && $1 !~ "^//" { print $1, $2; next }
		$1 == "require" && NF >= 3 && $2 != "(" { print $2, $3 }
	' "$@")
	for path in "${!v[@]}"; do echo "$path ${v[$path]}"; done | sort
}

ours=$(requires cmd/elect/go.mod kube/go.mod | grep -v '^github.com/leaderkit/elector')
theirs=$(requires "$WRAPPER/go.mod")
raise=() lower=()
while read -r path want have; do
	[[ $want == "$have" ]] && continue
	if [[ $(newer "$want" "$have") == "$want" ]]; then
		raise+=("$path@$want")
	else
		lower+=("$path: the apiserver needs $have, cmd/elect or kube requires $want")
	fi
done < <(join <(echo "$ours") <(echo "$theirs"))

if ((${#lower[@]})); then
	printf 'apiserver-deps.sh: raise these in cmd/elect and kube (go get, make pin) to share the apiserver'"'"'s compile:\n' >&2
	printf '  %s\n' "${lower[@]}" >&2
fi
if ((check)); then
	if ((${#raise[@]})); then
		printf 'apiserver-deps.sh: %s requires other versions than cmd/elect and kube of:\n' "$WRAPPER" >&2
		printf '  %s\n' "${raise[@]}" >&2
		echo "apiserver-deps.sh: run scripts/apiserver-deps.sh and commit $WRAPPER/go.mod and go.sum" >&2
		exit 1
	fi
	exit 0
fi
if ((${#raise[@]})); then
	(cd "$WRAPPER" && GOWORK=off GOFLAGS=-mod=mod go get "${raise[@]}" && GOWORK=off go mod tidy)
	echo "apiserver-deps.sh: raised ${#raise[@]} requirements of $WRAPPER; its next start builds the apiserver anew" >&2
	exec "$0" -check
fi
