#!/usr/bin/env bash
# doclint.sh — docs and comments state behaviour, not run logs: no
# commit-hash-like tokens, ISO dates, times of day or run letters ("run K")
# in Go comments and Markdown documents (internal/cmd/doclint says the rules
# and their exceptions: the Measured lines of docs/benchmarks.md and
# docs/chaos.md, CHANGELOG.md's release headings). make lint runs it.
#
#   scripts/doclint.sh           the files listed in CHECKED below
#   scripts/doclint.sh -all      every Go file's comments (all modules) and
#                                every Markdown document at the root, in
#                                docs/ and in examples/
#   scripts/doclint.sh FILE...   those files
#
# DOCLINT_ALL=1 makes the first form check everything, as -all does.
# Tokens that only look like a commit (an example lease ID) go in
# scripts/doclint-allow.txt, one per line, with the reason after a #.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# The documents and package docs kept clean so far; once every Go comment
# is clean, make lint should run -all (DOCLINT_ALL=1) instead.
CHECKED=(
	README.md CONTRIBUTING.md CHANGELOG.md SECURITY.md
	docs/benchmarks.md docs/elect.md docs/chaos.md
	redlock/doc.go etcd/doc.go backendurl/doc.go cmd/elect/doc.go
	internal/cmd/doclint/main.go internal/cmd/doclint/main_test.go
)

if [[ $# -eq 0 ]]; then
	if [[ ${DOCLINT_ALL:-} == 1 ]]; then
		set -- -all
	else
		set -- "${CHECKED[@]}"
	fi
fi
go run ./internal/cmd/doclint "$@"
