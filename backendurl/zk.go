package backendurl

import (
	"context"
	"io"
	"net/url"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/zookeeper"
)

// openZK opens zk:// URLs: one session with the ensemble; the path is the
// root znode.
func openZK(_ context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	servers, err := hosts(u, "2181")
	if err != nil {
		return nil, nil, err
	}
	p, err := newParams(u)
	if err != nil {
		return nil, nil, err
	}
	// session_timeout is accepted and ignored: every Campaign's TTL is now
	// the timeout of its session (issue 10).
	_ = p.duration("session_timeout")
	opts := &zookeeper.Options{
		DisconnectGrace: p.duration("disconnect_grace"),
	}
	if err := p.finish(); err != nil {
		return nil, nil, err
	}
	if u.Path != "/" {
		opts.Root = u.Path // "" means the default root
	}
	if u.User != nil {
		user := u.User.Username()
		password, _ := u.User.Password()
		opts.Auth = []zookeeper.Auth{{Scheme: "digest", Secret: []byte(user + ":" + password)}}
		opts.ACL = zk.DigestACL(zk.PermAll, user, password)
	}
	b, err := zookeeper.New(servers, opts)
	if err != nil {
		return nil, nil, err
	}
	return b, b, nil
}
