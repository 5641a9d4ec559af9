package zookeeper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestUnreachableEnsembleNamesTheCause: Campaign and Leader on an ensemble
// that cannot be reached return a transient error naming the cause within
// a few seconds, not go-zookeeper's bare "could not connect to a server"
// nor a wait for as long as ctx lasts.
func TestUnreachableEnsembleNamesTheCause(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		server string
		want   string
	}{
		{"refused", "127.0.0.1:1", "connection refused"},
		{"dns", "no-such-host.invalid:2181", "no-such-host.invalid"},
		{"silent", testenv.SilentListener(t), "accepted the connection but has not answered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := New([]string{tc.server}, nil)
			require.NoError(t, err)
			defer func() { _ = b.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			name := "reach-" + randomSuffix()
			for call, f := range map[string]func() error{
				"Campaign": func() error {
					_, err := b.Campaign(ctx, backend.Candidate{Election: name, Identity: "a", TTL: 15 * time.Second})
					return err
				},
				"Leader": func() error { _, err := b.Leader(ctx, name); return err },
			} {
				began := time.Now()
				err := f()
				took := time.Since(began)
				require.Error(t, err, call)
				t.Logf("%s: %v after %v", call, err, took.Round(time.Millisecond))
				assert.Less(t, took, connectPatience+10*time.Second, "%s: the error comes after at most connectPatience, not when ctx ends", call)
				assert.False(t, errors.Is(err, context.DeadlineExceeded) || backend.IsPermanent(err), "%s: %v: want a transient error", call, err)
				assert.Contains(t, err.Error(), tc.want, "%s: the error names the cause", call)
			}
		})
	}
}
