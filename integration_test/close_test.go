package integration_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestCloseUnderTerm: on every driver, a Backend closed from OnElected ends
// the term with a reason wrapping backend.ErrClosed (not only "lease
// lost"), the release is no warning, and Run returns an error wrapping
// backend.ErrClosed.
func TestCloseUnderTerm(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]func(testing.TB) string{
		"redis": func(tb testing.TB) string { return "redis://" + strings.Join(testenv.RedisAddrs(tb), ",") },
		"etcd":  func(tb testing.TB) string { return "etcd://" + strings.Join(testenv.EtcdEndpoints(tb), ",") },
		"zk":    func(tb testing.TB) string { return "zk://" + strings.Join(testenv.ZKServers(tb), ",") },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			b, closer, err := backendurl.Open(ctx, url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			var logs testenv.Buffer
			revoked := make(chan error, 1)
			e, err := elector.New(b, fmt.Sprintf("close-under-term-%d", time.Now().UnixNano()), &elector.Options{
				TTL:    5 * time.Second,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				OnElected: func(ctx context.Context, _ elector.Term) {
					_ = closer.Close()
					<-ctx.Done()
				},
				OnRevoked: func(_ elector.Term, reason error) { revoked <- reason },
			})
			if err != nil {
				t.Fatal(err)
			}
			err = e.Run(ctx)
			if !errors.Is(err, backend.ErrClosed) {
				t.Errorf("Run: got %v, want an error wrapping backend.ErrClosed", err)
			}
			select {
			case reason := <-revoked:
				if !errors.Is(reason, backend.ErrClosed) || !errors.Is(reason, elector.ErrLeaseLost) {
					t.Errorf("OnRevoked: got %v, want a reason wrapping ErrLeaseLost and backend.ErrClosed", reason)
				}
			default:
				t.Error("Run returned without calling OnRevoked")
			}
			if out := logs.String(); strings.Contains(out, "release failed") {
				t.Errorf("Close finished the lease; its release failed nothing, yet:\n%s", out)
			}
		})
	}
}
