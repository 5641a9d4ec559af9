# Targets run the scripts in scripts/; each script's header says more.
.PHONY: test lint apisnapshot pin installcheck servers servers-stop servers-status bench chaos fuzz compare-readme

# go test -race over every module's packages in TESTSHARDS shards at once,
# each shard on a server set of its own (started and stopped here).
# TESTFLAGS/TESTPKGS/TESTP/TESTSHARDS are passed through (see scripts/test.sh).
test:
	scripts/test.sh

# gofmt, go vet and staticcheck over every module; the API check against api/.
lint:
	scripts/lint.sh

# Rewrite the API snapshots api/elector.txt and api/kube.txt that make lint compares against (see
# scripts/apicheck.sh): at a release, or to accept an incompatible change.
apisnapshot:
	scripts/apicheck.sh -update

# Make kube, cmd/elect, integration_test and examples require the root module
# (and kube) at HEAD's commit, so they install from main without go.work; run
# it, and commit, when they start using root API their pin lacks.
pin:
	scripts/pin.sh

# From a bare clone of this branch without tags and an empty module cache:
# go install …/cmd/elect@HEAD and go get …/kube@HEAD work (what .ci/run checks).
installcheck:
	scripts/installcheck.sh

# Start the test servers and leave them up; print the environment to use them.
servers:
	scripts/servers.sh start
	@echo 'now: eval "$$(scripts/servers.sh env)"'

servers-stop:
	scripts/servers.sh stop

servers-status:
	scripts/servers.sh status

# Benchmarks in integration_test against real servers (BENCHTIME, BENCH, BENCHFLAGS).
bench:
	scripts/bench.sh

# The long chaos campaign: every driver under faults, a history checker, a
# report (seed printed; SEED=N replays the schedule). See scripts/chaos.sh.
chaos:
	scripts/chaos.sh $(if $(SEED),-seed $(SEED))

# Every fuzz target of the root module in turn, FUZZTIME each (default 5m;
# FUZZ selects targets by regexp). make test runs only their seed corpora.
fuzz:
	scripts/fuzz.sh

# One full `elect compare --markdown` over the test servers, pasted into
# docs/benchmarks.md (see scripts/compare-readme.sh).
compare-readme:
	scripts/compare-readme.sh
