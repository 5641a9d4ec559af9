package zookeeper

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/url"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

func init() {
	backendurl.Register("zk", backendurl.OpenerFunc(openURL))
	backendurl.Register("zks", backendurl.OpenerFunc(openURL))
}

// openURL opens zk:// and zks:// (TLS) URLs for package backendurl; the
// package documentation, section URLs, lists the parameters. Importing this
// package registers both schemes with backendurl.DefaultMux.
func openURL(_ context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	servers, err := backendurl.Hosts(u, "2181")
	if err != nil {
		return nil, nil, err
	}
	if err := backendurl.NoPath(u, "set the prefix znode with ?prefix=/elector"); err != nil {
		return nil, nil, err
	}
	p, err := backendurl.NewParams(u)
	if err != nil {
		return nil, nil, err
	}
	opts := &Options{
		Prefix:          p.String("prefix"),
		DriftFactor:     p.Float("drift_factor"),
		DisconnectGrace: p.Duration("disconnect_grace"),
		TickTime:        p.Duration("tick_time"),
	}
	syncLimit := p.Float("sync_limit")
	if opts.TLS, err = p.TLS(u.Scheme == "zks", "zks"); err != nil {
		return nil, nil, err
	}
	if err := p.Finish(); err != nil {
		return nil, nil, err
	}
	// NaN fails the comparison with its own truncation.
	if syncLimit < 0 || syncLimit != math.Trunc(syncLimit) || syncLimit > math.MaxInt32 {
		return nil, nil, fmt.Errorf("query parameter sync_limit is %v; want a whole number of ticks, as zoo.cfg's syncLimit states it", syncLimit)
	}
	opts.SyncLimit = int(syncLimit)
	if u.User != nil {
		user := u.User.Username()
		password, _ := u.User.Password()
		opts.Auth = []Auth{{Scheme: "digest", Secret: []byte(user + ":" + password)}}
		opts.ACL = zk.DigestACL(zk.PermAll, user, password)
	}
	b, err := New(servers, opts)
	if err != nil {
		return nil, nil, err
	}
	return b, b, nil
}
