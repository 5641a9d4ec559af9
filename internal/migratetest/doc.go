// Package migratetest runs the rolling migration of the runbook in
// docs/migration.md (package migrate) in tests, on whatever stores a test
// gives it: replicas of one election restarted one at a time from the old
// store alone (unmodified electors) through PhaseBoth, PhaseNew and
// PhaseDone, each leading for [Hold] and then resigning, while a [Fence]
// (the protected resource) checks that no two terms overlap and that
// tokens rise across the switch; a late unmodified replica and a late
// PhaseOld replica start once the marker is written, and neither may lead.
//
// The migrate package's own tests run it on in-memory stores under
// testing/synctest, the integration tests and the kube driver's tests on
// the real servers.
package migratetest
