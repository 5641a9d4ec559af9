package zookeeper

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/leaderkit/elector/internal/testenv"
)

// Most tests call t.Parallel, and up to eight of them run at once unless
// -parallel says otherwise: each makes its own Backends and sessions on
// election names of its own (randomSuffix), breaks connections only through
// a fault dialer of its own, and waits with bounds sized for a loaded host.
// These stay serial, and so run before all the parallel ones:
//
//   - TestLeaderPauseOutlivesNoDeadline and TestDeadlineSurvivesUnreportedAnswer
//     stop a server of an ensemble the other tests use;
//   - TestUncontendedCampaignOneRead and TestAcquireReleaseRequests count
//     fastLeads, which every Campaign in the process moves, and
//     TestHeldLeasesNoGoroutine counts the process's goroutines;
//   - TestConformance runs its rules at once already, with
//     bounds of TTL/2 (1 s) for a hand-over and 0.7 s for a prompt return.
func TestMain(m *testing.M) {
	testenv.DefaultParallel(8)
	goleak.VerifyTestMain(m)
}
