package etcd

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// A Register after a failed one of the same candidate, whose put landed
// with its reply lost and whose revoke failed, revokes that entry's lease
// first: readers list the candidate once. Close revokes it when no
// Register comes.
func TestRegisterAfterFailedRevoke(t *testing.T) {
	t.Parallel()
	for _, then := range []string{"register", "close"} {
		t.Run(then, func(t *testing.T) {
			t.Parallel()
			var broken atomic.Bool
			broken.Store(true)
			cli := newClient(t, testenv.EtcdEndpoints(t), grpc.WithChainUnaryInterceptor(
				func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					if broken.Load() {
						switch method {
						case "/etcdserverpb.KV/Put":
							if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
								return err
							}
							return status.Error(codes.Unavailable, "reply lost by the test") // not retried: the request was sent
						case "/etcdserverpb.Lease/LeaseRevoke":
							return status.Error(codes.Internal, "revoke not sent by the test") // not retried
						}
					}
					return invoker(ctx, method, req, reply, cc, opts...)
				}))
			t.Cleanup(func() { _ = cli.Close() })
			b, r := testBackend(t, cli, nil), testBackend(t, testClient(t), nil)
			ctx := testCtx(t)
			name := testName(t)
			if reg, err := b.Register(ctx, cand(name, "alice"), false); err == nil {
				t.Fatalf("Register with its reply lost: got %s, want an error", reg.ID())
			}
			broken.Store(false)
			var want []backend.Entry
			if then == "register" {
				reg, err := b.Register(ctx, cand(name, "alice"), false)
				if err != nil {
					t.Fatal(err)
				}
				want = []backend.Entry{{ID: reg.ID(), Identity: "alice"}}
			} else if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := r.Entries(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Entries after a failed Register whose revoke failed, then %s: got %+v, want %+v", then, got, want)
			}
		})
	}
}
