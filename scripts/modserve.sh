#!/usr/bin/env bash
# modserve.sh — serve this repository's branch as its module path, the way a
# user's go command sees it once main is published: no tags, no replace
# directives, no go.work. Sourced by pin.sh and installcheck.sh; not run alone.
#
# modserve_setup DIR makes DIR/elector.git, a bare clone of the current
# branch without tags, and exports the environment under which the go
# command fetches github.com/leaderkit/elector (and its nested modules) from
# it with git instead of from the module proxy: GIT_CONFIG_GLOBAL rewrites
# the repository's https address to the clone, GOPRIVATE keeps the module
# proxy and the checksum database out of it, GOWORK=off. Every other module
# comes from the module cache already on the machine first (a file:// proxy
# over GOMODCACHE/cache/download), then from GOPROXY.
#
# With a clean module cache (modserve_setup DIR clean) the go command
# starts from an empty GOMODCACHE and GOPATH under DIR, as on a new
# machine; the build cache is kept (it holds no module resolution), and
# builds trim paths so that it serves them.

MODULE=github.com/leaderkit/elector

modserve_setup() {
	local dir=$1 mode=${2:-} root cache proxy
	root=$(git rev-parse --show-toplevel)
	cache=$(go env GOMODCACHE)
	proxy=$(go env GOPROXY)
	git clone -q --bare --no-tags --single-branch "$root" "$dir/elector.git"
	cat >"$dir/gitconfig" <<-EOF
		[url "file://$dir/elector.git"]
			insteadOf = https://$MODULE
	EOF
	export GIT_CONFIG_GLOBAL=$dir/gitconfig GOPRIVATE=github.com/leaderkit GOWORK=off GOFLAGS=-mod=mod
	export GOPROXY="file://$cache/cache/download,$proxy"
	if [[ $mode == clean ]]; then
		# -trimpath: the go command keys a package's build by its directory
		# unless it trims paths, and the new module cache would make every
		# dependency's compile a miss of the build cache.
		export GOMODCACHE=$dir/mod GOPATH=$dir/gopath GOBIN=$dir/bin GOFLAGS="$GOFLAGS -trimpath"
	fi
}

# modserve_version REV prints the version the go command gives commit REV of
# the root module (a pseudo-version v0.0.0-<time>-<hash> while main has no
# tags).
modserve_version() {
	go list -m -f '{{.Version}}' "$MODULE@$1"
}
