package etcd

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
	"github.com/leaderkit/elector/internal/testenv"
)

// A Register whose put landed with its reply lost, and whose revoke failed,
// leaves no second entry beside the candidate's next one, nor one after
// Close.
func TestFailedRegisterCleanedUp(t *testing.T) {
	t.Parallel()
	prioritytest.FailedRegister(t, func(t *testing.T) prioritytest.Broken {
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
		name := testName(t)
		return prioritytest.Broken{
			Backend:  b,
			Election: name,
			Heal:     func() { broken.Store(false) },
			Read:     func(ctx context.Context) ([]backend.Entry, error) { return r.Entries(ctx, name) },
		}
	})
}
