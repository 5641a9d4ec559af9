#!/usr/bin/env bash
# doclint.sh — docs and comments state behaviour, not run logs: no
# commit-hash-like tokens, ISO dates, times of day or run letters ("run K")
# in Go comments and Markdown documents (internal/cmd/doclint says the rules
# and their exceptions: the Measured lines of docs/benchmarks.md and
# docs/chaos.md, CHANGELOG.md's release headings). make lint runs it.
#
#   scripts/doclint.sh           every Go file's comments (all modules) and
#                                every Markdown document at the root, in
#                                docs/ and in examples/ (= -all)
#   scripts/doclint.sh FILE...   those files
#
# Tokens that only look like a commit (an example lease ID) go in
# scripts/doclint-allow.txt, one per line, with the reason after a #.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ $# -eq 0 ]]; then
	set -- -all
fi
go run ./internal/cmd/doclint "$@"
