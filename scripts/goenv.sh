# goenv.sh — the go command's environment for the scripts that build every
# module of the checkout (lint.sh, test.sh). Sourced after ROOT is set.
#
# -trimpath: without it the go command keys each package's build by its
# directory, and a clone in another directory compiles every package of the
# modules again (the root module's race test build in a second clone: 72
# CPU seconds, 20 with -trimpath). A binary built so knows no GOROOT
# (runtime.GOROOT() is empty): go/build and go/importer in tests find the
# standard library from the environment.
#
# -ldflags=-w: no DWARF in the binaries (test binaries, elect), which cuts a
# race test binary's link by about a quarter (kube's: 10.7-11.6 CPU seconds,
# 7.2-8.4 without); stack traces do not use it. A build that sets its own
# -ldflags replaces it.
#
# The nested modules require the root module (and kube) at pseudo-versions of
# commits on main (make pin). Under go.work the go command builds the
# checkout's own trees, but still reads those versions' go.mod files: a
# machine whose module cache lacks them fetches them with git from this
# checkout (GOPRIVATE keeps the module proxy and the checksum database out;
# go.sum still checks them).
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath -ldflags=-w" GOROOT="${GOROOT:-$(go env GOROOT)}"
export GOPRIVATE="${GOPRIVATE:+$GOPRIVATE,}github.com/leaderkit"
goenv_n=${GIT_CONFIG_COUNT:-0}
export GIT_CONFIG_COUNT=$((goenv_n + 1)) "GIT_CONFIG_KEY_$goenv_n=url.file://$ROOT.insteadOf" \
	"GIT_CONFIG_VALUE_$goenv_n=https://github.com/leaderkit/elector"
unset goenv_n

# norace_dirs prints, one a line, the directories of ROOT's Go files built
# only without the race detector (a //go:build line with !race, matched by
# NORACE_BUILD): lint.sh checks them once more without -race, test.sh runs
# their tests without it.
NORACE_BUILD='^//go:build .*!race'
norace_dirs() { git -C "$ROOT" grep -l -E "$NORACE_BUILD" -- '*.go' | xargs -r -n1 dirname | sort -u; }
