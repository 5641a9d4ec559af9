package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// probeTimeout bounds the probe that explains a request without an answer.
const probeTimeout = time.Second

// bounded runs one request of a Backend under ctx bounded by
// [Options.RequestTimeout]. The etcd client waits for a connection as long
// as its context allows (gRPC's WaitForReady) and then reports only "context
// deadline exceeded"; when the bound, not ctx, ends the request, the error
// instead says why the cluster did not answer: the client's connection
// state and its last connection error (a refused connection, a failed DNS
// lookup, an x509 certificate error), from [Backend.noAnswer]. A ctx that
// ends before the bound ends the request as it would without it.
func bounded[T any](b *Backend, ctx context.Context, req func(ctx context.Context) (T, error)) (T, error) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= b.set.request {
		return req(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, b.set.request)
	defer cancel()
	v, err := req(rctx)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return v, b.noAnswer(ctx, b.set.request)
	}
	return v, err
}

// noAnswer explains a request the cluster did not answer within bound. It
// probes the client's connection with a status request that fails at once,
// instead of waiting, while no connection is ready: gRPC then returns the
// last error of its connection attempts.
func (b *Backend) noAnswer(ctx context.Context, bound time.Duration) error {
	conn := b.cli.ActiveConnection()
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := pb.NewMaintenanceClient(conn).Status(pctx, &pb.StatusRequest{}, grpc.WaitForReady(false))
	var cause string
	switch {
	case err == nil:
		cause = "a status request is answered, so the cluster is slow or overloaded"
	case pctx.Err() != nil:
		cause = "no connection is established yet: the endpoints accept connections but do not complete the gRPC handshake, or the network drops packets"
	default:
		cause = status.Convert(err).Message()
	}
	return fmt.Errorf("no answer from etcd at %s within %v (Options.RequestTimeout); connection %s: %s",
		strings.Join(b.cli.Endpoints(), ","), bound.Round(time.Millisecond), strings.ToLower(conn.GetState().String()), cause)
}
