package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= b.cfg.request {
		return req(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, b.cfg.request)
	defer cancel()
	v, err := req(rctx)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return v, b.noAnswer(ctx, b.cfg.request)
	}
	return v, err
}

// noAnswer explains a request the cluster did not answer within bound,
// with the client's connection state and the cause from [connCause].
func (b *Backend) noAnswer(ctx context.Context, bound time.Duration) error {
	conn := b.cli.ActiveConnection()
	cause := connCause(ctx, conn)
	return fmt.Errorf("no answer from etcd at %s within %v (Options.RequestTimeout); connection %s: %s",
		strings.Join(b.cli.Endpoints(), ","), bound.Round(time.Millisecond), strings.ToLower(conn.GetState().String()), cause)
}

// connCause says why conn's cluster does not answer. It probes the
// connection with a status request that fails at once, instead of waiting,
// while no connection is ready: gRPC then returns the last error of its
// connection attempts (a refused connection, a failed DNS lookup, an x509
// certificate error). The probe takes at most probeTimeout.
func connCause(ctx context.Context, conn *grpc.ClientConn) string {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := pb.NewMaintenanceClient(conn).Status(pctx, &pb.StatusRequest{}, grpc.WaitForReady(false))
	switch {
	case err == nil:
		return "a status request is answered, so the cluster is slow or overloaded"
	case pctx.Err() != nil:
		return "no connection is established yet: the endpoints accept connections but do not complete the gRPC handshake, or the network drops packets"
	default:
		return status.Convert(err).Message()
	}
}

// unauthenticated explains a client with credentials that clientv3.New
// could not make within cfg.DialTimeout: New authenticates (fetches a
// token) before it returns and then reports only "context deadline
// exceeded", which hides why, such as a refused connection. A client
// without the credentials, which New returns without waiting, probes the
// connection as a request without an answer does ([connCause]), within
// ctx. The error
// wraps err, so it stays a transient one, and names neither the user nor
// the password.
func unauthenticated(ctx context.Context, cfg clientv3.Config, err error) error {
	cfg.Username, cfg.Password = "", ""
	cli, nerr := clientv3.New(cfg)
	if nerr != nil {
		return fmt.Errorf("etcd client: authenticating: %w", err)
	}
	defer func() { _ = cli.Close() }()
	conn := cli.ActiveConnection()
	cause := connCause(ctx, conn)
	return fmt.Errorf("etcd client: authenticating: no answer from etcd at %s within %v (dial_timeout); connection %s: %s: %w",
		strings.Join(cfg.Endpoints, ","), cfg.DialTimeout.Round(time.Millisecond), strings.ToLower(conn.GetState().String()), cause, err)
}
