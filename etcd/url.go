package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

func init() {
	backendurl.Register("etcd", backendurl.OpenerFunc(openURL))
	backendurl.Register("etcds", backendurl.OpenerFunc(openURL))
}

// openURL opens etcd:// and etcds:// URLs for package backendurl: one client
// over the endpoints; the package documentation, section URLs, lists the
// parameters. Importing this package registers both schemes with
// backendurl.DefaultMux.
func openURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	eps, err := backendurl.Hosts(u, "2379")
	if err != nil {
		return nil, nil, err
	}
	if err := backendurl.NoPath(u, "set a key prefix with ?prefix=/elector/"); err != nil {
		return nil, nil, err
	}
	p, err := backendurl.NewParams(u)
	if err != nil {
		return nil, nil, err
	}
	opts := &Options{
		Prefix:         p.String("prefix"),
		DriftFactor:    p.Float("drift_factor"),
		CleanupTimeout: p.Duration("cleanup_timeout"),
		RequestTimeout: p.Duration("request_timeout"),
	}
	dial := p.Duration("dial_timeout")
	if dial == 0 {
		dial = 5 * time.Second
	}
	tlsCfg, err := p.TLS(u.Scheme == "etcds", "etcds")
	if err != nil {
		return nil, nil, err
	}
	if err := p.Finish(); err != nil {
		return nil, nil, err
	}
	var dialOpts []grpc.DialOption
	if tlsCfg != nil {
		for i, ep := range eps {
			eps[i] = "https://" + ep
		}
		if tlsCfg.ServerName != "" {
			// gRPC verifies the server's certificate against the
			// connection's authority, which overrides the tls.Config's
			// ServerName; by default the authority is the endpoint's host.
			dialOpts = append(dialOpts, grpc.WithAuthority(tlsCfg.ServerName))
		}
	}
	password, _ := u.User.Password()
	cfg := clientv3.Config{
		Endpoints:   eps,
		Username:    u.User.Username(),
		Password:    password,
		TLS:         tlsCfg,
		DialTimeout: dialBound(ctx, dial),
		DialOptions: dialOpts,
		Logger:      zap.NewNop(),
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		if cfg.Username != "" && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, nil, unauthenticated(ctx, cfg, err)
		}
		return nil, nil, fmt.Errorf("etcd client: %w", err)
	}
	b, err := New(cli, opts)
	if err != nil {
		_ = cli.Close()
		return nil, nil, err
	}
	return b, backendurl.Closers{b, cli}, nil
}

// dialBound is the time clientv3.New may take to authenticate: dial, or
// less when ctx ends earlier, leaving [unauthenticated] time to name the
// cause of a failure before ctx ends: its probe (probeTimeout) and a quarter
// of that to spare, or half of what is left.
func dialBound(ctx context.Context, dial time.Duration) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return dial
	}
	until := time.Until(d)
	// A DialTimeout of 0 or less would make clientv3.New wait without a bound.
	return max(min(dial, max(until-probeTimeout*5/4, until/2)), time.Millisecond)
}
