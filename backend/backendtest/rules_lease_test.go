package backendtest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/internal/wait"
)

// slowCampaign is a Backend whose Campaign sends its request only after
// delay, as a driver does that reconnects first: the lease it wins is
// valid for a TTL from then, later than a TTL after the Campaign began.
type slowCampaign struct {
	*memory.Backend
	delay time.Duration
}

func (b slowCampaign) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if !wait.Sleep(ctx, b.delay) {
		return nil, ctx.Err()
	}
	return b.Backend.Campaign(ctx, c)
}

type slowHarness struct {
	b     *memory.Backend
	delay time.Duration
}

func (h slowHarness) MakeBackend(context.Context) (backend.Backend, error) {
	return slowCampaign{h.b, h.delay}, nil
}
func (h slowHarness) TTL() time.Duration { return 2 * time.Second }
func (h slowHarness) Close()             { _ = h.b.Close() }

// TestCampaignFreeSlowCampaign: a Campaign that takes longer than the TTL
// to send its request still reports a conservative Deadline (a TTL after
// that request); CampaignFree must accept it.
func TestCampaignFreeSlowCampaign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := slowHarness{b: memory.New(), delay: 3 * time.Second}
		defer h.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		testCampaignFree(&env{T: t, h: h, ttl: h.TTL(), ctx: ctx, base: uniqueName("CampaignFree")})
	})
}
