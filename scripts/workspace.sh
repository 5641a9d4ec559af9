#!/usr/bin/env bash
# Writes go.work at the root when it is missing: the workspace of every
# module of the checkout (the root, cmd/elect, examples, integration_test,
# kube), so that each builds against the others' working trees. go.work is
# a checkout's own setting, as the Go team advises, and is not committed;
# outside the checkout each module builds against the versions its go.mod
# pins (make pin). Run by the scripts that build across modules.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Scripts run at once (make lint beside make test) take turns: go work init
# fails if go.work appeared since the check.
exec {lock_fd}<scripts/workspace.sh
flock "$lock_fd"
if [[ ! -f go.work ]]; then
	go work init . ./cmd/elect ./examples ./integration_test ./kube
fi
