package etcd

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/leaderkit/elector/internal/testenv"
)

// Most tests call t.Parallel, and up to eight of them run at once unless
// -parallel says otherwise: each makes its own Backends and clients on
// election names of its own (testName), cuts connections only through a
// proxy of its own, injects no fault into the cluster, and waits with
// bounds sized for a loaded host. These stay serial, and so run before all
// the parallel ones:
//
//   - TestOwnWatchCompacted compacts the cluster's history;
//   - TestConformance and TestConformancePrefix run their rules -parallel
//     at a time already, with bounds of TTL/2 (1 s) for a hand-over and
//     0.7 s for a prompt return;
//   - TestWaitBehindHolderIsNotBounded needs requests bounded at 1 s not to
//     time out, and TestUnreachableWithCredentialsNamesTheCause its answer
//     0.25 s before its 3 s ctx ends;
//   - TestKeyLayout, TestGuard, TestDeadlineFromGrant, TestLostWhileWaiting,
//     TestSharedLeaseColdStart, TestLatePutOfAbandonedCampaign and
//     TestUnmarkOnlyTheMarker need a 2 s etcd lease to outlast requests,
//     TestCanceledCampaignLeavesNoKey a put answered within 200 ms,
//     TestOwnWatchOneStream a Campaign within its stream's 100 ms linger,
//     and TestLeadersCutOff and TestServersRevokeEarlyCached requests on a
//     fresh connection answered within 2 s (each takes 2 s at most alone:
//     parallel, they would save next to nothing).
func TestMain(m *testing.M) {
	testenv.DefaultParallel(8)
	goleak.VerifyTestMain(m)
}
