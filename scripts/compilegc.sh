#!/usr/bin/env bash
# compilegc.sh — print the environment under which test.sh and servers.sh
# run the compiler for the builds they make before the tests (never for the
# tests themselves): its garbage collector off up to a heap limit,
# GOGC=off GOMEMLIMIT=<n>MiB, which costs a fifth less CPU for the same
# output (the kube-apiserver's build on 2 cores: 469 CPU-s instead of 591).
# The limit is the machine's memory over three compiles a core (the
# apiserver build and test.sh's run at once), at most 2 GiB; below 1.5 GiB
# it prints nothing and the compiler keeps its defaults.
set -euo pipefail
mem_kb=$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo 2>/dev/null || true)
cores=$(nproc 2>/dev/null || echo 1)
[[ $mem_kb =~ ^[0-9]+$ ]] || exit 0
limit=$((mem_kb / 1024 / (3 * cores)))
((limit > 2048)) && limit=2048
((limit >= 1536)) || exit 0
echo "GOGC=off GOMEMLIMIT=${limit}MiB"
