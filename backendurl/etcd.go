package backendurl

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/etcd"
)

// openEtcd opens etcd:// and etcds:// URLs: one client over the endpoints.
func openEtcd(_ context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	eps, err := hosts(u, "2379")
	if err != nil {
		return nil, nil, err
	}
	if err := noPath(u, "set a key prefix with ?prefix=/elector/"); err != nil {
		return nil, nil, err
	}
	p, err := newParams(u)
	if err != nil {
		return nil, nil, err
	}
	opts := &etcd.Options{
		Prefix:         p.str("prefix"),
		DriftFactor:    p.float("drift_factor"),
		CleanupTimeout: p.duration("cleanup_timeout"),
	}
	dial := p.duration("dial_timeout")
	if dial == 0 {
		dial = 5 * time.Second
	}
	tlsCfg, err := p.tlsConfig(u.Scheme == "etcds", "etcd")
	if err != nil {
		return nil, nil, err
	}
	if err := p.finish(); err != nil {
		return nil, nil, err
	}
	if tlsCfg != nil {
		for i, ep := range eps {
			eps[i] = "https://" + ep
		}
	}
	password, _ := u.User.Password()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		Username:    u.User.Username(),
		Password:    password,
		TLS:         tlsCfg,
		DialTimeout: dial,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("etcd client: %w", err)
	}
	b, err := etcd.New(cli, opts)
	if err != nil {
		_ = cli.Close()
		return nil, nil, err
	}
	return b, closers{b, cli}, nil
}
