package zookeeper

import (
	"context"
	"testing"

	"github.com/leaderkit/elector/backend/backendtest"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
		return newHarness(t), nil
	})
}
